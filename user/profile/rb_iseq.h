/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rb_iseq.h - names of CRuby instruction sequences in a running process.
 *
 * The BPF sampler records, per Ruby frame, the frame's iseq (cfp->iseq) and
 * its pc (cfp->pc). This turns that pair into a label, a path and a line,
 * reading the target's memory only through process_vm_readv(2) (never
 * ptrace: the target is not stopped), and caches per (pid, iseq) what it
 * read: the names and the iseq's line table, so that each further pc costs
 * a binary search and no read.
 */
#ifndef LP_RB_ISEQ_H
#define LP_RB_ISEQ_H

#include <stdint.h>
#include <sys/types.h>

#include "../../dwarf/ruby_runtime.h"
#include "rb_string.h"

struct rb_iseq_cache;

struct rb_frame_name {
	/*
	 * The iseq's label, as Ruby 3.1's own backtraces show it: "parse",
	 * "block in parse", "<main>", "<class:Handler>". Not qualified by
	 * class: 3.1 compiles a method without a parent iseq, so its class
	 * is not reachable from the iseq, only from the frame's method entry
	 * (rb_class.h).
	 */
	char label[RB_NAME_MAX];
	/* the name of the method the iseq is in ("parse" for "block in
	 * parse"), the part of the label that rb_qualify_label() qualifies */
	char base_label[RB_NAME_MAX];
	char path[RB_PATH_MAX]; /* as Ruby's backtraces show it (pathobj's path) */
	int line;		/* of the pc, else the iseq's first line; 0 if unknown */
};

/**
 * rb_iseq_cache__new() - an empty cache.
 *
 * Return: the cache, or NULL without memory.
 */
struct rb_iseq_cache *rb_iseq_cache__new(void);

/**
 * rb_iseq_cache__free() - free @c and everything it cached.
 * @c: the cache, or NULL
 */
void rb_iseq_cache__free(struct rb_iseq_cache *c);

/**
 * rb_iseq_cache__forget_pid() - drop what was cached for process @pid (it
 * exited, or exec'd into something else).
 * @c: the cache
 * @pid: the process
 */
void rb_iseq_cache__forget_pid(struct rb_iseq_cache *c, pid_t pid);

/**
 * rb_iseq_resolve() - name a Ruby frame.
 * @c: the cache
 * @pid: the process the iseq lives in
 * @rt: its interpreter's version and offsets (ruby_runtime_find())
 * @iseq: cfp->iseq: the address of the rb_iseq_t
 * @pc: cfp->pc: the address just past the instruction being executed (as
 *	CRuby keeps it), or 0 if unknown
 * @ident: the hash of the iseq's identity when the frame was sampled
 *	(LP_RBF_IDENT_SHIFT in bpf/liveprof.h), or 0 if unknown: an iseq at
 *	@iseq that hashes otherwise is another one, made in the slot of the
 *	sample's after GC freed it, and is not named
 * @out: filled on success
 *
 * Only an iseq is accepted: a C function's frame holds a method entry in
 * cfp->iseq, and that, a freed iseq whose slot was reused, or any other
 * memory is refused. Every length read is bounded and every string checked
 * to be a String; names are cut on a UTF-8 character boundary, bytes that
 * are not UTF-8 become '?'.
 *
 * Return: 0, or a negative errno: -ESRCH (process gone), -EFAULT (a read
 * failed), -EINVAL (what was read is not an iseq, or @rt's offsets are
 * unusable), -ESTALE (not the iseq that was sampled, or it was freed
 * while it was read), -ENOMEM.
 */
int rb_iseq_resolve(struct rb_iseq_cache *c, pid_t pid, const struct rb_runtime *rt, uint64_t iseq,
		    uint64_t pc, uint16_t ident, struct rb_frame_name *out);

/**
 * rb_iseq_ident_offset() - where an iseq's identity starts
 * @o: the interpreter's offsets
 *
 * The identity is the iseq's body pointer and the body's first
 * LP_RB_IDENT_WORDS - 1 words (bpf/liveprof.h), which must hold its type,
 * size, instructions and location (path, labels, first line).
 *
 * Return: the offset of the body pointer in rb_iseq_t, or 0 if those
 * members do not fit.
 */
uint32_t rb_iseq_ident_offset(const struct rb_offsets *o);

#endif /* LP_RB_ISEQ_H */
