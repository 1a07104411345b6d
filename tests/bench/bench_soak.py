#!/usr/bin/python3
"""Soak: `liveprof serve` for SOAK_S seconds (default 600) at 999 Hz on
tests/workloads/manystacks with SOAK_DEPTH levels (default 15: 32,768 call
paths, each sampled at several addresses of its leaf), scraped all the
time (/debug/pprof/profile?seconds=5 back to back, /metrics and /api/state
every second), with liveprof's RSS read every second. Prints a Markdown
table for BENCHMARKS.md (run by tests/bench/run_bench.py, section soak).

How many distinct stacks the workload has is counted first, by a run as
long as the warm-up that keeps every stack (a window of an hour: nothing is idle long enough
to be folded). The soak itself folds idle stacks (user/session/reclaim.h):
its memory should follow the call paths, which are all seen within the
warm-up at this depth, not the stacks interned, which keep coming.

    SOAK_S=600 /usr/bin/python3 tests/bench/bench_soak.py
"""

import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOAK_S = float(os.environ.get("SOAK_S", "600"))
WARMUP_S = min(120.0, SOAK_S / 5)
DEPTH = os.environ.get("SOAK_DEPTH", "15")
COUNT_S = 120


def rss_kb(pid):
    try:
        m = re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text())
        return int(m.group(1)) if m else None
    except OSError:
        return None


def distinct_stacks():
    """Distinct stacks (and call paths) of COUNT_S seconds of the workload."""
    wl = subprocess.Popen([str(ROOT / "tests/build/manystacks"), str(COUNT_S + 30), DEPTH])
    js = "/tmp/liveprof-soak-count.json"
    try:
        subprocess.run([str(ROOT / "liveprof"), "--no-tui", "-p", str(wl.pid), "-F", "999",
                        "-d", str(COUNT_S), "--window", "3600", "--json", js],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=COUNT_S + 120)
    finally:
        wl.kill()
        wl.wait()
    import json
    return json.loads(Path(js).read_text())["distinct_stacks"]


def main():
    counted = distinct_stacks()
    wl = subprocess.Popen([str(ROOT / "tests/build/manystacks"), str(SOAK_S + 120), DEPTH])
    err = open("/tmp/liveprof-soak.stderr", "w")
    lp = subprocess.Popen([str(ROOT / "liveprof"), "serve", "--http", "127.0.0.1:0", "-p",
                           str(wl.pid), "-F", "999"], stdout=subprocess.DEVNULL, stderr=err)
    url = None
    for _ in range(600):
        m = re.search(r"serving (http://\S+)/", Path("/tmp/liveprof-soak.stderr").read_text())
        if m:
            url = m.group(1)
            break
        time.sleep(0.1)
    if not url:
        sys.exit("liveprof serve did not start")
    stop = threading.Event()
    scrapes = {"profile": 0, "metrics": 0, "state": 0, "errors": 0}

    def get(path, key):
        try:
            with urllib.request.urlopen(url + path, timeout=60) as r:
                body = r.read()
            scrapes[key] += 1
            return body
        except OSError:
            scrapes["errors"] += 1
            return b""

    def profiles():
        while not stop.is_set():
            get("/debug/pprof/profile?seconds=5", "profile")

    th = threading.Thread(target=profiles, daemon=True)
    th.start()
    t0 = time.monotonic()
    series, held = [], []
    while time.monotonic() - t0 < SOAK_S:
        m = re.search(rb"^liveprof_stacks (\S+)", get("/metrics", "metrics"), re.M)
        if m:
            held.append((time.monotonic() - t0, int(float(m.group(1)))))
        get("/api/state", "state")
        series.append((time.monotonic() - t0, rss_kb(lp.pid)))
        time.sleep(max(0.0, 1 - (time.monotonic() - t0) % 1))
    with urllib.request.urlopen(url + "/metrics", timeout=60) as r:
        metrics = r.read().decode()
    stop.set()
    lp.send_signal(signal.SIGINT)
    lp.wait(timeout=60)
    wl.kill()
    wl.wait()
    stacks = re.search(r"^liveprof_stacks (\S+)", metrics, re.M).group(1)
    samples = re.search(r"^liveprof_samples_total (\S+)", metrics, re.M).group(1)
    released = re.search(r"^liveprof_stacks_released_total (\S+)", metrics, re.M).group(1)
    reclaim_s = float(re.search(r"^liveprof_reclaim_seconds_total (\S+)", metrics,
                                re.M).group(1))
    after = [kb for t, kb in series if t >= WARMUP_S and kb]
    held_warm = [k for t, k in held if t >= WARMUP_S]
    base = after[0] if after else None
    last = after[-1] if after else None
    growth = (last - base) / base * 100 if base else float("nan")
    print("| figure | value |\n| --- | --- |")
    print(f"| run | {SOAK_S:.0f} s at 999 Hz, RSS read every second, warm-up {WARMUP_S:.0f} s |")
    print(f"| workload | manystacks, depth {DEPTH}: {2 ** int(DEPTH):,} call paths; "
          f"{counted:,} distinct stacks in its first {COUNT_S} s alone |")
    print(f"| RSS after warm-up / at the end / max | {base / 1024:.1f} / {last / 1024:.1f} / "
          f"{max(after) / 1024:.1f} MiB |")
    print(f"| RSS growth after warm-up | {growth:+.1f} % (the issue asks for at most 10 %) |")
    print(f"| RSS median of the last minute | "
          f"{statistics.median(after[-60:]) / 1024:.1f} MiB |")
    print(f"| stacks held after warm-up / at the end; released (folded); samples | "
          f"{held_warm[0] if held_warm else '?'} / {stacks}; {released}; {samples} |")
    print(f"| time in reclaim passes | {reclaim_s:.2f} s of {SOAK_S:.0f} s "
          f"({100 * reclaim_s / SOAK_S:.2f} % of a CPU) |")
    print(f"| scrapes: profile (5 s windows), metrics, state, errors | {scrapes['profile']}, "
          f"{scrapes['metrics']}, {scrapes['state']}, {scrapes['errors']} |")


if __name__ == "__main__":
    main()
