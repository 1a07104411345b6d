/*
 * bench_forkexec.c - a fork/exec/exit storm: the main process burns a
 * little CPU and, in a loop, forks children that exec /bin/true (and, every
 * other time, children that just _exit), reaping them all. Prints
 * "children N" at the end.
 * Usage: bench_forkexec [SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(void)
{
	volatile unsigned long acc = 0;

	for (int i = 0; i < 200000; i++)
		acc += i;
	sink += acc;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1e9, start = now();
	long children = 0;

	while (now() - start < seconds) {
		pid_t pid = fork();

		if (pid == 0) {
			if (children & 1)
				_exit(0);
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		if (pid > 0) {
			children++;
			waitpid(pid, NULL, 0);
		}
		spin();
	}
	printf("children %ld\n", children);
	return 0;
}
