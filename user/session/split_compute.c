// SPDX-License-Identifier: GPL-2.0
/*
 * split_compute.c - classes and ranks from the log of sampled calls: the threshold
 * from the histogram, the correction check, the frames that differ.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/session/split.h"
#include "user/profile/stack_symbols.h"
#include "user/session/session_core.h"
#include "user/session/split_rank.h"
#include "user/session/traces.h"
#include "user/util/util.h"
#include "user/session/split_internal.h"

/* ---- ranking ---- */

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

/* Is @name the split function's frame ("handle", or "handle (x.c:12)" with --lines)? */
static bool is_split_frame(const char *name, const char *func)
{
	size_t n = strlen(func);

	return !strncmp(name, func, n) && (name[n] == '\0' || name[n] == ' ');
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

static uint64_t hist_median(const uint64_t *hist, uint64_t total)
{
	uint64_t acc = 0;

	for (int b = 0; b < LP_HIST_BUCKETS && total; b++) {
		acc += hist[b];
		if (acc * 2 >= total)
			return traces__bucket_value(b);
	}
	return 0;
}

static uint64_t hist_quantile(const uint64_t *hist, uint64_t total, double q)
{
	uint64_t acc = 0;

	for (int b = 0; b < LP_HIST_BUCKETS && total; b++) {
		acc += hist[b];
		if ((double)acc >= q * (double)total)
			return traces__bucket_value(b);
	}
	return 0;
}

/*
 * How far the correction of sampled calls can be trusted, seen in the
 * calls themselves. Sampling favours long calls, so without correction
 * errors the sampled calls' net latencies are never shorter than the
 * calls' in general: their lower quartile is at least that of all calls.
 * An error of spread sigma pulls it down by about 0.674 sigma, so the gap
 * between the two lower quartiles bounds the error; the uncertainty
 * reported is its p10..p90 half-range (1.2816 sigma). When it reaches the
 * gap between the threshold and the median, a sampled call's class is
 * decided by the correction's error rather than by the call: say so, and
 * star nothing. (The calibration's own spread, sample_cost.spread_ns, is
 * reported beside it; on a busy VM it overstates what the calls show.)
 */
static void correction_check(const struct split *s, uint64_t since, const uint64_t *hist,
			     uint64_t total, struct split_result *r)
{
	const struct session_core *c = traces__core(s->traces);
	uint64_t *lat = calloc(s->n_done ? s->n_done : 1, sizeof(uint64_t)), q_all, q_smp;
	double sum = 0;
	size_t n = 0;

	r->raw_latency = c->opts->raw_latency;
	r->calib_spread_ns = c->sample_cost.spread_ns;
	for (size_t i = 0; lat && i < s->n_done; i++) {
		const struct done_call *dc = &s->done[i];

		if (dc->end_ns < since)
			continue;
		sum += dc->overhead_ns;
		lat[n++] = dc->latency_ns;
	}
	if (n) {
		qsort(lat, n, sizeof(*lat), lp_cmp_u64);
		q_all = hist_quantile(hist, total, 0.25);
		/* in the histogram's buckets too: its rounding is no error */
		q_smp = traces__bucket_value(lp_hist_bucket(lat[n / 4]));
		r->correction_ns = sum / n;
		r->correction_unc_ns =
			q_all > q_smp ? (double)(q_all - q_smp) * (1.2816 / 0.6745) : 0;
		/* A sample that is most of the call it lands in (over 8 times
		 * the median call: constant work of 1-5 us here, where a
		 * sample costs 30-45 us and its cost varies with where it
		 * lands, which the error estimate does not see): then the
		 * sample, not the call, decides the class. Real causes in calls
		 * of 20-30 us measured 1.5-2.9 times on a quiet machine, the 5 us
		 * constant work 12-18 times. A smaller error only blurs the
		 * calls near the threshold: ambiguous_calls(). */
		r->correction_exceeds = !r->raw_latency && r->threshold_ns > r->median_ns &&
					r->correction_ns > 8.0 * (double)r->median_ns;
	}
	free(lat);
}

/*
 * The sampled calls whose class the correction's error can decide: net
 * latency within SPLIT_BIAS_Z standard deviations of it (the uncertainty
 * is a p10..p90 half-range, 1.2816 sd) of the threshold. Their samples go
 * to @slow or @fast by the class they are in now: what a star must
 * survive being moved (recheck_ambiguous()).
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
 * their samples hold (ranked as rank_frames() ranks: the same frames).
 */
static int recheck_ambiguous(struct split *s, uint64_t since, struct split_result *r)
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
		err = accumulate(s, &t, &slow, true, false, r->function);
		if (!err)
			err = accumulate(s, &t, &fast, false, false, r->function);
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
			split_rank__recheck_ambiguous(k, r->n_ranks, r->slow_samples, r->fast_samples,
						      &amb, r->alpha);
	}
	free(t.v);
	counts__free(&slow);
	counts__free(&fast);
	return err;
}

