// SPDX-License-Identifier: GPL-2.0
/*
 * causal_run.c - the start of a causal run: trace the progress point, take
 * a short CPU profile (each candidate's share, and the `auto` candidates),
 * check that the point fires, then hand over to the experiments (causal.c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/liveprof.h"
#include "dwarf/probe_resolve.h"
#include "user/profile/profile.h"
#include "user/profile/stack_symbols.h"
#include "user/session/bpf_session.h"
#include "user/session/causal.h"
#include "user/session/causal_internal.h"
#include "user/session/daemon.h"
#include "user/session/report.h"
#include "user/session/traces.h"
#include "user/util/log.h"
#include "user/util/util.h"

struct fn_share {
	const char *name;
	uint64_t self;
};

static int share_cmp(const void *a, const void *b)
{
	const struct fn_share *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Names a uprobe spec can take: no module-relative "[x+0x1]", no spaces. */
static bool probeable_name(const struct frame *f)
{
	return f->kind == FRAME_USER && f->name[0] != '[' && !strpbrk(f->name, " ;()+<>");
}

/*
 * Self samples per function name, most first. @out (owned by the caller,
 * names pointing into @p) gets one entry per name; returns how many, or a
 * negative errno.
 */
static int self_shares(const struct profile *p, struct fn_share **out, uint64_t *total)
{
	struct fn_share *v = calloc(p->n_frames + 1, sizeof(*v));
	int n = 0;

	*total = 0;
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		const struct frame *f;
		int k;

		int d;

		*total += s->count;
		/* An inlined leaf (a helper inlined into its caller) counts for
		 * the function it was inlined into: only that one has an entry. */
		for (d = (int)s->depth - 1; d > 0 && p->frames[s->frames[d]].inlined; d--)
			;
		if (d < 0 || !s->depth)
			continue;
		f = &p->frames[s->frames[d]];
		if (!probeable_name(f))
			continue;
		for (k = 0; k < n && strcmp(v[k].name, f->name); k++)
			;
		if (k == n)
			v[n++].name = f->name;
		v[k].self += s->count;
	}
	qsort(v, n, sizeof(*v), share_cmp);
	*out = v;
	return n;
}

/* FILE:LINE (or BIN:FILE:LINE), as --trace reads it. */
static bool is_line_spec(const char *name)
{
	struct probe_spec spec;
	char err[256];

	return !probe_spec_parse(name, &spec, err, sizeof(err)) && spec.kind == PROBE_SPEC_LINE;
}

static void add_cand(struct causal_run *r, const char *name, double share)
{
	struct causal_cand *c;

	if (r->n_cand >= CAUSAL_MAX_CAND)
		return;
	for (int k = 0; k < r->n_cand; k++)
		if (!strcmp(r->cand[k].function, name))
			return;
	c = &r->cand[r->n_cand++];
	memset(c, 0, sizeof(*c));
	snprintf(c->function, sizeof(c->function), "%s", name);
	c->cpu_share = share;
	c->is_line = is_line_spec(name);
}

#define AUTO_LINES    2	  /* lines auto adds after the functions */
#define AUTO_LINE_PCT 5.0 /* the least share of the samples such a line holds */

struct line_share {
	char spec[CAUSAL_NAME_MAX]; /* FILE:LINE, the file by its base name */
	uint64_t self;
};

static int line_share_cmp(const void *a, const void *b)
{
	const struct line_share *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return strcmp(x->spec, y->spec);
}

/* Self samples per FILE:LINE of @p (a per-line profile), most first. */
static int line_shares(const struct profile *p, struct line_share **out, uint64_t *total)
{
	struct line_share *v = calloc(p->n_frames + 1, sizeof(*v));
	int n = 0;

	*total = 0;
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		const struct frame *f = s->depth ? &p->frames[s->frames[s->depth - 1]] : NULL;
		char spec[CAUSAL_NAME_MAX];
		const char *base;
		int k;

		*total += s->count;
		if (!f || f->kind != FRAME_USER || !f->file || f->line <= 0)
			continue;
		base = strrchr(f->file, '/');
		snprintf(spec, sizeof(spec), "%s:%d", base ? base + 1 : f->file, f->line);
		for (k = 0; k < n && strcmp(v[k].spec, spec); k++)
			;
		if (k == n)
			memcpy(v[n++].spec, spec, sizeof(spec));
		v[k].self += s->count;
	}
	qsort(v, n, sizeof(*v), line_share_cmp);
	*out = v;
	return n;
}

