// SPDX-License-Identifier: GPL-2.0
/*
 * usdt.c - USDT probes (<sys/sdt.h>) with known counts and argument values.
 *
 * usdt ROUNDS [FAST_US SLOW_US]: each round i (0..ROUNDS-1) fires
 *   lpw:tick(i, i % 3, 5)          int in a register, long, constant "-4@$5"
 *   lpw:mem(7 * (i % 4))            a volatile local: a memory operand
 *   lpw:global(g_rounds)            a global: "8@g_rounds(%rip)"
 *   lpw:name("alpha" | "beta")      a string, alternating (i % 2)
 *   lpw:req__start(i, slow), a busy wait of SLOW_US when i % 10 == 9 else
 *   FAST_US, lpw:req__done(i)       an entry/return pair: 10% slow
 *   lpw:expensive(v, n)             only if its semaphore is set: the
 *                                   argument is computed only then
 * and prints "computed N" at the end: the rounds that saw the semaphore
 * set (0 when nothing traces lpw:expensive), then "elapsed US" (the
 * rounds' wall time: with no busy wait, what the probes cost per round).
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/sdt.h>

/* <sys/sdt.h> with semaphores wants one per probe, in section .probes */
#define SEMA(name) unsigned short lpw_##name##_semaphore __attribute__((section(".probes"), used))
SEMA(tick);
SEMA(mem);
SEMA(global);
SEMA(name);
SEMA(req__start);
SEMA(req__done);
SEMA(expensive);

long g_rounds;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void spin_us(double us)
{
	double end = now_us() + us;

	while (now_us() < end)
		;
}

/* What a probe guarded by its semaphore would not want to pay for. */
static __attribute__((noinline)) long expensive(long i)
{
	volatile long s = 0;

	for (long k = 1; k <= 100; k++)
		s += k;
	return s + i - i; /* 5050 */
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 3000, computed = 0;
	double fast = argc > 2 ? atof(argv[2]) : 200, slow = argc > 3 ? atof(argv[3]) : 2000;
	double t0;

	/* BPF cannot fault a page in: touch the strings' page, which only
	 * their pointers would otherwise reach, so that the first read of
	 * "alpha" does not fail (it would, as a fault counted by liveprof) */
	for (const char *volatile p = "alpha"; *p; p++)
		;
	for (const char *volatile p = "beta"; *p; p++)
		;
	t0 = now_us();
	for (long i = 0; i < rounds; i++) {
		volatile long mem = 7 * (i % 4);
		int slow_call = i % 10 == 9;

		g_rounds = i + 1;
		DTRACE_PROBE3(lpw, tick, (int)i, i % 3, 5);
		DTRACE_PROBE1(lpw, mem, mem);
		DTRACE_PROBE1(lpw, global, g_rounds);
		/* a pointer in a register (names[i % 2] would be an indexed
		 * operand, "8@(%r15,%rax,8)", which liveprof refuses) */
		const char *name = i % 2 ? "beta" : "alpha";

		DTRACE_PROBE1(lpw, name, name);
		DTRACE_PROBE2(lpw, req__start, i, slow_call);
		spin_us(slow_call ? slow : fast);
		DTRACE_PROBE1(lpw, req__done, i);
		if (lpw_expensive_semaphore) {
			computed++;
			DTRACE_PROBE2(lpw, expensive, expensive(i), computed);
		}
	}
	printf("computed %ld\n", computed);
	printf("elapsed %.0f\n", now_us() - t0);
	return 0;
}
