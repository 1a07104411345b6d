#!/usr/bin/python3
"""bench_py_trace.py - ns per Python call with --trace py: (README, Python).

Runs tests/workloads/python/py_callcost.py (N calls of a one-line
function) under each configuration, RUNS times, and prints min, median
and max of the ns per iteration:
  untraced     no liveprof
  other        liveprof -p with --trace py:g (g is never called): the
               probes fire for every call of f, which is filtered out
  traced       liveprof -p with --trace py:f: every call timed
  setprofile   no liveprof; a sys.setprofile callback counts f's calls
Usage: sudo [PY=python] tests/bench/bench_py_trace.py [RUNS] [N]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WL = ROOT / "tests" / "workloads" / "python" / "py_callcost.py"
LP = ROOT / "liveprof"
PY = os.environ.get("PY", "/usr/bin/python3.11")  # PY=... another CPython 3.11+


def one(mode, n):
    with tempfile.TemporaryDirectory() as d:
        go = Path(d) / "go"
        args = [PY, str(WL), str(go), str(n)] + (["setprofile"] if mode == "setprofile" else [])
        wl = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        lp = None
        try:
            if mode in ("other", "traced"):
                spec = "py:g" if mode == "other" else "py:f"
                err = Path(d) / "err"
                lp = subprocess.Popen([str(LP), "--no-tui", "-v", "-p", str(wl.pid), "-d", "600",
                                       "-F", "1", "--trace", spec],
                                      stdout=subprocess.DEVNULL, stderr=open(err, "w"))
                end = time.monotonic() + 60
                while "frame return" not in err.read_text() and time.monotonic() < end:
                    time.sleep(0.1)
            go.touch()
            return float(wl.stdout.readline())
        finally:
            if lp:
                lp.send_signal(2)
                lp.wait(timeout=30)
            wl.kill()
            wl.wait()


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
    print(f"{PY}: ns per call of a one-line Python function, {n} calls, {runs} runs")
    for mode in ("untraced", "other", "traced", "setprofile"):
        v = [one(mode, n) for _ in range(runs)]
        print(f"{mode:<11} min {min(v):8.1f}  median {statistics.median(v):8.1f}  "
              f"max {max(v):8.1f}")


main()
