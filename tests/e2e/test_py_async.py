"""--trace py: and --split py: of coroutines (async def) and generators
(issue 15): one call from the first resumption to the end, across the
awaits and yields between, on Debian's python3.11 (yields through
python:function__return) and pyenv's 3.11 (no USDT: the label
TARGET_YIELD_VALUE).

Ground truth: tests/workloads/python/py_async.py, whose docstring gives
every count and spin. As in test_py_trace.py, the workload starts once
liveprof has logged every probe, so the counts are exact: a suspension
taken for an end would count a call per segment, and an end missed (a
task cancelled, a generator closed: both end by an exception thrown in,
past the start probes) would leave calls uncounted.
"""

import re
from pathlib import Path

import pytest

from test_py_trace import (BUCKET, INTERPRETERS, check_split_cause, folded_count, run_with_go,
                           traces_of)

WL = Path(__file__).resolve().parent.parent / "workloads" / "python" / "py_async.py"
SRC = WL.read_text()
K = {k: int(v) for k, v in re.findall(r"^([A-Z_]+) = (\d+)$", SRC, re.M)}
DONE = f"done {K['ROUNDS']} handled, {K['DOOMED']} cancelled, {K['GENS'] * K['ITEMS']} items"
TRUTH = {  # calls per spec, from the workload's docstring
    "py:handle": K["ROUNDS"],
    "py:inner": K["ROUNDS"],
    "py:slow_extra": K["ROUNDS"] // K["SLOW_EVERY"],
    "py:doomed": K["DOOMED"],
    "py:produce": K["GENS"] + K["ABANDONED"],
}


def def_line(name):
    return next(i for i, l in enumerate(SRC.splitlines(), 1)
                if re.match(rf"(async )?def {name}\(", l))


@pytest.mark.parametrize("python,n_ret", INTERPRETERS)
def test_coroutines_and_generators_timed_whole(procs, tmp_path, python, n_ret):
    specs = list(TRUTH)
    args = ["--raw-latency"] + [a for s in specs for a in ("--trace", s)]
    js, _, _ = run_with_go(procs, tmp_path, [WL], args, specs, DONE, python=python,
                           n_ret=n_ret)
    t = traces_of(js)
    for spec, n in TRUTH.items():
        # one call each, timed: not one per segment, none left untimed
        assert t[spec]["calls"] == n, (spec, t[spec])
        assert t[spec]["untimed_calls"] == 0, (spec, t[spec])
    us, lo = 1e3, 1 - BUCKET
    # wall time from the first resumption to the end, the suspensions
    # included: the lower bounds hold however loaded the machine is
    handle = t["py:handle"]
    assert handle["p50_ns"] >= (2 * K["WORK_US"] + K["SLEEP_US"] + K["INNER_US"]) * us * lo, handle
    # at most 2% of the calls wait for a slow_extra: p50 is not one of
    # them, p99 is (1% run it, as many wait for it)
    assert handle["p50_ns"] < K["SLOW_US"] * us * lo, handle
    assert handle["p99_ns"] >= K["SLOW_US"] * us * lo, handle
    assert t["py:inner"]["p50_ns"] >= K["INNER_US"] * us * lo, t["py:inner"]
    # two thirds of produce's calls are whole loops, whose consumer runs
    # while produce is suspended
    produce = t["py:produce"]
    assert produce["p50_ns"] >= K["ITEMS"] * (K["PRODUCE_US"] + K["CONSUME_US"]) * us * lo, produce
    assert t["py:doomed"]["p50_ns"] >= K["CANCEL_AFTER_US"] * us * lo, t["py:doomed"]
    print("\n" + "\n".join(f"{s}: {t[s]['calls']} calls, p50 {t[s]['p50_ns'] / 1e3:.1f}us "
                           f"p99 {t[s]['p99_ns'] / 1e3:.1f}us" for s in specs))


def test_split_coroutine(procs, tmp_path):
    """--split py:handle@p95 over two interleaved tasks: slow_extra's
    samples are in the slow calls, none in the fast ones; a call's
    samples are only those of its own segments."""
    specs = ["py:slow_extra", "py:handle"]
    out = tmp_path / "split"
    args = ["-F", "999", "--trace", "py:slow_extra", "--split", "py:handle@p95", "-o", f"{out}/"]
    js, _, _ = run_with_go(procs, tmp_path, [WL], args, specs, DONE)
    t = traces_of(js)
    assert t["py:handle"]["calls"] == TRUTH["py:handle"], t["py:handle"]
    assert t["py:handle"]["untimed_calls"] == 0, t["py:handle"]
    # 10 calls of 20 ms at 999 Hz: about 200 samples
    check_split_cause(js, out, "py:handle", f"slow_extra (py_async.py:{def_line('slow_extra')})")
    # inner's frames run inside handle's calls (100 ms of them in all)
    inner = f"inner (py_async.py:{def_line('inner')})"
    assert folded_count(out / "fast.folded", inner) > 0
