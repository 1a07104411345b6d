// SPDX-License-Identifier: GPL-2.0
/*
 * daemon_stacks.c - a sampled stack from its record to its id: its frames
 * unwound and checked, interpreter frames merged, its key, and a new
 * stack symbolized as it comes (its addresses kept only while they will
 * be read).
 */
#include <errno.h>
#include <string.h>

#include "bpf/liveprof.h"
#include "user/profile/stack_store.h"
#include "user/profile/stack_symbols.h"
#include "user/session/daemon.h"
#include "user/session/python_procs.h"
#include "user/session/ruby_procs.h"
#include "user/session/sample_stack.h"
#include "user/session/stack_fixup.h"

/*
 * The stack of sample @s into @rs (its frames in @us, MAX_USER_FRAMES),
 * with its key in the store, *@k. Looking a new stack up in the store
 * misses in its table: the load is started on the stack as the unwinder
 * left it, the final one unless a frame is cut or interpreter frames are
 * merged, while those are checked; then hashed again if they changed it.
 */
static void sample_raw_stack(struct daemon *d, const struct lp_sample *s, uint64_t *us,
			     struct raw_stack *rs, struct stack_key *k)
{
	uint32_t flags = (s->flags & LP_SF_OFFCPU) ? STACK_F_OFFCPU : 0;
	unsigned int nu, cut;
	bool merged = false;

	if (s->flags & LP_SF_KMODE)
		flags |= STACK_F_KMODE;
	nu = sample_stack__user(d, s, s + 1, us, &flags);
	rs->pid = s->pid;
	rs->tid = s->tid;
	rs->flags = flags;
	rs->n_user = nu;
	rs->n_kernel = s->n_kstack < LP_MAX_KSTACK ? s->n_kstack : LP_MAX_KSTACK;
	rs->user = us;
	rs->kernel = (const uint64_t *)s->kstack;
	memcpy(rs->comm, s->comm, sizeof(rs->comm));
	*k = stack_store__hash(d->stacks, rs);
	stack_store__prefetch_hash(d->stacks, k->h);
	/* whatever the unwinder said, a caller must be code */
	cut = stack_fixup__cut(d->sym, d->spans, s->pid, us, nu);
	if (cut < nu) {
		nu = cut;
		flags |= STACK_F_UNWIND_ERROR;
	}
	if (flags & STACK_F_UNWIND_ERROR)
		d->unwind_errors++;
	if (d->py && python_procs__on_sample(d->py, d->core.bpf, d->sym, s->pid, s->comm)) {
		if (s->n_interp) {
			nu = python_procs__merge(d->py, d->core.symbols, s, us, nu,
						 MAX_USER_FRAMES);
			merged = true;
		}
	} else if (d->rb && ruby_procs__on_sample(d->rb, d->core.bpf, d->sym, s->pid, s->comm)) {
		/* also without frames: a walk that failed at once is counted */
		nu = ruby_procs__merge(d->rb, d->core.symbols, d->sym, s, us, nu, MAX_USER_FRAMES);
		merged = true;
	}
	if (flags & STACK_F_TRUNCATED)
		d->truncated++;
	if (merged || nu != rs->n_user || flags != rs->flags) {
		rs->flags = flags;
		rs->n_user = (uint16_t)nu;
		*k = stack_store__hash(d->stacks, rs);
	}
}

/*
 * The id of stack @rs, whose key is *@k; a new one symbolized now.
 * Once symbolization runs as stacks come, a new stack is added without
 * its addresses (packing, copying and freeing them was a tenth of a new
 * stack's cost): they are kept only if its frames must wait for the tick.
 */
static int64_t intern_keyed(struct daemon *d, const struct raw_stack *rs, const struct stack_key *k)
{
	bool added;
	int64_t id;
	int r;

	if (!d->symbolized || d->keep_addresses) {
		/* with its addresses; symbolized now where the tick would */
		id = stack_store__intern_hash(d->stacks, rs, k);
		if (id >= 0 && d->symbolized)
			stack_symbols__add_new(d->core.symbols, (uint32_t)id, rs, d->sym,
					       daemon__process_name, d);
		return id;
	}
	id = stack_store__intern_bare(d->stacks, rs, k, &added);
	if (id < 0 || !added)
		return id;
	r = stack_symbols__add_new(d->core.symbols, (uint32_t)id, rs, d->sym, daemon__process_name,
				   d);
	if (r <= 0) {
		r = stack_store__unshed(d->stacks, (uint32_t)id, rs);
		if (r == -ENOMEM)
			return r;
	}
	return id;
}

int64_t daemon__sample_stack(struct daemon *d, const struct lp_sample *s, uint64_t *us,
			     struct raw_stack *rs)
{
	struct stack_key key;

	sample_raw_stack(d, s, us, rs, &key);
	return intern_keyed(d, rs, &key);
}

int64_t daemon__intern_stack(struct daemon *d, const struct raw_stack *rs)
{
	struct stack_key key = stack_store__hash(d->stacks, rs);

	return intern_keyed(d, rs, &key);
}
