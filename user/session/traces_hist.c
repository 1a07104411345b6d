// SPDX-License-Identifier: GPL-2.0
/*
 * traces_hist.c - latency from the in-kernel log-linear histograms, read as
 * per-second deltas into a ring of slots for the window.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include "dwarf/elf_symtab.h"
#include "dwarf/fetch_compile.h"
#include "dwarf/probe_resolve.h"
#include "dwarf/proc_maps.h"
#include "user/session/bpf_session.h"
#include "user/session/session_core.h"
#include "user/util/log.h"
#include "user/session/traces.h"
#include "user/session/traces_internal.h"
#include "user/util/util.h"

/* ---- histogram arithmetic ---- */

uint64_t traces__bucket_lower(uint32_t b)
{
	uint32_t shift, sub;

	if (b < (1u << LP_HIST_SUB_BITS))
		return b;
	shift = (b >> LP_HIST_SUB_BITS) - 1;
	sub = b & ((1u << LP_HIST_SUB_BITS) - 1);
	if (shift > 56)
		return UINT64_MAX / 2;
	return ((uint64_t)(1u << LP_HIST_SUB_BITS) + sub) << shift;
}

uint64_t traces__bucket_value(uint32_t b)
{
	uint64_t lo = traces__bucket_lower(b), hi = traces__bucket_lower(b + 1);

	/* The middle of the bucket halves the worst-case error: <= 0.8%. */
	return hi > lo ? lo + (hi - lo) / 2 : lo;
}

int traces__count(struct traces *t)
{
	return t ? t->n : 0;
}

const struct trace_info *traces__info(struct traces *t, int i)
{
	return t && i >= 0 && i < t->n ? &t->v[i]->info : NULL;
}

int traces__find(struct traces *t, int id)
{
	for (int i = 0; t && i < t->n; i++)
		for (int k = 0; k < t->v[i]->n_ids; k++)
			if (t->v[i]->ids[k] == id)
				return i;
	return -1;
}

int traces__histogram(struct traces *t, int i, bool window, uint64_t *out)
{
	const volatile uint64_t *h = bpf_session__hist(t->c->bpf);
	struct trace *tr;

	if (i < 0 || i >= t->n)
		return -ENOENT;
	tr = t->v[i];
	memset(out, 0, LP_HIST_BUCKETS * sizeof(uint64_t));
	if (window) {
		for (int s = 0; s < t->n_slots; s++)
			for (int b = 0; b < LP_HIST_BUCKETS; b++)
				out[b] += tr->slots[(size_t)s * LP_HIST_BUCKETS + b];
		return 0;
	}
	for (int k = 0; k < tr->n_ids; k++)
		for (int b = 0; b < LP_HIST_BUCKETS; b++)
			out[b] += h[(size_t)tr->ids[k] * LP_HIST_BUCKETS + b];
	return 0;
}

uint64_t traces_hist_percentile(const uint64_t *h, uint64_t total, double pct)
{
	uint64_t want, cum = 0;

	if (!total)
		return 0;
	want = (uint64_t)ceil(total * pct / 100.0);
	if (want < 1)
		want = 1;
	for (int b = 0; b < LP_HIST_BUCKETS; b++) {
		cum += h[b];
		if (cum >= want)
			return traces__bucket_value(b);
	}
	return 0;
}

double traces__hist_quantile_between(const uint64_t *h0, const uint64_t *h1, double pct)
{
	double total = 0, want, cum = 0;

	for (int b = 0; b < LP_HIST_BUCKETS; b++)
		total += h1[b] > h0[b] ? (double)(h1[b] - h0[b]) : 0;
	if (!(total > 0))
		return NAN;
	want = total * pct / 100.0;
	for (uint32_t b = 0; b < LP_HIST_BUCKETS; b++) {
		double n = h1[b] > h0[b] ? (double)(h1[b] - h0[b]) : 0;
		double lo, hi;

		if (!n || cum + n < want) {
			cum += n;
			continue;
		}
		/* Spread the bucket's calls evenly over its width: a shift of
		 * the distribution smaller than a bucket still moves the result. */
		lo = (double)traces__bucket_lower(b);
		hi = (double)traces__bucket_lower(b + 1);
		if (!(hi > lo))
			return lo;
		return lo + (hi - lo) * (want - cum) / n;
	}
	return (double)traces__bucket_lower(LP_HIST_BUCKETS - 1);
}

/* Trace @i's merged histogram (to free), its total in *@total; NULL if none. */
static uint64_t *merged_hist(struct traces *t, int i, bool window, uint64_t *total)
{
	uint64_t *h = calloc(LP_HIST_BUCKETS, sizeof(uint64_t));

	*total = 0;
	if (!h || traces__histogram(t, i, window, h)) {
		free(h);
		return NULL;
	}
	for (int b = 0; b < LP_HIST_BUCKETS; b++)
		*total += h[b];
	return h;
}

uint64_t traces__percentile(struct traces *t, int i, double pct, bool window)
{
	uint64_t total, *h = merged_hist(t, i, window, &total), r;

	r = h ? traces_hist_percentile(h, total, pct) : 0;
	free(h);
	return r;
}

