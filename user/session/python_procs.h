/* SPDX-License-Identifier: GPL-2.0 */
/*
 * python_procs.h - the CPython processes among the targets: recognized
 * from their mappings, configured in BPF (py_procs), and their sampled
 * Python frames merged into the native stacks where the evaluator's C
 * frame stands, as `py-spy --native` shows them.
 */
#ifndef LP_SESSION_PYTHON_PROCS_H
#define LP_SESSION_PYTHON_PROCS_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/liveprof.h"
#include "user/session/interp_procs.h"

struct python_procs;
struct bpf_session;
struct symbolizer;
struct stack_symbols;


/**
 * python_procs__new - an empty set
 * @lines: name frames by the line executing, not by the function's first line
 *
 * Return: the set, or NULL without memory.
 */
struct python_procs *python_procs__new(bool lines);

/** python_procs__free - free @pp (NULL is fine) */
void python_procs__free(struct python_procs *pp);

/**
 * python_procs__on_sample - look at @pid if it was not looked at since it
 * last exec'd (@comm changes at an exec), and configure BPF for it if it
 * runs a CPython liveprof knows. Warns once per file for a CPython of an
 * unknown version, which is then profiled natively.
 *
 * Return: true if @pid is a configured CPython process.
 */
bool python_procs__on_sample(struct python_procs *pp, struct bpf_session *bpf,
			     struct symbolizer *sym, uint32_t pid, const char *comm);

/**
 * python_procs__merge - put the Python frames of sample @s into its
 * native user stack @us (@n entries, leaf first, room for @max): each
 * evaluator frame is replaced by the Python frames it was running.
 * @ss: where the Python frames are interned
 *
 * Return: the new number of entries.
 */
unsigned int python_procs__merge(struct python_procs *pp, struct stack_symbols *ss,
				 const struct lp_sample *s, uint64_t *us, unsigned int n,
				 unsigned int max);

/** python_procs__stats - what the merge did so far */
void python_procs__stats(const struct python_procs *pp, struct interp_stats *out);

#endif /* LP_SESSION_PYTHON_PROCS_H */
