/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ruby_procs.h - the CRuby processes among the targets: recognized from
 * their mappings, configured in BPF (rb_procs), and their sampled Ruby
 * frames merged into the native stacks where the VM loop's C frame
 * (rb_vm_exec) stands, as python_procs does for CPython.
 */
#ifndef LP_SESSION_RUBY_PROCS_H
#define LP_SESSION_RUBY_PROCS_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/liveprof.h"
#include "user/session/interp_procs.h"

struct ruby_procs;
struct bpf_session;
struct symbolizer;
struct stack_symbols;


/**
 * ruby_procs__new - an empty set
 * @lines: name frames by the line executing, not by the method's first line
 *
 * Return: the set, or NULL without memory.
 */
struct ruby_procs *ruby_procs__new(bool lines);

/** ruby_procs__free - free @rp (NULL is fine) */
void ruby_procs__free(struct ruby_procs *rp);

/**
 * ruby_procs__on_sample - look at @pid if it was not looked at since it
 * last exec'd (@comm changes at an exec), and configure BPF for it if it
 * runs a CRuby liveprof knows. Warns once per file for a CRuby of a
 * version liveprof has no offsets for, which is then profiled natively.
 *
 * Return: true if @pid is a configured CRuby process.
 */
bool ruby_procs__on_sample(struct ruby_procs *rp, struct bpf_session *bpf, struct symbolizer *sym,
			   uint32_t pid, const char *comm);

/**
 * ruby_procs__merge - put the Ruby frames of sample @s into its native
 * user stack @us (@n entries, leaf first, room for @max): each frame of
 * the VM loop (rb_vm_exec, and the unnamed vm_exec_core it calls) is
 * replaced by the Ruby frames that call of it ran.
 * @ss: where the Ruby frames are interned
 * @sym: tells vm_exec_core's frames from others
 *
 * Return: the new number of entries.
 */
unsigned int ruby_procs__merge(struct ruby_procs *rp, struct stack_symbols *ss,
			       struct symbolizer *sym, const struct lp_sample *s, uint64_t *us,
			       unsigned int n, unsigned int max);

/** ruby_procs__stats - what the merge did so far */
void ruby_procs__stats(const struct ruby_procs *rp, struct interp_stats *out);

#endif /* LP_SESSION_RUBY_PROCS_H */
