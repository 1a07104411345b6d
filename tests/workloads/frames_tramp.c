/*
 * frames_tramp.c - ground truth for stacks taken while uretprobes are
 * pending (issue 11, item 3): main calls handle() about a million times a
 * second, handle() calls leaf(). Traced with --trace handle, a good share
 * of the CPU goes to the kernel's return-probe handling, where the user
 * ip is the [uprobes] trampoline. Every stack is main, main;handle or
 * main;handle;leaf (under glibc's start), nothing else.
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void leaf(unsigned long n)
{
	volatile unsigned long i, acc = 0;

	for (i = 0; i < n; i++)
		acc += i ^ (i << 3);
	sink += acc;
}

__attribute__((noinline)) void handle(unsigned long n)
{
	volatile int frame = 0;

	leaf(n);
	frame++;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1e9;
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 0) : 100;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		for (int k = 0; k < 1000; k++)
			handle(n);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
	}
	return 0;
}
