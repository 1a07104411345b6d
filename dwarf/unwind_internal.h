/* SPDX-License-Identifier: GPL-2.0 */
/*
 * unwind_internal.h - what unwind.c and unwind_fp.c share; not an API.
 */
#ifndef LP_DWARF_UNWIND_INTERNAL_H
#define LP_DWARF_UNWIND_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <elfutils/libdwfl.h>

#include "dwarf/unwind.h"

#define X86_64_DWARF_RBP 6
#define X86_64_DWARF_RSP 7
#define X86_64_DWARF_RIP 16 /* the return address column */

/* Functions sampled per module by unwinder__module_has_fp(). */
#define FP_SAMPLE_FUNCS 256

/*
 * Highest user address plus one on x86-64 (47-bit user space). A read
 * above the copy and below this is stack we did not copy.
 */
#define USER_ADDR_END 0x800000000000ULL

/* One unwind in progress: what the callbacks of struct proc read. */
struct unwind_ctx {
	const struct unwind_input *in;
	uint64_t ip; /* regs->ip, or the real return address if ip was the trampoline */
	uint64_t *pcs;
	int max;
	int n;
	/*
	 * Set by memory_read when it could not serve a read. Only the step
	 * that produced the next frame can have set them: a frame arriving
	 * with one set is dropped, since its registers may be guesses.
	 */
	bool oob;  /* the read was above the copy: the copy was too short */
	bool bad;  /* the read was anywhere else we cannot serve */
	bool done; /* stopped on purpose (max reached, trampoline pc) */
};

/* Per-process state: one Dwfl, attached once. */
struct proc {
	int pid;
	bool attached;
	uint64_t reported_ns; /* when the maps were last read */
	uint64_t *reports;    /* the unwinder's count of maps reads */
	int arch_fd;	      /* liveprof's own executable, for ... */
	Elf *arch_elf;	      /* ... the backend the attached state uses */
	Dwfl *dwfl;
	struct unwind_ctx *ctx; /* non-NULL only inside dwfl_getthread_frames */
};

struct unwinder {
	struct proc **procs;
	size_t nr_procs;
	size_t cap_procs;
	struct proc *last; /* most recently used, checked first */
	uint64_t reports;  /* maps reads so far, of every process */
};

/**
 * unwind_proc_get - the per-process state of @pid, created on first use
 * @u: the unwinder
 * @pid: the process
 * @pc: a pc the caller is about to look up (0: none); if no module covers
 *      it, the maps are read again (rate-limited), for a dlopen'ed library
 * @pp: receives it; owned by @u
 *
 * Return: 0 or a negative errno.
 */
int unwind_proc_get(struct unwinder *u, int pid, uint64_t pc, struct proc **pp);

/**
 * unwind_module_read - @len bytes at user address @addr, read from the
 * file of module @mod through the PT_LOAD segment that maps it
 *
 * Only file-backed bytes: .bss and anything written at run time are not
 * there. Return: 0, or a negative errno.
 */
int unwind_module_read(Dwfl_Module *mod, uint64_t addr, void *buf, size_t len);

#endif
