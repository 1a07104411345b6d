/*
 * kunwind_dlopen.c - a library loaded while profiled, without frame
 * pointers anywhere: main() spins in spin() for argv[1] seconds, then
 * dlopen()s argv[2]/libwl_nofp.so and calls its lib_hot() from
 * dl_caller() for argv[3] seconds (default: for ever), then dlclose()s it
 * and spins again. Its unwind table must be loaded when the first samples
 * show an unknown mapping, and dropped once it is unmapped.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline, noclone)) void spin(double seconds)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			sink += i;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

__attribute__((noinline, noclone)) void dl_caller(void (*hot)(unsigned long), double seconds)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		hot(1000000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

int main(int argc, char **argv)
{
	char path[4096];
	const char *dir = argc > 2 ? argv[2] : ".";
	void *h;
	void (*hot)(unsigned long);

	spin(argc > 1 ? atof(argv[1]) : 1.0);
	snprintf(path, sizeof(path), "%s/libwl_nofp.so", dir);
	h = dlopen(path, RTLD_NOW);
	if (!h)
		return 3;
	hot = (void (*)(unsigned long))dlsym(h, "lib_hot");
	if (!hot)
		return 3;
	dl_caller(hot, argc > 3 ? atof(argv[3]) : 1e9);
	dlclose(h);
	spin(1e9);
	return 0;
}
