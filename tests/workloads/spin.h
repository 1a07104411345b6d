/*
 * spin.h - a monotonic clock in ns and a busy wait on it, for workloads
 * whose calls last known times (jumps.c, throws.cc), and the file of the
 * latencies they measured.
 */
#ifndef LP_WORKLOADS_SPIN_H
#define LP_WORKLOADS_SPIN_H

#include <stdio.h>
#include <time.h>

static inline long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* Spin on the CPU for @ns. */
static inline void spin(long ns)
{
	long end = now_ns() + ns;
	volatile long n = 0;

	while (now_ns() < end)
		n++;
}

/* The @n latencies in @lat, one per line (ns), into @path; 0 or -1. */
static inline int write_latencies(const char *path, const long *lat, long n)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	for (long i = 0; i < n; i++)
		fprintf(f, "%ld\n", lat[i]);
	return fclose(f) ? -1 : 0;
}

#endif
