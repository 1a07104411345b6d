"""Derived tolerances for liveprof's statistical tests.

Every statistical assertion in tests/ goes through this module. Each check
states its null hypothesis (H0: what a correct liveprof gives, as a
probability model of the counts), and rejects only when the counts it has
are improbable under H0: the chance that a correct liveprof fails a check is
at most its `rate` (1e-4 unless a test says otherwise), by construction,
never by eye. The model behind the shares is the sampler's: each sample is
an independent draw from where the target spends its CPU time (binomial for
one share, multinomial for several).

Each check records the false-failure rate it spent; tests/e2e/conftest.py
prints them per test and their sum (a union bound on the suite's rate) at
the end of `make test`. tests/e2e/test_stats.py checks the bounds against
simulation.

Bounds:
  share        exact two-sided binomial acceptance region for the count
  share_at_least  exact one-sided binomial (H0: the share is >= p0)
  shares       several shares at once: per-category binomial, Bonferroni
  two_shares   two measured shares equal: Fisher's exact test
  clustered_share  one share pooled over windows of samples that need not
               be independent within a window: a ratio estimator whose
               variance comes from the windows' own spread, Student's t
  tvd          total variation distance to the expected distribution:
               E[TVD] exactly (De Moivre's binomial mean absolute deviation,
               checked against a bootstrap), plus McDiarmid's bound
               exp(-2 n t^2) on the deviation above the mean
"""

import bisect
import functools
import math
import random
from statistics import NormalDist

RATE = 1e-4  # false-failure rate of one check, by design

_spent = []  # (what, rate) of the checks run in the current test


def spent():
    """The checks run since the last reset(), as [(what, rate)]."""
    return list(_spent)


def reset():
    del _spent[:]


def record(what, rate):
    """Count a check made elsewhere (e.g. tests/compare_perf.py --rate)."""
    _spent.append((what, rate))


_record = record


def z(rate):
    """Two-sided normal quantile: P(|N(0,1)| > z) = rate."""
    return NormalDist().inv_cdf(1 - rate / 2)


# ---- binomial -------------------------------------------------------------

def _log_pmf(k, n, p):
    if p <= 0:
        return 0.0 if k == 0 else -math.inf
    if p >= 1:
        return 0.0 if k == n else -math.inf
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
            + k * math.log(p) + (n - k) * math.log1p(-p))


def binom_pmf(n, p):
    """[P(X = k) for k in 0..n], X ~ Binomial(n, p)."""
    return [math.exp(_log_pmf(k, n, p)) for k in range(n + 1)]


def binom_cdf_table(n, p):
    """[P(X <= k) for k in 0..n]."""
    out, acc = [], 0.0
    for v in binom_pmf(n, p):
        acc += v
        out.append(min(acc, 1.0))
    return out


def binom_le(k, n, p):
    """P(X <= k), X ~ Binomial(n, p)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return min(1.0, sum(math.exp(_log_pmf(i, n, p)) for i in range(k + 1)))


def binom_ge(k, n, p):
    """P(X >= k)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return min(1.0, sum(math.exp(_log_pmf(i, n, p)) for i in range(k, n + 1)))


@functools.lru_cache(maxsize=256)
def acceptance(n, p0, rate=RATE):
    """Counts lo..hi a correct result falls in with probability >= 1 - rate.

    Two-sided exact binomial: each tail outside [lo, hi] holds at most
    rate / 2 of Binomial(n, p0).
    """
    pmf = binom_pmf(n, p0)
    lo, acc = 0, 0.0
    while lo < n and acc + pmf[lo] <= rate / 2:
        acc += pmf[lo]
        lo += 1
    hi, acc = n, 0.0
    while hi > 0 and acc + pmf[hi] <= rate / 2:
        acc += pmf[hi]
        hi -= 1
    return lo, hi


def wilson(k, n, rate=RATE):
    """Wilson score interval for a share k/n at confidence 1 - rate."""
    if n == 0:
        return 0.0, 1.0
    zz = z(rate)
    ph = k / n
    den = 1 + zz * zz / n
    mid = (ph + zz * zz / (2 * n)) / den
    half = zz * math.sqrt(ph * (1 - ph) / n + zz * zz / (4 * n * n)) / den
    # exact at the ends (mid + half rounds below 1 when k == n)
    return (0.0 if k <= 0 else max(0.0, mid - half)), (1.0 if k >= n else min(1.0, mid + half))


