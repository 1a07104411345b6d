/*
 * unwind_deep.c - a stack far deeper than any copied window: recurse()
 * calls itself DEPTH times and spins at the bottom, so every sample has
 * DEPTH recurse frames under main. An unwind that runs out of copied
 * stack must say so ([truncated]) and never show any other function.
 */
#include <stdlib.h>
#include <time.h>

#define DEPTH 2000

static volatile unsigned long sink;
static struct timespec t0;
static double seconds;

static double elapsed(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
}

__attribute__((noinline)) void recurse(int depth)
{
	volatile int frame = depth;

	if (depth > 0) {
		recurse(depth - 1);
	} else {
		/* spin here, not in a helper: the bottom is recurse too */
		for (;;) {
			for (unsigned long i = 0; i < 10000000; i++)
				sink += i;
			if (elapsed() >= seconds)
				break;
		}
	}
	frame++;
}

int main(int argc, char **argv)
{
	seconds = argc > 1 ? atof(argv[1]) : 1e9;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	recurse(DEPTH);
	return 0;
}
