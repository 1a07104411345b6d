/*
 * execpair.c - a thread that execs. main calls stage() N times, prints
 * "stage N", and, given NEXT, execs it from the same thread, which keeps
 * its task (and so liveprof's per-thread state in task storage). Given a
 * copy of this very file as NEXT, and no address randomization (setarch
 * -R, which the exec keeps), both images have their stage() at the same
 * address, in two files: probes on the two are two traces at one address
 * in one thread, before and after the exec.
 * Usage: execpair N [NEXT]
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void stage(unsigned long i)
{
	volatile unsigned long frame = i;

	sink += frame * 3;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;

	for (long i = 0; i < n; i++)
		stage((unsigned long)i);
	printf("stage %ld\n", n);
	fflush(stdout);
	if (argc > 2) {
		execl(argv[2], argv[2], argv[1], (char *)NULL);
		perror("execl");
		return 1;
	}
	return 0;
}
