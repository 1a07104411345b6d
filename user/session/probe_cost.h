/* SPDX-License-Identifier: GPL-2.0 */
/*
 * probe_cost.h - what an entry+return probe pair costs, per class of the
 * probed function's first instruction, measured on this machine.
 */
#ifndef LP_USER_PROBE_COST_H
#define LP_USER_PROBE_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_session;

/*
 * How the kernel handles the probed instruction decides the cost: it
 * emulates pushes of a register (any register), and single-steps most
 * other instructions out of line, which costs several times more.
 */
enum probe_insn_class {
	PIC_PUSH_RBP = 0,
	PIC_PUSH_RBX,
	PIC_PUSH_R12,
	PIC_PUSH_R13,
	PIC_PUSH_R14,
	PIC_PUSH_R15,
	PIC_PUSH_OTHER, /* rax..rdi, r8..r11: measured as push %rbx */
	PIC_ENDBR64,
	PIC_SUB_RSP,   /* sub $imm,%rsp */
	PIC_STEPPED,   /* anything else: measured with lea 1(%rdi),%rax */
	PIC_USDT_PAIR, /* not an entry: a USDT pair, two uprobes on nops (never classified) */
	PIC_PY_PAIR,   /* py: one single-stepped probe (resume_frame, a return label), one nop */
	PIC_PY_TRAPS,  /* the py: programs on two nops, idle: what a hit costs but the program */
	PIC_PY_TRAPS2, /* the same, each nop probed twice: one more program at a hit */
	PIC_NR,
};

/*
 * Or'ed into an entry class (up to PIC_STEPPED) for a function whose
 * returns are probed on its `ret` instructions (Go, and processes that
 * unwind their stacks), which the kernel single-steps: an order of
 * magnitude dearer than a uretprobe's return.
 */
#define PIC_RET_INSN 0x100

struct probe_cost {
	bool measured;
	uint64_t cost_ns; /* added per call (entry + return), all of it */
	uint64_t self_ns; /* the part of it inside the call's own latency */
};

/** probe_insn_classify - class of the instruction in @b (@n bytes read) */
enum probe_insn_class probe_insn_classify(const uint8_t *b, size_t n);

/** probe_insn_class_name - short text for @c ("push %rbp", "single-stepped") */
const char *probe_insn_class_name(enum probe_insn_class c);

/**
 * probe_cost_measure - time a probe pair on a copy of class @c's first
 * instruction in liveprof's own process
 * @bpf: the session whose programs are attached
 * @probe_id: a free probe id, configured as a function probe meanwhile
 * @c: the class, | PIC_RET_INSN to probe the stub's `ret` instead of
 *	its return (function classes only)
 * @out: the result (out->measured false if it could not be measured)
 *
 * Calls the class's stub in batches with and without the probes, in a
 * child process forked for it (whose address space no other thread
 * changes meanwhile), and compares the lower quartiles of the batch times
 * (preemption only ever adds time); self_ns is the median latency the
 * probes recorded for the stub, whose own work is a few instructions.
 * Each is the least of a few rounds: noise comes in bursts.
 *
 * Return: 0 or a negative errno.
 */
int probe_cost_measure(struct bpf_session *bpf, int probe_id, int c, struct probe_cost *out);

#endif