/* Each sampled call that ended since @since, and its samples, into its class. */
static int class_sampled_calls(struct split *s, uint64_t since, struct split_result *r)
{
	for (size_t i = 0; i < s->n_done; i++) {
		const struct done_call *dc = &s->done[i];
		bool slow = dc->latency_ns >= r->threshold_ns;
		struct counts *c = slow ? &r->slow : &r->fast;

		if (dc->end_ns < since)
			continue;
		slow ? r->slow_calls++ : r->fast_calls++;
		for (uint32_t k = 0; k < dc->n; k++) {
			const struct entry *e = &s->pool[dc->first + k];

			if (counts__add(c, e->stack_id, e->count, e->weight))
				return -ENOMEM;
		}
	}
	return 0;
}

/* Share a / b of weighted Poisson counts, and its standard error (delta method). */
static void weighted_share(double a, double va, double b, double vb, double *p, double *sd)
{
	*p = a / b;
	*sd = sqrt(fmax(0, (1 - 2 * *p) * va + *p * *p * vb)) / b;
}

/* How many standard errors @obs (of @n) lies beyond @p (+- @sd); 0 if not beyond. */
static double beyond(double obs, double n, double p, double sd, bool above)
{
	double s = sqrt(p * (1 - p) / n + sd * sd);

	if (s <= 0 || (above ? obs <= p : obs >= p))
		return 0;
	return (obs - p) / s;
}

/*
 * Which share of the sampled calls a split without bias classes slow.
 *
 * A sample lands in a call with a chance that grows with the call's time
 * on CPU, so sampled calls are longer than calls in general and more often
 * slow: that is what the program does, not a bias (constant work on a
 * noisy VM: 1% of calls are slow, five times longer, with 5% of the
 * samples). A bias is a sample's own cost moving its call across the
 * threshold. Every call's latency (the histogram; a sampled call's net
 * of its correction) bounds what an unbiased split shows: its share of
 * slow calls is the least (sampling blind to length), and that share
 * with each call weighted by its chance of a sample if all its time were
 * on CPU, min(1, length x rate), the most (the time a slow call spends
 * preempted or off CPU is not sampled). Not the calls no sample landed
 * in alone: sampling took the long ones out of those. Outside that range by more than SPLIT_BIAS_Z standard errors
 * (bucket counts taken as Poisson counts, the delta method for the
 * ratios), the split's classes of sampled calls are not to be trusted.
 */
/*
 * How many sampled calls a bias can have moved across the threshold, at
 * most: the distance from the nearer bound of the unbiased range plus
 * SPLIT_BIAS_Z standard errors, in calls; signed like the move (positive:
 * into the slow class).
 */
static double moved_bound(double obs, double n, const struct split_result *r)
{
	bool up = obs > r->unbiased_max;
	double p = up ? r->unbiased_max : r->unbiased_min;
	double sd = up ? r->unbiased_max_sd : r->unbiased_min_sd;
	double se = sqrt(p * (1 - p) / n + sd * sd);

	if (!up && obs >= r->unbiased_min)
		return 0;
	return (up ? 1 : -1) * ceil((fabs(obs - p) + SPLIT_BIAS_Z * se) * n);
}

