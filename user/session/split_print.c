// SPDX-License-Identifier: GPL-2.0
/*
 * split_print.c - the split's table for people and its --json object.
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

void split__print(const struct split_result *r, FILE *f, int rows)
{
	const struct split_frame_rank *top = split_rank__top(r);

	fprintf(f,
		"\nsplit of %s at p%g: slow >= %.1f us; sampled calls: %" PRIu64 " slow, %" PRIu64
		" fast (of %" PRIu64 " / %" PRIu64 "); samples: %" PRIu64 " slow, %" PRIu64
		" fast\n",
		r->function, r->percentile, r->threshold_ns / 1e3, r->slow_calls, r->fast_calls,
		r->all_slow_calls, r->all_fast_calls, r->slow_samples, r->fast_samples);
	if (r->orphans || r->dropped || r->filtered)
		fprintf(f,
			"  %" PRIu64 " calls never returned (expired), %" PRIu64
			" samples dropped, %" PRIu64 " calls filtered out by --when\n",
			r->orphans, r->dropped, r->filtered);
	if (r->raw_latency)
		fprintf(f,
			"  raw latencies (--raw-latency): sampled calls include what sampling "
			"cost them (%.1f us per sampled call)\n",
			r->correction_ns / 1e3);
	else
		fprintf(f,
			"  latencies net of liveprof's own cost: %.1f +- %.1f us subtracted per "
			"sampled call (median call %.1f us)\n",
			r->correction_ns / 1e3, r->correction_unc_ns / 1e3, r->median_ns / 1e3);
	if (r->have_expected)
		fprintf(f,
			"  sampled calls classed slow: %.1f%%; without bias between %.1f%% (share of "
			"slow calls) and %.1f%% (weighted by length): %s (z %.1f)\n",
			100.0 * (double)r->slow_calls_bucketed /
				(double)(r->slow_calls + r->fast_calls),
			100 * r->unbiased_min, 100 * r->unbiased_max,
			fabs(r->bias_z) > SPLIT_BIAS_Z ? "sampling moves calls across the threshold"
						       : "no sign of bias",
			r->bias_z);
	if (r->sampling_biased)
		fprintf(f,
			"  the classes of sampled calls cannot be trusted: up to %.0f calls moved %s "
			"the slow class; a frame is marked significant only if it differs even when "
			"every one of them went against it\n",
			fabs(r->moved_calls), r->moved_calls > 0 ? "into" : "out of");
	if (r->correction_exceeds)
		fprintf(f,
			"  calls too short to class: the correction (%.1f us) is over 8x the median "
			"call (%.1f us); nothing is marked significant\n",
			r->correction_ns / 1e3, r->median_ns / 1e3);
	else if (r->ambiguous_calls)
		fprintf(f,
			"  %lu sampled calls lie within the correction's error (%.1f us) of the "
			"threshold: a frame is marked significant only if it differs whichever class "
			"they belong to\n",
			(unsigned long)r->ambiguous_calls, r->correction_unc_ns / 1e3);
	if (r->ambiguous_class)
		fprintf(f, "  ambiguous: those calls hold nearly all of a class's samples, so the "
			   "split cannot decide (verdict \"ambiguous\")\n");
	fprintf(f, "  %-40s %8s %8s %9s %7s %9s\n", "frame (more in slow calls first)", "slow%",
		"fast%", "delta", "z", "p(Holm)");
	for (int i = 0; i < r->n_ranks && i < rows; i++) {
		const struct split_frame_rank *k = &r->ranks[i];

		if (k->delta <= 0 && i > 0)
			break;
		fprintf(f, "  %-40.40s %7.1f%% %7.1f%% %+8.1f%% %7.1f %9.1e%s%s\n", k->frame,
			100 * k->slow_share, 100 * k->fast_share, 100 * k->delta, k->z, k->p_holm,
			k->significant ? " *" : "", k->offcpu ? " (off-cpu)" : "");
	}
	fprintf(f,
		"  (* significant: Fisher's exact test per frame, Holm's correction over the %d frames ranked, "
		"family-wise error rate %g%%)\n",
		r->n_ranks, 100 * r->alpha);
	if (split_rank__needed_total(r))
		fprintf(f,
			"  inconclusive: needs about %" PRIu64 " samples (have %" PRIu64
			")%s%s%s\n",
			split_rank__needed_total(r), r->slow_samples + r->fast_samples,
			top ? " to tell whether '" : " in each class to rank frames",
			top ? top->frame : "", top ? "' explains the slow calls" : "");
	else if (!top || !top->significant)
		fprintf(f, "  no frame is more frequent in slow calls than in fast ones\n");
}

/* [lower bound, value, count] of the non-empty buckets of @hist, for
 * checking the bias check's figures (split_compute.c) from outside */
static json_t *hist_json(const uint64_t *hist)
{
	json_t *h = json_array();

	for (uint32_t k = 0; hist && k < LP_HIST_BUCKETS; k++)
		if (hist[k])
			json_array_append_new(h, json_pack("[I,I,I]",
							   (json_int_t)traces__bucket_lower(k),
							   (json_int_t)traces__bucket_value(k),
							   (json_int_t)hist[k]));
	return h;
}

