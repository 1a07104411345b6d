/* SPDX-License-Identifier: GPL-2.0 */
/*
 * causal_stats.h - the statistics of causal experiments: one estimate of
 * the impact per pair of windows (control, delayed), their median and its
 * sign-test interval. Pure functions, unit-tested (test_causal_stats).
 */
#ifndef LP_SESSION_CAUSAL_STATS_H
#define LP_SESSION_CAUSAL_STATS_H

#include <stdbool.h>

/* An estimate over n paired experiments. */
struct causal_est {
	int n;
	double median;	 /* of the per-pair impacts: the estimate */
	double mean, sd; /* of the per-pair impacts, for reference */
	double lo, hi;	 /* 95% interval of the median (NAN if n < 6) */
};

/**
 * causal_t95 - the two-sided 95% quantile of Student's t with @df degrees
 * of freedom (df >= 1): a table to 30, a Cornish-Fisher expansion beyond
 * (error < 1e-3 there)
 */
double causal_t95(int df);

/**
 * causal_pair_impact - one pair of windows as an impact
 * @ctrl: the progress cost in the control window (time per progress point
 *        for a throughput point, mean latency for a latency point)
 * @delayed: the same in the delayed window
 * @frac: the injected delay as a fraction of the candidate's mean duration
 *
 * A delay of @frac lengthens the progress cost by (delayed/ctrl - 1); where
 * the response is linear a speedup of @frac shortens it by as much, so the
 * impact is the % the program speeds up per 1% the candidate speeds up.
 *
 * Return: the impact, or NAN when an input is not positive.
 */
double causal_pair_impact(double ctrl, double delayed, double frac);

/**
 * causal_estimate - the median of @n values @x and its 95% interval
 *
 * The sign test's interval: order statistics k and n-k+1, k from the
 * binomial(n, 1/2) distribution, exact for any continuous distribution of
 * independent pairs. The pairs are independent (each has its own control,
 * in a random order), so drift slower than a pair cancels within each pair,
 * and a window starved by other load moves the interval by one rank at most.
 *
 * Return: 0, -EINVAL when @n < 1, -ENOMEM. NAN values are skipped.
 */
int causal_estimate(const double *x, int n, struct causal_est *out);

/**
 * causal_period - time per progress point over a window
 * @calls: progress points counted in the window; @span_ns its length
 *
 * Return: ns per progress point, or NAN without calls.
 */
double causal_period(double calls, double span_ns);

/* What an estimate says (see causal_verdict). */
enum causal_verdict {
	CAUSAL_INCONCLUSIVE = 0, /* too few pairs (< 6), or an interval too wide to decide */
	CAUSAL_HELPS,		 /* the interval is above @small */
	CAUSAL_HURTS,		 /* below -@small (a speedup slows the program) */
	CAUSAL_NO_EFFECT,	 /* the interval lies within [-@small, @small] */
	CAUSAL_SOME,		 /* excludes 0, but within [-@small, @small] or overlapping it */
};

/**
 * causal_verdict - classify @e against the smallest impact that matters
 * @small: impacts within +-@small count as no effect (e.g. 0.1)
 */
enum causal_verdict causal_verdict(const struct causal_est *e, double small);

/** causal_verdict_name - "helps", "no effect", ... */
const char *causal_verdict_name(enum causal_verdict v);

#endif
