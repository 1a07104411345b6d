/*
 * frames_burn.c - a loop that keeps a 64-bit multiplier in a register
 * (issue 11, item 3). Built with -O2 and gcc's default frame-pointer
 * omission, so burn_a() and burn_b() have no frame and %rbp/%rcx hold
 * data such as 0x5851f42d4c957f2d, a value that must never be taken for a
 * return address. main calls burn_a() and burn_b() with equal work; every
 * stack is main;burn_a or main;burn_b (or main) under glibc's start.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline, noclone)) uint64_t burn_a(uint64_t x, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		x = x * 0x5851f42d4c957f2dULL + 1442695040888963407ULL;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

__attribute__((noinline, noclone)) uint64_t burn_b(uint64_t x, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		x = x * 0x5851f42d4c957f2dULL + 7;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1e9;
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 0) : 2000;
	struct timespec t0, t;
	uint64_t x = 1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		for (int k = 0; k < 100; k++) {
			x = burn_a(x, n);
			x = burn_b(x, n);
		}
		sink = x;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
	}
	return 0;
}