/*
 * auto's lines, after its functions: the source lines where most samples
 * landed (the sampled address's own line, inlined code's included), at
 * most AUTO_LINES, each with AUTO_LINE_PCT of the samples. The daemon's
 * profile has one frame per function, so the samples are symbolized once
 * more, by line.
 */
static void add_auto_lines(struct daemon *d, struct causal_run *r)
{
	struct stack_symbols_opts so = {.lines = true, .inline_frames = true};
	struct stack_symbols *ss = stack_symbols__new(&so);
	struct profile *p = NULL;
	struct line_share *v = NULL;
	struct counts user;
	uint64_t total;
	int n = -1;

	/*
	 * User-mode samples only: a tick in the kernel (a system call, a
	 * traced call's probe) is charged by its user frames to the line
	 * where the thread entered the kernel, whose code did not run, and
	 * a line's delay only ever hits the line's user code. Its share is
	 * then of the same ticks its experiments count (causal_line.c).
	 */
	counts__init(&user);
	if (ss && !stack_symbols__update(ss, d->stacks, d->sym, daemon__process_name, d) &&
	    !counts__merge_unflagged(&user, &d->total, d->stacks, STACK_F_KMODE | STACK_F_OFFCPU))
		p = stack_symbols__new_profile(ss, "lines");
	if (p && !stack_symbols__add_counts(ss, p, &user, NULL, 0))
		n = line_shares(p, &v, &total);
	counts__free(&user);
	for (int k = 0; k < n && k < AUTO_LINES; k++)
		if (100.0 * (double)v[k].self / (double)total >= AUTO_LINE_PCT)
			add_cand(r, v[k].spec, 100.0 * (double)v[k].self / (double)total);
	free(v);
	profile__free(p);
	stack_symbols__free(ss);
}

/* The candidates and their CPU shares, from the samples taken so far. */
static int pick_candidates(struct daemon *d, const struct causal_opts *o, struct causal_run *r)
{
	struct fn_share *v = NULL;
	struct profile *p;
	uint64_t total;
	int n;

	daemon__symbolize_new(d);
	p = report__build_profile(d, NULL);
	if (!p)
		return -ENOMEM;
	n = self_shares(p, &v, &total);
	if (n < 0) {
		profile__free(p);
		return n;
	}
	if (o->n_candidates) {
		for (int i = 0; i < o->n_candidates; i++) {
			double share = total ? 0 : -1;

			for (int k = 0; k < n; k++)
				if (!strcmp(v[k].name, o->candidates[i]))
					share = 100.0 * (double)v[k].self / (double)total;
			add_cand(r, o->candidates[i], share);
		}
	} else {
		/* Functions under 1% of the samples cannot be worth a window. */
		for (int k = 0; k < n && r->n_cand < o->auto_n; k++)
			if (100.0 * (double)v[k].self / (double)total >= 1.0)
				add_cand(r, v[k].name, 100.0 * (double)v[k].self / (double)total);
		add_auto_lines(d, r);
	}
	free(v);
	profile__free(p);
	return 0;
}

/* Trace the point(s); a spec that does not resolve is the user's error. */
static int trace_points(struct causal_ctx *x, char *err, size_t errlen)
{
	struct daemon *d = x->d;
	const char *specs[2] = {x->o->progress, x->o->latency ? x->point : NULL};

	for (int i = 0; i < 2; i++) {
		int id;

		if (!specs[i] || daemon__find_trace(d, specs[i]) >= 0)
			continue;
		id = daemon__trace(d, specs[i], NULL, err, errlen);
		if (id < 0)
			return id;
	}
	return 0;
}