uint64_t traces__hist_slow_from(const uint64_t *h, double pct)
{
	uint64_t total = 0, want, below = 0;
	double target = 1.0 - pct / 100.0;

	for (int b = 0; b < LP_HIST_BUCKETS; b++)
		total += h[b];
	if (!total)
		return 0;
	want = (uint64_t)ceil((double)total * pct / 100.0);
	for (uint32_t b = 0; b < LP_HIST_BUCKETS; b++) {
		uint64_t above = total - below - h[b];
		bool slow_bucket;

		if (below + h[b] < (want ? want : 1)) {
			below += h[b];
			continue;
		}
		/* The percentile is in bucket b. Its calls are slow or fast,
		 * whichever leaves the slow share nearer the one asked for,
		 * unless that would leave one class without calls. */
		if (!above)
			slow_bucket = below > 0;
		else if (!below)
			slow_bucket = false;
		else
			slow_bucket = fabs((double)(total - below) / (double)total - target) <=
				      fabs((double)above / (double)total - target);
		return slow_bucket && b ? traces__bucket_lower(b) : traces__bucket_lower(b + 1);
	}
	return traces__bucket_lower(LP_HIST_BUCKETS - 1);
}

uint64_t traces__slow_from(struct traces *t, int i, double pct, bool window)
{
	uint64_t total, *h = merged_hist(t, i, window, &total), r;

	r = h ? traces__hist_slow_from(h, pct) : 0;
	free(h);
	return r;
}

/* Function calls counted but not timed so far (too deep to time). */
static uint64_t trace_untimed(struct traces *t, struct trace *tr)
{
	const volatile struct lp_probe_stats *st = bpf_session__probe_stats(t->c->bpf);
	uint64_t n = 0;

	for (int k = 0; k < tr->n_ids && tr->info.kind != TRACE_LINE; k++)
		n += st[tr->ids[k]].untimed;
	return n;
}

/* Calls (or line hits) so far: a function's timed calls are in its
 * histogram, the rest in probe_stats.untimed. */
static uint64_t trace_calls(struct traces *t, struct trace *tr)
{
	const volatile struct lp_probe_stats *st = bpf_session__probe_stats(t->c->bpf);
	const volatile uint64_t *h = bpf_session__hist(t->c->bpf);
	uint64_t calls = trace_untimed(t, tr);

	for (int k = 0; k < tr->n_ids; k++) {
		if (tr->info.kind == TRACE_LINE) {
			calls += st[tr->ids[k]].calls;
			continue;
		}
		for (int b = 0; b < LP_HIST_BUCKETS; b++)
			calls += h[(size_t)tr->ids[k] * LP_HIST_BUCKETS + b];
	}
	return calls;
}

/* Untimed calls in the window: the sum of the per-tick slots. */
static uint64_t window_untimed(struct traces *t, struct trace *tr)
{
	uint64_t n = 0;

	for (int i = 0; tr->untimed_slots && i < t->n_slots; i++)
		n += tr->untimed_slots[i];
	return n;
}

/* How long @tr's probes have been live: 0 s if they are not in yet. */
static double live_seconds(const struct traces *t, const struct trace *tr)
{
	uint64_t end = t->c->end_ns ? t->c->end_ns : lp_now_ns();
	uint64_t from = t->c->start_ns;

	if (!tr->info.attached_ns)
		return 0;
	if (tr->info.attached_ns > from)
		from = tr->info.attached_ns;
	return end > from ? (end - from) / 1e9 : 0;
}

int traces__summary(struct traces *t, int i, bool window, struct trace_summary *out)
{
	const volatile struct lp_probe_stats *st = bpf_session__probe_stats(t->c->bpf);
	uint64_t *h, total = 0, sum = 0, maxb = 0;
	struct trace *tr;
	double span;

	memset(out, 0, sizeof(*out));
	if (i < 0 || i >= t->n)
		return -ENOENT;
	tr = t->v[i];
	h = calloc(LP_HIST_BUCKETS, sizeof(uint64_t));
	if (!h)
		return -ENOMEM;
	traces__histogram(t, i, window, h);
	for (int b = 0; b < LP_HIST_BUCKETS; b++) {
		total += h[b];
		sum += h[b] * traces__bucket_value(b);
		if (h[b])
			maxb = b;
	}
	span = window ? t->n_slots : live_seconds(t, tr);
	if (tr->info.kind == TRACE_LINE) {
		/* line probes count hits; no latency */
		out->calls = window ? 0 : trace_calls(t, tr);
		if (window) {
			out->calls = (uint64_t)(tr->rate * t->n_slots);
		}
	} else {
		/* every call is counted; the deepest ones have no latency */
		out->untimed = window ? window_untimed(t, tr) : trace_untimed(t, tr);
		out->calls = total + out->untimed;
		out->p50 = traces_hist_percentile(h, total, 50);
		out->p90 = traces_hist_percentile(h, total, 90);
		out->p95 = traces_hist_percentile(h, total, 95);
		out->p99 = traces_hist_percentile(h, total, 99);
		out->p999 = traces_hist_percentile(h, total, 99.9);
		out->mean = total ? (double)sum / total : 0;
		out->max = total ? (window ? traces__bucket_lower(maxb + 1) : 0) : 0;
		if (!window)
			for (int k = 0; k < tr->n_ids; k++)
				if (st[tr->ids[k]].max_ns > out->max)
					out->max = st[tr->ids[k]].max_ns;
	}
	out->rate = span > 0 ? out->calls / span : 0;
	free(h);
	return 0;
}

