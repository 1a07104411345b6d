/*
 * probesafe.c - target of the probe-safety tests (tests/e2e/test_probe_safety.py).
 * Every probe liveprof puts into it must leave it running with its own
 * checksum intact; the counts it prints are the ground truth of the hit
 * counts. Links libwl.so (rpath $ORIGIN) and calls lib_call() there.
 *
 * Each round calls ps_target() once (straight-line code: every one of its
 * instructions runs once per call), ps_mid() once (a movabs whose
 * line-table row for the MIDINSN line points into the middle of it),
 * ps_burn(n) once (-O2: the BURN_BODY line runs n times) and lib_call()
 * once. The checksum folds every result, so a probe that corrupts an
 * instruction shows as a wrong checksum even when nothing crashes; the
 * test recomputes it from the same formulas.
 *
 * With GOFILE, it waits until that file exists before the first round
 * (so that liveprof -p has attached everything first).
 * Prints at exit: "rounds N", "burn_iters N", "checksum HEX".
 * Usage: probesafe ROUNDS [GOFILE]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int lib_call(int x);

__attribute__((noinline)) unsigned long ps_target(unsigned long x)
{
	volatile unsigned long frame = x; /* a real frame: push %rbp; mov %rsp,%rbp */

	return (frame ^ (frame >> 7)) * 0x9e3779b97f4a7c15UL + 12345;
}

enum { MIDINSN_LINE = __LINE__ }; /* MIDINSN: no code of its own but the row in ps_mid() */

__attribute__((noinline)) unsigned long ps_mid(unsigned long x)
{
	unsigned long r;

	/*
	 * movabs $0x0807060504030201,%rax, spelt so that the assembler puts
	 * a line-table row for the next line on its third byte (the
	 * "add $1,%al" is never executed: its bytes are the immediate).
	 */
	__asm__ volatile(".byte 0x48, 0xb8\n\t"
			 ".loc 1 %c1 0\n\t"
			 "add $0x1, %%al\n\t"
			 ".byte 3, 4, 5, 6, 7, 8\n\t"
			 : "=a"(r)
			 : "i"(MIDINSN_LINE));
	return r ^ x;
}

__attribute__((noinline, optimize("O2"))) unsigned long ps_burn(unsigned long n)
{
	unsigned long x = n;

	for (unsigned long i = 0; i < n; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL; /* BURN_BODY */
		x ^= x >> 29;
	}
	return x;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 1000;
	unsigned long sum = 0, iters = 0;

	if (argc > 2) {
		struct timespec ts = {0, 2000000};

		while (access(argv[2], F_OK))
			nanosleep(&ts, NULL);
	}
	for (long r = 0; r < rounds; r++) {
		unsigned long n = 100 + (r & 7);

		sum = sum * 31 + ps_target((unsigned long)r); /* CALL_LINE */
		sum = sum * 31 + ps_mid((unsigned long)r);
		sum = sum * 31 + ps_burn(n);
		sum = sum * 31 + (unsigned long)lib_call((int)(r & 1023));
		iters += n;
	}
	printf("rounds %ld\nburn_iters %lu\nchecksum %016lx\n", rounds, iters, sum);
	fflush(stdout);
	return 0;
}
