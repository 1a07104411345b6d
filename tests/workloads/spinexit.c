/*
 * spinexit.c - burns CPU in busy() for SECONDS, then exits with STATUS:
 * a target that exits before the profiler's duration is over.
 * Usage: spinexit SECONDS STATUS
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void busy(void)
{
	volatile unsigned long i, acc = 0;

	for (i = 0; i < 100000; i++)
		acc += i * i;
	sink += acc;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2;
	int status = argc > 2 ? atoi(argv[2]) : 0;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		busy();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return status;
}
