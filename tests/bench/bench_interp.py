#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""bench_interp.py - what interpreter frames cost, and how right they are.

Three parts, each min / median / max of REPS repetitions (default 5):

1. Sampling with interpreter frames against native frames only
   (--no-interp), at 99 and 999 Hz, on CPU-bound loops that report their
   own throughput per CPU-second (tests/workloads/python/py_rate.py on
   Debian's python3.11 and on pyenv's 3.11, tests/workloads/ruby/rb_rate.rb
   on Debian's ruby 3.1). Each profiled window follows an unprofiled one,
   the two modes alternate. Per mode: the target's slowdown, the BPF
   sampler's own time per sample of the target (the kernel's timing of
   lp_sample_cpu, kernel.bpf_stats_enabled, over the window / the samples
   counted in it), and liveprof's CPU per sample (schedstat
   over the window / samples its --interval counter advanced by).
2. Cost per traced Python call: tests/bench/bench_py_trace.py (untraced,
   another function traced, this function traced, sys.setprofile) on both
   CPython builds.
3. Shares: `liveprof validate --lang python|ruby --from PROFILE` on each
   interpreter, its total variation distance (TVD) from the profile and
   the verdict.

Prints markdown on stdout, progress on stderr. Run as root. Not part of
`make test`; about 8 minutes with REPS=5.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import (TARGET_CPU, TOOL_CPU, BpfStats, Lines, cpu_ns, log, mmm,  # noqa: E402
                      pinned, stop_tool)

ROOT = Path(__file__).resolve().parents[2]
LIVEPROF = ROOT / "liveprof"
WL = ROOT / "tests" / "workloads"
REPS = max(1, int(os.environ.get("REPS", "5")))
WINDOW = 2.5
HZS = (99, 999)
PYENV = sorted(Path("/root/.pyenv/versions").glob("3.11.*/bin/python3"))
INTERPS = [("CPython 3.11 (Debian)", "python", "/usr/bin/python3.11", WL / "python" / "py_rate.py"),
           ("CPython 3.11 (pyenv)", "python", str(PYENV[-1]) if PYENV else "",
            WL / "python" / "py_rate.py"),
           ("CRuby 3.1 (Debian)", "ruby", "/usr/bin/ruby", WL / "ruby" / "rb_rate.rb")]
MERGED_RE = re.compile(r"liveprof: (?:python|ruby): \d+ process(?:es)?, (\d+) frames merged")
# validate's input: five functions with known shares (test_validate_interp.py's)
PROFILE = """server;main;handle;decode_frame 30
server;main;handle;parse_header 25
server;main;handle;checksum 20
server;main;handle;write_reply 15
server;main;log_line 10
"""


