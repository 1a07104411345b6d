/*
 * uselib.c - links libwl.so (rpath $ORIGIN). Each round calls lib_hot()
 * (nearly all of the CPU) then lib_call() once. Prints "lib_call N" with
 * the exact number of lib_call() calls at exit.
 * Usage: uselib [SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void lib_hot(unsigned long n);
int lib_call(int x);

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1e9;
	struct timespec t0, t;
	long calls = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		lib_hot(100000);
		lib_call((int)(calls & 7));
		calls++;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
	}
	printf("lib_call %ld\n", calls);
	return 0;
}
