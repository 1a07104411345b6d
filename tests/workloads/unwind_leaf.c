/*
 * unwind_leaf.c - ground truth for unwinding through frameless leaves.
 * work() is a small leaf, so gcc -O2 gives it no frame even with
 * -fno-omit-frame-pointer; slow() calls it with 4x the work of fast(),
 * so a correct profile shows slow 80% and fast 20% of the samples. A
 * frame-pointer walk alone shows work <- main and loses both callers.
 * Built twice (tests/workloads/Makefile): unwind_leaf keeps frame
 * pointers in non-leaf functions, unwind_leaf_nofp has none at all.
 * Between rounds dephase() (dephase.h) pauses for a random length.
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "dephase.h"

#define UNIT 400000

static volatile unsigned long sink;

__attribute__((noinline, noclone)) unsigned long work(unsigned long n)
{
	unsigned long acc = 0;

	for (unsigned long i = 0; i < n; i++) {
		acc += i * i;
		/* keep the loop: not folded into a closed form or vectorized away */
		__asm__ volatile("" : "+r"(acc));
	}
	return acc;
}

/* sink += after the call: a tail call would put work() under main */
__attribute__((noinline, noclone)) void fast(void)
{
	sink += work(UNIT);
}

__attribute__((noinline, noclone)) void slow(void)
{
	sink += work(4 * UNIT);
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
