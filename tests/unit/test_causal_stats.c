// SPDX-License-Identifier: GPL-2.0
/*
 * test_causal_stats.c - the statistics of `liveprof causal`: per-pair
 * impacts, the t quantiles, the interval's coverage on simulated pairs, and
 * the verdicts; the percentile of a latency point between two readings of
 * its histogram; plus the causal scenarios' spec parser and the point's.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "unit.h"
#include "bpf/liveprof.h"
#include "user/session/causal_stats.h"
#include "user/session/causal.h"
#include "user/session/traces.h"
#include "user/synth/causal_scenario.h"

static uint64_t h0[LP_HIST_BUCKETS], h1[LP_HIST_BUCKETS];

/* A latency point's percentile counts only the calls between the readings,
 * and lands inside the bucket of the call it ranks, in proportion to its
 * rank among that bucket's calls. */
UNIT_TEST(quantile_between_readings)
{
	uint32_t fast = lp_hist_bucket(1000), slow = lp_hist_bucket(4000);
	double lo = (double)traces__bucket_lower(slow), hi = (double)traces__bucket_lower(slow + 1);
	double p95, p50;

	CHECK(isnan(traces__hist_quantile_between(h0, h1, 95)));
	h0[fast] = 50; /* before the window: not counted */
	h1[fast] = 140;
	h1[slow] = 10;
	/* 90 fast and 10 slow calls: the 95th is the 5th of the 10 slow */
	p95 = traces__hist_quantile_between(h0, h1, 95);
	CHECK(fabs(p95 - (lo + (hi - lo) * 0.5)) < 1e-9);
	p50 = traces__hist_quantile_between(h0, h1, 50);
	CHECK(p50 >= (double)traces__bucket_lower(fast) &&
	      p50 < (double)traces__bucket_lower(fast + 1));
	/* one more slow call (the 95th of 101 is the 5.95th of 11) moves it up
	 * within the bucket, not by a bucket */
	h1[slow] = 11;
	CHECK(fabs(traces__hist_quantile_between(h0, h1, 95) - (lo + (hi - lo) * 5.95 / 11)) <
	      1e-9);
	CHECK(traces__hist_quantile_between(h0, h1, 95) > p95);
	/* a counter read lower than before (never, but never negative) */
	h0[slow] = 20;
	CHECK(traces__hist_quantile_between(h0, h1, 99.9) < hi);
}

/* "SPEC@pNN" splits; a bad percentile is refused, no suffix is the mean. */
UNIT_TEST(point_specs)
{
	char spec[64], err[128];
	double pct = -1;

	CHECK(!causal__point_parse("handle@p95", spec, sizeof(spec), &pct, err, sizeof(err)));
	CHECK(!strcmp(spec, "handle") && pct == 95);
	CHECK(!causal__point_parse("handle", spec, sizeof(spec), &pct, err, sizeof(err)));
	CHECK(!strcmp(spec, "handle") && pct == 0);
	CHECK(!causal__point_parse("py:app.handle@P99.9", spec, sizeof(spec), &pct, err,
				   sizeof(err)));
	CHECK(!strcmp(spec, "py:app.handle") && pct == 99.9);
	CHECK(causal__point_parse("handle@p100", spec, sizeof(spec), &pct, err, sizeof(err)) ==
	      -EINVAL);
	CHECK(strstr(err, "p100") != NULL);
	CHECK(causal__point_parse("handle@px", spec, sizeof(spec), &pct, err, sizeof(err)) ==
	      -EINVAL);
	CHECK(causal__point_parse("@p95", spec, sizeof(spec), &pct, err, sizeof(err)) == -EINVAL);
}

/* Exact arithmetic: 10% longer cost at a 25% delay is an impact of 0.4. */
UNIT_TEST(pair_impact)
{
	CHECK(fabs(causal_pair_impact(100, 110, 0.25) - 0.4) < 1e-12);
	CHECK(fabs(causal_pair_impact(100, 100, 0.25)) < 1e-12);
	CHECK(fabs(causal_pair_impact(200, 190, 0.5) + 0.1) < 1e-12);
	CHECK(isnan(causal_pair_impact(0, 110, 0.25)));
	CHECK(isnan(causal_pair_impact(100, 110, 0)));
	CHECK(fabs(causal_period(1000, 1e9) - 1e6) < 1e-6);
	CHECK(isnan(causal_period(0, 1e9)));
}

/* The table, and the expansion beyond it (R's qt(0.975, df)). */
UNIT_TEST(t_quantiles)
{
	CHECK(fabs(causal_t95(1) - 12.7062) < 1e-4);
	CHECK(fabs(causal_t95(9) - 2.2622) < 1e-4);
	CHECK(fabs(causal_t95(30) - 2.0423) < 1e-4);
	CHECK(fabs(causal_t95(40) - 2.0211) < 1e-3);
	CHECK(fabs(causal_t95(120) - 1.9799) < 1e-3);
	CHECK(fabs(causal_t95(100000) - 1.96) < 1e-3);
	CHECK(isnan(causal_t95(0)));
}

