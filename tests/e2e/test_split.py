"""End-to-end tests of --split on real BPF (issue 4).

Ground truth comes from the workloads' source: tests/workloads/handler.c and
splitmix.c run slow_path() (50x a call's mean work) in exactly 1 call in 32,
or block on a lock / grow the argument in those calls. At p95 the threshold
then lies in the tail of the fast calls, far below every slow call, so every
slow_path sample belongs in the slow profile. Nothing expected here is copied
from liveprof's output; the statistical checks derive their bounds in
tests/e2e/stats.py.
"""

import math
import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

import stats
from lputil import scaled

BLOCKING_FRAMES = re.compile(r"lock_wait|lll_lock|pthread_mutex_lock|futex|\[off-cpu\]")


def split_dir_run(run_lp, args, timeout=40, until_cpu=None):
    r = run_lp(args, timeout=scaled(timeout), until_cpu=until_cpu)
    assert r.rc == 0, r
    return r


def folded(path):
    out = {}
    for line in Path(path).read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        out[stack] = out.get(stack, 0) + int(n)
    return out


def frame_count(fold, frame):
    return sum(n for s, n in fold.items() if frame in s.split(";"))


# A correct split puts every sample of the cause in the slow profile (every
# call that runs it is slower than any p95 threshold can be). The check: H0
# "at least 99% of the cause's samples land in slow calls" (a 1% allowance for
# liveprof's own attribution errors), exact one-sided binomial at 1e-4. It
# needs the samples to see a 5% misattribution (share 0.95) with power 0.99:
CAUSE_H0, CAUSE_BAD = 0.99, 0.95
CAUSE_NEED = stats.needed(CAUSE_H0, CAUSE_H0 - CAUSE_BAD, sides=1)
# slow_path does 50x a call's work in 1 call of 32: 61% of the work, but the
# target's CPU time also holds the probes' time and its syscalls (on the
# loaded 2-core VM slow_path got 0.4 x HZ samples per CPU-second of the
# target): count on 0.3.
CAUSE_CPU_SHARE = 0.3


def cause_run(run_lp, h, pid, func, hz=999, extra=()):
    """Split `func` of pid at p95 until slow_path has had the CPU time for
    CAUSE_NEED samples (at most 30 s)."""
    return split_dir_run(run_lp, ["-p", pid, "-F", hz, "-d", "30", "--split", func, *extra],
                         timeout=60,
                         until_cpu=(pid, h.cpu_for(CAUSE_NEED, hz, CAUSE_CPU_SHARE)))


def check_cpu_cause(r, outdir, cause="slow_path"):
    slow = folded(outdir / "slow.folded")
    fast = folded(outdir / "fast.folded")
    in_slow, in_fast = frame_count(slow, cause), frame_count(fast, cause)
    stats.enough(in_slow + in_fast, CAUSE_NEED, f"{cause} samples")
    share = stats.share_at_least(in_slow, in_slow + in_fast, CAUSE_H0,
                                 f"{cause} samples in slow calls")
    top = r.json["split"]["top_frames"]
    assert top[0]["frame"] == cause, f"ranking: {[t['frame'] for t in top[:5]]}"
    s = r.json["split"]
    why = {k: s.get(k) for k in ("slow_samples", "fast_samples", "slow_calls", "fast_calls",
                                 "threshold_ns", "median_ns", "correction_ns",
                                 "correction_uncertainty_ns", "ambiguous_calls",
                                 "correction_exceeds_signal", "sampling_biased", "bias_z",
                                 "moved_calls")}
    if s["verdict"] == "ambiguous":
        # liveprof's own answer that it cannot decide: the correction's
        # uncertainty covers nearly a whole class of sampled calls (a
        # calibration far off on a loaded VM); inconclusive, not a pass
        pytest.skip(f"inconclusive: split verdict 'ambiguous' ({why})")
    assert top[0]["significant"], (top[0], why)
    return share


