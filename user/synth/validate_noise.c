// SPDX-License-Identifier: GPL-2.0
/*
 * validate_noise.c - the sampling-noise model of `liveprof validate`: the
 * distribution of the total variation distance between a profile and n
 * samples drawn from it (see validate_noise.h for the null model).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "user/synth/validate_noise.h"

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct noise_rng *r)
{
	uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

/* Uniform in [0, 1) with 53 random bits. */
static double rng_unit(struct noise_rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

void noise_rng_seed(struct noise_rng *r, uint64_t seed)
{
	int i;

	for (i = 0; i < 4; i++) {
		uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		r->s[i] = z ^ (z >> 31);
	}
}

uint64_t noise_poisson(struct noise_rng *r, double lambda)
{
	double slam, loglam, a, b, inv_alpha, vr;

	if (lambda <= 0)
		return 0;
	if (lambda < 10) {
		/* Knuth's product of uniforms: exact, about lambda steps. */
		double limit = exp(-lambda), prod = rng_unit(r);
		uint64_t k = 0;

		while (prod > limit) {
			prod *= rng_unit(r);
			k++;
		}
		return k;
	}
	/*
	 * Hormann's transformed rejection with squeeze (PTRS, 1993): exact for
	 * lambda >= 10, constant expected time.
	 */
	slam = sqrt(lambda);
	loglam = log(lambda);
	b = 0.931 + 2.53 * slam;
	a = -0.059 + 0.02483 * b;
	inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
	vr = 0.9277 - 3.6224 / (b - 2);
	for (;;) {
		double u = rng_unit(r) - 0.5, v = rng_unit(r), us = 0.5 - fabs(u), k;

		k = floor((2 * a / us + b) * u + lambda + 0.43);
		if (us >= 0.07 && v <= vr)
			return (uint64_t)k;
		if (k < 0 || (us < 0.013 && v > us))
			continue;
		if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <=
		    -lambda + k * loglam - lgamma(k + 1))
			return (uint64_t)k;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int noise_tvd_simulate(const double *p, size_t k, double n, double alpha, size_t draws,
		       uint64_t seed, struct noise_tvd *out)
{
	double *tvd = calloc(draws ? draws : 1, sizeof(*tvd));
	uint64_t *cnt = calloc(k ? k : 1, sizeof(*cnt));
	double sum = 0, sum2 = 0;
	struct noise_rng r;
	size_t d, i, at;

	if (!tvd || !cnt) {
		free(tvd);
		free(cnt);
		return -ENOMEM;
	}
	noise_rng_seed(&r, seed);
	for (d = 0; d < draws; d++) {
		uint64_t total = 0;
		double dist = 0;

		for (i = 0; i < k; i++) {
			cnt[i] = noise_poisson(&r, n * p[i]);
			total += cnt[i];
		}
		for (i = 0; i < k; i++)
			dist += fabs(p[i] - (total ? (double)cnt[i] / (double)total : 0));
		tvd[d] = 0.5 * dist;
		sum += tvd[d];
		sum2 += tvd[d] * tvd[d];
	}
	qsort(tvd, draws, sizeof(*tvd), cmp_double);
	out->draws = draws;
	out->alpha = alpha;
	out->mean = draws ? sum / draws : 0;
	out->sd = draws > 1 ? sqrt(fmax(0, (sum2 - sum * sum / draws) / (draws - 1))) : 0;
	/* The smallest draw with at most alpha of the draws above it. */
	at = (size_t)ceil((1 - alpha) * draws);
	out->quantile = draws ? tvd[at >= draws ? draws - 1 : at] : 0;
	free(tvd);
	free(cnt);
	return 0;
}

double noise_tvd_expected(const double *p, size_t k, double n)
{
	double s = 0;
	size_t i;

	/* E|X - np| for X ~ Binomial(n, p) is about sqrt(2 n p (1 - p) / pi). */
	for (i = 0; i < k; i++)
		s += sqrt(2 * p[i] * (1 - p[i]) / (M_PI * n));
	return 0.5 * s;
}
