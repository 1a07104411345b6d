/*
 * deeprec.c - exact call counts under deep recursion (issue 11). main
 * calls grow(d) for d = 1, 2, ..., DEPTH in turn, REPS times over, and
 * grow(d) recurses until d reaches 1: grow runs exactly
 * REPS * DEPTH * (DEPTH + 1) / 2 times, at every depth from 1 to DEPTH.
 * Deeper than liveprof's per-thread limit (128) and than the kernel's
 * (64 pending return probes per thread), so some calls cannot be timed;
 * all of them must be counted. Prints "grow COUNT" and "deepest DEPTH".
 * Usage: deeprec DEPTH REPS
 */
#include <stdio.h>
#include <stdlib.h>

static volatile long sink;

__attribute__((noinline)) long grow(long d)
{
	volatile long frame = d;

	if (d <= 1)
		return frame;
	return grow(d - 1) + frame;
}

int main(int argc, char **argv)
{
	long depth = argc > 1 ? atol(argv[1]) : 200;
	long reps = argc > 2 ? atol(argv[2]) : 10;
	long calls = 0;

	if (depth < 1 || reps < 1) {
		fprintf(stderr, "usage: deeprec DEPTH REPS\n");
		return 2;
	}
	for (long r = 0; r < reps; r++) {
		for (long d = 1; d <= depth; d++) {
			sink += grow(d);
			calls += d;
		}
	}
	printf("grow %ld\ndeepest %ld\n", calls, depth);
	return 0;
}