def needed(p0, delta, rate=RATE, power=0.99, sides=2):
    """Samples a share test needs to tell p0 from p0 +- delta.

    With this many samples a share that is off by delta (in the direction
    that is harder to see; sides=1: below p0) fails the test at `rate` with
    probability >= power (normal approximation). Tests choose their
    frequency and duration from it.
    """
    za = z(rate) if sides == 2 else NormalDist().inv_cdf(1 - rate)
    zb = NormalDist().inv_cdf(power)
    worst = 0
    for p1 in (p0 - delta, p0 + delta)[:sides]:
        if not 0 < p1 < 1:
            continue
        n = ((za * math.sqrt(p0 * (1 - p0)) + zb * math.sqrt(p1 * (1 - p1))) / delta) ** 2
        worst = max(worst, n)
    return int(math.ceil(worst))


def enough(n, need, what):
    """Too few samples is its own outcome: the check cannot decide, so the test
    fails as inconclusive (not as wrong) and says how many it needs."""
    assert n >= need, (f"inconclusive: {what}: {n} samples, the check needs about {need} "
                       f"to decide (the target got too little CPU?)")


def _fmt_rate(rate):
    return f"{rate:.0e}".replace("e-0", "e-")


def share(k, n, p0, what, rate=RATE):
    """Assert that k of n samples fit a true share p0.

    H0: the n samples are independent draws, each in the counted set with
    probability p0 (the workload's ground truth). Rejects when k is outside
    the exact two-sided binomial acceptance region at `rate`.
    """
    assert n > 0, f"{what}: no samples"
    lo, hi = acceptance(n, p0, rate)
    _record(what, rate)
    w = wilson(k, n, rate)
    assert lo <= k <= hi, (
        f"{what}: {k}/{n} = {100.0 * k / n:.1f}%, truth {100.0 * p0:.1f}%: "
        f"outside {lo}..{hi} ({100.0 * lo / n:.1f}..{100.0 * hi / n:.1f}%), the "
        f"binomial range of a correct result (false-failure rate {_fmt_rate(rate)}); "
        f"Wilson interval {100 * w[0]:.1f}..{100 * w[1]:.1f}%")
    return k / n


def _beta_cf(a, b, x):
    """The continued fraction of the incomplete beta function (modified
    Lentz), which converges fast for x < (a + 1) / (a + b + 2)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    f = d
    for m in range(1, 400):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            f *= c * d
        if abs(c * d - 1.0) < 1e-14:
            break
    return f


def beta_inc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_cf(a, b, x) / a
    return 1.0 - front * _beta_cf(b, a, 1.0 - x) / b


@functools.lru_cache(maxsize=None)
def t_two_sided(rate, df):
    """Student's t quantile with @df degrees of freedom: P(|T| > t) = rate."""
    tail = lambda t: beta_inc(df / 2.0, 0.5, df / (df + t * t))  # noqa: E731, P(|T| > t)
    lo, hi = 0.0, 1.0
    while tail(hi) > rate:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if tail(mid) > rate else (lo, mid)
    return hi


