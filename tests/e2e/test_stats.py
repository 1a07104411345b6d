"""The bounds of stats.py against simulation (no BPF, no root needed).

Each bound is checked where its false-failure rate can be seen (rate 0.01 or
0.05, thousands of simulated correct results), and exactly where it can be
computed (the binomial tails at 1e-4).
"""

import bisect
import math
import random

import pytest

import stats

TRIALS = 4000


def draw_binom(rng, cdf):
    return bisect.bisect_left(cdf, rng.random())


def fails(fn, *args, **kw):
    try:
        fn(*args, **kw)
        return False
    except AssertionError:
        return True


def upper(k, n, rate=1e-6):
    """Upper confidence limit of a simulated failure frequency (Wilson)."""
    return stats.wilson(k, n, rate)[1]


def lower(k, n, rate=1e-6):
    return stats.wilson(k, n, rate)[0]


@pytest.mark.parametrize("n,p", [(30, 0.5), (500, 0.2), (2000, 0.8), (400, 0.03)])
def test_acceptance_tails_exact(n, p):
    """The exact mass outside lo..hi is <= rate, and one count tighter would exceed it."""
    for rate in (1e-4, 1e-2):
        lo, hi = stats.acceptance(n, p, rate)
        pmf = stats.binom_pmf(n, p)
        assert sum(pmf[:lo]) <= rate / 2 + 1e-15 and sum(pmf[hi + 1:]) <= rate / 2 + 1e-15
        if lo > 0:
            assert sum(pmf[:lo + 1]) > rate / 2
        if hi < n:
            assert sum(pmf[hi:]) > rate / 2


@pytest.mark.parametrize("n,p", [(500, 0.2), (1500, 0.8)])
def test_share_false_failure_rate(n, p):
    rng = random.Random(7)
    cdf = stats.binom_cdf_table(n, p)
    rate = 0.01
    bad = sum(fails(stats.share, draw_binom(rng, cdf), n, p, "sim", rate) for _ in range(TRIALS))
    stats.reset()
    # at most the design rate (the exact test is a little conservative)
    assert lower(bad, TRIALS) <= rate, bad
    assert upper(bad, TRIALS) >= 0.3 * rate, f"far more conservative than designed: {bad}"


def test_share_detects_what_needed_says():
    """needed(p0, delta) samples catch a share off by delta with power ~0.99."""
    p0, delta, rate = 0.2, 0.05, 1e-4
    n = stats.needed(p0, delta, rate)
    rng = random.Random(3)
    for p1 in (p0 - delta, p0 + delta):
        cdf = stats.binom_cdf_table(n, p1)
        caught = sum(fails(stats.share, draw_binom(rng, cdf), n, p0, "sim", rate)
                     for _ in range(1000))
        assert upper(caught, 1000) >= 0.99 and caught >= 0.95 * 1000, (p1, n, caught)
    stats.reset()


def test_share_at_least_rate():
    rng = random.Random(11)
    n, p, rate = 300, 0.99, 0.01
    cdf = stats.binom_cdf_table(n, p)
    bad = sum(fails(stats.share_at_least, draw_binom(rng, cdf), n, p, "sim", rate)
              for _ in range(TRIALS))
    stats.reset()
    assert lower(bad, TRIALS) <= rate, bad


def test_wilson_coverage():
    rng = random.Random(5)
    n, p, rate = 200, 0.1, 0.05
    cdf = stats.binom_cdf_table(n, p)
    miss = 0
    for _ in range(TRIALS):
        lo, hi = stats.wilson(draw_binom(rng, cdf), n, rate)
        miss += not lo <= p <= hi
    assert lower(miss, TRIALS) <= rate <= upper(miss, TRIALS) * 1.5, miss