static void expect_sampled_slow(const struct split *s, uint64_t since, const uint64_t *hist,
				struct split_result *r)
{
	const struct session_core *c = traces__core(s->traces);
	double hz = c->opts->freq, n = (double)(r->slow_calls + r->fast_calls), obs;
	double a1 = 0, b1 = 0, aw = 0, bw = 0, vaw = 0, vbw = 0;
	uint64_t *u = malloc(LP_HIST_BUCKETS * sizeof(uint64_t));

	if (!u || !hz) {
		free(u);
		return;
	}
	(void)since;
	memcpy(u, hist, LP_HIST_BUCKETS * sizeof(uint64_t));
	for (uint32_t k = 0; k < LP_HIST_BUCKETS; k++) {
		double w = fmin(1.0, (double)traces__bucket_value(k) * 1e-9 * hz), x = (double)u[k];
		bool slow = traces__bucket_value(k) >= r->threshold_ns;

		b1 += x;
		bw += x * w;
		vbw += x * w * w;
		if (slow) {
			a1 += x;
			aw += x * w;
			vaw += x * w * w;
		}
	}
	r->latency_hist = u;
	if (bw <= 0 || n <= 0)
		return;
	r->have_expected = true;
	weighted_share(a1, a1, b1, b1, &r->unbiased_min, &r->unbiased_min_sd);
	weighted_share(aw, vaw, bw, vbw, &r->unbiased_max, &r->unbiased_max_sd);
	obs = (double)r->slow_calls / n;
	r->bias_z = beyond(obs, n, r->unbiased_max, r->unbiased_max_sd, true);
	if (r->bias_z == 0)
		r->bias_z = beyond(obs, n, r->unbiased_min, r->unbiased_min_sd, false);
	r->moved_calls = moved_bound(obs, n, r);
	/* Any bias seen: the stars are rechecked against the calls it can
	 * have moved (moved_bound), which a real cause far from the threshold
	 * survives; where the range itself is only approximate (a recursive
	 * split, calls that block) that check is merely conservative. */
	r->sampling_biased = !r->raw_latency && fabs(r->bias_z) > SPLIT_BIAS_Z;
}

