/*
 * midleaf.c - main -> mid() -> leaf(), leaf spins ~5 ms per call: nearly
 * every sample is main;mid;leaf. Used under a uretprobe on mid().
 * Usage: midleaf [SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void leaf(void)
{
	volatile unsigned long i, acc = 0;

	for (i = 0; i < 2000000; i++)
		acc += i * i;
	sink += acc;
}

__attribute__((noinline)) void mid(void)
{
	volatile int frame = 0;

	leaf();
	frame++;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1e9;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		mid();
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
	}
	return 0;
}
