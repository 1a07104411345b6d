/*
 * kunwind_signal.c - stacks through a signal handler, without frame
 * pointers. main() -> interrupted() spins; a SIGPROF every 2 ms of CPU
 * time runs on_signal() -> in_handler() for about half of it. Samples in
 * in_handler() must unwind through glibc's __restore_rt back to
 * interrupted() and main().
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>

static volatile unsigned long sink;

__attribute__((noinline, noclone)) void in_handler(void)
{
	for (unsigned long i = 0; i < 600000; i++)
		sink += i ^ (sink >> 3);
}

__attribute__((noinline, noclone)) void on_signal(int sig)
{
	in_handler();
	sink += (unsigned long)sig;
}

__attribute__((noinline, noclone)) void interrupted(void)
{
	for (;;)
		sink += sink * 3 + 1;
}

int main(void)
{
	struct sigaction sa = {.sa_handler = on_signal};
	struct itimerval it = {{0, 2000}, {0, 2000}};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	interrupted();
	return 0;
}