/* Each frame's share of the slow and the fast samples, and its exact test. */
static int rank_frames(struct split *s, bool use_weight, struct split_result *r)
{
	uint64_t slow_v = use_weight ? r->slow.total_weight : r->slow.total_count;
	uint64_t fast_v = use_weight ? r->fast.total_weight : r->fast.total_count;
	struct acc_table t = {0};
	int err;

	err = accumulate(s, &t, &r->slow, true, use_weight, r->function);
	if (!err)
		err = accumulate(s, &t, &r->fast, false, use_weight, r->function);
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

/* --split-alpha, or SPLIT_ALPHA where options were not parsed (tests) */
static double split_alpha(const struct split *s)
{
	double a = traces__core(s->traces)->opts->split_alpha;

	return a > 0 ? a : SPLIT_ALPHA;
}

/* The samples of the calls a bias moved, signed like moved_calls: at the
 * mean samples per sampled call of the class they went to. */
static double moved_samples(const struct split_result *r)
{
	uint64_t calls = r->moved_calls > 0 ? r->slow_calls : r->fast_calls;
	uint64_t smp = r->moved_calls > 0 ? r->slow_samples : r->fast_samples;

	return calls ? r->moved_calls * (double)smp / (double)calls : 0;
}

int split__compute(struct split *s, bool window, bool use_weight, struct split_result *r)
{
	int ti = traces__find(s->traces, s->probe_id);
	uint64_t now = lp_now_ns(), since = 0, *hist;
	size_t in_window = 0;
	int err;

	memset(r, 0, sizeof(*r));
	counts__init(&r->slow);
	counts__init(&r->fast);
	if (ti < 0)
		return -ENOENT;
	if (window) {
		since = now - (uint64_t)s->window_s * 1000000000ULL;
		for (size_t i = 0; i < s->n_done; i++)
			in_window += s->done[i].end_ns >= since;
		if (in_window < MIN_WINDOW_CALLS) {
			window = false;
			since = 0;
		}
	}
	r->function = traces__info(s->traces, ti)->func;
	r->held = s->held_entries;
	r->orphans = s->orphans;
	r->dropped = s->dropped;
	r->filtered = s->filtered;
	r->percentile = s->pct;
	r->alpha = split_alpha(s);
	r->threshold_ns = traces__percentile(s->traces, ti, s->pct, window);

	/* Every call, sampled or not, from the histogram. */
	hist = calloc(LP_HIST_BUCKETS, sizeof(uint64_t));
	if (!hist)
		return -ENOMEM;
	traces__histogram(s->traces, ti, window, hist);
	for (int b = 0; b < LP_HIST_BUCKETS; b++) {
		if (traces__bucket_value(b) >= r->threshold_ns)
			r->all_slow_calls += hist[b];
		else
			r->all_fast_calls += hist[b];
	}
	r->median_ns = hist_median(hist, r->all_slow_calls + r->all_fast_calls);
	correction_check(s, since, hist, r->all_slow_calls + r->all_fast_calls, r);
	err = class_sampled_calls(s, since, r);
	if (!err)
		expect_sampled_slow(s, since, hist, r);
	free(hist);
	if (err)
		return err;
	r->slow_samples = r->slow.total_count;
	r->fast_samples = r->fast.total_count;
	err = rank_frames(s, use_weight, r);
	if (err)
		return err;
	/* classes decided by the correction's error: nothing can be
	 * significant; calls seen moved by sampling: only the frames that
	 * differ even if every moved call went against them */
	for (int i = 0; i < r->n_ranks && r->correction_exceeds; i++)
		r->ranks[i].significant = false;
	if (r->sampling_biased && !r->correction_exceeds)
		split_rank__recheck_moved(r->ranks, r->n_ranks, r->slow_samples, r->fast_samples,
					  moved_samples(r), r->alpha);
	/* calls the correction's error may have put in either class */
	err = recheck_ambiguous(s, since, r);
	if (err)
		return err;
	qsort(r->ranks, r->n_ranks, sizeof(*r->ranks), cmp_rank);
	return 0;
}

int split__compute_range(struct split *s, uint64_t since_ns, uint64_t until_ns,
			 struct split_result *r)
{
	int ti = traces__find(s->traces, s->probe_id);

	memset(r, 0, sizeof(*r));
	counts__init(&r->slow);
	counts__init(&r->fast);
	if (ti < 0)
		return -ENOENT;
	r->function = traces__info(s->traces, ti)->func;
	r->percentile = s->pct;
	r->alpha = split_alpha(s);
	r->threshold_ns = traces__percentile(s->traces, ti, s->pct, false);
	/* Calls end after their samples: any call ending before the range
	 * starts has none in it, the rest are checked sample by sample. */
	for (size_t i = 0; i < s->n_done; i++) {
		const struct done_call *dc = &s->done[i];
		bool slow = dc->latency_ns >= r->threshold_ns, any = false;
		struct counts *c = slow ? &r->slow : &r->fast;

		if (dc->end_ns < since_ns)
			continue;
		for (uint32_t k = 0; k < dc->n; k++) {
			const struct entry *e = &s->pool[dc->first + k];

			if (e->time_ns < since_ns || e->time_ns >= until_ns)
				continue;
			if (counts__add(c, e->stack_id, e->count, e->weight))
				return -ENOMEM;
			any = true;
		}
		if (any)
			slow ? r->slow_calls++ : r->fast_calls++;
	}
	r->slow_samples = r->slow.total_count;
	r->fast_samples = r->fast.total_count;
	return 0;
}

void split_result__fini(struct split_result *r)
{
	counts__free(&r->slow);
	counts__free(&r->fast);
	free(r->ranks);
	free(r->latency_hist);
	memset(r, 0, sizeof(*r));
}
