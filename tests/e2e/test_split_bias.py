"""A sample must not change the class of the call it lands in (issue 11).

Ground truth: tests/workloads/constwork.c. Every call of handle() does the
same work, so nothing in the source makes one call slower than another;
which calls a split at pNN calls slow is the machine's noise.

What an unbiased split looks like: a sample lands in a call with a chance
that grows with the call's time on CPU, so the calls that got a sample are
longer than calls in general and more of them are slow than p0, the share
of calls above the threshold. On this VM 1% of the calls are slow but about
5 times longer: up to 5% of the sampled calls are slow, and that is true of
the program, not a bias of liveprof. (The first version of this test
compared with p0 alone and took it for one.) A bias is a sample's own cost
moving its call across the threshold. liveprof exports every call's
latency buckets (split.latency_hist), and the test derives from them, not
from liveprof's figures, the range an unbiased split must fall in:
  - at least the share of slow calls (sampling blind to length),
  - at most that share with each call weighted by min(1, length x rate),
    its chance of a sample if all its time were on CPU (the time a slow
    call spends preempted is not sampled, so the truth is below).

Statistics: k slow of n sampled calls; each bound p has its own standard
error s (bucket counts as Poisson counts, delta method); the observed share
must not be beyond a bound by more than Z sqrt(p(1-p)/n + s^2), Z = 3.29
(two-sided 0.1%); no frame may be starred at a family-wise error rate of
0.1% (--split-alpha 0.001): at most 0.2% per case, 1.2% for this file.

Where the sample's cost cannot be corrected finely enough (calls of a few
us: the cost varies by more than the gap between the threshold and the
median), liveprof must say so itself, either as calls too short to class
or as sampling that moves calls across the threshold, and star nothing;
that outcome is accepted whenever it is true by the range derived here:
on this VM "constant" work runs at two speeds (50 us calls without any probe:
p50 50.6 us, p90 83.7 us, p95 93.2 us), so a p95 or p99 threshold can sit on
the slow mode, where an error of a few us in a sample's charge moves calls.
"""

import math

import pytest

import stats

Z = 3.2905  # two-sided 99.9%
# The family-wise error rate of liveprof's stars here: with no frame
# different, a star comes by chance in at most 0.1% of the splits.
ALPHA = 0.001
# One case per call length and both rates (the full 12-case grid is in
# make bench's "sampled-call class bias" section).
CASES = [(1, 95, 999), (5, 99, 999), (5, 99, 99), (50, 99, 999), (50, 95, 99)]

def share(hist, threshold_ns, weight):
    """Weighted share of slow calls in buckets [lower, value, count], and its
    standard error (counts as Poisson counts, delta method)."""
    a = b = va = vb = 0.0
    for _lo, value, count in hist:
        w = weight(value)
        b += count * w
        vb += count * w * w
        if value >= threshold_ns:
            a += count * w
            va += count * w * w
    assert b > 0, "no unsampled calls"
    p = a / b
    return p, math.sqrt(max(0.0, (1 - 2 * p) * va + p * p * vb)) / b


def unbiased_range(s, hz):
    """(low, its sd, high, its sd): where an unbiased split's share of sampled
    calls classed slow lies, from every call's latency."""
    hist, t = s["latency_hist"], s["threshold_ns"]
    lo, lo_sd = share(hist, t, lambda v: 1.0)
    hi, hi_sd = share(hist, t, lambda v: min(1.0, v * 1e-9 * hz))
    return lo, lo_sd, hi, hi_sd


def tol(p, sd, n):
    return Z * math.sqrt(p * (1 - p) / n + sd * sd)


def check_inputs(s):
    """The buckets are every call, once."""
    total = sum(c for _, _, c in s["latency_hist"])
    assert total == s["all_slow_calls"] + s["all_fast_calls"], (total, s)


def run_split(run_lp, procs, wl, us, pct, hz, extra=()):
    p = procs.start([wl("constwork"), us, 120], settle=1.5)
    secs = 6 if hz >= 999 else 12
    r = run_lp(["-p", p.pid, "-F", hz, "-d", secs, "--top", "0",
                "--split", f"handle@p{pct}", "--split-alpha", ALPHA, *extra], timeout=90)
    assert r.rc == 0, r
    return r, r.json["split"]