def clustered_share(windows, p0, what, rate=RATE, min_windows=4):
    """Assert that a share pooled over windows of samples fits a true share p0.

    windows: [(k, n)], k of a window's n samples in the counted set. Within
    a window the samples need not be independent (ticks that fall where the
    scheduler lets the target run); the windows are. H0: the pooled share
    K / N estimates p0, with the variance of a ratio estimator over
    independent windows, sum((k_i - p n_i)^2) / N^2 * m / (m - 1) for m
    windows (never below the binomial p0 (1 - p0) / N); the deviation over
    its standard error is Student's t with m - 1 degrees of freedom.
    """
    m = len(windows)
    assert m >= min_windows, (f"inconclusive: {what}: {m} windows, the check needs "
                              f"{min_windows}")
    big_k, big_n = sum(k for k, _ in windows), sum(n for _, n in windows)
    assert big_n > 0, f"{what}: no samples"
    p = big_k / big_n
    var = sum((k - p * n) ** 2 for k, n in windows) / big_n ** 2 * m / (m - 1)
    se = math.sqrt(max(var, p0 * (1 - p0) / big_n))
    t = t_two_sided(rate, m - 1)
    _record(what, rate)
    assert abs(p - p0) <= t * se, (
        f"{what}: {big_k}/{big_n} = {100.0 * p:.1f}% over {m} windows, truth "
        f"{100.0 * p0:.1f}%: {abs(p - p0) / se:.1f} standard errors ({100 * se:.2f} points) "
        f"off, beyond t = {t:.2f} ({m - 1} df, false-failure rate {_fmt_rate(rate)}); "
        f"windows {[round(k / n, 3) for k, n in windows if n]}")
    return p


def share_at_least(k, n, p0, what, rate=RATE):
    """Assert that k of n is not significantly below a share p0.

    H0: each of the n samples is in the counted set with probability >= p0.
    Rejects when P(X <= k | Binomial(n, p0)) <= rate (exact, one-sided).
    """
    assert n > 0, f"{what}: no samples"
    _record(what, rate)
    lo = acceptance_low(n, p0, rate)  # k < lo  <=>  P(X <= k) <= rate
    assert k >= lo, (
        f"{what}: {k}/{n} = {100.0 * k / n:.1f}%, want >= {100.0 * p0:.1f}%: a correct "
        f"result has at least {lo} (P(X <= {k}) = {binom_le(k, n, p0):.1e}, false-failure "
        f"rate {_fmt_rate(rate)})")
    return k / n


@functools.lru_cache(maxsize=256)
def acceptance_low(n, p0, rate=RATE):
    """Smallest count a share >= p0 gives with probability >= 1 - rate (one-sided)."""
    pmf = binom_pmf(n, p0)
    lo, acc = 0, 0.0
    while lo < n and acc + pmf[lo] <= rate:
        acc += pmf[lo]
        lo += 1
    return lo


def shares(counts, probs, what, rate=RATE):
    """Assert that counts {key: k} fit the true shares {key: p}.

    H0: the samples are multinomial with probabilities probs. Each
    category gets the two-sided binomial test at rate / len(probs)
    (Bonferroni), so the whole check fails a correct result with
    probability <= rate. Counts of keys outside probs make it fail.
    """
    extra = {k: v for k, v in counts.items() if k not in probs and v}
    assert not extra, f"{what}: samples outside the expected categories: {extra}"
    n = sum(counts.get(k, 0) for k in probs)
    assert n > 0, f"{what}: no samples"
    _record(what, rate)
    each = rate / len(probs)
    bad = []
    for key, p in probs.items():
        k = counts.get(key, 0)
        lo, hi = acceptance(n, p, each)
        if not lo <= k <= hi:
            bad.append(f"{key} {k} ({100.0 * k / n:.1f}%, truth {100.0 * p:.1f}%, "
                       f"range {lo}..{hi})")
    assert not bad, (f"{what}: of {n} samples, " + "; ".join(bad) +
                     f" (binomial per category, Bonferroni over {len(probs)}, "
                     f"false-failure rate {_fmt_rate(rate)})")


def _hyper_log_pmf(k, n1, n2, t):
    """log P(K = k) where K ~ Hypergeometric: t successes among n1 + n2, k in the first n1."""
    lc = lambda a, b: math.lgamma(a + 1) - math.lgamma(b + 1) - math.lgamma(a - b + 1)
    return lc(n1, k) + lc(n2, t - k) - lc(n1 + n2, t)


def fisher_p(k1, n1, k2, n2):
    """Two-sided p-value of Fisher's exact test that k1/n1 and k2/n2 share one rate."""
    t = k1 + k2
    lo, hi = max(0, t - n2), min(n1, t)
    obs = _hyper_log_pmf(k1, n1, n2, t)
    p = 0.0
    for k in range(lo, hi + 1):
        lp = _hyper_log_pmf(k, n1, n2, t)
        if lp <= obs + 1e-9:
            p += math.exp(lp)
    return min(1.0, p)


