// SPDX-License-Identifier: GPL-2.0
/*
 * split_frames.c - the frames that differ between the split's classes:
 * each frame's inclusive share of the slow and the fast samples, its exact
 * test, and the recheck against the calls either class could hold.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "user/session/split.h"
#include "user/profile/stack_symbols.h"
#include "user/session/split_rank.h"
#include "user/session/split_internal.h"

struct frame_acc {
	const char *name;	 /* interned in the frame table: pointer identity */
	uint64_t slow_v, fast_v; /* value of stacks containing it */
	uint64_t slow_n, fast_n; /* sample counts of stacks containing it */
	uint64_t on_n, off_n;
};

struct acc_table {
	struct frame_acc *v;
	size_t cap, n;
};

static struct frame_acc *acc_get(struct acc_table *t, const char *name)
{
	size_t i;

	if ((t->n + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct frame_acc *v = calloc(cap, sizeof(*v));

		if (!v)
			return NULL;
		for (size_t k = 0; k < t->cap; k++) {
			if (!t->v[k].name)
				continue;
			i = ((uintptr_t)t->v[k].name >> 3) * 0x9e3779b97f4a7c15ULL % cap;
			while (v[i].name)
				i = (i + 1) % cap;
			v[i] = t->v[k];
		}
		free(t->v);
		t->v = v;
		t->cap = cap;
	}
	i = ((uintptr_t)name >> 3) * 0x9e3779b97f4a7c15ULL % t->cap;
	while (t->v[i].name && t->v[i].name != name)
		i = (i + 1) % t->cap;
	if (!t->v[i].name) {
		t->v[i].name = name;
		t->n++;
	}
	return &t->v[i];
}

/*
 * Is @name the split function's frame ("handle", or "handle (x.c:12)" with
 * --lines)? A Ruby method's "Class#m" (rb:Class#m) is also the singleton
 * method "Class.m": Ruby's probes give both the same class and method.
 */
static bool is_split_frame(const char *name, const char *func)
{
	size_t n = 0;

	while (func[n] && (name[n] == func[n] || (func[n] == '#' && name[n] == '.')))
		n++;
	return !func[n] && (name[n] == '\0' || name[n] == ' ');
}

static int accumulate(struct split *s, struct acc_table *t, const struct counts *c, bool slow,
		      bool use_weight, const char *func)
{
	counts_for_each(c, sc)
	{
		const struct frame *frames;
		const char *seen[512];
		uint32_t depth, n_seen = 0;
		uint64_t v = use_weight ? sc->weight_ns : sc->count;
		bool off = false, cut = false, found = false;

		if (stack_symbols__frames(s->symbols, stack_count__id(sc), &frames, &depth))
			continue;
		uint32_t first = 0;

		for (uint32_t i = 0; i < depth; i++) {
			bool marker = frames[i].kind == FRAME_MARKER;

			off |= marker && !strcmp(frames[i].name, "[off-cpu]");
			cut |= marker && strcmp(frames[i].name, "[off-cpu]");
		}
		/* The split function and its callers are in every sample of both
		 * classes by construction: only what runs below it can explain
		 * a difference. */
		first = depth ? depth - 1 : 0;
		for (uint32_t i = 0; i < depth && !found; i++) {
			found = is_split_frame(frames[i].name, func);
			first = found ? i + 1 : first;
		}
		/* A whole stack without the function: the thread was in the
		 * kernel's return-probe path, where the return address is
		 * already back in the caller; that is liveprof's own work,
		 * which nothing in the call explains (a split of 5 us constant
		 * work in a fresh-clone run starred the caller, `main`). */
		if (!found && !cut)
			continue;
		/* Not found in a cut stack: only the leaf is known to run
		 * inside the call. Markers stay with it. */
		while (first > 0 && first < depth && frames[first].kind == FRAME_MARKER &&
		       !is_split_frame(frames[first - 1].name, func) &&
		       frames[first - 1].kind != FRAME_ROOT)
			first--;
		for (uint32_t i = first; i < depth; i++) {
			struct frame_acc *a;
			bool dup = false;

			if (frames[i].kind == FRAME_ROOT)
				continue;
			/* Inclusive: a frame counts once per stack, even under recursion. */
			for (uint32_t k = 0; k < n_seen && !dup; k++)
				dup = seen[k] == frames[i].name;
			if (dup)
				continue;
			if (n_seen < 512)
				seen[n_seen++] = frames[i].name;
			a = acc_get(t, frames[i].name);
			if (!a)
				return -ENOMEM;
			if (slow) {
				a->slow_v += v;
				a->slow_n += sc->count;
			} else {
				a->fast_v += v;
				a->fast_n += sc->count;
			}
			if (off)
				a->off_n += sc->count;
			else
				a->on_n += sc->count;
		}
	}
	return 0;
}

static int cmp_rank(const void *a, const void *b)
{
	const struct split_frame_rank *x = a, *y = b;

	if (x->delta != y->delta)
		return x->delta < y->delta ? 1 : -1;
	return strcmp(x->frame, y->frame);
}

/* Each frame's share of the slow and the fast samples, and its exact test. */
int split_rank_frames(struct split *s, bool use_weight, struct split_result *r)
{
	uint64_t slow_v = use_weight ? r->slow.total_weight : r->slow.total_count;
	uint64_t fast_v = use_weight ? r->fast.total_weight : r->fast.total_count;
	struct acc_table t = {0};
	int err;

	err = accumulate(s, &t, &r->slow, true, use_weight, r->frame);
	if (!err)
		err = accumulate(s, &t, &r->fast, false, use_weight, r->frame);
	if (err) {
		free(t.v);
		return err;
	}
	r->ranks = calloc(t.n ? t.n : 1, sizeof(*r->ranks));
	if (!r->ranks) {
		free(t.v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t.cap; i++) {
		struct frame_acc *a = &t.v[i];
		struct split_frame_rank *k;

		if (!a->name)
			continue;
		k = &r->ranks[r->n_ranks++];
		k->frame = a->name;
		k->slow_share = slow_v ? (double)a->slow_v / slow_v : 0;
		k->fast_share = fast_v ? (double)a->fast_v / fast_v : 0;
		k->delta = k->slow_share - k->fast_share;
		k->offcpu = a->off_n > a->on_n;
		k->slow_n = a->slow_n;
		k->fast_n = a->fast_n;
	}
	free(t.v);
	/* exact tests with Holm's correction over every frame ranked (split_rank.c) */
	return split_rank__apply(r->ranks, r->n_ranks, r->slow_samples, r->fast_samples, r->alpha);
}

/*
 * The sampled calls whose class the correction's error can decide: net
 * latency within SPLIT_BIAS_Z standard deviations of it (the uncertainty
 * is a p10..p90 half-range, 1.2816 sd) of the threshold. Their samples go
 * to @slow or @fast by the class they are in now: what a star must
 * survive being moved (split_recheck_ambiguous()).
 */
static int ambiguous_calls(const struct split *s, uint64_t since, struct split_result *r,
			   struct counts *slow, struct counts *fast)
{
	double reach = r->correction_unc_ns * (SPLIT_BIAS_Z / 1.2816);

	for (size_t i = 0; !r->raw_latency && reach > 0 && i < s->n_done; i++) {
		const struct done_call *dc = &s->done[i];
		double d = fabs((double)dc->latency_ns - (double)r->threshold_ns);
		bool is_slow = dc->latency_ns >= r->threshold_ns;

		if (dc->end_ns < since || d >= reach)
			continue;
		r->ambiguous_calls++;
		for (uint32_t k = 0; k < dc->n; k++) {
			const struct entry *e = &s->pool[dc->first + k];

			if (counts__add(is_slow ? slow : fast, e->stack_id, e->count, e->weight))
				return -ENOMEM;
			if (is_slow)
				r->ambiguous_slow_samples += e->count;
			else
				r->ambiguous_fast_samples += e->count;
		}
	}
	return 0;
}

/*
 * Withdraw the stars the ambiguous calls could fake, knowing which frames
 * their samples hold (ranked as split_rank_frames() ranks: the same frames).
 */
int split_recheck_ambiguous(struct split *s, uint64_t since, struct split_result *r)
{
	struct counts slow, fast;
	struct acc_table t = {0};
	int err;

	counts__init(&slow);
	counts__init(&fast);
	err = ambiguous_calls(s, since, r, &slow, &fast);
	/* a class big enough to test that they would empty: then there is
	 * nothing to compare with, and the split cannot decide */
	r->ambiguous_class = (r->slow_samples >= SPLIT_MIN_CLASS &&
			      r->slow_samples - r->ambiguous_slow_samples < SPLIT_MIN_CLASS) ||
			     (r->fast_samples >= SPLIT_MIN_CLASS &&
			      r->fast_samples - r->ambiguous_fast_samples < SPLIT_MIN_CLASS);
	if (!err && r->ambiguous_calls) {
		err = accumulate(s, &t, &slow, true, false, r->frame);
		if (!err)
			err = accumulate(s, &t, &fast, false, false, r->frame);
	}
	for (int i = 0; !err && r->ambiguous_calls && i < r->n_ranks; i++) {
		struct split_frame_rank *k = &r->ranks[i];
		const struct frame_acc *a = acc_get(&t, k->frame);
		struct split_ambiguous amb = {
			.slow_total = r->ambiguous_slow_samples,
			.fast_total = r->ambiguous_fast_samples,
			.slow_with = a ? a->slow_n : 0,
			.fast_with = a ? a->fast_n : 0,
		};

		if (!a)
			err = -ENOMEM;
		else
			split_rank__recheck_ambiguous(k, r->n_ranks, r->slow_samples,
						      r->fast_samples, &amb, r->alpha);
	}
	free(t.v);
	counts__free(&slow);
	counts__free(&fast);
	return err;
}

void split_sort_ranks(struct split_result *r)
{
	qsort(r->ranks, r->n_ranks, sizeof(*r->ranks), cmp_rank);
}
