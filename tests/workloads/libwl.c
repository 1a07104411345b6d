/*
 * libwl.c - the shared library libwl.so used by uselib: lib_hot() burns
 * CPU (the hot function a profile must name), lib_call() is a short call
 * the tracing tests count; lib_calls_made counts them, so that a trace can
 * read a global of the library at each call's entry (the calls before it).
 */
static volatile unsigned long lib_sink;
volatile int lib_calls_made;

__attribute__((noinline)) void lib_hot(unsigned long n)
{
	volatile unsigned long i, acc = 0;

	for (i = 0; i < n; i++)
		acc += i * i;
	lib_sink += acc;
}

__attribute__((noinline)) int lib_call(int x)
{
	volatile int frame = x;

	lib_sink += frame;
	lib_calls_made++;
	return frame * 2;
}
