#!/usr/bin/python3
"""bench_py_charge.py - how far a py: call's net latency is off, measured
against the target's own clock (README, "Latencies are net of
liveprof's own cost"). Runs tests/workloads/python/py_charge.py RUNS
times in each mode and prints each run's figures:

  rec    liveprof --trace py:top0/top8/top16 -F 1: what each level of
         recursion adds to top's net p50, against what it costs with no
         probe (the workload times that before it starts)
  const  liveprof --split py:work@p50 -F 999, the workload timing each
         call itself: each sampled call is matched to its own timing by
         its start, and what the sample cost it is its length less the
         median of its 16 nearest unsampled neighbours. Its over-charge
         is that cost less what liveprof charged it, read as the net
         latency it should have had (the neighbours' median less the
         offset between the workload's clock and liveprof's, the
         difference of the two medians over all calls) less the net
         latency liveprof gave it: > 0 over-charged.

Usage: sudo tests/bench/bench_py_charge.py [RUNS] [rec|const ...]
"""
import array
import bisect
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WL = ROOT / "tests" / "workloads" / "python" / "py_charge.py"
LP = ROOT / "liveprof"
PY = "/usr/bin/python3.11"


def run(mode, secs, args, d):
    """The workload in @mode under liveprof @args: (JSON, "done" line)."""
    go = d / "go"
    wl = subprocess.Popen([PY, str(WL), str(go), mode, str(secs), str(d / "times")],
                          stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    err = d / "stderr"
    lp = subprocess.Popen([str(LP), "--no-tui", "-v", "-p", str(wl.pid), "-d", str(secs + 60),
                           "--top", "0", "--json", str(d / "out.json")] + args,
                          stdout=subprocess.DEVNULL, stderr=open(err, "w"))
    try:
        want = sum(a.startswith("py:") for a in args)
        while lp.poll() is None and err.read_text().count("frame return") < want:
            time.sleep(0.1)
        go.touch()
        line = wl.stdout.readline()
        lp.send_signal(2)
        lp.wait(timeout=60)
    finally:
        for p in (lp, wl):
            if p.poll() is None:
                p.kill()
            p.wait()
    return json.loads((d / "out.json").read_text()), line


def hist_median(hist):
    """Median of [lower, value, count] buckets, linear within a bucket."""
    total, acc = sum(c for _, _, c in hist), 0
    for lo, v, c in hist:
        if acc + c >= total / 2:
            return lo + 2 * (v - lo) * (total / 2 - acc) / c
        acc += c
    return 0


def rec(d):
    js, line = run("rec", 6, ["-F", "1", "--trace", "py:top0", "--trace", "py:top8",
                              "--trace", "py:top16"], d)
    p = {t["spec"]: t["p50_ns"] for t in js["traces"]}
    print(f"rec: per level {(p['py:top8'] - p['py:top0']) / 8:.0f} ns (top8), "
          f"{(p['py:top16'] - p['py:top0']) / 16:.0f} ns (top16); unprobed "
          f"{float(line.split()[3]):.0f} ns")


def const(d):
    js, _ = run("const", 8, ["-F", "999", "--split", "py:work@p50"], d)
    s = js["split"]
    t = array.array("q")
    t.frombytes((d / "times").read_bytes())
    starts, durs = t[0::2], [t[2 * i + 1] - t[2 * i] for i in range(len(t) // 2)]
    match = {}
    for start, lat, charge in s["sampled_calls"]:
        j = bisect.bisect_right(starts, start) - 1
        if j >= 0 and start <= t[2 * j + 1]:
            match[j] = (lat, charge)
    offset = sorted(durs)[len(durs) // 2] - hist_median(s["latency_hist"])
    over, cost = [], []
    for j, (lat, _) in match.items():
        nb = sorted(durs[k] for k in range(max(0, j - 8), min(len(durs), j + 9))
                    if k != j and k not in match)
        if len(nb) < 8:
            continue
        u = nb[len(nb) // 2]
        over.append(u - offset - lat)
        cost.append(durs[j] - u)
    over.sort()
    cost.sort()
    n = len(over)
    k = s["slow_calls_bucketed"]
    print(f"const: {n} sampled calls; a sample cost its call {cost[n // 2] / 1e3:.1f} us "
          f"(median); over-charge median {over[n // 2] / 1e3:+.2f} us, p10..p90 "
          f"{over[n // 10] / 1e3:+.1f}..{over[n * 9 // 10] / 1e3:+.1f} us; classed slow "
          f"{k}/{s['slow_calls'] + s['fast_calls']}, unbiased "
          f"[{s['unbiased_slow_share_min']:.3f}, {s['unbiased_slow_share_max']:.3f}], "
          f"z {s['bias_z']:.1f}; work() median {s['median_ns'] / 1e3:.1f} us")


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    modes = sys.argv[2:] or ["rec", "const"]
    for _ in range(runs):
        for m in modes:
            with tempfile.TemporaryDirectory() as d:
                {"rec": rec, "const": const}[m](Path(d))


main()
