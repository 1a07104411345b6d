/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stack_fixup.h - what a sample's user stack needs before and after
 * unwinding: a thread inside the kernel's [uprobes] page (the uretprobe
 * trampoline or an XOL slot) is put back in the function it belongs to,
 * and a stack is cut where an "address" is no code at all.
 */
#ifndef LP_USER_STACK_FIXUP_H
#define LP_USER_STACK_FIXUP_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/liveprof.h"
#include "dwarf/symbolize.h"

/* Start of the XOL slots in the [uprobes] page: slot 0 is the trampoline. */
#define UPROBE_XOL_SLOT_BYTES 128

enum ustate_kind {
	USTATE_PLAIN,	 /* not in the [uprobes] page: unwind as sampled */
	USTATE_RETURNED, /* in the trampoline: the probed call has returned to @regs.ip */
	USTATE_ENTRY,	 /* at a traced function's entry (XOL slot or probed address):
			  * @leaf_pc, then the caller's state in @regs */
	USTATE_LOST,	 /* in the [uprobes] page with nothing to go on */
	USTATE_TRAPPED,	 /* stopped on a probe's int3: regs.ip moved back onto it */
};

/* The user state to unwind from, and where its copied memory is. */
struct ustate {
	enum ustate_kind kind;
	struct lp_uregs regs;
	const uint8_t *redzone; /* LP_REDZONE bytes below regs.sp, NULL without a copy */
	const uint8_t *stack;	/* stack_len bytes from regs.sp */
	uint32_t stack_len;
	uint64_t leaf_pc;  /* USTATE_ENTRY: the sampled pc */
	uint32_t probe_id; /* USTATE_ENTRY: the entry probe of the call */
	uint64_t ret_slot; /* USTATE_RETURNED/ENTRY: where the return address was */
};

/**
 * stack_fixup__state - the state to unwind sample @s from
 * @s: the sample
 * @mem: what follows it: LP_REDZONE bytes below regs.sp, then the
 *       s->stack_len bytes of the copy (ignored when stack_len is 0)
 * @out: filled; pointers point into @mem
 *
 * In the uretprobe trampoline the thread has returned from the probed
 * call: the state becomes the caller's at the real return address saved
 * at entry, with sp just above the return address's slot (no call in
 * flight fits: USTATE_LOST). At a traced function's entry (in an XOL slot
 * or on the probed address, the innermost call in flight having its
 * return address at sp) the state is the caller's, and the sampled pc is
 * kept as the leaf. Elsewhere in the [uprobes] page: USTATE_LOST.
 *
 * @at_site(@ctx, pid, addr) says whether a probe's breakpoint is at @addr.
 * Between the int3 trap and the kernel's uprobe handler, the sampled ip
 * is one past the breakpoint and nothing of the probed instruction has
 * run: the state is then moved back onto the probed address.
 */
void stack_fixup__state(const struct lp_sample *s, const void *mem,
			bool (*at_site)(void *ctx, uint32_t pid, uint64_t addr), void *ctx,
			struct ustate *out);

/*
 * Executable mappings stack_fixup__cut() found lately, by process: the
 * stacks of a process stay in a few, and each lookup searches the maps
 * and compares the mapping's path again. Valid for one generation of the
 * symbolizer's mappings; zeroed: empty.
 */
#define CODE_SPANS 4
struct code_spans {
	uint64_t gen;
	uint32_t pid[CODE_SPANS]; /* 0: empty */
	uint64_t lo[CODE_SPANS], hi[CODE_SPANS];
	unsigned int next; /* the entry the next span replaces */
};

/**
 * stack_fixup__cut - the number of frames of @pcs that are code
 * @sym: knows @pid's mappings
 * @spans: the code mappings found by earlier calls with @sym, updated
 * @pcs: leaf first
 * @n: entries in @pcs
 *
 * Every pc must lie in executable memory: a mapping of a file, the vdso,
 * vsyscall, or anonymous memory (JIT code, which V8 and the JVM run with
 * frame pointers; the unwinders step through it by them); the leaf may
 * also be in the [uprobes] page (a single-step). The first pc that is not
 * (a stack or heap address, data taken for a return address, the
 * trampoline) ends the stack.
 *
 * Return: the count of good frames, <= @n; < @n means the stack was cut.
 */
unsigned int stack_fixup__cut(struct symbolizer *sym, struct code_spans *spans, uint32_t pid,
			      const uint64_t *pcs, unsigned int n);

#endif /* LP_USER_STACK_FIXUP_H */
