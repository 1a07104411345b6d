/*
 * plugcb.h - the C side of the C++ plugin's rounds (dlplug.c, linkplug.c):
 * cb(), which the plugin calls back under try/catch and which calls the
 * plugin's thrower, so every other call of cb() is unwound by a C++
 * exception; and the rounds themselves.
 */
#ifndef LP_WORKLOADS_PLUGCB_H
#define LP_WORKLOADS_PLUGCB_H

#include <stdio.h>

/* the plugin's thrower: throws when its argument is odd */
static void (*plugin_throw)(int);

__attribute__((noinline)) int cb(int i)
{
	volatile int frame = i;

	plugin_throw(i);
	return frame;
}

/* @n rounds of @call(cb, i); prints "rounds N" and "caught J". */
static int run_rounds(int (*call)(int (*)(int), int), long n)
{
	long caught = 0;

	for (long i = 0; i < n; i++)
		caught += call(cb, (int)i) < 0;
	printf("rounds %ld\ncaught %ld\n", n, caught);
	return 0;
}

#endif
