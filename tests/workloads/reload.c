/*
 * reload.c - a plugin unloaded and another loaded in its place: main
 * dlopen()s FIRST (a copy of libwl.so), calls its lib_call() N times and
 * dlclose()s it, then does the same with SECOND (another copy). The
 * second mapping usually takes the range the first left, so both
 * lib_call()s run at one address, in two files, one after the other in
 * one thread. Prints "lib_call ADDRESS N" for each.
 * Usage: reload N FIRST SECOND
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static int run(const char *path, long n)
{
	int (*call)(int);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	call = (int (*)(int))dlsym(h, "lib_call");
	if (!call)
		return 1;
	for (long i = 0; i < n; i++)
		call((int)i);
	printf("lib_call %p %ld\n", (void *)call, n);
	fflush(stdout);
	return dlclose(h) ? 1 : 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;

	if (argc < 4)
		return 2;
	return run(argv[2], n) || run(argv[3], n);
}
