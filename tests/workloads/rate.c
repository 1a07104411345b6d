/*
 * rate.c - calls tick() (about a microsecond of work) as fast as it can and
 * every 100 ms appends "SECONDS CALLS" (monotonic time, total calls so far)
 * to OUTFILE, so a test can see its call rate before, during and after a
 * probe. Runs until killed.
 * Usage: rate OUTFILE
 */
#include <stdio.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void tick(void)
{
	volatile unsigned long i, acc = 0;

	for (i = 0; i < 300; i++)
		acc += i;
	sink += acc;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	FILE *f;
	unsigned long calls = 0;
	double next;

	if (argc < 2 || !(f = fopen(argv[1], "a")))
		return 2;
	next = now() + 0.1;
	for (;;) {
		for (int j = 0; j < 100; j++)
			tick();
		calls += 100;
		double t = now();
		if (t >= next) {
			fprintf(f, "%.6f %lu\n", t, calls);
			fflush(f);
			next += 0.1;
		}
	}
}
