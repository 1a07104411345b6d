/* SPDX-License-Identifier: GPL-2.0 */
/*
 * unwind.h - user stacks from DWARF CFI over a copied stack, with libdw.
 *
 * The BPF sampler hands us, for one sampled thread, the registers ip, sp
 * and bp (struct unwind_regs) and a copy of the user stack from sp upwards.
 * By the time we unwind, the live stack has moved on, so stack memory is
 * served only from that copy, never from /proc/PID/mem. Memory outside the
 * copy is read from the file of the module that maps it (.rodata, .data
 * as on disk), and a read that neither can serve ends the unwind.
 *
 * A struct unwinder keeps one Dwfl per process, with the modules read from
 * /proc/PID/maps and libdw's caches of their CFI, so nothing is re-read
 * per sample. Frames whose module has no CFI (or whose pc is in no module)
 * are unwound by libdw's x86-64 frame-pointer fallback, from the copy too.
 *
 * Returned pcs: pcs[0] is the sampled ip, exact. Every later entry is a
 * return address, i.e. the instruction *after* the call: callers subtract
 * 1 before symbolizing pcs[i] for i >= 1 (signal frames, whose pc is exact,
 * are stored as pc + 1 so that the same rule holds for every i >= 1).
 *
 * Not thread-safe: one unwinder per thread, or a lock around it.
 * x86-64 only (DWARF registers 6 = rbp, 7 = rsp, 16 = rip).
 */
#ifndef LP_DWARF_UNWIND_H
#define LP_DWARF_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The user registers a sample gives the unwinder (dwarf/'s own type; the
 * session fills it from the BPF contract's struct lp_uregs). */
struct unwind_regs {
	uint64_t ip;
	uint64_t sp;
	uint64_t bp;
};

/*
 * The [uprobes] trampoline page on x86-64: while a uretprobe is pending,
 * the kernel writes an address in it over the frame's return address.
 */
#define UNWIND_TRAMP_LO 0x7fffffffe000ULL
#define UNWIND_TRAMP_HI 0x7ffffffff000ULL

/*
 * A return-address slot that a pending uretprobe overwrote with the
 * [uprobes] trampoline address (UNWIND_TRAMP_LO..HI): @slot is the user
 * address of the 8-byte slot, @ret the real return address saved at entry
 * (saved by the tracer at the call's entry).
 */
struct unwind_fixup {
	uint64_t slot;
	uint64_t ret;
};

/*
 * What one sample gives the unwinder. @stack is a copy of user memory
 * [regs->sp, regs->sp + @stack_len); it may be shorter than requested.
 * @fixups may be NULL when @nr_fixups is 0.
 */
struct unwind_input {
	const struct unwind_regs *regs;
	const void *stack;
	size_t stack_len;
	const struct unwind_fixup *fixups;
	size_t nr_fixups;
};

struct unwinder;

/**
 * unwinder__new - create an unwinder that knows no process yet
 *
 * Return: the unwinder, or NULL with errno set (ENOMEM).
 */
struct unwinder *unwinder__new(void);

/**
 * unwinder__free - end every per-process Dwfl and free the unwinder
 * @u: the unwinder, may be NULL
 */
void unwinder__free(struct unwinder *u);

/**
 * unwinder__add_pid - report (or refresh) the modules mapped by a process
 * @u: the unwinder
 * @pid: the process (tgid)
 *
 * Reads /proc/PID/maps and opens every mapped ELF file now, while the
 * process is alive (the [vdso] image is read from its memory). Call it
 * again after the process maps or unmaps libraries; modules that stayed
 * keep their caches. unwinder__unwind() calls it on first use of a pid.
 *
 * Return: 0, or a negative errno (-ESRCH: no such process, -ENOMEM,
 * -EINVAL: libdwfl refused the process).
 */
int unwinder__add_pid(struct unwinder *u, int pid);

/**
 * unwinder__reports - how many times the unwinder has read the mappings of
 * a process so far (added, refreshed, or a pc no module covered): a caller
 * that skips refreshes while the maps stay the same learns from it that
 * the unwinder looked in between
 */
uint64_t unwinder__reports(const struct unwinder *u);

/**
 * unwinder__remove_pid - forget a process and free its Dwfl
 * @u: the unwinder
 * @pid: the process; unknown pids are ignored
 */
void unwinder__remove_pid(struct unwinder *u, int pid);

