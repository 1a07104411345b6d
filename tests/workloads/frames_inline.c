/*
 * frames_inline.c - ground truth for inlined frames (issue 11, item 5).
 * hot() is a real function; everything it runs is inlined into it:
 *   inl_a(U)               -> spin(U)      1/4 of hot's work
 *   inl_b(3U) -> inl_c(3U) -> spin(3U)     3/4, two inlined levels deep
 * spin() is the one loop, inlined at both sites, so a unit of work costs
 * the same on either path. A profile with inlined frames shows
 * hot;inl_a;spin in 25% and hot;inl_b;inl_c;spin in 75% of hot's samples.
 * Between rounds dephase() (dephase.h) pauses for a random length.
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "dephase.h"

#define UNIT 1000000

static volatile unsigned long sink;

/*
 * A chain of multiply-adds in a register: each step waits for the last
 * (3-4 cycles of imul latency), so both inlined copies of the loop run at
 * the same pace wherever they sit in the code. A volatile read-add-write
 * did not: on an AMD EPYC host one copy ran twice as fast as the other
 * (perf and liveprof alike gave inl_a 14% for 25%), as store-to-load
 * forwarding took the two alike-looking loops differently.
 */
static inline __attribute__((always_inline)) void spin(unsigned long n)
{
	unsigned long acc = 0;

	for (unsigned long i = 0; i < n; i++) {
		acc = acc * 0x9e3779b97f4a7c15ul + i;
		__asm__ volatile("" : "+r"(acc));
	}
	sink += acc;
}

static inline __attribute__((always_inline)) void inl_a(unsigned long n)
{
	spin(n);
}

static inline __attribute__((always_inline)) void inl_c(unsigned long n)
{
	spin(n);
}

static inline __attribute__((always_inline)) void inl_b(unsigned long n)
{
	inl_c(n);
}

__attribute__((noinline)) void hot(unsigned long u)
{
	volatile int frame = 0;

	inl_a(u);
	inl_b(3 * u);
	frame++;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1e9;
	struct timespec t0, t;
	unsigned int seed = (unsigned int)getpid();

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		hot(UNIT);
		dephase(&seed, UNIT);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
	}
	return 0;
}
