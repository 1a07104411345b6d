// SPDX-License-Identifier: GPL-2.0
/*
 * annot.c - per-line truth for annotate and the Source view (issue 18).
 *
 * work() runs loop A n times and loop B 3n times with the same body (a
 * multiply-add in a register, whose imul latency sets the pace), so loop
 * A holds 1/4 of work()'s samples and loop B 3/4. The body was a volatile
 * read-add-write until an AMD EPYC host ran loop A twice as fast per step
 * as loop B (perf and liveprof alike gave it 13% for 25%): store-to-load
 * forwarding did not take the two copies alike; a register chain has no
 * memory in it to differ. Loop B's body is
 * an always_inline call: its samples fold under the call line. The
 * tests read the line numbers below from this file (the LINE_* markers),
 * so moving code does not break them. A random pause (dephase.h, its own
 * frame) after each call keeps the sampler from locking onto its phase.
 *
 * Usage: annot [SECONDS]   (default: run until killed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dephase.h"

#define MUL 0x9e3779b97f4a7c15ul

/* @v unchanged, but the compiler may assume nothing of it: no loop is
 * vectorized or folded. Emits no instruction. */
static inline __attribute__((always_inline)) unsigned long paced(unsigned long v)
{
	__asm__ volatile("" : "+r"(v));
	return v;
}

static inline __attribute__((always_inline)) unsigned long step(unsigned long a, unsigned long i)
{
	return a * MUL + i; /* LINE_STEP */
}

/* @m is 3 * @n, passed apart so that both loops compile to the same code */
__attribute__((noinline)) unsigned long work(unsigned long n, unsigned long m)
{
	/* a frame (stacks read main;work), read at LINE_RET so that it has code */
	volatile int frame = 0;
	unsigned long a = 0;
	unsigned long i;

	for (i = 0; i < n; i++)		 /* LINE_A_FOR */
		a = paced(a * MUL + i);	 /* LINE_A_BODY */
	for (i = 0; i < m; i++)		 /* LINE_B_FOR */
		a = paced(step(a, i));	 /* LINE_B_BODY */
	return a + (unsigned long)frame; /* LINE_RET */
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0, t0 = now();
	volatile unsigned long n = 200000;
	unsigned long sum = 0;
	unsigned int seed = 18;

	while (!secs || now() - t0 < secs) {
		sum += work(n, 3 * n);
		dephase(&seed, 4 * n);
	}
	printf("%lu\n", sum);
	return 0;
}
