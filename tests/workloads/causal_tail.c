/*
 * causal_tail.c - a latency point whose tail and mean have different causes.
 *
 * One thread calls handle() back to back. Every call runs common() for
 * COMMON units plus a random 0..JITTER; one call in SLOW_ONE_IN, drawn at
 * random, also runs extra() for EXTRA units. A unit is the same loop in a
 * register everywhere (burn()), so time is proportional to units. In units, from
 * the source (the truth `liveprof causal --latency` must rank by):
 *
 *   fast calls: common 100..120              (90% of the calls)
 *   slow calls: common 100..120 + extra 300  (10%: the slowest tenth)
 *
 *   p95 of handle (the median of the slow calls, 410): common 110 of it,
 *   extra 300, so a 1% faster common lowers p95 by 110/410 = 0.27% and a
 *   1% faster extra by 300/410 = 0.73% (impacts 0.27 and 0.73).
 *   mean of handle (110 + 300/10 = 140): common 110/140 = 0.79, extra
 *   30/140 = 0.21.
 *
 * The two statistics rank the two functions in opposite orders, far from
 * a tie either way; p95 lies in the middle of the slow tenth, five points
 * from either edge of it, so a window's share of slow calls (10% of about
 * 1,600 calls in a 0.1 s window, +-0.8 points) never moves p95 out of them.
 * Usage: causal_tail SECONDS
 */
#include <stdlib.h>
#include <time.h>

#define ITERS_PER_UNIT 500 /* 0.55 us on the 2-core VM */
#define COMMON	       100
#define JITTER	       20
#define EXTRA	       300
#define SLOW_ONE_IN    10

static volatile unsigned long sink;

/*
 * A chain of multiply-adds in a register, paced by the imul's latency, so
 * that the copies inlined in common() and extra() (each function's own
 * samples are its units) run at the same pace per step. With a chain of
 * plain adds, extra's copy ran twice as fast as common's on an AMD EPYC
 * host. Memory is written once at the end.
 */
static inline __attribute__((always_inline)) void burn(long units)
{
	unsigned long acc = 0;

	for (long i = 0; i < units * ITERS_PER_UNIT; i++) {
		acc = acc * 0x9e3779b97f4a7c15ul + (unsigned long)i;
		__asm__ volatile("" : "+r"(acc));
	}
	sink = acc;
}

/* Each function keeps a frame (the volatile local): its first instruction
 * is push %rbp, which the kernel emulates for the experiments' probes. */
__attribute__((noinline)) void common(long units)
{
	volatile int frame = 0;

	(void)frame;
	burn(units);
}

__attribute__((noinline)) void extra(void)
{
	volatile int frame = 0;

	(void)frame;
	burn(EXTRA);
}

__attribute__((noinline)) void handle(unsigned int *seed)
{
	volatile int frame = 0;

	(void)frame;
	common(COMMON + rand_r(seed) % (JITTER + 1));
	if (rand_r(seed) % SLOW_ONE_IN == 0)
		extra();
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = now_s() + (argc > 1 ? atof(argv[1]) : 60);
	unsigned int seed = 1;

	while (now_s() < end)
		for (int k = 0; k < 64; k++)
			handle(&seed);
	return 0;
}
