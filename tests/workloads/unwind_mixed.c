/*
 * unwind_mixed.c - a mixed stack: this program keeps frame pointers, and
 * its hot comparator is called back from glibc's qsort, which has none.
 * A frame-pointer walk breaks inside qsort; the truth is
 * main -> sort_all -> qsort internals -> cmp.
 */
#include <stdlib.h>
#include <time.h>

#define N 20000

static double seconds;
static unsigned int a[N];

__attribute__((noinline)) int cmp(const void *x, const void *y)
{
	volatile unsigned int spin = 0;
	unsigned int p = *(const unsigned int *)x, q = *(const unsigned int *)y;

	/* make the comparator, not the sort, the hot code */
	for (int i = 0; i < 200; i++)
		spin += i;
	return (p > q) - (p < q);
}

__attribute__((noinline)) void sort_all(void)
{
	volatile int frame = 0;

	for (int i = 0; i < N; i++)
		a[i] = (unsigned int)rand();
	qsort(a, N, sizeof(a[0]), cmp);
	frame++;
}

int main(int argc, char **argv)
{
	struct timespec t0, t;

	seconds = argc > 1 ? atof(argv[1]) : 1e9;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sort_all();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return 0;
}