void traces__set_window(struct traces *t, int seconds)
{
	if (!t || seconds < 1 || seconds == t->n_slots)
		return;
	for (int i = 0; i < t->n; i++) {
		uint64_t *s = calloc((size_t)seconds * LP_HIST_BUCKETS, sizeof(uint64_t));

		if (!s)
			return;
		free(t->v[i]->slots);
		t->v[i]->slots = s;
		free(t->v[i]->untimed_slots);
		t->v[i]->untimed_slots = NULL; /* reallocated at the next tick */
	}
	t->n_slots = seconds;
	t->cur_slot = 0;
}

static void retry_pending(struct traces *t, struct trace *tr)
{
	char err[512];

	if (!tr->pending)
		return;
	if (traces_attach_all(t, tr, err, sizeof(err))) {
		/* said, and given up: the next poll would fail the same way */
		tr->pending = false;
		traces_detach(t, tr);
		lp_warn("cannot trace '%s' now that its library is loaded: %s", tr->spec_text, err);
	} else if (!tr->pending) {
		tr->info.attached_ns = traces_attach_time(t);
		lp_debug("attached '%s' (its library is loaded now)", tr->spec_text);
	}
}

bool traces__any_pending(const struct traces *t)
{
	for (int i = 0; t && i < t->n; i++)
		if (t->v[i]->pending)
			return true;
	return false;
}

void traces__retry_pending(struct traces *t)
{
	for (int i = 0; t && i < t->n; i++)
		retry_pending(t, t->v[i]);
}

/* This tick's untimed calls into the current window slot. */
static void tick_untimed(struct traces *t, struct trace *tr)
{
	uint64_t cur = trace_untimed(t, tr);

	if (!tr->untimed_slots)
		tr->untimed_slots = calloc(t->n_slots, sizeof(uint64_t));
	if (tr->untimed_slots)
		tr->untimed_slots[t->cur_slot] =
			cur >= tr->prev_untimed ? cur - tr->prev_untimed : 0;
	tr->prev_untimed = cur;
}

void traces__tick(struct traces *t, uint64_t now_ns)
{
	const volatile uint64_t *h = bpf_session__hist(t->c->bpf);
	double dt = (now_ns - t->last_tick_ns) / 1e9;

	if (dt <= 0.05)
		return;
	t->last_tick_ns = now_ns;
	traces__measure_costs(t);
	traces_py_tick(t);
	t->cur_slot = (t->cur_slot + 1) % t->n_slots;
	for (int i = 0; i < t->n; i++) {
		struct trace *tr = t->v[i];
		uint64_t *slot = tr->slots + (size_t)t->cur_slot * LP_HIST_BUCKETS, calls;

		retry_pending(t, tr);
		for (int b = 0; b < LP_HIST_BUCKETS; b++) {
			uint64_t cur = 0;

			for (int k = 0; k < tr->n_ids; k++)
				cur += h[(size_t)tr->ids[k] * LP_HIST_BUCKETS + b];
			slot[b] = cur >= tr->prev[b] ? cur - tr->prev[b] : 0;
			tr->prev[b] = cur;
		}
		tick_untimed(t, tr);
		calls = trace_calls(t, tr);
		/* the current rate: calls since the last tick, not since the start */
		tr->rate = (calls - tr->prev_calls) / dt;
		tr->prev_calls = calls;
		tr->info.est_overhead_pct = tr->rate * tr->info.probe_cost_ns / 1e9 * 100;
		if (tr->info.detached)
			continue;
		if (t->c->opts->max_overhead_pct > 0 &&
		    tr->info.est_overhead_pct > t->c->opts->max_overhead_pct) {
			lp_warn("detaching '%s': %.0f calls/s x %" PRIu64
				" ns = %.1f%% of a CPU, above --max-overhead %g%%",
				tr->spec_text, tr->rate, tr->info.probe_cost_ns,
				tr->info.est_overhead_pct, t->c->opts->max_overhead_pct);
			traces_detach(t, tr);
		} else if (tr->info.est_overhead_pct > 5 &&
			   tr->info.est_overhead_pct > 2 * tr->warned_pct) {
			/* again whenever it doubles: the rate is the last second's */
			tr->warned_pct = tr->info.est_overhead_pct;
			lp_warn("'%s' costs about %.1f%% of a CPU (%.0f calls/s in the last second "
				"x "
				"%" PRIu64 " ns per call, measured for '%s'%s); --max-overhead PCT "
				"detaches it",
				tr->spec_text, tr->info.est_overhead_pct, tr->rate,
				tr->info.probe_cost_ns,
				tr->info.insn_class ? tr->info.insn_class : "?",
				tr->info.returns_on_ret ? " with its returns on ret" : "");
		}
	}
}
