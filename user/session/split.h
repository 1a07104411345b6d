/* SPDX-License-Identifier: GPL-2.0 */
/*
 * split.h - slow vs fast calls of a traced function.
 *
 * Samples taken while a call of the split function is in flight are held
 * per call (by call id) until the call's LP_EV_CALL_END arrives with its
 * latency; the call is then kept in a log of sampled calls. Classes are
 * computed from that log against the live pNN threshold of the function,
 * so the whole run and the window can both be split without re-reading
 * anything, and the threshold can change at any time.
 */
#ifndef LP_USER_SPLIT_H
#define LP_USER_SPLIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include <linux/types.h>
#include "bpf/liveprof.h"
#include "user/profile/profile.h"
#include "user/profile/stack_store.h"

struct traces;
struct stack_symbols;
struct split;

struct split_frame_rank {
	const char *frame;
	double slow_share, fast_share; /* inclusive share of each class */
	double delta;		       /* slow_share - fast_share */
	uint64_t slow_n, fast_n;       /* samples of each class the frame is in */
	double z;		       /* the normal z of the exact p, signed like delta */
	double p, p_holm;	       /* two-sided p-value, and Holm-adjusted over all frames */
	bool significant;	       /* p_holm <= SPLIT_ALPHA, enough samples per class */
	uint64_t needed;	       /* not significant: samples that would likely decide it */
	bool offcpu;		       /* the frame is a blocking (off-CPU) frame */
};

/* |bias_z| above this (two-sided 0.1%) is reported as a sampling bias */
#define SPLIT_BIAS_Z 3.29

struct split_result {
	const char *function;
	const char *frame; /* the stack frame a call of it stands in (Ruby: its method) */
	double percentile;
	uint64_t threshold_ns; /* calls at or above it are slow: traces__slow_from() */
	uint64_t slow_calls, fast_calls;	 /* sampled calls of each class */
	uint64_t all_slow_calls, all_fast_calls; /* from the histogram, every call */
	uint64_t slow_samples, fast_samples;
	uint64_t held, orphans, dropped, filtered; /* samples waiting, calls expired, ... */
	struct counts slow, fast;		   /* stack id -> count/weight */
	struct split_frame_rank *ranks;
	int n_ranks;
	double alpha; /* the family-wise error rate the stars were decided at */
	/*
	 * Sampled calls are classed by their latency net of what liveprof's
	 * samples and nested probes cost them (unless raw_latency). The mean
	 * correction, its uncertainty per sampled call, and whether that
	 * uncertainty reaches the gap between the threshold and the median:
	 * then the classes of sampled calls cannot be trusted and nothing is
	 * marked significant.
	 */
	bool raw_latency;
	double correction_ns;	  /* mean subtracted per sampled call */
	double correction_unc_ns; /* its uncertainty per sampled call */
	uint64_t median_ns;	  /* of every call */
	bool correction_exceeds;  /* correction_unc_ns >= threshold - median */
	bool ambiguous_class;	  /* the ambiguous calls hold all but a few of a class's samples */
	uint64_t calib_spread_ns; /* the per-sample calibration's own spread */
	/*
	 * The check of the classes of sampled calls against every call's
	 * latency (split_compute.c, expect_sampled_slow): without bias, the
	 * share of sampled calls classed slow lies between the share of slow
	 * calls (sampling blind to length) and that share weighted by length
	 * (every nanosecond of a call sampled alike).
	 * bias_z is how far slow_calls / sampled calls lies outside, in
	 * standard errors (0 inside); beyond SPLIT_BIAS_Z, sampling_biased.
	 */
	bool have_expected;
	double unbiased_min, unbiased_min_sd; /* share of slow calls */
	double unbiased_max, unbiased_max_sd; /* the same weighted by length */
	double bias_z;
	/* sampling_biased: at most this many sampled calls were moved (upper
	 * 99.9% bound), into the slow class when positive, out of it when
	 * negative; a star stays only where they cannot have made it */
	double moved_calls;
	/* sampled calls within the correction's error of the threshold, and
	 * their samples in each class: a star must survive their moving */
	uint64_t ambiguous_calls, ambiguous_slow_samples, ambiguous_fast_samples;
	bool sampling_biased;
	uint64_t *latency_hist; /* LP_HIST_BUCKETS counts of every call, for the JSON */
	/* the sampled calls' (net) latencies in the same buckets, for the JSON,
	 * and how many of them lie in buckets at or above the threshold's */
	uint64_t *sampled_hist;
	uint64_t slow_calls_bucketed;
	/* each sampled call (start, net latency, charge), for the JSON: the
	 * figures a check of the charges against the target's own clock
	 * needs (tests/e2e/test_py_charge.py) */
	struct split_call {
		uint64_t start_ns, latency_ns, overhead_ns;
	} * calls;
	size_t n_calls;
};

