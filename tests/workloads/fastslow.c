/*
 * fastslow.c - ground truth for the sampler: main calls fast() and
 * slow(); slow() does exactly 4x the work of fast(), so a correct
 * profile shows fast 20% and slow 80% of the samples (within noise).
 * Both leaves keep a frame (volatile local) and no call is a tail call.
 * Between rounds dephase() (dephase.h) pauses for a random length.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "dephase.h"

#define UNIT 200000

static volatile unsigned long sink;

__attribute__((noinline)) void spin(unsigned long n)
{
	volatile unsigned long i, acc = 0;

	for (i = 0; i < n; i++)
		acc += i * i;
	sink += acc;
}

__attribute__((noinline)) void fast(void)
{
	volatile int frame = 0;

	spin(UNIT);
	frame++;
}

__attribute__((noinline)) void slow(void)
{
	volatile int frame = 0;

	spin(4 * UNIT);
	frame++;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1e9;
	struct timespec t0, t;
	unsigned int seed = (unsigned int)getpid();

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		fast();
		slow();
		dephase(&seed, UNIT);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
	}
	return 0;
}
