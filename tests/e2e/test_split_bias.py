"""A sample must not change the class of the call it lands in (issue 11).

Ground truth: tests/workloads/constwork.c. Every call of handle() does the
same work, so nothing in the source makes one call slower than another;
which calls a split at pNN calls slow is the machine's noise.

What an unbiased split looks like: a sample lands in a call with a chance
that grows with the call's length (min(1, length x rate) for the periodic
cpu-clock timer), so the calls that got a sample are longer than calls in
general, and more of them are slow than p0, the share of all calls above
the threshold. On this VM 1% of the calls are slow but about 5 times
longer, so about 5% of the sampled calls are slow: that is length-biased
sampling, true of the profile, not a bias of liveprof. (The first version
of this test compared with p0 and took it for one.) A bias is a sample's
own cost moving its call across the threshold. The calls no sample landed
in are untouched by sampling: their latencies (liveprof's histogram less
the sampled calls, exported as split.unsampled_latency_hist), each
weighted by its chance of a sample, give the share of sampled calls that
must be slow. The test computes it here, from the buckets.

Statistics: k slow of n sampled calls against the expected share p with
its own standard error s (bucket counts as Poisson counts, delta method):
|k/n - p| <= Z sqrt(p(1-p)/n + s^2), Z = 3.29 (two-sided 0.1%). With 5
cases the chance that a correct liveprof fails this file is at most 0.5%.

Where calls are so short that the correction's uncertainty reaches the gap
between the threshold and the median, liveprof must say so
(correction_exceeds_signal) and star nothing; that outcome is accepted for
the 1 and 5 us calls only, never for 50 us.
"""

import math

import pytest

import stats

Z = 3.2905  # two-sided 99.9%
# One case per call length and both rates (the full 12-case grid is in
# make bench's "sampled-call class bias" section).
CASES = [(1, 95, 999), (5, 99, 999), (5, 99, 99), (50, 99, 999), (50, 95, 99)]

def expected_share(hist, threshold_ns, hz):
    """Share of sampled calls that are slow if sampling moves no call across
    the threshold, and its standard error, from the unsampled calls' buckets
    [lower, value, count]."""
    a = b = va = vb = 0.0
    for _lo, value, count in hist:
        w = min(1.0, value * 1e-9 * hz)
        b += count * w
        vb += count * w * w
        if value >= threshold_ns:
            a += count * w
            va += count * w * w
    assert b > 0, "no unsampled calls"
    p = a / b
    return p, math.sqrt(max(0.0, (1 - 2 * p) * va + p * p * vb)) / b


def check_inputs(s):
    """The unsampled buckets and the sampled calls are every call, once."""
    unsampled = sum(c for _, _, c in s["unsampled_latency_hist"])
    n = s["slow_calls"] + s["fast_calls"]
    assert unsampled + n == s["all_slow_calls"] + s["all_fast_calls"], (unsampled, n, s)


def run_split(run_lp, procs, wl, us, pct, hz, extra=()):
    p = procs.start([wl("constwork"), us, 120], settle=1.5)
    secs = 6 if hz >= 999 else 12
    r = run_lp(["-p", p.pid, "-F", hz, "-d", secs, "--top", "0",
                "--split", f"handle@p{pct}", *extra], timeout=90)
    assert r.rc == 0, r
    return r, r.json["split"]


@pytest.mark.parametrize("us,pct,hz", CASES, ids=[f"{u}us-p{p}-{h}Hz" for u, p, h in CASES])
def test_sampled_share_matches_percentile(run_lp, procs, wl, us, pct, hz):
    r, s = run_split(run_lp, procs, wl, us, pct, hz)
    k, n = s["slow_calls"], s["slow_calls"] + s["fast_calls"]
    all_n = s["all_slow_calls"] + s["all_fast_calls"]
    assert all_n > 1000, f"too few calls of handle: {all_n}\n{r!r}"
    stars = [t["frame"] for t in s["top_frames"] if t["significant"]]
    assert not stars, f"significant frames in calls of constant work: {stars}\n{r!r}"
    assert s["raw_latency"] is False
    check_inputs(s)
    p, sd = expected_share(s["unsampled_latency_hist"], s["threshold_ns"], hz)
    # liveprof's own figure is this very computation
    assert abs(s["expected_slow_share"] - p) < 1e-9 and abs(s["expected_slow_share_sd"] - sd) < 1e-9
    print(f"\n{us} us p{pct} {hz} Hz: {k}/{n} sampled calls slow, expected {p:.4f} +- {sd:.4f} "
          f"(p0 {s['all_slow_calls'] / all_n:.4f}), correction {s['correction_ns'] / 1e3:.1f} +- "
          f"{s['correction_uncertainty_ns'] / 1e3:.1f} us, median {s['median_ns'] / 1e3:.1f} us, "
          f"threshold {s['threshold_ns'] / 1e3:.1f} us, exceeds={s['correction_exceeds_signal']}")
    stats.record(f"sampled calls classed slow as their length predicts ({us} us, {hz} Hz)", 1e-3)
    if s.get("correction_exceeds_signal"):
        # Its own outcome: said in the summary, nothing starred (above).
        assert us < 50, f"50 us calls must be classed: {s}"
        assert "too short to class" in r.stdout, r
        return
    assert n >= 30, f"too few sampled calls to judge: {n}\n{r!r}"
    tol = Z * math.sqrt(p * (1 - p) / n + sd * sd)
    assert abs(k / n - p) <= tol, (f"{k}/{n} = {k / n:.4f} sampled calls slow, expected "
                                   f"{p:.4f} +- {tol:.4f}\n{r!r}")
    assert "no sign of bias" in r.stdout, r.stdout


def test_raw_latency_shows_the_bias(run_lp, procs, wl):
    """--raw-latency classes sampled calls on what was measured, the cost of
    the sample included: the bias the correction removes must show."""
    r, s = run_split(run_lp, procs, wl, 5, 95, 999, extra=["--raw-latency"])
    k, n = s["slow_calls"], s["slow_calls"] + s["fast_calls"]
    assert s["raw_latency"] is True
    assert "raw latencies" in r.stdout, r
    assert n >= 30, f"too few sampled calls: {n}\n{r!r}"
    check_inputs(s)
    p, sd = expected_share(s["unsampled_latency_hist"], s["threshold_ns"], 999)
    tol = Z * math.sqrt(p * (1 - p) / n + sd * sd)
    print(f"\nraw: {k}/{n} sampled calls slow, expected {p:.4f} +- {tol:.4f}")
    stats.record("--raw-latency: the bias the correction removes shows", 1e-3)
    assert k / n > p + tol, f"raw latencies show no bias ({k}/{n} vs {p:.4f}): is the cost charged?"
    assert "sampling moves calls across the threshold" in r.stdout, r.stdout
