/*
 * constwork.c - ground truth for the split's sampling bias (issue 11).
 * Every call of handle() does exactly the same work: ROUNDS rounds of
 * part_a() then part_b(), each a fixed number of loop iterations. No call
 * is slower than another for any reason in the source, so whatever a
 * split at pNN calls "slow" is pNN of the machine's noise, and a sample
 * landing in a call must not make it slow.
 *
 * The iteration count is calibrated once at start so that a call takes
 * about US microseconds here; after that it never changes. Prints
 * "iters N" on stdout once calibrated.
 * Usage: constwork US [SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 4

static volatile unsigned long sink;
static unsigned long iters = 16; /* per part, fixed after calibration */

static unsigned long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned long long)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

__attribute__((noinline)) void part_a(void)
{
	volatile unsigned long frame = 0;

	for (unsigned long i = 0; i < iters; i++)
		frame += i ^ (i >> 2);
	sink += frame;
}

__attribute__((noinline)) void part_b(void)
{
	volatile unsigned long frame = 1;

	for (unsigned long i = 0; i < iters; i++)
		frame += i * 3;
	sink += frame;
}

__attribute__((noinline)) void handle(void)
{
	volatile int frame = 0;

	for (int r = 0; r < ROUNDS; r++) {
		part_a();
		part_b();
	}
	frame++;
}

/* The fastest of a few batches: preemption only ever adds time. */
static double ns_per_call(void)
{
	double best = 1e18;

	for (int b = 0; b < 20; b++) {
		unsigned long long t0 = now_ns();

		for (int i = 0; i < 200; i++)
			handle();
		double ns = (now_ns() - t0) / 200.0;

		if (ns < best)
			best = ns;
	}
	return best;
}

int main(int argc, char **argv)
{
	double us = argc > 1 ? atof(argv[1]) : 5;
	double seconds = argc > 2 ? atof(argv[2]) : 1e9;
	unsigned long long end;

	if (us <= 0) {
		fprintf(stderr, "usage: constwork US [SECONDS]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int k = 0; k < 3; k++) {
		double ns = ns_per_call();
		unsigned long next = (unsigned long)(iters * (us * 1000.0 / ns));

		iters = next ? next : 1;
	}
	printf("iters %lu\n", iters);
	end = now_ns() + (unsigned long long)(seconds * 1e9);
	while (now_ns() < end)
		for (int i = 0; i < 64; i++)
			handle();
	return 0;
}