def check_p95_classes(s, total_calls):
    """The classes from the histogram: the calls of the bucket that holds
    p95 are all slow or all fast, whichever puts the slow share nearer 5%
    (traces__hist_slow_from), and every slow call (1 in 32) is among them."""
    all_slow = s["all_slow_calls"]
    if "latency_hist" in s:
        below = 0
        for lower, _, count in s["latency_hist"]:
            if below + count >= math.ceil(0.95 * total_calls):
                break
            below += count
        with_b, without_b = total_calls - below, total_calls - below - count
        near = lambda k: abs(k - 0.05 * total_calls)  # noqa: E731
        if not without_b or not below:  # both classes kept, if they can be
            want = with_b if below and not without_b else without_b
        else:
            want = with_b if near(with_b) <= near(without_b) else without_b
        assert all_slow == want, (all_slow, with_b, without_b)
        assert s["threshold_ns"] == lower if want == with_b else s["threshold_ns"] > lower
    assert all_slow >= total_calls // 32 - 1, (all_slow, total_calls)


def test_cpu_cause_lands_in_slow_profile(run_lp, procs, wl, tmp_path, h):
    p = procs.start([wl("handler"), "cpu", "60"])
    out = tmp_path / "split"
    r = cause_run(run_lp, h, p.pid, "handle", extra=["-o", f"{out}/"])
    check_cpu_cause(r, out)
    s = r.json["split"]
    assert s["function"] == "handle" and s["percentile"] == 95
    check_p95_classes(s, s["all_slow_calls"] + s["all_fast_calls"])
    for name in ("slow.folded", "fast.folded", "diff.svg", "latency.svg", "split.pb.gz"):
        assert (out / name).stat().st_size > 0, name


def test_blocking_cause_needs_offcpu(run_lp, procs, wl, tmp_path):
    p = procs.start([wl("handler"), "lock", "60"])
    on = split_dir_run(run_lp, ["-p", p.pid, "-F", "999", "-d", scaled(5), "--split", "handle",
                                "--offcpu", "-o", f"{tmp_path}/on/"])
    top = on.json["split"]["top_frames"]
    assert BLOCKING_FRAMES.search(top[0]["frame"]), [t["frame"] for t in top[:5]]
    # The slow calls differ from the fast ones by their wait (the source):
    # the off-CPU frame leads, significant, with more of the slow class than
    # of the fast. How much more is not the source's to say: it depends on
    # how fast this machine runs handle()'s CPU work against the holder's
    # fixed 2 ms (the p95 class mixes waiting calls with the fast calls'
    # CPU-heavy tail): 0.6-0.8 here, 0.15-0.25 in a TCG guest.
    assert top[0]["offcpu"] and top[0]["significant"], top[0]
    assert top[0]["slow_share"] > top[0]["fast_share"], top[0]
    slow = folded(tmp_path / "on" / "slow.folded")
    assert any("[off-cpu]" in s for s in slow), "off-CPU stacks missing from slow.folded"

    off = split_dir_run(run_lp, ["-p", p.pid, "-F", "999", "-d", scaled(5), "--split", "handle",
                                 "-o", f"{tmp_path}/off/"])
    # Slow calls are slow because they wait: on-CPU, no frame explains them.
    for t in off.json["split"]["top_frames"]:
        assert not (t["significant"] and t["delta"] > 0.5), t


def test_diff_svg_shows_slow_path_red(run_lp, procs, wl, tmp_path):
    p = procs.start([wl("handler"), "cpu", "60"])
    out = tmp_path / "split"
    split_dir_run(run_lp, ["-p", p.pid, "-F", "499", "-d", "5", "--split", "handle",
                           "-o", f"{out}/"])
    with tempfile.TemporaryDirectory() as prof:
        dom = subprocess.run(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", f"--user-data-dir={prof}", "--dump-dom",
             (out / "diff.svg").as_uri()],
            capture_output=True, text=True, timeout=60)
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r'data-n="slow_path"[^>]*>.*?fill="rgb\((\d+),(\d+),(\d+)\)"', dom.stdout,
                  re.S)
    assert m, "slow_path not in the rendered diff flamegraph"
    r, g, b = map(int, m.groups())
    assert r > 200 and b < 120, f"slow_path is not red: rgb({r},{g},{b})"


