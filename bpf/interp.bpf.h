/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * interp.bpf.h - what the interpreter walkers (python.bpf.h, ruby.bpf.h)
 * share: where they write a stack's frames, and how they say what they
 * found. They write into a struct lp_interp_stack, which is the interp[]
 * of a sample on CPU and a part of the off-CPU stash at a switch-out (the
 * frames must be read while the thread is still current), and return one
 * number: the frames written, and whether a read failed or room ran out.
 */
#ifndef LP_INTERP_BPF_H
#define LP_INTERP_BPF_H

struct lp_interp_stack {
	struct lp_interp_frame f[LP_MAX_PYFRAMES];
};

/*
 * The walkers' buffers (a Ruby control frame, an identity window), per
 * CPU and out of the BPF stack: every program's frames and the callback
 * frames under it share 512 bytes, and the walkers run two calls deep
 * below the sampler and the off-CPU program. Two users, never nested on
 * one CPU: the sampler runs in the timer interrupt, the off-CPU program
 * with interrupts off, and neither ever preempts the other.
 */
struct lp_interp_scratch {
	__u64 cfp[LP_RB_CFP_WORDS];
	__u64 ident[LP_RB_IDENT_WORDS > LP_PY_IDENT_WORDS ? LP_RB_IDENT_WORDS : LP_PY_IDENT_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lp_interp_scratch);
} interp_scratch SEC(".maps");

static __always_inline struct lp_interp_scratch *lp_interp_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&interp_scratch, &zero);
}

#define LP_INTERP_NONE	(-1)	  /* not a process of this interpreter: stack untouched */
#define LP_INTERP_FAULT (1 << 16) /* a read of the target's memory failed */
#define LP_INTERP_TRUNC (1 << 17) /* more frames than LP_MAX_PYFRAMES */

/* The walk's result @r, as a sample says it (n_interp and flags). */
static __always_inline void lp_interp_to_sample(struct lp_sample *s, int r)
{
	if (r == LP_INTERP_NONE)
		return;
	s->n_interp = r & 0xffff;
	if (r & LP_INTERP_FAULT)
		s->flags |= LP_SF_INTERP_FAULT;
	if (r & LP_INTERP_TRUNC)
		s->flags |= LP_SF_INTERP_TRUNC;
}

#endif /* LP_INTERP_BPF_H */
