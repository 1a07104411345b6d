/*
 * latency.c - ground truth for trace percentiles. work(i) spins until a
 * deadline; the durations follow a fixed 200-call cycle:
 *   170 calls x 500 us, 24 x 2 ms, 5 x 6 ms, 1 x 15 ms
 * so p50 = 500 us, p95 = 2 ms, p99 = 6 ms, each in the middle of a plateau.
 * main measures every call itself with clock_gettime and writes the
 * latencies (ns, one per line) to OUTFILE at exit.
 * Usage: latency NCALLS OUTFILE
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

__attribute__((noinline)) long work(int i)
{
	volatile int frame = 0;
	int k = i % 200;
	long d = k < 170 ? 500000 : k < 194 ? 2000000 : k < 199 ? 6000000 : 15000000;
	long end = now_ns() + d;

	while (now_ns() < end)
		frame++;
	return frame;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 4000;
	long *lat = calloc(n, sizeof(*lat));
	FILE *f;

	if (argc < 3 || !lat)
		return 2;
	for (long i = 0; i < n; i++) {
		long t0 = now_ns();

		work((int)i);
		lat[i] = now_ns() - t0;
	}
	f = fopen(argv[2], "w");
	if (!f)
		return 1;
	for (long i = 0; i < n; i++)
		fprintf(f, "%ld\n", lat[i]);
	fclose(f);
	return 0;
}
