/*
 * stepped.c - ground truth for latencies net of a probe's own cost where
 * that cost is large. stepped_call()'s first instruction is a lea, which
 * the kernel's uprobes single-step out of line (9-13 us a call in these
 * VMs; probe_cost.c calibrates the class on the same instruction), and
 * each call spins a known time: 20 us in 97 calls of 100, 200 us in 3.
 * So p50, p90 and p95 are 20 us and p99 is 200 us, each at least two
 * points inside its plateau. Runs until killed.
 * Usage: stepped
 */
#include "spin.h"

__attribute__((noinline)) void spin_call(long ns)
{
	spin(ns);
}

/* The lea (a no-op here), then a tail jump: what a probe times is
 * spin_call()'s work, and nothing of its own but the single-step. */
__attribute__((naked, noinline)) void stepped_call(long ns)
{
	__asm__ volatile("lea 1(%rdi),%rax\n\tjmp spin_call\n");
}

int main(void)
{
	for (long i = 0;; i++)
		stepped_call(i % 100 < 97 ? 20000 : 200000);
}
