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
 * Each sampled call that ended since @since, and its samples, into its
 * class; its latency's bucket into r->sampled_hist, for the bias check.
 */
static int class_sampled_calls(struct split *s, uint64_t since, struct split_result *r)
{
	r->sampled_hist = calloc(LP_HIST_BUCKETS, sizeof(uint64_t));
	r->calls = calloc(s->n_done ? s->n_done : 1, sizeof(*r->calls));
	if (!r->sampled_hist || !r->calls)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_done; i++) {
		const struct done_call *dc = &s->done[i];
		bool slow = dc->latency_ns >= r->threshold_ns;
		struct counts *c = slow ? &r->slow : &r->fast;
		uint32_t b = lp_hist_bucket(dc->latency_ns);

		if (dc->end_ns < since)
			continue;
		slow ? r->slow_calls++ : r->fast_calls++;
		r->sampled_hist[b < LP_HIST_BUCKETS ? b : LP_HIST_BUCKETS - 1]++;
		r->calls[r->n_calls++] =
			(struct split_call){dc->start_ns, dc->latency_ns, dc->overhead_ns};
		if (traces__bucket_value(b) >= r->threshold_ns)
			r->slow_calls_bucketed++;
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
	/* in the histogram's buckets, like the range (the threshold being a
	 * bucket's edge, the same as comparing the exact latencies) */
	obs = (double)r->slow_calls_bucketed / n;
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

/* The split function's name, and the frame a call of it stands in. */
static void split_names(struct split *s, int ti, struct split_result *r)
{
	const struct trace_info *info = traces__info(s->traces, ti);

	r->function = info->func;
	r->frame = info->frame ? info->frame : info->func;
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
	split_names(s, ti, r);
	r->held = s->held_entries;
	r->orphans = s->orphans;
	r->dropped = s->dropped;
	r->filtered = s->filtered;
	r->percentile = s->pct;
	r->alpha = split_alpha(s);
	r->threshold_ns = traces__slow_from(s->traces, ti, s->pct, window);

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
	err = split_rank_frames(s, use_weight, r);
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
	err = split_recheck_ambiguous(s, since, r);
	if (err)
		return err;
	split_sort_ranks(r);
	return 0;
}

int split__threshold(struct split *s, uint64_t *threshold_ns, const char **function)
{
	int ti = traces__find(s->traces, s->probe_id);

	if (ti < 0)
		return -ENOENT;
	*threshold_ns = traces__slow_from(s->traces, ti, s->pct, false);
	if (function)
		*function = traces__info(s->traces, ti)->func;
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
	split_names(s, ti, r);
	r->percentile = s->pct;
	r->alpha = split_alpha(s);
	r->threshold_ns = traces__slow_from(s->traces, ti, s->pct, false);
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
	free(r->sampled_hist);
	free(r->calls);
	memset(r, 0, sizeof(*r));
}
