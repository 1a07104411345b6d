/*
 * tui_handler.c - a request loop for the TUI tests: main calls handle(i)
 * forever; one call in 20 (5%) also calls slow_path(), which does 20x the
 * work of a normal call. A split of handle() at p95 must therefore rank
 * slow_path first. Leaves keep a frame (volatile local) and no call is a
 * tail call, so frame-pointer stacks are exact.
 */
#include <stdlib.h>
#include <time.h>

#define UNIT 20000

static volatile unsigned long sink;

__attribute__((noinline)) void work(unsigned long n)
{
	volatile unsigned long i, acc = 0;

	for (i = 0; i < n; i++)
		acc += i ^ (i >> 3);
	sink += acc;
}

__attribute__((noinline)) void slow_path(void)
{
	volatile int frame = 0;

	work(20 * UNIT);
	frame++;
}

__attribute__((noinline)) void handle(unsigned long i)
{
	volatile int frame = 0;

	work(UNIT);
	if (i % 20 == 7)
		slow_path();
	frame++;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1e9;
	struct timespec t0, t;
	unsigned long i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0;; i++) {
		handle(i);
		if (i % 64)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
	}
	return 0;
}