/**
 * split__new - split the traced function with probe id @probe_id at @pct
 * @traces: the traces that hold @probe_id's histogram; must outlive the split
 * @symbols: the frames of interned stacks; must outlive the split
 * @window_s: the sliding window in seconds, for split__compute(@window)
 * @when_line: probe id of a --when line, or -1
 *
 * The caller symbolizes new stacks before split__compute() reads frames.
 * Return: the split, or NULL on allocation failure.
 */
struct split *split__new(struct traces *traces, struct stack_symbols *symbols, int window_s,
			 int probe_id, double pct, int when_line);
void split__free(struct split *s);

void split__on_sample(struct split *s, uint32_t stack_id, const struct lp_sample *ev,
		      uint64_t count);
void split__on_call_end(struct split *s, const struct lp_call_end *e);
void split__tick(struct split *s, uint64_t now_ns);

/** split__set_window - the sliding window's length in seconds, for split__compute */
void split__set_window(struct split *s, int seconds);
/** split__set_percentile - move the threshold, e.g. from p95 to p99 */
void split__set_percentile(struct split *s, double pct);
int split__probe_id(const struct split *s);
/**
 * split__threshold - where the whole run's calls above the split
 * percentile begin (traces__slow_from): calls at or above it are slow
 * @function: if not NULL, the split function's name
 *
 * Return: 0, or -ENOENT if the function is no longer traced.
 */
int split__threshold(struct split *s, uint64_t *threshold_ns, const char **function);
/** split__percentile - the percentile that separates slow from fast calls */
double split__percentile(const struct split *s);

/**
 * split__compute - classify the sampled calls and rank frames
 * @window: only calls that ended within the sliding window
 * @use_weight: shares from weight (wall time, with --offcpu) instead of counts
 *
 * Return: 0 or a negative errno. Free @r with split_result__fini().
 */
int split__compute(struct split *s, bool window, bool use_weight, struct split_result *r);
void split_result__fini(struct split_result *r);

/**
 * split__compute_range - the samples taken in [@since_ns, @until_ns) in
 * calls that have ended, by class against the whole run's threshold
 *
 * Only the counts, calls and threshold of @r are set (no ranks). Samples
 * of calls still in flight are in neither class.
 * Return: 0 or a negative errno. Free @r with split_result__fini().
 */
int split__compute_range(struct split *s, uint64_t since_ns, uint64_t until_ns,
			 struct split_result *r);

/**
 * split__remap_stacks - stack @id of the samples kept becomes @map[@id] - 1
 * wherever @map[@id] is set (user/session/reclaim.h)
 */
void split__remap_stacks(struct split *s, const uint32_t *map, size_t n_map);

/** split__stats - held samples, orphaned calls, dropped samples */
void split__stats(const struct split *s, uint64_t *held, uint64_t *orphans, uint64_t *dropped);

/** split__print - the ranked table, to @f */
void split__print(const struct split_result *r, FILE *f, int rows);
/** split__json - the "split" object of the --json summary */
json_t *split__json(const struct split_result *r, int rows);

#endif
