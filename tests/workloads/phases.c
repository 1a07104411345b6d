/*
 * phases.c - two phases on different code, for the reclaim of idle stacks:
 * for SECONDS_A the program walks a binary tree of a_l()/a_r() calls of
 * depth 6 (64 call paths) to a spinning a_leaf(), then for SECONDS_B the
 * same through b_l()/b_r() to b_leaf(). With a short window, phase A's
 * stacks go idle while B runs and are folded; the whole-run profile must
 * still give phase A its share. With SECONDS_A2, phase A runs again after
 * B, on the very stacks that were folded (and, kept, shed their
 * addresses). Each phase's thread CPU time is written to OUT (two lines,
 * "a SECONDS" with both runs of A, and "b SECONDS"): the ground truth of
 * that share.
 * Usage: phases SECONDS_A SECONDS_B OUT [SECONDS_A2]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define DEPTH 6

static volatile unsigned long sink;

static double now(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

#define SPIN()                                                                                     \
	do {                                                                                       \
		volatile unsigned long acc = 0;                                                    \
		for (int i = 0; i < 20000; i++)                                                    \
			acc += i;                                                                  \
		sink += acc;                                                                       \
	} while (0)

__attribute__((noinline)) void a_leaf(void)
{
	SPIN();
}

__attribute__((noinline)) void b_leaf(void)
{
	SPIN();
}

/* One node of phase P's tree (P_l or P_r: the same code under two names,
 * so that the path shows in the stack): the path's bits pick the next. */
#define NODE(P, side)                                                                              \
	__attribute__((noinline)) void P##_##side(unsigned int bits, int depth)                    \
	{                                                                                          \
		volatile int frame = 0;                                                            \
		if (depth == DEPTH)                                                                \
			P##_leaf();                                                                \
		else if (bits & 1)                                                                 \
			P##_r(bits >> 1, depth + 1);                                               \
		else                                                                               \
			P##_l(bits >> 1, depth + 1);                                               \
		frame++;                                                                           \
	}

#define TREE(P)                                                                                    \
	void P##_l(unsigned int bits, int depth);                                                  \
	void P##_r(unsigned int bits, int depth);                                                  \
	NODE(P, l)                                                                                 \
	NODE(P, r)

TREE(a)
TREE(b)

/* Run @fn over evenly spread paths for @seconds; its thread CPU time. */
static double phase(void (*fn)(unsigned int, int), double seconds)
{
	double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
	unsigned int x = 2463534242u;

	while (now(CLOCK_MONOTONIC) - t0 < seconds) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		fn(x >> 16, 0);
	}
	return now(CLOCK_THREAD_CPUTIME_ID) - c0;
}

int main(int argc, char **argv)
{
	double a, b;
	FILE *f;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: phases SECONDS_A SECONDS_B OUT [SECONDS_A2]\n");
		return 2;
	}
	a = phase(a_l, atof(argv[1]));
	b = phase(b_l, atof(argv[2]));
	if (argc == 5)
		a += phase(a_l, atof(argv[4]));
	f = fopen(argv[3], "w");
	if (!f)
		return 1;
	fprintf(f, "a %.6f\nb %.6f\n", a, b);
	return fclose(f) ? 1 : 0;
}
