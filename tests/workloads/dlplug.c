/*
 * dlplug.c - a C program (no C++ runtime of its own) that loads a C++
 * plugin (libcxxplug.so, which brings libstdc++) once told to, and then,
 * once told again, calls it: the plugin calls back cb(), which calls the
 * plugin's thrower, so every other call of cb() is unwound by a C++
 * exception. A return probe on cb() put before the plugin was loaded would
 * abort the program at the first throw.
 * Usage: dlplug ROUNDS  (reads a line before dlopen, and one before the rounds)
 * Prints "rounds N" and "caught J" at the end.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "plugcb.h"

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;
	int (*plugin_call)(int (*)(int), int);
	char line[16];
	void *h;

	if (!fgets(line, sizeof(line), stdin))
		return 2;
	h = dlopen("libcxxplug.so", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	plugin_call = (int (*)(int (*)(int), int))dlsym(h, "plugin_call");
	plugin_throw = (void (*)(int))dlsym(h, "plugin_throw");
	printf("loaded\n");
	fflush(stdout);
	if (!plugin_call || !plugin_throw || !fgets(line, sizeof(line), stdin))
		return 2;
	return run_rounds(plugin_call, n);
}
