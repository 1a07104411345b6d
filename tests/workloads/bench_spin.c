/*
 * bench_spin.c - CPU-bound target for the slowdown benchmark. One thread
 * runs a fixed unit of work (a few nested calls) in a loop and prints, every
 * 0.5 s, "T_NS ITERS_PER_S" (T_NS: CLOCK_MONOTONIC at the end of the period).
 * Usage: bench_spin [SECONDS]   (default: until killed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static unsigned long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned long long)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

__attribute__((noinline)) static unsigned long leaf(unsigned long x)
{
	volatile unsigned long acc = x;

	for (int i = 0; i < 200; i++)
		acc = acc * 6364136223846793005UL + 1442695040888963407UL;
	return acc;
}

__attribute__((noinline)) static unsigned long mid(unsigned long x)
{
	volatile int frame = 0;
	unsigned long r = leaf(x) ^ leaf(x + 1);

	frame++;
	return r;
}

__attribute__((noinline)) static unsigned long unit(unsigned long x)
{
	volatile int frame = 0;
	unsigned long r = mid(x) + mid(x * 3);

	frame++;
	return r;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1e9;
	unsigned long long start = now_ns(), period = start, n = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		for (int i = 0; i < 256; i++)
			sink += unit(n + i);
		n += 256;
		unsigned long long t = now_ns();
		if (t - period >= 500000000ULL) {
			printf("%llu %.1f\n", t, n * 1e9 / (double)(t - period));
			n = 0;
			period = t;
			if ((t - start) / 1e9 > seconds)
				return 0;
		}
	}
}
