/*
 * jumps.c - traced calls whose return a longjmp skips, beside calls that
 * return: the ground truth for the stale frames of tracer.bpf.h.
 *
 * Round i calls hop(i) under setjmp(). The rounds follow a 20-round cycle:
 *   - 15 return: 12 spin for 200 us and 3 for 1 ms, so the returning
 *     calls' p50 is 200 us and their p95 1 ms, each inside a plateau;
 *   - 5 (i % 4 == 3) spin for 2 ms, then call bail(), which longjmps back
 *     to main: neither hop's nor bail's return ever runs.
 * A tracer that took a skipped call's start for the next return's would
 * time more than 2 ms; one that never dropped the skipped frames would
 * run out of room for them. The last round returns, so every skipped call
 * is followed by another entry of hop (where its frame is found stale).
 * main times each returning call itself and writes the latencies (ns, one
 * per line) to OUTFILE; it prints "calls N" and "jumps J".
 * Usage: jumps ROUNDS OUTFILE
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include "spin.h"

static jmp_buf back;

__attribute__((noinline)) void bail(int i)
{
	volatile int frame = i;

	longjmp(back, frame + 1);
}

__attribute__((noinline)) int hop(int i)
{
	volatile int frame = 0;
	int k = i % 20;

	if (i % 4 == 3) {
		spin(2000000);
		bail(i);
	}
	spin(k < 16 ? 200000 : 1000000);
	return frame;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 800;
	long *lat = calloc(n, sizeof(*lat));
	volatile long timed = 0, jumps = 0; /* kept across longjmp() */

	if (argc < 3 || !lat || n < 1)
		return 2;
	if (n % 4 == 0) /* the last round (n - 1) would jump */
		n--;
	for (volatile long i = 0; i < n; i++) {
		long t0 = now_ns();

		if (setjmp(back)) {
			jumps++;
			continue;
		}
		hop((int)i);
		lat[timed++] = now_ns() - t0;
	}
	if (write_latencies(argv[2], lat, timed))
		return 1;
	printf("calls %ld\njumps %ld\n", n, jumps);
	return 0;
}
