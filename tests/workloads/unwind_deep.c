/*
 * unwind_deep.c - a stack far deeper than any copied window: recurse()
 * calls itself DEPTH times and spins at the bottom, so every sample has
 * DEPTH recurse frames under main. An unwind that runs out of copied
 * stack must say so ([truncated]) and never show any other function.
 *
 * The bottom calls nothing, not even a clock: the run ends by SIGALRM's
 * default action (the kernel ends the process; no handler frame). Reading
 * the clock there once put elapsed() and clock_gettime() (and its PLT
 * stub) at the leaf of a few samples: right, but not "only recurse".
 * Usage: unwind_deep [SECONDS]   (default: until killed)
 */
#include <stdlib.h>
#include <unistd.h>

#define DEPTH 2000

static volatile unsigned long sink;

__attribute__((noinline)) void recurse(int depth)
{
	volatile int frame = depth;

	if (depth > 0) {
		recurse(depth - 1);
	} else {
		/* spin here, not in a helper: the bottom is recurse too */
		for (unsigned long i = 0;; i++)
			sink += i;
	}
	frame++;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 0;

	if (seconds > 0)
		alarm(seconds < 1 ? 1 : (unsigned int)seconds);
	recurse(DEPTH);
	return 0;
}
