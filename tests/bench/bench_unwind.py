#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Cost of DWARF unwinding: liveprof --call-graph dwarf against perf record
--call-graph dwarf on the same fixed job (xz -9 -T1 of 8 MB of half-random
data), in the same run, at 99 and 999 Hz; 5 repetitions, min/median/max.

Prints a markdown table: target slowdown (wall time over the unprofiled
run) and liveprof's user-space cost per sample (its CPU time / samples, so
it includes BPF event intake, unwinding, interning and symbolization).
Not part of `make test`. Run as root from anywhere.
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIVEPROF = os.path.join(ROOT, "liveprof")
REPS = int(os.environ.get("REPS", "5"))


def make_input(path):
    text = b"the quick brown fox jumps over the lazy dog 0123456789\n" * 80000
    with open(path, "wb") as f:
        f.write(os.urandom(4 << 20))
        f.write(text)


def job(data):
    return ["xz", "-9", "-T1", "-c", data]


def timed(argv):
    """Wall seconds of argv, and the CPU seconds of its process tree."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_liveprof(data, hz, tmp):
    js = os.path.join(tmp, "lp.json")
    # liveprof launches the job and exits with it, as perf record does.
    wall, cpu = timed([LIVEPROF, "--no-tui", "--top", "0", "--call-graph", "dwarf", "-F", str(hz),
                       "--json", js, "-o", os.path.join(tmp, "lp.folded"), "--"] + job(data))
    with open(js) as f:
        samples = json.load(f)["samples"]
    return wall, cpu, samples


def run_perf(data, hz, tmp):
    return timed(["perf", "record", "-q", "--call-graph", "dwarf", "-F", str(hz),
                  "-o", os.path.join(tmp, "perf.data"), "--"] + job(data))[0]


def mmm(xs, fmt="{:.2f}"):
    return "/".join(fmt.format(x) for x in (min(xs), statistics.median(xs), max(xs)))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "in.bin")
        make_input(data)
        rows = []
        base = [timed(job(data))[0] for _ in range(REPS)]
        for hz in (99, 999):
            lp_slow, pf_slow, us_per = [], [], []
            for i in range(REPS):
                b = base[i]
                wall, cpu, samples = run_liveprof(data, hz, tmp)
                job_cpu = b  # xz is single-threaded and CPU bound
                lp_slow.append(100.0 * (wall - b) / b)
                if samples:
                    us_per.append(1e6 * max(cpu - job_cpu, 0) / samples)
                pf_slow.append(100.0 * (run_perf(data, hz, tmp) - b) / b)
            rows.append((hz, lp_slow, pf_slow, us_per))
    print(f"xz -9 -T1, unprofiled {mmm(base)} s (min/median/max of {REPS})\n")
    print("| rate | liveprof dwarf slowdown % | perf dwarf slowdown % "
          "| liveprof µs CPU per sample | liveprof samples/s on one core |")
    print("| --- | --- | --- | --- | --- |")
    for hz, lp, pf, us in rows:
        rate = [1e6 / u for u in us if u > 0]
        print(f"| {hz} Hz | {mmm(lp, '{:.1f}')} | {mmm(pf, '{:.1f}')} | "
              f"{mmm(us, '{:.0f}') if us else 'n/a'} | {mmm(rate, '{:.0f}') if rate else 'n/a'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