@pytest.mark.parametrize("us,pct,hz", CASES, ids=[f"{u}us-p{p}-{h}Hz" for u, p, h in CASES])
def test_sampled_share_matches_percentile(run_lp, procs, wl, us, pct, hz):
    r, s = run_split(run_lp, procs, wl, us, pct, hz)
    # in the latency buckets, as the range is (the threshold is a bucket's edge)
    k, n = s["slow_calls_bucketed"], s["slow_calls"] + s["fast_calls"]
    all_n = s["all_slow_calls"] + s["all_fast_calls"]
    assert all_n > 1000, f"too few calls of handle: {all_n}\n{r!r}"
    stars = [t["frame"] for t in s["top_frames"] if t["significant"]]
    assert not stars, f"significant frames in calls of constant work: {stars}\n{r!r}"
    assert s["raw_latency"] is False
    check_inputs(s)
    lo, lo_sd, hi, hi_sd = unbiased_range(s, hz)
    assert math.isclose(s["unbiased_slow_share_min"], lo, rel_tol=1e-5, abs_tol=1e-9), (s, lo)
    assert math.isclose(s["unbiased_slow_share_max"], hi, rel_tol=1e-5, abs_tol=1e-9), (s, hi)
    print(f"\n{us} us p{pct} {hz} Hz: {k}/{n} = {k / max(n, 1):.4f} sampled calls slow, unbiased "
          f"in [{lo:.4f}, {hi:.4f}], correction {s['correction_ns'] / 1e3:.1f} us, median "
          f"{s['median_ns'] / 1e3:.1f} us, threshold {s['threshold_ns'] / 1e3:.1f} us, "
          f"exceeds={s['correction_exceeds_signal']} biased={s['sampling_biased']}")
    stats.record(f"sampled calls classed slow as unbiased sampling allows ({us} us, {hz} Hz)",
                 1e-3)
    if s["correction_exceeds_signal"] or s["sampling_biased"]:
        # Its own outcome: said in the summary, nothing starred (above),
        # and true (below). On this VM constant work is not constant: calls
        # run at two speeds, 1x and about 2x, and a p99 of 50 us calls can
        # sit on the slow mode, where an error of a few us in a sample's
        # charge moves calls across; liveprof must then say so.
        assert "too short to class" in r.stdout or "cannot be trusted" in r.stdout, r
        if s["sampling_biased"]:  # and it is, by the range computed here
            assert k / n > hi + tol(hi, hi_sd, n) or k / n < lo - tol(lo, lo_sd, n), (k, n, lo, hi)
        return
    assert n >= 30, f"too few sampled calls to judge: {n}\n{r!r}"
    assert k / n >= lo - tol(lo, lo_sd, n), (k, n, lo, r)
    assert k / n <= hi + tol(hi, hi_sd, n), (k, n, hi, r)
    assert "no sign of bias" in r.stdout, r.stdout


def test_raw_latency_shows_the_bias(run_lp, procs, wl):
    """--raw-latency classes sampled calls on what was measured, the cost of
    the sample included: the bias the correction removes must show."""
    r, s = run_split(run_lp, procs, wl, 5, 95, 999, extra=["--raw-latency"])
    # in the latency buckets, as the range is (the threshold is a bucket's edge)
    k, n = s["slow_calls_bucketed"], s["slow_calls"] + s["fast_calls"]
    assert s["raw_latency"] is True
    assert "raw latencies" in r.stdout, r
    assert n >= 30, f"too few sampled calls: {n}\n{r!r}"
    check_inputs(s)
    _, _, hi, hi_sd = unbiased_range(s, 999)
    print(f"\nraw: {k}/{n} sampled calls slow, an unbiased split at most {hi:.4f}")
    stats.record("--raw-latency: the bias the correction removes shows", 1e-3)
    assert k / n > hi + tol(hi, hi_sd, n), f"raw latencies show no bias ({k}/{n} vs {hi:.4f})"
    assert "sampling moves calls across the threshold" in r.stdout, r.stdout