class RateTarget:
    """A workload printing "T_NS RATE" every 0.5 s, pinned to the target CPU."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(pinned(TARGET_CPU, argv), stdout=subprocess.PIPE, text=True)
        self.pid = self.proc.pid
        self.out = Lines(self.proc)

    def measure(self, seconds):
        """Mean rate of the periods that lie within the next @seconds."""
        t0 = time.monotonic_ns()
        time.sleep(seconds + 0.55)
        t1 = time.monotonic_ns()
        v = []
        for line in list(self.out.lines):
            parts = line.split()
            if len(parts) == 2 and t0 + 5e8 <= int(parts[0]) <= t1:
                v.append(float(parts[1]))
        return statistics.mean(v) if v else None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def profiled_window(target, hz, native):
    """(rate, liveprof CPU us/sample, sampler ns/sample, frames merged) over one window."""
    argv = [LIVEPROF, "-p", target.pid, "-F", hz, "--no-tui", "--interval", "0.1", "--top", "0"]
    p = subprocess.Popen(pinned(TOOL_CPU, argv + (["--no-interp"] if native else [])),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    out = Lines(p)
    rate = cpu_per = bpf_per = None
    try:
        if not out.next_interval(0):
            log(f"  liveprof did not start: {' | '.join(out.lines[-5:])}")
            return None, None, None, None
        time.sleep(0.3)
        r0 = out.next_interval(len(out.lines))
        c0, s0 = cpu_ns(p.pid), BpfStats.snapshot(p.pid)
        rate = target.measure(WINDOW)
        r1 = out.next_interval(len(out.lines))
        c1, s1 = cpu_ns(p.pid), BpfStats.snapshot(p.pid)
        if r0 and r1 and None not in (c0, c1) and r1[1] > r0[1]:
            cpu_per = (c1 - c0) / 1e3 / (r1[1] - r0[1])
            # per sample of the target: the program also runs, and returns at
            # once, on the other CPU for whatever runs there
            bpf_per = BpfStats.run_ns(s0, s1, "lp_sample_cpu") / (r1[1] - r0[1]) or None
    finally:
        stop_tool(p)
        out.t.join(5)
    merged = [int(m.group(1)) for line in out.lines if (m := MERGED_RE.search(line))]
    return rate, cpu_per, bpf_per, sum(merged)


def sampling_part():
    print("| interpreter | Hz | mode | target slowdown % | BPF sampler ns per sample "
          "| liveprof CPU µs per sample | frames merged (last run) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for label, _, exe, script in INTERPS:
        if not exe or not os.access(exe, os.X_OK):
            print(f"| {label} | | | not installed | | | |")
            continue
        target = RateTarget([exe, script])
        rows = {}
        try:
            time.sleep(2.0)  # past start-up and the first periods
            with BpfStats():
                for rep in range(REPS):
                    for hz in HZS:
                        modes = ("merged", "native") if rep % 2 == 0 else ("native", "merged")
                        for mode in modes:
                            base = target.measure(WINDOW)
                            rate, cpu, bpf, merged = profiled_window(target, hz, mode == "native")
                            slow = 100.0 * (base / rate - 1) if base and rate else None
                            r = rows.setdefault((hz, mode), ([], [], [], []))
                            for lst, v in zip(r, (slow, bpf, cpu, merged)):
                                lst.append(v)
                            log(f"{label} rep {rep + 1}/{REPS} {hz} Hz {mode}: slowdown "
                                f"{slow if slow is None else round(slow, 1)}%, sampler "
                                f"{bpf if bpf is None else round(bpf)} ns, liveprof "
                                f"{cpu if cpu is None else round(cpu, 2)} us/sample, "
                                f"{merged} frames merged")
        finally:
            target.stop()
        for (hz, mode), (slow, bpf, cpu, merged) in sorted(rows.items()):
            print(f"| {label} | {hz} | {mode} | {mmm(slow)} | {mmm(bpf, '{:.0f}')} | "
                  f"{mmm(cpu, '{:.2f}')} | {merged[-1] if merged else 'n/a'} |")
    print()


def py_trace_part():
    print("| interpreter | untraced | another function traced | this function traced "
          "| sys.setprofile counting it |")
    print("| --- | --- | --- | --- | --- |")
    for label, lang, exe, _ in INTERPS:
        if lang != "python" or not exe or not os.access(exe, os.X_OK):
            continue
        log(f"{label}: bench_py_trace.py {REPS} 200000")
        r = subprocess.run(["/usr/bin/python3", str(ROOT / "tests" / "bench" / "bench_py_trace.py"),
                            str(REPS), "200000"], capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, PY=exe))
        cells = {}
        for m in re.finditer(r"^(\w+) +min +([\d.]+) +median +([\d.]+) +max +([\d.]+)",
                             r.stdout, re.M):
            cells[m.group(1)] = " / ".join(f"{float(x):,.0f}" for x in m.group(2, 3, 4))
        if r.returncode or len(cells) < 4:
            print(f"| {label} | bench_py_trace.py failed (exit {r.returncode}) | | | |")
            continue
        print(f"| {label} | " + " | ".join(cells[k] for k in ("untraced", "other", "traced",
                                                               "setprofile")) + " |")
    print()


def shares_part():
    print("| interpreter | TVD | noise bound q (99.9%) | samples | verdict |")
    print("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="liveprof-interp-") as tmp:
        prof = Path(tmp) / "five.folded"
        prof.write_text(PROFILE)
        for label, lang, exe, _ in INTERPS:
            if not exe or not os.access(exe, os.X_OK):
                continue
            tvd, q, n, verdicts = [], [], [], []
            for rep in range(REPS):
                r = subprocess.run([str(LIVEPROF), "validate", "--lang", lang, "--from", str(prof),
                                    "--interpreter", exe, "--seconds", "60", "--seed",
                                    str(rep + 1)], capture_output=True, text=True, timeout=300)
                m = re.search(r"^TVD ([\d.]+) \(noise [\d.]+ \+- [\d.]+ at (\d+) samples, "
                              r"[\d.]+% bound ([\d.]+)", r.stdout, re.M)
                if m:
                    tvd.append(float(m.group(1)))
                    n.append(int(m.group(2)))
                    q.append(float(m.group(3)))
                verdicts.append({0: "PASS", 1: "FAIL", 10: "INCONCLUSIVE"}.get(r.returncode,
                                                                              f"exit {r.returncode}"))
                log(f"{label} validate rep {rep + 1}/{REPS}: {verdicts[-1]}"
                    + (f", TVD {tvd[-1]:.3f} at {n[-1]} samples" if m else ""))
            print(f"| {label} | {mmm(tvd, '{:.3f}')} | {mmm(q, '{:.3f}')} | "
                  f"{mmm(n, '{:.0f}')} | {', '.join(verdicts)} |")
    print()


def main():
    if os.geteuid() != 0:
        sys.exit("bench_interp.py: run as root")
    print("### Sampling with interpreter frames (merged) against native frames only "
          "(--no-interp)\n")
    sampling_part()
    print("### ns per call of a one-line Python function, with `--trace py:` "
          "(tests/bench/bench_py_trace.py, 200,000 calls, `-F 1`)\n")
    py_trace_part()
    print("### Shares of an emitted program against its profile (`liveprof validate --lang "
          "python|ruby`, tolerance 0.05)\n")
    shares_part()
    return 0


if __name__ == "__main__":
    sys.exit(main())
