/*
 * uselib.c - links libwl.so (rpath $ORIGIN). Each round calls lib_hot()
 * (nearly all of the CPU) then lib_call() once. Prints "lib_call N" with
 * the exact number of lib_call() calls at exit.
 * With DELAY, it first sleeps DELAY seconds (so that a tracer waiting for
 * libwl.so to be mapped has attached before the first call).
 * Usage: uselib [SECONDS [DELAY]]
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

	if (argc > 2) {
		double delay = atof(argv[2]);
		struct timespec ts = { (time_t)delay, (long)((delay - (time_t)delay) * 1e9) };

		nanosleep(&ts, NULL);
	}
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
	fflush(stdout);
	return 0;
}