/* Median, mean and the sign-test interval of known samples; NAN skipped. */
UNIT_TEST(estimate_known)
{
	double x[] = {5, 1, 4, 2, NAN, 3, 100, 6};
	double y[16];
	struct causal_est e;

	CHECK_EQ_INT(causal_estimate(x, 8, &e), 0);
	CHECK_EQ_INT(e.n, 7);
	CHECK(fabs(e.median - 4) < 1e-12);
	CHECK(fabs(e.mean - 121.0 / 7) < 1e-12);
	/* n = 7: P(Bin(7, 1/2) = 0) = 1/128 <= 0.025 < P(<= 1): [min, max] */
	CHECK(e.lo == 1 && e.hi == 100);
	CHECK_EQ_INT(causal_estimate(x, 5, &e), 0);
	CHECK(isnan(e.lo) && isnan(e.hi) && e.median == 3);
	/* n = 16: P(<= 3) = 697/65536 <= 0.025 < P(<= 4): ranks 4 and 13 */
	for (int i = 0; i < 16; i++)
		y[i] = 16 - i;
	CHECK_EQ_INT(causal_estimate(y, 16, &e), 0);
	CHECK(e.lo == 4 && e.hi == 13 && e.median == 8.5);
	CHECK(causal_estimate(x, 0, &e) < 0);
}

/* A seeded normal generator (Box-Muller over xorshift64*). */
static double gauss(uint64_t *s)
{
	double u1, u2;

	*s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
	u1 = ((*s * 2685821657736338717ull) >> 11) * 0x1.0p-53;
	*s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
	u2 = ((*s * 2685821657736338717ull) >> 11) * 0x1.0p-53;
	return sqrt(-2 * log(u1 + 1e-300)) * cos(2 * M_PI * u2);
}

/*
 * Coverage: pairs simulated from a program whose cost grows by exactly
 * impact x delay, with noisy windows and one starved window in ten (ten
 * times the cost), must give intervals that hold the true impact as often
 * as the sign test says: 1 - 2 x 697/65536 = 97.87% for 16 pairs. The
 * binomial SE over 4000 runs is 0.23%: the bounds are at 4 SE.
 */
UNIT_TEST(interval_coverage)
{
	const double truth = 0.6, frac = 0.25, noise = 0.03;
	const double want = 1 - 2 * 697.0 / 65536, se = sqrt(want * (1 - want) / 4000);
	uint64_t seed = 12345;
	int runs = 4000, covered = 0;

	for (int r = 0; r < runs; r++) {
		double imp[16];
		struct causal_est e;

		for (int i = 0; i < 16; i++) {
			double ctl = 1000 * (1 + noise * gauss(&seed));
			double del = 1000 * (1 + truth * frac) * (1 + noise * gauss(&seed));

			/* a starved window, either one: symmetric outliers */
			if (i % 10 == 3)
				(r + i) % 2 ? (ctl *= 10) : (del *= 10);
			imp[i] = causal_pair_impact(ctl, del, frac);
		}
		causal_estimate(imp, 16, &e);
		covered += e.lo <= truth && truth <= e.hi;
	}
	CHECK(fabs((double)covered / runs - want) < 4 * se + 0.01);
}

UNIT_TEST(verdicts)
{
	struct causal_est e = {.n = 10, .mean = 0.5, .lo = 0.3, .hi = 0.7};

	CHECK_EQ_INT(causal_verdict(&e, 0.1), CAUSAL_HELPS);
	e = (struct causal_est){.n = 10, .mean = 0.0, .lo = -0.05, .hi = 0.06};
	CHECK_EQ_INT(causal_verdict(&e, 0.1), CAUSAL_NO_EFFECT);
	e = (struct causal_est){.n = 10, .mean = 0.0, .lo = -0.5, .hi = 0.6};
	CHECK_EQ_INT(causal_verdict(&e, 0.1), CAUSAL_INCONCLUSIVE);
	e = (struct causal_est){.n = 10, .mean = -0.5, .lo = -0.7, .hi = -0.3};
	CHECK_EQ_INT(causal_verdict(&e, 0.1), CAUSAL_HURTS);
	e = (struct causal_est){.n = 5, .mean = 0.5, .lo = 0.4, .hi = 0.6};
	CHECK_EQ_INT(causal_verdict(&e, 0.1), CAUSAL_INCONCLUSIVE);
	CHECK_STR(causal_verdict_name(CAUSAL_NO_EFFECT), "no effect");
}

UNIT_TEST(scenario_specs)
{
	const struct causal_scenario *sc;
	char func[64], err[256];
	double pct;

	CHECK_EQ_INT(causal_scenario_parse("causal-pipeline", &sc, func, sizeof(func), &pct, err,
					   sizeof(err)),
		     0);
	CHECK_STR(sc->gating, "encode");
	CHECK_STR(func, "");
	CHECK_EQ_INT(causal_scenario_parse("causal-lock:critical=30", &sc, func, sizeof(func), &pct,
					   err, sizeof(err)),
		     0);
	CHECK_STR(func, "critical");
	CHECK(pct == 30);
	CHECK(causal_scenario_parse("causal-lock:main=30", &sc, func, sizeof(func), &pct, err,
				    sizeof(err)) < 0);
	CHECK(causal_scenario_parse("causal-nope", &sc, func, sizeof(func), &pct, err,
				    sizeof(err)) < 0);
	CHECK(causal_scenario_parse("causal-spin:compute=95", &sc, func, sizeof(func), &pct, err,
				    sizeof(err)) < 0);
}

UNIT_MAIN()