/*
 * Sample for sample_s, and longer (up to no_progress_s) while the point
 * has not fired. Fills the baseline. Return: 0, -ENODATA (never fired), or
 * what causal_wait returns.
 */
static int baseline(struct causal_ctx *x, char *err, size_t errlen)
{
	const char *spec = x->point;
	struct causal_reading a, b;
	uint64_t t0 = lp_now_ns(), waited;
	int r;

	if (causal_point_read(x, 0, &a))
		return -ENOENT;
	r = causal_wait(x, (uint64_t)(x->o->sample_s * 1e9));
	for (;;) {
		if (r)
			return r;
		if (causal_point_read(x, 1, &b))
			return -ENOENT;
		waited = lp_now_ns() - t0;
		if (b.t.calls > a.t.calls)
			break;
		if (waited >= (uint64_t)(x->o->no_progress_s * 1e9)) {
			snprintf(err, errlen,
				 "progress point '%s' never fired in %.1f s: is it on the path "
				 "the program runs?",
				 spec, (double)waited / 1e9);
			return -ENODATA;
		}
		r = causal_wait(x, 100 * 1000000ull);
	}
	x->r->base_rate = (double)(b.t.calls - a.t.calls) / ((double)waited / 1e9);
	if (x->o->latency && b.t.timed > a.t.timed)
		x->r->base_latency = causal_point_cost(x, &a, &b, (double)waited);
	return x->o->latency ? causal_point_fit_window(x, x->r->base_rate, err, errlen) : 0;
}

/* From the traced point to the last experiment; @x's point is parsed. */
static int run_with_point(struct causal_ctx *x, uint64_t t0, char *err, size_t errlen)
{
	struct daemon *d = x->d;
	struct causal_run *r = x->r;
	int ret = trace_points(x, err, errlen);

	if (!ret)
		ret = baseline(x, err, errlen);
	if (ret == -ESRCH)
		snprintf(err, errlen, "the target exited before anything was measured");
	if (ret == -EINTR)
		snprintf(err, errlen, "interrupted before anything was measured");
	if (ret)
		return ret;
	/* The profile is taken: from here on only the candidate's own probes
	 * run in the target, and sampling would only add noise. */
	bpf_session__stop_sampling(d->core.bpf);
	ret = pick_candidates(d, x->o, r);
	if (ret) {
		snprintf(err, errlen, "cannot rank the candidates: %s", strerror(-ret));
		return ret;
	}
	if (!r->n_cand) {
		snprintf(err, errlen, "no candidate: no function holds 1%% of the samples");
		return -ENOENT;
	}
	ret = causal_run_candidates(x);
	if (ret)
		snprintf(err, errlen, "causal experiments: %s", strerror(-ret));
	r->elapsed_s = (double)(lp_now_ns() - t0) / 1e9;
	r->delayed_hits = bpf_session__causal_hits(d->core.bpf);
	r->yielded_hits = bpf_session__causal_yields(d->core.bpf);
	causal__sort(r);
	return ret;
}

int causal__run(struct daemon *d, const struct causal_opts *o, struct causal_run *r,
		volatile sig_atomic_t *stop, char *err, size_t errlen)
{
	struct causal_ctx x = {.d = d, .o = o, .r = r, .stop = stop};
	uint64_t t0 = lp_now_ns();
	int ret;

	memset(r, 0, sizeof(*r));
	r->latency = o->latency != NULL;
	r->small = CAUSAL_SMALL_IMPACT;
	snprintf(r->point, sizeof(r->point), "%s", o->latency ? o->latency : o->progress);
	x.deadline = t0 + (uint64_t)(o->duration_s * 1e9);
	x.rng = o->seed ? o->seed : (t0 | 1);
	ret = causal_point_init(&x, err, errlen);
	if (!ret) {
		r->latency_pct = x.point_pct;
		ret = run_with_point(&x, t0, err, errlen);
	}
	causal_point_free(&x);
	return ret;
}
