/*
 * frames_split.c - a constant-work split (issue 11, items 1 and 3): every
 * call of handle() does the same work, part_a() then part_b(), about
 * 2 us in all. Under --split handle@p99 -F 999 every stack is one of
 * main, main;handle, main;handle;part_a, main;handle;part_b (under
 * glibc's start); no stack address may ever show as a frame.
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void part_a(unsigned long n)
{
	volatile unsigned long i, acc = 0;

	for (i = 0; i < n; i++)
		acc += i * 3;
	sink += acc;
}

__attribute__((noinline)) void part_b(unsigned long n)
{
	volatile unsigned long i, acc = 0;

	for (i = 0; i < n; i++)
		acc += i * 5;
	sink += acc;
}

__attribute__((noinline)) void handle(unsigned long n)
{
	volatile int frame = 0;

	part_a(n);
	part_b(n);
	frame++;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1e9;
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 0) : 300;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		for (int k = 0; k < 100; k++)
			handle(n);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
	}
	return 0;
}
