/*
 * argso2.c - built with -O2: compute()'s arguments live in location lists
 * (x is in %rdi only until the first call, then in a
 * callee-saved register: a location list). main calls compute(x, 40, &acc)
 * with x cycling through four values and prints "x VALUE COUNT" for each.
 * Usage: argso2 N
 */
#include <stdio.h>
#include <stdlib.h>

struct acc {
	long sum;
	long n;
};

__attribute__((noinline)) long mix(long a, long b)
{
	return (a * 31) ^ b;
}

__attribute__((noinline)) long compute(long x, long y, struct acc *a)
{
	long r = mix(y, 3); /* %rdi is reused: x must move */

	for (long i = 0; i < y; i++)
		r += mix(x * i, r >> 3);
	a->sum += r;
	a->n++;
	return r;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	long counts[4] = { 0 };
	struct acc acc = { 0, 0 };
	static const long xs[4] = { 17, 1017, 2017, 3017 };

	for (long i = 0; i < n; i++) {
		int k = (i % 10) < 4 ? 0 : (i % 10) < 7 ? 1 : (i % 10) < 9 ? 2 : 3;

		compute(xs[k], 40, &acc);
		counts[k]++;
	}
	for (int k = 0; k < 4; k++)
		printf("x %ld %ld\n", xs[k], counts[k]);
	printf("sum %ld\n", acc.sum);
	return 0;
}
