// SPDX-License-Identifier: GPL-2.0
/*
 * causal_stats.c - per-pair impacts and their t-interval (causal_stats.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

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

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The order statistic that bounds a 95% interval of the median: the largest
 * k with P(Bin(n, 1/2) <= k - 1) <= 0.025, 0 when even [min, max] is short
 * of 95% (n < 6).
 */
static int median_rank(int n)
{
	double p = pow(0.5, n), cum = 0;
	int k = 0;

	for (int j = 0; j < n; j++) {
		cum += p;
		if (cum > 0.025)
			break;
		k = j + 1;
		p = p * (n - j) / (j + 1);
	}
	return k;
}

int causal_estimate(const double *x, int n, struct causal_est *out)
{
	double *v, sum = 0, ss = 0;
	int k = 0, r;

	out->n = 0;
	out->mean = out->sd = out->lo = out->hi = out->median = NAN;
	if (n < 1)
		return -EINVAL;
	v = malloc(sizeof(*v) * (size_t)n);
	if (!v)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		if (!isnan(x[i]))
			v[k++] = x[i];
	out->n = k;
	if (!k) {
		free(v);
		return 0;
	}
	qsort(v, k, sizeof(*v), dbl_cmp);
	for (int i = 0; i < k; i++)
		sum += v[i];
	out->mean = sum / k;
	for (int i = 0; i < k; i++)
		ss += (v[i] - out->mean) * (v[i] - out->mean);
	out->sd = k > 1 ? sqrt(ss / (k - 1)) : NAN;
	out->median = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
	/* A window starved by other load makes one pair's impact huge: the
	 * median, with the distribution-free interval of the sign test (order
	 * statistics k and n-k+1), is not moved by a few of those. It needs
	 * only that the pairs are independent, with the same median. */
	r = median_rank(k);
	if (r) {
		out->lo = v[r - 1];
		out->hi = v[k - r];
	}
	free(v);
	return 0;
}

enum causal_verdict causal_verdict(const struct causal_est *e, double small)
{
	if (e->n < 6 || isnan(e->lo))
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
