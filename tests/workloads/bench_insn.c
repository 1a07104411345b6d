/*
 * bench_insn.c - probe cost per first-instruction class. Each target
 * function starts with a known instruction, written in assembly so the
 * compiler cannot change it:
 *   rbp   push %rbp        (the kernel emulates it)
 *   rbx   push %rbx        (emulated too)
 *   r15   push %r15        (emulated too, REX prefix)
 *   lea   lea 1(%rdi),%rax (single-stepped out of line)
 *   sub   sub $8,%rsp      (single-stepped out of line)
 * main calls insn_CLASS() in a tight loop and prints, every 0.5 s,
 * "T_NS NS_PER_CALL" like bench_call, but NS_PER_CALL is the thread's CPU
 * time per call (CLOCK_THREAD_CPUTIME_ID): a probe's trap is handled on
 * the thread's time, and on a shared machine wall time would also count
 * the time other processes had the CPU.
 * Usage: bench_insn CLASS [SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

long insn_rbp(long x);
long insn_rbx(long x);
long insn_r15(long x);
long insn_lea(long x);
long insn_sub(long x);

/* Same work in each: a few instructions after the probed one. Each has
 * its call frame information, as compiled code has: in a file with
 * .eh_frame, liveprof proves a function's start by its FDE and does not
 * take a bare symbol's word for it (dwarf/probe_prove.c). */
__asm__(".text\n"
	".globl insn_rbp\n.type insn_rbp,@function\ninsn_rbp:\n.cfi_startproc\n"
	"\tpush %rbp\n.cfi_def_cfa_offset 16\n.cfi_offset %rbp,-16\n"
	"\tmov %rsp,%rbp\n.cfi_def_cfa_register %rbp\n\tlea 1(%rdi),%rax\n"
	"\tpop %rbp\n.cfi_def_cfa %rsp,8\n\tret\n.cfi_endproc\n"
	".size insn_rbp,.-insn_rbp\n"
	".globl insn_rbx\n.type insn_rbx,@function\ninsn_rbx:\n.cfi_startproc\n"
	"\tpush %rbx\n.cfi_def_cfa_offset 16\n.cfi_offset %rbx,-16\n"
	"\tlea 1(%rdi),%rbx\n\tmov %rbx,%rax\n\tpop %rbx\n.cfi_def_cfa_offset 8\n"
	"\tret\n.cfi_endproc\n"
	".size insn_rbx,.-insn_rbx\n"
	".globl insn_r15\n.type insn_r15,@function\ninsn_r15:\n.cfi_startproc\n"
	"\tpush %r15\n.cfi_def_cfa_offset 16\n.cfi_offset %r15,-16\n"
	"\tlea 1(%rdi),%r15\n\tmov %r15,%rax\n\tpop %r15\n.cfi_def_cfa_offset 8\n"
	"\tret\n.cfi_endproc\n"
	".size insn_r15,.-insn_r15\n"
	".globl insn_lea\n.type insn_lea,@function\ninsn_lea:\n.cfi_startproc\n"
	"\tlea 1(%rdi),%rax\n\tnop\n\tnop\n\tret\n.cfi_endproc\n"
	".size insn_lea,.-insn_lea\n"
	".globl insn_sub\n.type insn_sub,@function\ninsn_sub:\n.cfi_startproc\n"
	"\tsub $8,%rsp\n.cfi_def_cfa_offset 16\n\tlea 1(%rdi),%rax\n"
	"\tadd $8,%rsp\n.cfi_def_cfa_offset 8\n\tret\n.cfi_endproc\n"
	".size insn_sub,.-insn_sub\n");

static volatile long sink;

static unsigned long long clock_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (unsigned long long)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

static unsigned long long now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		long (*fn)(long);
	} classes[] = {{"rbp", insn_rbp},
		       {"rbx", insn_rbx},
		       {"r15", insn_r15},
		       {"lea", insn_lea},
		       {"sub", insn_sub}};
	long (*fn)(long) = NULL;
	double seconds = argc > 2 ? atof(argv[2]) : 1e9;
	unsigned long long start, period, cpu0, n = 0;

	for (size_t i = 0; argc > 1 && i < sizeof(classes) / sizeof(classes[0]); i++)
		if (!strcmp(argv[1], classes[i].name))
			fn = classes[i].fn;
	if (!fn) {
		fprintf(stderr, "usage: bench_insn rbp|rbx|r15|lea|sub [SECONDS]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	start = period = now_ns();
	cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	for (;;) {
		for (int i = 0; i < 64; i++)
			sink += fn(n + i);
		n += 64;
		unsigned long long t = now_ns();
		if (t - period >= 500000000ULL) {
			unsigned long long cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);

			printf("%llu %.2f\n", t, (double)(cpu - cpu0) / n);
			n = 0;
			period = t;
			cpu0 = cpu;
			if ((t - start) / 1e9 > seconds)
				return 0;
		}
	}
}
