// SPDX-License-Identifier: GPL-2.0
/*
 * causal_stats.c - per-pair impacts and their t-interval (causal_stats.h).
 */
#include <errno.h>
#include <math.h>

#include "user/session/causal_stats.h"

/* Two-sided 95% quantiles of Student's t, df = 1..30. */
static const double t95_table[30] = {
	12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
	2.2010,	 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
	2.0796,	 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
};

double causal_t95(int df)
{
	const double z = 1.959964;
	double v;

	if (df < 1)
		return NAN;
	if (df <= 30)
		return t95_table[df - 1];
	/* Cornish-Fisher expansion of t in powers of 1/df around the normal. */
	v = (double)df;
	return z + (z * z * z + z) / (4 * v) +
	       (5 * pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * v * v);
}

double causal_pair_impact(double ctrl, double delayed, double frac)
{
	if (!(ctrl > 0) || !(delayed > 0) || !(frac > 0))
		return NAN;
	return (delayed / ctrl - 1) / frac;
}

double causal_period(double calls, double span_ns)
{
	return calls > 0 && span_ns > 0 ? span_ns / calls : NAN;
}

int causal_estimate(const double *x, int n, struct causal_est *out)
{
	double sum = 0, ss = 0, half;
	int k = 0;

	out->n = 0;
	out->mean = out->sd = out->lo = out->hi = NAN;
	if (n < 1)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		if (isnan(x[i]))
			continue;
		sum += x[i];
		k++;
	}
	out->n = k;
	if (!k)
		return 0;
	out->mean = sum / k;
	if (k < 2) {
		out->lo = out->hi = out->mean;
		return 0;
	}
	for (int i = 0; i < n; i++)
		if (!isnan(x[i]))
			ss += (x[i] - out->mean) * (x[i] - out->mean);
	out->sd = sqrt(ss / (k - 1));
	half = causal_t95(k - 1) * out->sd / sqrt((double)k);
	out->lo = out->mean - half;
	out->hi = out->mean + half;
	return 0;
}

enum causal_verdict causal_verdict(const struct causal_est *e, double small)
{
	if (e->n < 3 || isnan(e->lo))
		return CAUSAL_INCONCLUSIVE;
	if (e->lo > small)
		return CAUSAL_HELPS;
	if (e->hi < -small)
		return CAUSAL_HURTS;
	if (e->lo >= -small && e->hi <= small)
		return e->lo > 0 || e->hi < 0 ? CAUSAL_SOME : CAUSAL_NO_EFFECT;
	/* Wider than the band on a side and not clear of it: more pairs
	 * would be needed to say anything. */
	return e->lo > 0 || e->hi < 0 ? CAUSAL_SOME : CAUSAL_INCONCLUSIVE;
}

const char *causal_verdict_name(enum causal_verdict v)
{
	switch (v) {
	case CAUSAL_HELPS:
		return "helps";
	case CAUSAL_HURTS:
		return "hurts";
	case CAUSAL_NO_EFFECT:
		return "no effect";
	case CAUSAL_SOME:
		return "small";
	default:
		return "inconclusive";
	}
}
