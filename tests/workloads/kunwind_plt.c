/*
 * kunwind_plt.c - most of the time in and around PLT stubs, without frame
 * pointers: plt_caller() calls libwl.so's lib_call() through the PLT in a
 * tight loop. Samples in the stub itself (CFA = rsp + 8 or + 16,
 * depending on where in the stub) must still find plt_caller and main.
 */
#include <stdlib.h>

int lib_call(int x);

static volatile unsigned long sink;

__attribute__((noinline, noclone)) void plt_caller(void)
{
	for (;;)
		sink += (unsigned long)lib_call((int)sink);
}

int main(void)
{
	plt_caller();
	return 0;
}
