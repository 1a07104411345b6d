/*
 * causal_lines.c - line candidates of `liveprof causal` with a known answer.
 *
 * One thread makes items back to back: each runs the loop on LINE_BIG for
 * 3 * UNITS iterations, the same loop on LINE_SMALL for UNITS, and again
 * on LINE_JITTER for a random count in [0, 2 * UNITS), then calls
 * item_done() (the progress point). The loops are the same instructions,
 * (a register chain whose pace is the imul's latency, see paced()),
 * so of an item's time (3 + 1 + 1 units on average) LINE_BIG holds 3/5 and
 * LINE_SMALL 1/5, less the item_done() call and its probe (under 1%): made
 * 1% faster, they make the program 0.6% and 0.2% faster, impacts 0.6 and
 * 0.2. Nothing else gates the thread or competes with it in the program.
 * LINE_COLD runs once per 1,000 items: too little time to measure.
 *
 * The random count keeps items aperiodic. A periodic item that lasts
 * about a whole number of the ticks' periods locks the ticks onto a few
 * places in it (the ticks' own cost stretches it to exactly one period:
 * seen here, every item 50.0 us at a 50 us tick), and then they no longer
 * fall on the lines in proportion to their time (dephase.h says the same
 * of the sampler).
 * Usage: causal_lines SECONDS
 */
#include <stdlib.h>
#include <time.h>

#define UNITS 30000

static volatile unsigned long sink;

#define MUL 0x9e3779b97f4a7c15ul

/*
 * The loops' step: a multiply-add in a register, paced by the imul's
 * latency the same in each loop. It was a volatile read-add-write, and an
 * AMD EPYC host ran the three alike-looking loops at different paces
 * (store-to-load forwarding): LINE_BIG measured 75.7% for 60%. The empty
 * asm keeps the compiler from vectorizing or folding the loops; it emits
 * no instruction.
 */
static inline __attribute__((always_inline)) unsigned long paced(unsigned long v)
{
	__asm__ volatile("" : "+r"(v));
	return v;
}

/*
 * A real frame (the volatile local) so that its first instruction is
 * push %rbp, which the kernel emulates for the progress point's probe. An
 * empty item_done was a bare ret, single-stepped: about 10 us of traps per
 * item on this VM, and ticks held back through them landed just after,
 * outside the lines (LINE_BIG's share measured 43-52% for 60%).
 */
__attribute__((noinline)) void item_done(void)
{
	volatile int done = 1;

	(void)done;
	asm volatile("" ::: "memory");
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = now_s() + (argc > 1 ? atof(argv[1]) : 60);
	unsigned long items = 0, i, jitter, acc = 0;
	unsigned int seed = 1;

	/* Each loop on one line, its control and its body: the line's
	 * instructions are the whole loop. */
	/* clang-format off */
	while (now_s() < end) {
		for (i = 0; i < 3 * UNITS; i++) acc = paced(acc * MUL + i); /* LINE_BIG */
		for (i = 0; i < UNITS; i++) acc = paced(acc * MUL + i); /* LINE_SMALL */
		jitter = (unsigned long)rand_r(&seed) % (2 * UNITS);
		for (i = 0; i < jitter; i++) acc = paced(acc * MUL + i); /* LINE_JITTER */
		if (++items % 1000 == 0) sink += items + acc; /* LINE_COLD */
		item_done();
	}
	/* clang-format on */
	return 0;
}
