/* SPDX-License-Identifier: GPL-2.0 */
/*
 * causal.h - causal profiling of a live process by delay injection
 * (`liveprof causal`): which function, if it were faster, would make the
 * program faster? One candidate at a time, windows where each call of the
 * candidate is delayed alternate, in a random order, with control windows;
 * the change in a progress point (calls per second of a traced function, or
 * the mean or a percentile of the latency of one) per unit of delay predicts the effect of a
 * speedup. See the README, "Causal profiling", for the method's assumptions.
 */
#ifndef LP_SESSION_CAUSAL_H
#define LP_SESSION_CAUSAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "user/session/causal_stats.h"

struct daemon;

#define CAUSAL_MAX_CAND	 32
#define CAUSAL_MAX_PAIRS 512
#define CAUSAL_NAME_MAX	 128

struct causal_opts {
	const char *progress; /* throughput point: a --trace spec, or NULL */
	const char *latency;  /* latency point, SPEC or SPEC@pNN (the metric when given), or NULL */
	const char *const *candidates; /* functions or FILE:LINE; NULL: auto */
	int n_candidates;
	int auto_n;		 /* auto: this many top functions by CPU share */
	double duration_s;	 /* the whole run, sampling included */
	double sample_s;	 /* CPU profile taken first, for shares and auto */
	double window_s;	 /* one control or delayed window */
	double delay_pct;	 /* delay per call, % of the candidate's mean duration */
	double target_half;	 /* a candidate is done when its CI half-width is below this */
	double max_overhead_pct; /* injected delay, % of one CPU */
	double no_progress_s;	 /* a progress point silent this long is an error */
	uint64_t seed;		 /* of the windows' order */
	bool verbose;		 /* print every pair */
	/* called at every poll of the daemon while the run waits (about every
	 * 50 ms): the TUI draws and reads keys there; NULL for none */
	void (*on_wait)(void *ctx);
	void *wait_ctx;
};

/* One candidate: what was measured, or why it was skipped. */
struct causal_cand {
	char function[CAUSAL_NAME_MAX];
	double cpu_share;   /* % of the target's samples in it (self), -1 unknown */
	char skipped[256];  /* empty: measured; else the reason */
	double mean_ns;	    /* its mean duration in control windows */
	double calls_per_s; /* its call rate in control windows */
	double delay_ns;    /* injected per call */
	double impacts[CAUSAL_MAX_PAIRS];
	int n_pairs;
	double frac_sum, rel_sum; /* sums over pairs: delay fraction, cost change */
	struct causal_est est;
	enum causal_verdict verdict;
	double seconds;	    /* spent on it */
	bool is_line;	    /* a FILE:LINE: delays triggered by ticks in it (causal_line.c) */
	double share_ticks; /* a line: the target's user-mode ticks its cpu_share is of */
	/* A line: each control window's ticks in it and in the target's user
	 * code. On a loaded machine one window's share strays far beyond its
	 * binomial spread (49% and 71% for 60%, 450 ticks), so the share is
	 * pooled over all of them and each is reported, for its spread. */
	uint32_t win_hits[CAUSAL_MAX_PAIRS + 8], win_user[CAUSAL_MAX_PAIRS + 8];
	int n_win;
};

struct causal_run {
	struct causal_cand cand[CAUSAL_MAX_CAND];
	int n_cand;
	bool latency;	     /* the metric: latency (true) or throughput */
	double latency_pct;  /* a latency point's percentile (SPEC@pNN); 0: its mean */
	char point[256];     /* the progress point's spec */
	double base_rate;    /* progress points per second while sampling */
	double base_latency; /* ns, with a latency point (its mean or percentile) */
	double small;	     /* impacts within +-small count as no effect */
	bool target_exited;  /* the target ended the run */
	bool interrupted;    /* a signal ended it */
	double elapsed_s;
	uint64_t delayed_hits; /* probe hits that waited (BPF's count) */
	uint64_t yielded_hits; /* of those, cut short for the scheduler */
};

/**
 * causal__run - sample the target, pick candidates, run the experiments
 * @d: an open daemon with its targets added and sampling started
 * @stop: set by a signal handler to end the run early (still reported)
 * @err: a one-line message on failure
 *
 * Return: 0 (also when the target exited or @stop was set: @r holds what was
 * measured), -ENOENT/-EINVAL when a progress spec cannot be traced,
 * -ENODATA when the progress point never fired, -ESRCH when the target
 * exited before anything was measured, or another negative errno.
 */
int causal__run(struct daemon *d, const struct causal_opts *o, struct causal_run *r,
		volatile sig_atomic_t *stop, char *err, size_t errlen);

/**
 * causal__point_parse - split a progress point "SPEC" or "SPEC@pNN"
 * @text: what the user gave
 * @spec: out, the --trace spec (@len bytes)
 * @pct: out, NN (0 < NN < 100), or 0 without a percentile (the mean)
 * @err: a one-line message on failure
 *
 * Return: 0, or -EINVAL for a bad percentile or an empty or too long spec.
 */
int causal__point_parse(const char *text, char *spec, size_t len, double *pct, char *err,
			size_t errlen);

/** causal__print - the ranked table, to @f */
void causal__print(const struct causal_run *r, FILE *f);

/** causal__json - {"causal": [...], ...}; NULL on allocation failure */
json_t *causal__json(const struct causal_run *r);

/**
 * causal__write_svg - the coz-style plot, one panel per measured candidate:
 * predicted program speedup against the candidate's speedup, with the 95%
 * band, and the measured points at the injected delay. Written atomically.
 *
 * Return: 0 or a negative errno.
 */
int causal__write_svg(const struct causal_run *r, const char *path);

/** causal__sort - rank the candidates: measured by impact, then the skipped */
void causal__sort(struct causal_run *r);

#endif