def test_shares_bonferroni_rate():
    rng = random.Random(9)
    probs = {"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.4}
    keys, cum = stats._sampler(probs)
    n, rate = 400, 0.05
    bad = 0
    for _ in range(2000):
        c = dict.fromkeys(keys, 0)
        for _ in range(n):
            c[keys[bisect.bisect_left(cum, rng.random())]] += 1
        bad += fails(stats.shares, c, probs, "sim", rate)
    stats.reset()
    assert lower(bad, 2000) <= rate, bad
    # an extra category always fails
    assert fails(stats.shares, {"a": 40, "b": 80, "c": 120, "d": 160, "e": 1}, probs, "x")


def test_two_shares_rate():
    rng = random.Random(13)
    n1, n2, p, rate = 300, 500, 0.2, 0.05
    c1, c2 = stats.binom_cdf_table(n1, p), stats.binom_cdf_table(n2, p)
    bad = sum(fails(stats.two_shares, draw_binom(rng, c1), n1, draw_binom(rng, c2), n2, "sim",
                    rate) for _ in range(2000))
    stats.reset()
    assert lower(bad, 2000) <= rate, bad
    # Fisher against a textbook value: 1/4 vs 3/4 of 8 each: p = 0.1319 (two-sided)
    assert abs(stats.fisher_p(2, 8, 6, 8) - 0.1319) < 1e-3


def test_tvd_bound_rate():
    """Simulated correct results stay under the bound at rate 0.01; a shifted one does not."""
    rng = random.Random(17)
    probs = {f"f{i}": 1.0 + (i % 5) for i in range(30)}
    n, rate = 2000, 0.01
    bound = stats.tvd_bound(probs, n, rate)
    keys, cum = stats._sampler(probs)
    total = sum(probs.values())
    over = 0
    for _ in range(500):
        c = [0] * len(keys)
        for _ in range(n):
            c[bisect.bisect_left(cum, rng.random())] += 1
        d = 0.5 * sum(abs(c[i] / n - probs[keys[i]] / total) for i in range(len(keys)))
        over += d > bound
    assert over <= 5, (over, bound)  # McDiarmid is conservative: expect none
    # the exact mean agrees with a bootstrap's, and the bound still tells a
    # distribution 0.1 away from the truth
    mean, sd = stats.tvd_noise(probs, n, boot=200)
    assert abs(stats.tvd_mean(probs, n) - mean) <= 4 * sd / math.sqrt(200), (mean, sd)
    assert bound < mean + 0.1, (bound, mean)


def test_binomial_mad_exact():
    for n, p in ((10, 0.3), (57, 0.5), (400, 0.02)):
        pmf = stats.binom_pmf(n, p)
        direct = sum(pmf[k] * abs(k - n * p) for k in range(n + 1))
        assert abs(stats.binom_mad(n, p) - direct) < 1e-9, (n, p)


@pytest.mark.parametrize("rate,df,table", [(0.05, 1, 12.706), (0.05, 10, 2.228),
                                           (0.01, 5, 4.032), (0.001, 20, 3.850)])
def test_t_quantile_matches_tables(rate, df, table):
    """Student's t quantiles as printed in statistical tables (3 decimals)."""
    assert abs(stats.t_two_sided(rate, df) - table) < 5e-4


def test_clustered_share_rate():
    """Windows whose shares stray beyond the binomial (each window's true
    share drawn around p0, then binomial counts): the pooled check fails at
    most at its rate (checked at 0.05), where the plain binomial one fails
    far more often."""
    rng = random.Random(11)
    p0, rate, bad, bad_binom = 0.6, 0.05, 0, 0
    lo, hi = stats.acceptance(8 * 450, p0, rate)
    for _ in range(TRIALS):
        wins = []
        for _ in range(8):
            p, n = min(0.95, max(0.05, rng.gauss(p0, 0.07))), 450
            # the window's binomial count, by its normal approximation
            k = round(rng.gauss(n * p, math.sqrt(n * p * (1 - p))))
            wins.append((min(n, max(0, k)), n))
        bad += fails(stats.clustered_share, wins, p0, "sim", rate)
        bad_binom += not lo <= sum(w[0] for w in wins) <= hi
    stats.reset()
    assert lower(bad, TRIALS) <= rate, bad
    assert upper(bad, TRIALS) >= 0.3 * rate, f"far more conservative than designed: {bad}"
    assert lower(bad_binom, TRIALS) > 3 * rate, bad_binom
