/*
 * linkplug.c - a C program linked (not dlopen'ed) to libcbridge.so, which
 * needs the C++ plugin libcxxplug.so: the C++ runtime is mapped at its
 * start, two DT_NEEDED levels down. As in dlplug.c, the plugin calls back
 * cb() under try/catch, and cb() calls the plugin's thrower, so every
 * other call of cb() is unwound by a C++ exception: a return probe on cb()
 * would abort the program at the first throw.
 * Usage: linkplug ROUNDS. Prints "rounds N" and "caught J" at the end.
 */
#include <stdlib.h>

#include "plugcb.h"

int bridge_call(int (*cb)(int), int i);
void bridge_throw(int i);

int main(int argc, char **argv)
{
	plugin_throw = bridge_throw;
	return run_rounds(bridge_call, argc > 1 ? atol(argv[1]) : 100);
}
