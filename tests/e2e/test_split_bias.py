"""A sample must not change the class of the call it lands in (issue 11).

Ground truth: tests/workloads/constwork.c. Every call of handle() does the
same work (part_a()/part_b() in a loop of fixed length), so nothing in the
source makes one call slower than another, and whether a call is sampled
does not depend on its class: among sampled calls, the share classed slow
must be the share of all calls above the threshold (the histogram's,
p0 = all_slow_calls / all calls, about 1 - pNN/100), and no frame may be
significant.

Statistics: k slow out of n sampled calls; the Wilson score interval of k/n
at 99.9% two-sided (z = 3.29) must contain p0. With 5 cases the chance
that a correct liveprof fails this file is at most 5 x 0.1% = 0.5%.

Where calls are so short that the correction's uncertainty reaches the gap
between the threshold and the median, liveprof must say so
(correction_exceeds_signal) and star nothing; that outcome is accepted for
the 1 and 5 us calls only, never for 50 us.
"""

import math

import pytest

Z = 3.2905  # two-sided 99.9%
# One case per call length and both rates (the full 12-case grid is in
# make bench's "sampled-call class bias" section).
CASES = [(1, 95, 999), (5, 99, 999), (5, 99, 99), (50, 99, 999), (50, 95, 99)]

# Known, not yet fixed (issue 11 stays open on it): on these VMs a sample
# costs the interrupted thread 35-55 us +- 15 us, more than the calibration
# thread sees, so the correction leaves sampled 5 us and 50 us calls classed
# slow 2-16 times as often as p0 (BENCHMARKS.md, "sampled-call class bias").
# The cases still run and report; a pass shows up as XPASS.
KNOWN_BIAS = pytest.mark.xfail(
    strict=False,
    reason="sampled calls still over-classed slow at 5 and 50 us on this VM (issue 11, item 1)")


def wilson(k, n, z=Z):
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z / den * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return mid - half, mid + half


def run_split(run_lp, procs, wl, us, pct, hz, extra=()):
    p = procs.start([wl("constwork"), us, 120], settle=1.5)
    secs = 6 if hz >= 999 else 12
    r = run_lp(["-p", p.pid, "-F", hz, "-d", secs, "--top", "0",
                "--split", f"handle@p{pct}", *extra], timeout=90)
    assert r.rc == 0, r
    return r, r.json["split"]


@KNOWN_BIAS
@pytest.mark.parametrize("us,pct,hz", CASES, ids=[f"{u}us-p{p}-{h}Hz" for u, p, h in CASES])
def test_sampled_share_matches_percentile(run_lp, procs, wl, us, pct, hz):
    r, s = run_split(run_lp, procs, wl, us, pct, hz)
    k, n = s["slow_calls"], s["slow_calls"] + s["fast_calls"]
    all_n = s["all_slow_calls"] + s["all_fast_calls"]
    assert all_n > 1000, f"too few calls of handle: {all_n}\n{r!r}"
    p0 = s["all_slow_calls"] / all_n
    stars = [t["frame"] for t in s["top_frames"] if t["significant"]]
    print(f"\n{us} us p{pct} {hz} Hz: {k}/{n} sampled calls slow, p0 = {p0:.4f}, "
          f"correction {s['correction_ns'] / 1e3:.1f} +- "
          f"{s['correction_uncertainty_ns'] / 1e3:.1f} us, median {s['median_ns'] / 1e3:.1f} us, "
          f"threshold {s['threshold_ns'] / 1e3:.1f} us, exceeds={s['correction_exceeds_signal']}")
    assert not stars, f"significant frames in calls of constant work: {stars}\n{r!r}"
    assert s["raw_latency"] is False
    if s.get("correction_exceeds_signal"):
        # Its own outcome: said in the summary, nothing starred (above).
        assert us < 50, f"50 us calls must be classed: {s}"
        assert "too short to class" in r.stdout, r
        return
    assert n >= 30, f"too few sampled calls to judge: {n}\n{r!r}"
    lo, hi = wilson(k, n)
    assert lo <= p0 <= hi, (f"{k}/{n} sampled calls slow, 99.9% interval [{lo:.4f}, {hi:.4f}] "
                            f"misses p0 = {p0:.4f}\n{r!r}")


def test_raw_latency_shows_the_bias(run_lp, procs, wl):
    """--raw-latency classes sampled calls on what was measured, the cost of
    the sample included: the bias the correction removes must show."""
    r, s = run_split(run_lp, procs, wl, 5, 95, 999, extra=["--raw-latency"])
    k, n = s["slow_calls"], s["slow_calls"] + s["fast_calls"]
    p0 = s["all_slow_calls"] / (s["all_slow_calls"] + s["all_fast_calls"])
    assert s["raw_latency"] is True
    assert "raw latencies" in r.stdout, r
    assert n >= 30, f"too few sampled calls: {n}\n{r!r}"
    lo, _ = wilson(k, n)
    print(f"\nraw: {k}/{n} sampled calls slow, p0 = {p0:.4f}")
    assert lo > p0, f"raw latencies show no bias ({k}/{n} vs {p0:.4f}): is the cost charged?"
