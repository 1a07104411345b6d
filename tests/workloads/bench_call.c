/*
 * bench_call.c - per-call cost of a uprobe+uretprobe. bench_target() is a
 * small noinline function whose first instruction is push %rbp (which the
 * kernel emulates rather than single-steps); main calls it in a tight loop
 * and prints, every 0.5 s, "T_NS NS_PER_CALL": the thread's CPU time per
 * call (a probe's trap is handled on the thread's time; wall time would
 * also count other processes' time on a shared machine).
 * Usage: bench_call [SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static unsigned long long clock_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (unsigned long long)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

static unsigned long long now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

__attribute__((noinline)) unsigned long bench_target(unsigned long x)
{
	volatile unsigned long frame = x;

	return frame * 2 + 1;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1e9;
	unsigned long long start = now_ns(), period = start, n = 0;
	unsigned long long cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		for (int i = 0; i < 64; i++)
			sink += bench_target(n + i);
		n += 64;
		unsigned long long t = now_ns();
		if (t - period >= 500000000ULL) {
			unsigned long long cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);

			printf("%llu %.2f\n", t, (double)(cpu - cpu0) / n);
			n = 0;
			period = t;
			cpu0 = cpu;
			if ((t - start) / 1e9 > seconds)
				return 0;
		}
	}
}