def two_shares(k1, n1, k2, n2, what, rate=RATE):
    """Assert that two measured shares k1/n1 and k2/n2 can be equal.

    H0: both are independent binomial draws with one (unknown) share.
    Fisher's exact test, conditional on k1 + k2; rejects at p <= rate.
    """
    _record(what, rate)
    p = fisher_p(k1, n1, k2, n2)
    assert p > rate, (
        f"{what}: {k1}/{n1} = {100.0 * k1 / n1:.1f}% vs {k2}/{n2} = "
        f"{100.0 * k2 / n2:.1f}% (Fisher p = {p:.1e} <= false-failure rate {_fmt_rate(rate)})")


# ---- distances ------------------------------------------------------------

def tvd(p, q):
    """Total variation distance between two distributions given as dicts."""
    keys = set(p) | set(q)
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in keys)


def _sampler(probs):
    keys = list(probs)
    total = float(sum(probs.values()))
    cum, acc = [], 0.0
    for k in keys:
        acc += probs[k] / total
        cum.append(acc)
    cum[-1] = 1.0
    return keys, cum


def tvd_noise(probs, n, boot=300, seed=1):
    """(mean, sd) of the TVD that n multinomial draws from probs have from probs."""
    keys, cum = _sampler(probs)
    rng = random.Random(seed)
    total = float(sum(probs.values()))
    exp = {k: probs[k] / total for k in keys}
    vals = []
    for _ in range(boot):
        c = [0] * len(keys)
        for _ in range(n):
            c[bisect.bisect_left(cum, rng.random())] += 1
        vals.append(0.5 * sum(abs(c[i] / n - exp[keys[i]]) for i in range(len(keys))))
    m = sum(vals) / boot
    sd = math.sqrt(sum((v - m) ** 2 for v in vals) / (boot - 1))
    return m, sd


def binom_mad(n, p):
    """E|X - np| for X ~ Binomial(n, p), exactly (De Moivre):
    2 m C(n, m) p^m (1 - p)^(n - m + 1) with m = floor(np) + 1."""
    if p <= 0 or p >= 1:
        return 0.0
    m = int(math.floor(n * p)) + 1
    if m > n:
        return 0.0
    return 2 * m * math.exp(_log_pmf(m, n, p) + math.log1p(-p))


def tvd_mean(probs, n):
    """E[TVD] of n multinomial draws from probs: by linearity, half the sum of
    each category's binomial mean absolute deviation, over n."""
    total = float(sum(probs.values()))
    return 0.5 * sum(binom_mad(n, v / total) for v in probs.values()) / n


def tvd_bound(probs, n, rate=RATE):
    """Largest TVD a correct result of n samples has, except with probability rate.

    H0: the n samples are multinomial draws from probs. The TVD of the
    sample shares changes by at most 1/n when one sample changes, so
    McDiarmid's inequality gives P(TVD >= E[TVD] + t) <= exp(-2 n t^2), with
    E[TVD] exact (tvd_mean; test_stats.py checks it against a bootstrap).
    """
    return tvd_mean(probs, n) + math.sqrt(math.log(1 / rate) / (2 * n))


def tvd_check(counts, probs, what, rate=RATE, allowance=0.0):
    """Assert that measured counts {key: k} are within the TVD noise of probs.

    allowance: H0 is "the truth is within this TVD of probs" (e.g. what a
    synthetic program promises about its own calibration); the measured TVD
    may then exceed the noise bound by as much (triangle inequality).
    Returns (measured TVD, bound).
    """
    n = sum(counts.values())
    assert n > 0, f"{what}: no samples"
    total = float(sum(probs.values()))
    d = tvd({k: v / n for k, v in counts.items()}, {k: v / total for k, v in probs.items()})
    bound = allowance + tvd_bound(probs, n, rate)
    _record(what, rate)
    assert d <= bound, (f"{what}: TVD {d:.4f} over {n} samples > {bound:.4f}, the bound of a "
                        f"correct result ({allowance:g} allowed + sampling noise; "
                        f"false-failure rate {_fmt_rate(rate)})")
    return d, bound
