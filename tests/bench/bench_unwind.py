#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Cost of user-stack unwinding: liveprof --call-graph fp, dwarf (the default:
CFI tables in BPF maps, unwound in the kernel) and copy (the stack copied
and unwound with libdw in user space) against perf record --call-graph
dwarf, attached (-p PID) to the same running job, at 99, 999 and 4999 Hz;
REPS repetitions (default 5), interleaved, min/median/max.

The job is `xz -9 -T1 -c` compressing generated data (64 KiB blocks, half
random, half text; 80 MiB, more than the 64 MiB dictionary, so the work per
byte does not change once the input comes round again) fed by a `cat`
loop. Its work is the bytes it read (/proc/PID/io rchar), its CPU time is
/proc/PID/task/*/schedstat (ns): throughput = bytes per CPU-second of xz,
not per wall second, so that other load on a shared machine does not count
as profiling cost. Every tool window is preceded by an unprofiled window of
the same length; slowdown = unprofiled / profiled throughput - 1.

For liveprof, over the same window: its own CPU time (schedstat of all its
threads) divided by the samples its --interval counter advanced by, which
is everything the daemon does per sample (ring-buffer intake, unwinding,
interning, aggregation); the unwinder's share is `unwind_ns_per_sample`
from its --json (whole run). Samples per second of one core =
1e6 / CPU us per sample.

Prints a markdown table on stdout, progress on stderr; with UNWIND_JSON=FILE
also writes the medians there (for run_bench.py's goals). Run as root.
Not part of `make test`; about 8 minutes with REPS=5 (40 s of it warm-up).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (TARGET_CPU, TOOL_CPU, BpfStats, Lines, cpu_ns, log, med,  # noqa: E402
                      mmm, pinned, stop_tool)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIVEPROF = os.path.join(ROOT, "liveprof")
REPS = max(1, int(os.environ.get("REPS", "5")))
WINDOW = float(os.environ.get("UNWIND_WINDOW_S", "2.5"))
HZS = (99, 999, 4999)


def make_input(path, mib=80):
    words = b"the quick brown fox jumps over the lazy dog 0123456789 ".split()
    with open(path, "wb") as f:
        for i in range(mib * 16):  # 64 KiB blocks
            f.write(os.urandom(32 << 10))
            line = b" ".join(words[(i + j) % len(words)] for j in range(len(words))) + b"\n"
            f.write((line * ((32 << 10) // len(line) + 1))[:32 << 10])


def rchar(pid):
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return None


class Job:
    def __init__(self, data):
        self.feed = subprocess.Popen(["sh", "-c", f'while :; do cat "{data}" || exit; done'],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.xz = subprocess.Popen(pinned(TARGET_CPU, ["xz", "-9", "-T1", "-c"]),
                                   stdin=self.feed.stdout, stdout=subprocess.DEVNULL)
        self.feed.stdout.close()
        self.pid = self.xz.pid

    def mark(self):
        return rchar(self.pid), cpu_ns(self.pid)

    def throughput(self, a, b):
        """Bytes per CPU-second between two marks."""
        if None in a or None in b or b[1] <= a[1]:
            return None
        return (b[0] - a[0]) / ((b[1] - a[1]) / 1e9)

    def measure(self, seconds):
        a = self.mark()
        time.sleep(seconds)
        return self.throughput(a, self.mark())

    def stop(self):
        for p in (self.xz, self.feed):
            if p.poll() is None:
                p.kill()
            p.wait()


def run_liveprof(job, hz, cg, tmp):
    """Target throughput while profiled, liveprof CPU us/sample, user-space unwinder
    us/sample, BPF sampler us/sample (the kernel's timing of lp_sample_cpu)."""
    js = os.path.join(tmp, "lp.json")
    if os.path.exists(js):
        os.unlink(js)
    argv = [LIVEPROF, "-p", job.pid, "-F", hz, "--call-graph", cg, "--no-tui",
            "--interval", "0.1", "--top", "0", "--json", js]
    p = subprocess.Popen(pinned(TOOL_CPU, argv), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    out = Lines(p)
    thr = cpu_per = bpf_us = None
    try:
        r = out.next_interval(0)
        if not r:
            log(f"  liveprof did not start: {' | '.join(out.lines[-5:])}")
            return None, None, None, None
        time.sleep(0.3)  # past the first samples (maps, CFI loading)
        # CPU and counter read together, right after a fresh --interval line
        r0 = out.next_interval(len(out.lines))
        c0, j0, b0 = cpu_ns(p.pid), job.mark(), BpfStats.snapshot(p.pid)
        time.sleep(WINDOW)
        r1 = out.next_interval(len(out.lines))
        c1, j1, b1 = cpu_ns(p.pid), job.mark(), BpfStats.snapshot(p.pid)
        # per sample of the target: the program also runs on the other CPU,
        # for whatever runs there (or idles), and returns at once
        bpf_ns = BpfStats.run_ns(b0, b1, "lp_sample_cpu")
        thr = job.throughput(j0, j1)
        if r0 and r1 and c0 is not None and c1 is not None and r1[1] > r0[1]:
            s0 = r0[1]
            cpu_per = (c1 - c0) / 1e3 / (r1[1] - s0)
            bpf_us = bpf_ns / 1e3 / (r1[1] - s0) if bpf_ns > 0 else None
    finally:
        rc = stop_tool(p)
        out.t.join(5)
    unw = None
    try:
        with open(js) as f:
            j = json.load(f)
        if j.get("call_graph") != cg:
            log(f"  liveprof reports call_graph {j.get('call_graph')}, asked for {cg}")
        unw = j["unwind_ns_per_sample"] / 1e3
    except (OSError, ValueError, KeyError) as e:
        log(f"  no --json from liveprof (exit {rc}): {e!r}")
    return thr, cpu_per, unw, bpf_us


def run_perf(job, hz, tmp):
    data = os.path.join(tmp, "perf.data")
    # -B: no build-id collection at exit (after the window; it only saves time)
    p = subprocess.Popen(pinned(TOOL_CPU, ["perf", "record", "-q", "-B", "--call-graph", "dwarf",
                                           "-F", hz, "-p", job.pid, "-o", data]),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        time.sleep(1.0)
        if p.poll() is not None:
            log("  perf record did not start")
            return None
        return job.measure(WINDOW)
    finally:
        stop_tool(p)
        for f in os.listdir(tmp):
            if f.startswith("perf.data"):
                os.unlink(os.path.join(tmp, f))


def main():
    if os.geteuid() != 0:
        sys.exit("bench_unwind.py: run as root")
    tools = ["fp", "dwarf", "copy", "perf"]
    modes = tools[:-1]
    slow = {(t, hz): [] for t in tools for hz in HZS}
    cpu = {(t, hz): [] for t in modes for hz in HZS}
    unw = {(t, hz): [] for t in modes for hz in HZS}
    bpf = {(t, hz): [] for t in modes for hz in HZS}
    base_all = []
    with tempfile.TemporaryDirectory(prefix="liveprof-unwind-") as tmp, BpfStats():
        data = os.path.join(tmp, "in.bin")
        make_input(data)
        job = Job(data)
        try:
            # Warm-up: until xz's 64 MiB dictionary is full, its match finder
            # gets slower as it fills, so the throughput is not steady yet.
            end = time.monotonic() + 40
            while time.monotonic() < end and (rchar(job.pid) or 0) < (72 << 20):
                time.sleep(0.5)
            log(f"warm-up done, xz read {(rchar(job.pid) or 0) >> 20} MiB")
            for rep in range(REPS):
                for hz in HZS:
                    order = tools[rep % len(tools):] + tools[:rep % len(tools)]
                    for t in order:
                        base = job.measure(WINDOW)
                        base_all.append(base)
                        if t == "perf":
                            thr = run_perf(job, hz, tmp)
                        else:
                            thr, c, u, b = run_liveprof(job, hz, t, tmp)
                            cpu[(t, hz)].append(c)
                            unw[(t, hz)].append(u)
                            bpf[(t, hz)].append(b)
                        sd = 100.0 * (base / thr - 1) if base and thr else None
                        slow[(t, hz)].append(sd)
                        extra = ""
                        if t != "perf":
                            c, u = cpu[(t, hz)][-1], unw[(t, hz)][-1]
                            extra = (f", liveprof {'n/a' if c is None else f'{c:.2f}'} us "
                                     f"CPU/sample, user-space unwinder "
                                     f"{'n/a' if u is None else f'{u:.2f}'} us/sample")
                        log(f"rep {rep + 1}/{REPS} {hz:>3} Hz {t:<5} slowdown "
                            + (f"{sd:+.1f}%" if sd is not None else "n/a") + extra)
                        time.sleep(0.3)
        finally:
            job.stop()
    mib = [b / (1 << 20) for b in base_all if b]
    print(f"`xz -9 -T1` on an endless stream of generated data (64 KiB blocks, half random, "
          f"half text), pinned to CPU {TARGET_CPU}, tools on CPU {TOOL_CPU}; unprofiled "
          f"throughput {mmm(mib, '{:.2f}')} MiB per CPU-second. Each figure is min / median / "
          f"max of {REPS} interleaved repetitions; every profiled {WINDOW:g} s window follows "
          f"an unprofiled one. Slowdown = unprofiled / profiled throughput of the target per "
          f"CPU-second of the target, minus 1. liveprof CPU per sample = its schedstat CPU time "
          f"over the window / samples counted in it; BPF sampler = the kernel's timing of "
          f"the sampler program over the window (kernel.bpf_stats_enabled: the stack walk, "
          f"in the kernel for dwarf, and the rest of the program) / the target's samples "
          f"counted in it (its quick returns on the other CPU included); user-space unwinder = "
          f"`unwind_ns_per_sample` from --json; one core = 1e6 / CPU us per sample. perf: `perf record -B --call-graph "
          f"dwarf -F HZ -p PID`.\n")
    print("| rate | liveprof --call-graph | liveprof slowdown % | perf dwarf slowdown % "
          "| BPF sampler µs per sample | user-space unwinder µs per sample "
          "| liveprof CPU µs per sample | unwound samples/s on one core |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for hz in HZS:
        for t in modes:
            rate = [1e6 / c for c in cpu[(t, hz)] if c]
            print(f"| {hz} Hz | {t} | {mmm(slow[(t, hz)])} | {mmm(slow[('perf', hz)])} | "
                  f"{mmm(bpf[(t, hz)], '{:.2f}')} | {mmm(unw[(t, hz)], '{:.2f}')} | {mmm(cpu[(t, hz)])} | "
                  f"{mmm(rate, '{:,.0f}')} |")
    if os.environ.get("UNWIND_JSON"):
        medians = {f"{t}@{hz}": {"cpu_us": med(cpu[(t, hz)]), "slowdown": med(slow[(t, hz)]),
                                 "perf_slowdown": med(slow[("perf", hz)])}
                   for t in modes for hz in HZS}
        with open(os.environ["UNWIND_JSON"], "w") as f:
            json.dump(medians, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