def test_pprof_carries_class_labels(run_lp, procs, wl, tmp_path):
    p = procs.start([wl("handler"), "cpu", "60"])
    pb = tmp_path / "split.pb.gz"
    split_dir_run(run_lp, ["-p", p.pid, "-F", "499", "-d", "4", "--split", "handle",
                           "-o", str(pb)])
    env = dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "gocache"))
    tags = subprocess.run(["go", "tool", "pprof", "-tags", str(pb)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert tags.returncode == 0, tags.stderr
    assert re.search(r"class:.*\n(.*\n)*?.*slow", tags.stdout), tags.stdout
    assert "fast" in tags.stdout and "function" in tags.stdout and "handle" in tags.stdout


@pytest.mark.parametrize("mode,func", [("threads", "serve"), ("recurse", "serve_rec")])
def test_split_threads_and_recursion(run_lp, procs, wl, tmp_path, h, mode, func):
    args = [wl("splitmix"), mode] + (["8"] if mode == "threads" else []) + ["60"]
    p = procs.start(args)
    out = tmp_path / "split"
    r = cause_run(run_lp, h, p.pid, func, hz=499 if mode == "threads" else 999,
                  extra=["-o", f"{out}/"])
    check_cpu_cause(r, out)


def test_nested_traces_and_two_at_once(run_lp, procs, wl, tmp_path, h):
    p = procs.start([wl("splitmix"), "nested", "60"])
    out = tmp_path / "split"
    r = cause_run(run_lp, h, p.pid, "serve_nested", hz=999,
                  extra=["--trace", "inner", "-o", f"{out}/"])
    check_cpu_cause(r, out)
    inner, outer = r.trace("inner"), r.trace("serve_nested")
    # inner() runs once per serve_nested() call; the two probes are attached
    # (and detached) a moment apart, so a few calls at either end differ
    assert outer["calls"] > 100
    assert abs(inner["calls"] - outer["calls"]) <= max(4, outer["calls"] // 1000), \
        (inner["calls"], outer["calls"])
    assert inner["p50_ns"] <= outer["p50_ns"] * 1.02


def test_slow_calls_caused_by_argument_size(run_lp, procs, wl, tmp_path):
    p = procs.start([wl("splitmix"), "size", "60"])
    out = tmp_path / "split"
    r = split_dir_run(run_lp, ["-p", p.pid, "-F", "499", "-d", "5", "--split", "serve_sized",
                               "--by", "size", "-o", f"{out}/"])
    by = {g["value"]: g for g in r.trace("serve_sized")["by"]}
    assert set(by) == {"64", "4096"}, by
    # exactly 1 call in 32 has size 4096 (64x the work): a run of consecutive
    # calls holds n/32 of them +-1, and one more may be cut off where a probe
    # was attached or detached
    n = by["64"]["calls"] + by["4096"]["calls"]
    assert abs(by["4096"]["calls"] - n / 32) <= 2, (by["4096"]["calls"], n)
    assert by["4096"]["p50_ns"] > 10 * by["64"]["p50_ns"], by
    s = r.json["split"]
    # p95 of all calls is the small calls' p98: above their p95, below the big
    # ones (a percentile is a bucket's middle, the threshold one of its edges)
    assert by["64"]["p95_ns"] / (1 + 1 / 128) <= s["threshold_ns"] < by["4096"]["p50_ns"], (
        s["threshold_ns"], by)


def test_split_says_inconclusive_with_few_samples(run_lp, procs, wl, tmp_path):
    """A split of a few dozen samples cannot decide: it says how many it needs.

    handler.c's slow_path is the answer, but at 19 Hz for 1 s (the target
    uses at most one CPU) the split has at most 19 samples, under the 20 per
    class the z test needs."""
    p = procs.start([wl("handler"), "cpu", "60"])
    r = split_dir_run(run_lp, ["-p", p.pid, "-F", "19", "-d", "1", "--split", "handle"])
    s = r.json["split"]
    assert s["significance"]["correction"] == "holm", s["significance"]
    assert s["significance"]["frames_tested"] >= len(s["top_frames"]), s
    assert s["verdict"] == "inconclusive", s
    have = s["slow_samples"] + s["fast_samples"]
    assert s["needed_samples"] > have, s
    assert not any(t["significant"] for t in s["top_frames"]), s["top_frames"]
    out = r.stdout + r.stderr
    m = re.search(r"inconclusive: needs about (\d+) samples \(have (\d+)\)", out)
    assert m and int(m.group(1)) == s["needed_samples"] and int(m.group(2)) == have, out