#define JSON_MAX_CALLS 100000 /* the latest sampled calls listed; ~3 MB */

/* [start_ns, latency_ns, overhead_ns] of the latest sampled calls */
static json_t *calls_json(const struct split_result *r)
{
	json_t *a = json_array();
	size_t i = r->n_calls > JSON_MAX_CALLS ? r->n_calls - JSON_MAX_CALLS : 0;

	for (; r->calls && i < r->n_calls; i++)
		json_array_append_new(a, json_pack("[I,I,I]", (json_int_t)r->calls[i].start_ns,
						   (json_int_t)r->calls[i].latency_ns,
						   (json_int_t)r->calls[i].overhead_ns));
	return a;
}

json_t *split__json(const struct split_result *r, int rows)
{
	json_t *o = json_object(), *top = json_array();

	json_object_set_new(o, "function", json_string(r->function));
	json_object_set_new(o, "percentile", json_real(r->percentile));
	json_object_set_new(o, "threshold_ns", json_integer(r->threshold_ns));
	json_object_set_new(o, "slow_calls", json_integer(r->slow_calls));
	json_object_set_new(o, "fast_calls", json_integer(r->fast_calls));
	json_object_set_new(o, "all_slow_calls", json_integer(r->all_slow_calls));
	json_object_set_new(o, "all_fast_calls", json_integer(r->all_fast_calls));
	json_object_set_new(o, "slow_samples", json_integer(r->slow_samples));
	json_object_set_new(o, "fast_samples", json_integer(r->fast_samples));
	json_object_set_new(o, "held_samples", json_integer(r->held));
	json_object_set_new(o, "orphan_calls", json_integer(r->orphans));
	json_object_set_new(o, "dropped_samples", json_integer(r->dropped));
	json_object_set_new(o, "filtered_calls", json_integer(r->filtered));
	json_object_set_new(o, "raw_latency", json_boolean(r->raw_latency));
	json_object_set_new(o, "median_ns", json_integer(r->median_ns));
	json_object_set_new(o, "correction_ns", json_real(r->correction_ns));
	json_object_set_new(o, "correction_uncertainty_ns", json_real(r->correction_unc_ns));
	json_object_set_new(o, "calibration_spread_ns", json_integer(r->calib_spread_ns));
	json_object_set_new(o, "correction_exceeds_signal", json_boolean(r->correction_exceeds));
	json_object_set_new(o, "ambiguous_calls", json_integer((json_int_t)r->ambiguous_calls));
	json_object_set_new(o, "ambiguous_class", json_boolean(r->ambiguous_class));
	if (r->have_expected) {
		json_object_set_new(o, "unbiased_slow_share_min", json_real(r->unbiased_min));
		json_object_set_new(o, "unbiased_slow_share_min_sd", json_real(r->unbiased_min_sd));
		json_object_set_new(o, "unbiased_slow_share_max", json_real(r->unbiased_max));
		json_object_set_new(o, "unbiased_slow_share_max_sd", json_real(r->unbiased_max_sd));
		json_object_set_new(o, "bias_z", json_real(r->bias_z));
		json_object_set_new(o, "sampling_biased", json_boolean(r->sampling_biased));
		json_object_set_new(o, "moved_calls", json_real(r->moved_calls));
		json_object_set_new(o, "latency_hist", hist_json(r->latency_hist));
		json_object_set_new(o, "sampled_latency_hist", hist_json(r->sampled_hist));
		json_object_set_new(o, "slow_calls_bucketed",
				    json_integer((json_int_t)r->slow_calls_bucketed));
		json_object_set_new(o, "sampled_calls", calls_json(r));
	}
	for (int i = 0; i < r->n_ranks && i < rows; i++) {
		const struct split_frame_rank *k = &r->ranks[i];

		json_array_append_new(
			top,
			json_pack("{s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:b,s:I,s:b}", "frame", k->frame,
				  "slow_share", k->slow_share, "fast_share", k->fast_share, "delta",
				  k->delta, "z", k->z, "p", k->p, "p_holm", k->p_holm,
				  "significant", k->significant, "needed_samples",
				  (json_int_t)(k->needed > INT64_MAX ? INT64_MAX : k->needed),
				  "offcpu", k->offcpu));
	}
	json_object_set_new(o, "top_frames", top);
	json_object_set_new(o, "significance",
			    json_pack("{s:s,s:s,s:f,s:i}", "test", "fisher exact", "correction",
				      "holm", "alpha", r->alpha, "frames_tested", r->n_ranks));
	json_object_set_new(o, "verdict", json_string(split_rank__verdict(r)));
	if (split_rank__needed_total(r))
		json_object_set_new(
			o, "needed_samples",
			json_integer((json_int_t)(split_rank__needed_total(r) > INT64_MAX
							  ? INT64_MAX
							  : split_rank__needed_total(r))));
	return o;
}
