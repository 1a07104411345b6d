/*
 * manystacks.c - many distinct stacks for the soak benchmark: request i
 * walks a binary tree of depth 16 (l() or r() at each level by the bits of
 * a pseudo-random 16-bit number) and spins at the bottom, so samples
 * spread over up to 65,536 distinct stacks, evenly: an LCG's low bits,
 * sampled every ~100 requests, alias onto a subset (46,101 of them after
 * 400,000 samples).
 * Usage: manystacks [SECONDS]
 */
#include <stdlib.h>
#include <time.h>

#define DEPTH 16

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

	if (depth == DEPTH)
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

	if (depth == DEPTH)
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
	struct timespec t0, t;
	unsigned int x = 2463534242u;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		/* xorshift32: its high 16 bits pick the path */
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		l(x >> 16, 0);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
	}
	return 0;
}