/**
 * unwinder__unwind_input - full DWARF unwind of a copied stack
 * @u: the unwinder
 * @pid: the process the sample came from
 * @in: registers, stack copy and uretprobe fix-ups of the sample
 * @pcs: filled with at most @max pcs, innermost first (see the top of
 *	this file for what each entry means)
 * @max: capacity of @pcs, >= 1
 * @truncated: set to true when the unwind stopped because it needed
 *	memory outside the copy (the copy was too short); false when it
 *	reached the outermost frame, filled @pcs, or found no way to go on.
 *	Frames computed from such a read are dropped, never guessed.
 *
 * When a read hits a slot listed in @in->fixups, the real return address
 * is served instead of the trampoline, so the unwind goes on through the
 * right caller. If the sample itself is in the trampoline (the call has
 * just returned), ip is replaced by the fix-up of the slot just popped,
 * at sp - 8. A trampoline pc without a fix-up is stored and ends the
 * unwind, since nothing correct lies beyond it.
 *
 * Return: the number of pcs (>= 1, pcs[0] = ip), or a negative errno
 * (-EINVAL on bad arguments, or an error of unwinder__add_pid()).
 */
int unwinder__unwind_input(struct unwinder *u, int pid, const struct unwind_input *in,
			   uint64_t *pcs, int max, bool *truncated);

/**
 * unwinder__unwind - unwinder__unwind_input() without uretprobe fix-ups
 * @u: the unwinder
 * @pid: the process the sample came from
 * @regs: user registers at the sample
 * @stack: copy of user memory [regs->sp, regs->sp + @stack_len)
 * @stack_len: bytes in @stack
 * @pcs: output, see unwinder__unwind_input()
 * @max: capacity of @pcs
 * @truncated: output, see unwinder__unwind_input()
 *
 * Return: as unwinder__unwind_input().
 */
int unwinder__unwind(struct unwinder *u, int pid, const struct unwind_regs *regs, const void *stack,
		     size_t stack_len, uint64_t *pcs, int max, bool *truncated);

/**
 * unwinder__fix_leaf_input - put back the caller a frame-pointer walk skipped
 * @u: the unwinder
 * @pid: the process the sample came from
 * @in: registers, stack copy (a few hundred bytes are enough) and fix-ups
 * @pcs: the frame-pointer chain, pcs[0] = ip, pcs[1..n) return addresses;
 *	edited in place
 * @n: entries in @pcs, >= 1
 * @max: capacity of @pcs
 *
 * A frameless leaf (gcc -O2 leaves, glibc assembly, a sample in a
 * prologue or epilogue) leaves rbp pointing at its caller's frame, so the
 * walk reports the caller's caller as pcs[1]. This computes the leaf's CFA
 * and return address with CFI (first frame only) and, if that address is
 * not pcs[1], inserts it at pcs[1]; when @pcs is full the outermost entry
 * is dropped. Nothing changes when CFI cannot tell (no CFI for ip, the
 * return address slot outside the copy, a trampoline address with no
 * fix-up).
 *
 * Return: the new number of entries (@n or @n + 1, at most @max), or a
 * negative errno (-EINVAL on bad arguments, or an error of
 * unwinder__add_pid()).
 */
int unwinder__fix_leaf_input(struct unwinder *u, int pid, const struct unwind_input *in,
			     uint64_t *pcs, int n, int max);

/**
 * unwinder__fix_leaf - unwinder__fix_leaf_input() without fix-ups
 * @u: the unwinder
 * @pid: the process
 * @regs: user registers at the sample
 * @stack: copy of user memory [regs->sp, regs->sp + @stack_len)
 * @stack_len: bytes in @stack
 * @pcs: the frame-pointer chain, edited in place
 * @n: entries in @pcs
 * @max: capacity of @pcs
 *
 * Return: as unwinder__fix_leaf_input().
 */
int unwinder__fix_leaf(struct unwinder *u, int pid, const struct unwind_regs *regs,
		       const void *stack, size_t stack_len, uint64_t *pcs, int n, int max);

/**
 * unwinder__module_has_fp - how much of a module keeps frame pointers
 * @u: the unwinder
 * @pid: the process
 * @addr: any address inside the module
 *
 * Samples up to 256 function symbols of the module (.symtab, else
 * .dynsym), spread evenly, and checks that each starts with "push %rbp"
 * (55, after an optional endbr64) followed within 24 bytes by
 * "mov %rsp,%rbp" (48 89 e5): gcc -O2 schedules other instructions
 * between the two.
 * Cached per module until it is unmapped. Small leaves have no frame even
 * in frame-pointer builds, so such builds score well below 100; treat
 * >= 50 as "has frame pointers".
 *
 * Return: the percentage (0..100) of sampled functions with a frame
 * prologue, or a negative errno (-ENOENT: @addr is in no module,
 * -ENODATA: the module has no function symbols, or an error of
 * unwinder__add_pid()).
 */
int unwinder__module_has_fp(struct unwinder *u, int pid, uint64_t addr);

#endif /* LP_DWARF_UNWIND_H */
