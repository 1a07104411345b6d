/*
 * rate.c - calls tick() (about a microsecond of work) as fast as it can and
 * every 100 ms appends "SECONDS CALLS CPU" (monotonic time, total calls so
 * far, CPU seconds this process used, user + system) to OUTFILE, so a test
 * can see its calls per CPU-second (immune to other load on the machine)
 * before, during and after a probe. Runs until killed.
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

static double clock_s(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
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
			fprintf(f, "%.6f %lu %.6f\n", t, calls,
				clock_s(CLOCK_PROCESS_CPUTIME_ID));
			fflush(f);
			next += 0.1;
		}
	}
}
