// SPDX-License-Identifier: GPL-2.0
/*
 * test_validate_noise.c - the sampling-noise model of `liveprof validate`
 * against closed forms. The generator is seeded, so each check is exact to
 * repeat; the bounds are still set at 5 standard errors of each estimate
 * (a 1 in 10^6 chance for a correct model with another seed).
 */
#include <math.h>

#include "unit.h"
#include "user/synth/validate_noise.h"

/* Mean and variance of Poisson draws match lambda, below and above the PTRS cut (10). */
UNIT_TEST(poisson_moments)
{
	static const double lambdas[] = {0.5, 3, 9.9, 10, 30, 3000, 1e6};
	const size_t n = 200000;
	struct noise_rng r;
	size_t i, k;

	noise_rng_seed(&r, 42);
	for (i = 0; i < sizeof(lambdas) / sizeof(lambdas[0]); i++) {
		double l = lambdas[i], s = 0, s2 = 0, mean, var;

		for (k = 0; k < n; k++) {
			double x = (double)noise_poisson(&r, l);

			s += x;
			s2 += x * x;
		}
		mean = s / n;
		var = s2 / n - mean * mean;
		/* SE of the mean sqrt(l / n); of the variance l sqrt((2 + 1 / l) / n). */
		CHECK(fabs(mean - l) <= 5 * sqrt(l / n));
		CHECK(fabs(var - l) <= 5 * l * sqrt((2 + 1 / l) / n));
	}
	CHECK_EQ_INT(noise_poisson(&r, 0), 0);
}

/* With many well-filled cells the mean TVD is the normal approximation's. */
UNIT_TEST(tvd_mean_many_cells)
{
	double p[20], approx;
	struct noise_tvd t;
	size_t i;

	for (i = 0; i < 20; i++)
		p[i] = (i + 1) / 210.0; /* 1..20 out of 210 */
	CHECK_EQ_INT(noise_tvd_simulate(p, 20, 100000, 0.01, 20000, 1, &t), 0);
	approx = noise_tvd_expected(p, 20, 100000);
	CHECK(fabs(t.mean - approx) <= 5 * t.sd / sqrt(20000) + 0.002 * approx);
	CHECK(t.quantile > t.mean && t.sd > 0);
}

/* Two cells: the TVD is |k/n - p|, whose 1 - alpha quantile is z(alpha/2) sd. */
UNIT_TEST(tvd_quantile_two_cells)
{
	double p[2] = {0.5, 0.5}, sd = sqrt(0.25 / 10000), want = 2.5758 * sd;
	struct noise_tvd t, again;

	CHECK_EQ_INT(noise_tvd_simulate(p, 2, 10000, 0.01, 100000, 3, &t), 0);
	/* The 99% quantile of 10^5 draws: its own SE is about 1.5% of it. */
	CHECK(fabs(t.quantile - want) <= 0.05 * want);
	CHECK(fabs(t.mean - sd * sqrt(2 / M_PI)) <= 5 * t.sd / sqrt(100000));
	/* The same seed gives the same answer. */
	CHECK_EQ_INT(noise_tvd_simulate(p, 2, 10000, 0.01, 100000, 3, &again), 0);
	CHECK(again.quantile == t.quantile && again.mean == t.mean);
}

UNIT_MAIN()
