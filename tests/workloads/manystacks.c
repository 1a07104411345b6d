/*
 * manystacks.c - many distinct stacks for the soak benchmark: request i
 * walks a binary tree of depth DEPTH (default 16: l() or r() at each level
 * by the bits of a pseudo-random number) and spins at the bottom, so
 * samples spread over up to 2^DEPTH distinct call paths, evenly (an LCG's
 * low bits, sampled every ~100 requests, aliased onto a subset), and over
 * more distinct stacks: a path's samples land on several addresses of
 * leaf()'s loop.
 * Usage: manystacks [SECONDS [DEPTH]]
 */
#include <stdlib.h>
#include <time.h>

#define MAX_DEPTH 16

static int depth_max = MAX_DEPTH;

static volatile unsigned long sink;

__attribute__((noinline)) void leaf(void)
{
	volatile unsigned long acc = 0;

	for (int i = 0; i < 20000; i++)
		acc += i;
	sink += acc;
}

void l(unsigned int bits, int depth);
void r(unsigned int bits, int depth);

__attribute__((noinline)) void l(unsigned int bits, int depth)
{
	volatile int frame = 0;

	if (depth == depth_max)
		leaf();
	else if (bits & 1)
		r(bits >> 1, depth + 1);
	else
		l(bits >> 1, depth + 1);
	frame++;
}

__attribute__((noinline)) void r(unsigned int bits, int depth)
{
	volatile int frame = 0;

	if (depth == depth_max)
		leaf();
	else if (bits & 1)
		r(bits >> 1, depth + 1);
	else
		l(bits >> 1, depth + 1);
	frame++;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1e9;
	int depth = argc > 2 ? atoi(argv[2]) : MAX_DEPTH;
	struct timespec t0, t;
	unsigned int x = 2463534242u;

	if (depth >= 1 && depth <= MAX_DEPTH)
		depth_max = depth;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		/* xorshift32: its high bits pick the path */
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		l(x >> (32 - depth_max), 0);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
	}
	return 0;
}
