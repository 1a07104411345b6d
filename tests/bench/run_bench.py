#!/usr/bin/python3
"""make bench: liveprof against perf and bpftrace, side by side, in one run.

Writes BENCHMARKS.md at the repository root (temp file + rename). Every
figure is a ratio of two measurements taken next to each other in the same
run, repeated BENCH_REPS times (default 5) and given as min / median / max.

    /usr/bin/python3 tests/bench/run_bench.py [SECTION...]
    sections: slowdown percall daemon replay symbols first rss system unwind interp soak
              probecost bias kernels
              (default: all; the sections not run keep their text from BENCHMARKS.md)
    SOAK_S=S       length of the HTTP soak (default 600)
    BENCH_REPS=N   repetitions (>= 5 for the published figures)
    BENCH_RSS_S=S  length of the 16-thread profile (default 30)
"""

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from benchlib import BpfStats, med  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "tests" / "build"
LIVEPROF = ROOT / "liveprof"
REPS = max(1, int(os.environ.get("BENCH_REPS", "5")))
RSS_S = float(os.environ.get("BENCH_RSS_S", "30"))
NCPU = os.cpu_count() or 1
# The target runs on the last CPU, the profilers on CPU 0: what is measured
# is the cost inside the target (BPF programs, uprobes, perf interrupts),
# not two processes fighting over one core.
TARGET_CPU = str(NCPU - 1)
TOOL_CPU = "0"
WINDOW = 2.0  # seconds of throughput per measurement
HZS = (99, 999, 4999)
TMP = Path(tempfile.mkdtemp(prefix="liveprof-bench-"))
CLK_TCK = os.sysconf("SC_CLK_TCK")
T_START = time.monotonic()


def fmt2(x):
    return "n/a" if x is None else f"{x:.2f}"


def fmt0(x):
    return "n/a" if x is None else f"{x:,.0f}"


def log(msg):
    print(f"[{time.monotonic() - T_START:6.1f}s] {msg}", flush=True)


def pinned(cpu, argv):
    return ["taskset", "-c", cpu] + [str(a) for a in argv] if NCPU > 1 else [str(a) for a in argv]


def mmm(xs, fmt="{:.3f}"):
    """min / median / max of a list, formatted (three decimals unless told)."""
    return benchlib.mmm(xs, fmt)


class Lines:
    """Collects the stdout lines of a process with their arrival time."""

    def __init__(self, proc):
        self.proc = proc
        self.lines = []  # (monotonic time, line)
        self.cv = threading.Condition()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        for line in self.proc.stdout:
            with self.cv:
                self.lines.append((time.monotonic(), line.rstrip("\n")))
                self.cv.notify_all()
        with self.cv:
            self.cv.notify_all()

    def wait_for(self, pred, timeout):
        """First (time, line, match) with pred(line) truthy, or None."""
        end = time.monotonic() + timeout
        i = 0
        with self.cv:
            while True:
                while i < len(self.lines):
                    t, line = self.lines[i]
                    m = pred(line)
                    if m:
                        return t, line, m
                    i += 1
                left = end - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and i >= len(self.lines)):
                    return None
                self.cv.wait(min(left, 0.2))

    def text(self):
        with self.cv:
            return "\n".join(l for _, l in self.lines)


class Target:
    """A workload printing "T_NS VALUE" every 0.5 s (CLOCK_MONOTONIC)."""

    def __init__(self, name, *args, cpu=TARGET_CPU):
        argv = [BUILD / name] + list(args)
        self.proc = subprocess.Popen(pinned(cpu, argv) if cpu else [str(a) for a in argv],
                                     stdout=subprocess.PIPE, text=True)
        self.pid = self.proc.pid
        self.out = Lines(self.proc)

    def values(self, t0, t1):
        res = []
        for _, line in list(self.out.lines):
            parts = line.split()
            if len(parts) == 2:
                t = int(parts[0]) / 1e9
                # a period counts if it lies inside the window
                if t - 0.5 >= t0 and t <= t1:
                    res.append(float(parts[1]))
        return res

    def measure(self, seconds):
        """Mean of the periods completed within the next @seconds."""
        t0 = time.monotonic()
        time.sleep(seconds + 0.55)
        v = self.values(t0, t0 + seconds + 0.55)
        return statistics.mean(v) if v else None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return (int(rest[11]) + int(rest[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def cpu_ns(pid):
    """CPU time of all threads of @pid in ns (schedstat: finer than clock ticks), or None."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
    except (OSError, IndexError, ValueError):
        return None
    return total


def vm_hwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


INTERVAL_RE = re.compile(r"^--- [0-9.]+ s: (\d+) samples, (\d+) lost")
TRACE_ROW_RE = re.compile(r"^\S+\s+(\d+)\s+\d+\s")


class Tool:
    """A profiler attached to a target, pinned to TOOL_CPU."""

    def __init__(self, kind, argv):
        self.kind = kind
        # the tracing programs attach after sampling starts (they are
        # verified beside it): a --trace/--split run is ready once they are
        self.traces = kind == "liveprof" and any(a in ("--trace", "--split") for a in argv)
        self.t_start = time.monotonic()
        self.proc = subprocess.Popen(pinned(TOOL_CPU, argv), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        self.out = Lines(self.proc)
        self.ready_at = None
        self.first_sample_s = None

    def wait_ready(self, timeout=120):
        """Block until the tool is sampling/tracing; False if it never was."""
        if self.kind == "liveprof":
            # --interval lines appear once the programs are attached; the
            # first one with samples > 0 is the first sample aggregated.
            r = self.out.wait_for(INTERVAL_RE.match, timeout)
            if not r:
                return False
            self.ready_at = r[0]
            r2 = self.out.wait_for(lambda l: (m := INTERVAL_RE.match(l)) and int(m.group(1)) > 0,
                                   timeout)
            if r2:
                self.first_sample_s = r2[0] - self.t_start
            if self.traces:  # a trace row with calls (not its "untimed" line)
                r3 = self.out.wait_for(lambda l: (m := TRACE_ROW_RE.match(l)) and int(m.group(1)) > 0,
                                       timeout)
                if not r3:
                    return False
                self.ready_at = r3[0]
        elif self.kind == "bpftrace":
            r = self.out.wait_for(lambda l: l.startswith("Attaching"), timeout)
            if not r:
                return False
            time.sleep(0.3)  # "Attaching" is printed before the attach itself
            self.ready_at = time.monotonic()
        else:  # perf record opens its events right away
            time.sleep(1.0)
            if self.proc.poll() is not None:
                return False
            self.ready_at = time.monotonic()
        return self.proc.poll() is None

    def samples_now(self):
        last = None
        for _, line in list(self.out.lines):
            m = INTERVAL_RE.match(line)
            if m:
                last = int(m.group(1))
        return last

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.out.t.join(5)
        return self.proc.returncode


def liveprof_argv(pid, hz, *extra, json_out=None):
    argv = [LIVEPROF, "-p", pid, "-F", hz, "--no-tui", "--interval", "0.1", "--top", "0"]
    if json_out:
        argv += ["--json", json_out]
    return argv + list(extra)


def sampler_argv(kind, pid, hz, rep):
    if kind == "liveprof":
        return liveprof_argv(pid, hz)
    if kind == "perf":
        return ["perf", "record", "-q", "-g", "-F", hz, "-p", pid, "-o", TMP / f"perf-{hz}-{rep}.data"]
    return ["bpftrace", "-e", f"profile:hz:{hz} /pid == {pid}/ {{ @[ustack] = count(); }}"]




def run_attached(target, kind, argv, window=WINDOW):
    """Baseline window, then the tool's window; returns (base, traced, tool)."""
    base = target.measure(window)
    tool = Tool(kind, argv)
    val = None
    if tool.wait_ready():
        val = target.measure(window)
    else:
        log(f"  {kind} did not start: {tool.out.text()[-300:]}")
    rc = tool.stop()
    if kind == "liveprof" and rc not in (0, None):
        log(f"  liveprof exited {rc}: {tool.out.text()[-300:]}")
    time.sleep(0.3)
    return base, val, tool


# ---------------------------------------------------------------- sections

def bench_slowdown(res):
    log("slowdown: bench_spin, liveprof vs perf record -g vs bpftrace profile:hz")
    target = Target("bench_spin")
    time.sleep(1.0)
    tools = ["liveprof", "perf", "bpftrace"]
    data = {(k, hz): [] for k in tools for hz in HZS}
    try:
        for rep in range(REPS):
            for hz in HZS:
                order = tools[rep % 3:] + tools[:rep % 3]  # rotate who goes first
                for kind in order:
                    base, val, _ = run_attached(target, kind, sampler_argv(kind, target.pid, hz, rep))
                    sd = base / val if base and val else None
                    data[(kind, hz)].append(sd)
                    log(f"  rep {rep + 1}/{REPS} {hz:>4} Hz {kind:<8} slowdown "
                        + (f"{sd:.3f}" if sd else "n/a"))
    finally:
        target.stop()
        for f in TMP.glob("perf-*.data*"):
            f.unlink()
    rows, goal_ok = [], True
    for hz in HZS:
        lp, pf = med(data[("liveprof", hz)]), med(data[("perf", hz)])
        # "no worse than perf": within the noise of the run (2%)
        ok = lp is not None and pf is not None and lp <= pf * 1.02
        goal_ok &= ok
        rows.append(f"| {hz} | {mmm(data[('liveprof', hz)])} | {mmm(data[('perf', hz)])} | "
                    f"{mmm(data[('bpftrace', hz)])} | {'met' if ok else 'NOT met'} |")
    res["slowdown"] = {"rows": rows, "ok": goal_ok, "data": data}


LEAST_PERTASK = "least latency histogram: start in task storage"
LEAST_SESSION = "least latency histogram: start in a session cookie"


def bench_percall(res):
    log("per-call cost: bench_call / bench_target (push %rbp, emulated)")
    binary = BUILD / "bench_call"
    fn = "bench_target"
    target = Target("bench_call")
    time.sleep(1.0)
    offset = file_offset(binary, fn)
    multi_floor = [ROOT / "build" / "tests" / "bench" / "multi_floor", binary,
                   hex(offset), target.pid]
    configs = {
        "liveprof --trace": liveprof_argv(target.pid, 99, "--trace", fn),
        "liveprof --split": liveprof_argv(target.pid, 99, "--split", fn),
        # the probe kind liveprof used before uprobe_multi links (uprobe_multi.h)
        "liveprof --trace, classic uprobes": ["env", "LIVEPROF_UPROBES=classic"]
        + liveprof_argv(target.pid, 99, "--trace", fn),
        "bpftrace hist": ["bpftrace", "-e",
                          f"uprobe:{binary}:{fn} {{ @s[tid] = nsecs; }} "
                          f"uretprobe:{binary}:{fn} /@s[tid]/ {{ @h = hist(nsecs - @s[tid]); "
                          f"delete(@s[tid]); }}"],
        "floor (empty uprobe+uretprobe)": ["bpftrace", "-e",
                                           f"uprobe:{binary}:{fn} {{}} uretprobe:{binary}:{fn} {{}}"],
        # what any latency tracer adds to the floor: a clock read in each program
        "floor + one clock read in each": ["bpftrace", "-e",
                                           f"uprobe:{binary}:{fn} {{ $t = nsecs; }} "
                                           f"uretprobe:{binary}:{fn} {{ $t = nsecs; }}"],
        # the same two floors for the uprobe_multi links liveprof attaches
        "floor, uprobe_multi links (empty)": multi_floor + ["empty"],
        "floor, uprobe_multi links + one clock read in each": multi_floor + ["clock"],
        # the least a latency histogram needs on those links: two clock reads, the
        # bucket, and the start kept between the two ends (latency_floor.bpf.c)
        LEAST_PERTASK: multi_floor + ["pertask"],
        LEAST_SESSION: multi_floor + ["session"],
    }
    added = {k: [] for k in configs}
    base_ns = []
    calls_seen = []
    try:
        for rep in range(REPS):
            names = list(configs)
            names = names[rep % len(names):] + names[:rep % len(names)]
            for name in names:
                kind = "liveprof" if name.startswith("liveprof") else "bpftrace"
                jpath = TMP / "percall.json"
                argv = list(configs[name])
                if kind == "liveprof":
                    argv += ["--json", jpath]
                base, val, tool = run_attached(target, kind, argv)
                a = val - base if base and val else None
                added[name].append(a)
                base_ns.append(base)
                if kind == "liveprof" and jpath.exists():
                    try:
                        tr = json.loads(jpath.read_text()).get("traces") or []
                        if tr:
                            calls_seen.append(tr[0].get("calls"))
                    except ValueError:
                        pass
                    jpath.unlink()
                log(f"  rep {rep + 1}/{REPS} {name:<32} +" + (f"{a:.0f} ns/call" if a else "n/a"))
        program_rows = percall_program_times(configs)
    finally:
        target.stop()
    floor = added["floor (empty uprobe+uretprobe)"]
    ratios = {}
    for name in configs:
        ratios[name] = [x / f if x and f else None for x, f in zip(added[name], floor)]
    rows = [f"| untraced | {mmm(base_ns, '{:.1f}')} ns/call | |"]
    for name in configs:
        rows.append(f"| {name} | +{mmm(added[name], '{:.0f}')} | {mmm(ratios[name], '{:.2f}')} |")
    rows += program_rows
    lp = med(ratios["liveprof --trace"])
    ok = lp is not None and lp <= 1.10
    multi = added["floor, uprobe_multi links (empty)"]
    res["percall"] = {"rows": rows, "ok": ok, "lp_ratio": lp,
                      "multi_ratio": med([x / f if x and f else None for x, f in
                                          zip(added["liveprof --trace"], multi)]),
                      "classic_ratio": med(ratios["liveprof --trace, classic uprobes"]),
                      "clock_ratio": med([x / c if x and c else None for x, c in
                                          zip(added["liveprof --trace"],
                                              added["floor + one clock read in each"])]),
                      "split_ratio": med(ratios["liveprof --split"]),
                      "least_ratio": {k: med(ratios[k]) for k in (LEAST_PERTASK, LEAST_SESSION)},
                      "calls": calls_seen}


def file_offset(binary, symbol):
    """The file offset of @symbol's first instruction (what uprobes take)."""
    vaddr = None
    for line in subprocess.run(["nm", binary], capture_output=True, text=True).stdout.split("\n"):
        f = line.split()
        if len(f) == 3 and f[2] == symbol:
            vaddr = int(f[0], 16)
    if vaddr is None:
        raise SystemExit(f"{binary}: no symbol {symbol}")
    out = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True).stdout
    for line in out.split("\n"):
        f = line.split()
        if f[:1] == ["LOAD"] and "E" in f[6:-1]:
            off, va, size = int(f[1], 16), int(f[2], 16), int(f[5], 16)
            if va <= vaddr < va + size:
                return vaddr - va + off
    raise SystemExit(f"{binary}: {symbol} is in no executable segment")


def percall_program_times(configs):
    """Rows: the kernel's own timing of each configuration's two BPF programs.

    With kernel.bpf_stats_enabled the kernel times every run of a BPF
    program; the mean per run of the entry and the return program, side by
    side, splits the added cost into the programs' bodies and the rest (the
    traps and the uretprobe's return hijack, which no program can avoid).
    The timing adds its own two clock reads to every run, the same for all.
    Separate windows after the measurements above, so they are not slowed.
    """
    pairs = {"liveprof --trace": ("lp_func_entry", "lp_func_return"),
             "liveprof --trace, classic uprobes": ("lp_func_entry", "lp_func_return"),
             "floor (empty uprobe+uretprobe)": ("bench_target", None),
             "floor + one clock read in each": ("bench_target", None),
             "floor, uprobe_multi links (empty)": ("floor_entry", "floor_return"),
             "floor, uprobe_multi links + one clock read in each": ("floor_entry",
                                                                    "floor_return"),
             LEAST_PERTASK: ("lat_entry", "lat_return"),
             LEAST_SESSION: ("lat_session", None)}
    times = {k: ([], []) for k in pairs}
    with BpfStats():
        for rep in range(REPS):
            for name, (entry, ret) in pairs.items():
                kind = "liveprof" if name.startswith("liveprof") else "bpftrace"
                tool = Tool(kind, configs[name])
                if tool.wait_ready():
                    a = BpfStats.snapshot(tool.proc.pid)
                    time.sleep(WINDOW)
                    b = BpfStats.snapshot(tool.proc.pid)
                    if ret:
                        times[name][0].append(BpfStats.ns_per_run(a, b, entry))
                        times[name][1].append(BpfStats.ns_per_run(a, b, ret))
                    else:  # one program at both ends (bpftrace names both alike)
                        both = BpfStats.ns_per_run(a, b, entry)
                        times[name][0].append(both)
                        times[name][1].append(both)
                tool.stop()
                time.sleep(0.3)
    return ["", "| BPF program time per run (kernel.bpf_stats_enabled) | entry ns | return ns |",
            "| --- | --- | --- |"] + [
        f"| {name} | {mmm(e, '{:.0f}')} | {mmm(r, '{:.0f}')} |" for name, (e, r) in times.items()]


# The early window, and the steady one: from 11 s to 21 s of a run, which
# holds one reclaim pass (every 10 s once the 10 one-second slots are
# full, at 20 s): the early window has none, and on distinct stacks the
# passes cost a fifth of the daemon's CPU. The goal is judged on the latter.
DAEMON_EARLY = (2.0, 7.0)
DAEMON_STEADY = (11.0, 21.0)
# The printing cadences measured: once a second (what a run that prints
# reads), and ten times a second (as this figure was first measured).
DAEMON_INTERVALS = ("1", "0.1")
LINE_T_RE = re.compile(r"^--- ([0-9.]+) s: (\d+) samples, \d+ lost")


def at_line(tool, t_s, timeout=60):
    """(samples, liveprof's CPU ns) as liveprof prints its line for @t_s
    seconds: the count is exact at that moment, and the CPU time is read as
    the line arrives, while liveprof waits for its next events."""
    def due(line):
        m = LINE_T_RE.match(line)
        return m if m and float(m.group(1)) >= t_s - 1e-3 else None

    r = tool.out.wait_for(due, timeout)
    c = cpu_ns(tool.proc.pid)
    if not r or c is None:
        return None
    return int(r[2].group(2)), c


def daemon_window(tool, window):
    """(samples, liveprof's CPU seconds) between the lines of @window, or None."""
    a = at_line(tool, window[0])
    b = at_line(tool, window[1]) if a else None
    if not b or b[0] <= a[0] or b[1] <= a[1]:
        return None
    return b[0] - a[0], (b[1] - a[1]) / 1e9


def idle_daemon_cost(interval):
    """liveprof's CPU us per second following a process that never runs."""
    idle = subprocess.Popen(["sleep", "1000"])
    tool = Tool("liveprof", [LIVEPROF, "-p", idle.pid, "-F", "4999", "--no-tui",
                             "--interval", interval, "--top", "0"])
    try:
        a = at_line(tool, 3.0)
        b = at_line(tool, 13.0) if a else None
    finally:
        tool.stop()
        idle.kill()
        idle.wait()
    return None if not b else (b[1] - a[1]) / 1e3 / 10.0


def bench_daemon(res):
    log("daemon throughput: bench_deep (2 threads, 12-28 frames) at -F 4999")
    target = Target("bench_deep", "2")
    time.sleep(1.0)
    runs = {iv: {"early": [], "steady": [], "idle": []} for iv in DAEMON_INTERVALS}
    try:
        for rep in range(REPS):
            for iv in DAEMON_INTERVALS:
                argv = liveprof_argv(target.pid, 4999, json_out=TMP / "daemon.json")
                argv[argv.index("--interval") + 1] = iv
                tool = Tool("liveprof", argv)
                e = daemon_window(tool, DAEMON_EARLY)
                st = daemon_window(tool, DAEMON_STEADY)
                tool.stop()
                r = runs[iv]
                if e:
                    r["early"].append(e[0] / e[1])
                if st:
                    r["steady"].append(st[0] / st[1])
                log(f"  rep {rep + 1}/{REPS}, --interval {iv}: " + ", ".join(
                    f"{name} {w[0]} samples, {w[1]:.3f} s CPU -> {w[0] / w[1]:,.0f}/CPU-s"
                    for name, w in (("early", e), ("steady", st)) if w))
    finally:
        target.stop()
    for iv in DAEMON_INTERVALS:
        for _ in range(min(REPS, 3)):
            c = idle_daemon_cost(iv)
            if c is not None:
                runs[iv]["idle"].append(c)
        log(f"  idle, --interval {iv}: {runs[iv]['idle']} us/s")
    judged = runs[DAEMON_INTERVALS[0]]["steady"]
    us = lambda v: [1e6 / x for x in v]  # noqa: E731
    rows = []
    for iv in DAEMON_INTERVALS:
        r = runs[iv]
        rows += [
            f"| --interval {iv}: daemon CPU per sample (us), "
            f"{DAEMON_EARLY[0]:.0f}-{DAEMON_EARLY[1]:.0f} s | {mmm(us(r['early']), '{:.2f}')} |",
            f"| --interval {iv}: samples per CPU-second (one core), "
            f"{DAEMON_EARLY[0]:.0f}-{DAEMON_EARLY[1]:.0f} s | {mmm(r['early'], '{:,.0f}')} |",
            f"| --interval {iv}: daemon CPU per sample (us), "
            f"{DAEMON_STEADY[0]:.0f}-{DAEMON_STEADY[1]:.0f} s | {mmm(us(r['steady']), '{:.2f}')} |",
            f"| --interval {iv}: samples per CPU-second (one core), "
            f"{DAEMON_STEADY[0]:.0f}-{DAEMON_STEADY[1]:.0f} s | {mmm(r['steady'], '{:,.0f}')} |",
            f"| --interval {iv}: idle daemon (a target that never runs), CPU us per second | "
            f"{mmm(r['idle'], '{:.0f}')} |",
        ]
    res["daemon"] = {"rows": rows, "ok": bool(judged) and med(judged) >= 1e6,
                     "rate": med(judged), "rate_fine": med(runs[DAEMON_INTERVALS[1]]["steady"])}


# Built by `make bench-bins` (a prerequisite of `make bench`), linked against
# the layer archives like liveprof itself.
BENCH_BINS = ROOT / "build" / "tests" / "bench"


def bench_bin(name):
    """The Makefile-built benchmark program @name, or None if it is missing."""
    exe = BENCH_BINS / name
    return exe if exe.is_file() and os.access(exe, os.X_OK) else None


def bench_replay(res):
    log("daemon throughput (replay): tests/bench/replay.c, 2M samples over 10,000 stacks")
    exe = bench_bin("replay")
    if not exe:
        res["replay"] = {"error": "build/tests/bench/replay is not built: run `make bench-bins`"}
        return
    # one process, REPS runs of the same 2M records (each with an empty store)
    r = subprocess.run(pinned(TOOL_CPU, [exe, REPS, 2_000_000, 10_000]), capture_output=True,
                       text=True, timeout=600)
    runs = [m.groupdict() for m in re.finditer(
        r"^run \d+ samples (?P<n>\d+) distinct (?P<d>\d+) cpu_ns (?P<cpu>\d+) wall_ns (?P<wall>\d+)",
        r.stdout, re.M)]
    setup = re.search(r"^setup modules (\d+) stacks (\d+) mean_depth ([0-9.]+)", r.stdout, re.M)
    sym = re.search(r"^sym stacks (\d+) frames (\d+) cpu_ns (\d+) wall_ns (\d+)", r.stdout, re.M)
    if r.returncode or not runs or not setup:
        res["replay"] = {"error": f"replay failed (exit status {r.returncode}): "
                                  + (r.stdout + r.stderr)[-500:]}
        return
    rates = [int(x["n"]) / (int(x["cpu"]) / 1e9) for x in runs]
    wrates = [int(x["n"]) / (int(x["wall"]) / 1e9) for x in runs]
    nsper = [int(x["cpu"]) / int(x["n"]) for x in runs]
    for i, (rt, w) in enumerate(zip(rates, wrates)):
        log(f"  run {i + 1}/{len(runs)}: {rt:,.0f} samples per CPU-second ({w:,.0f} per wall second)")
    rows = [
        f"| samples/s on one core (per CPU-second) | {mmm(rates, '{:,.0f}')} |",
        f"| samples/s on one core (per wall second) | {mmm(wrates, '{:,.0f}')} |",
        f"| CPU ns per sample | {mmm(nsper, '{:.1f}')} |",
        f"| distinct stacks interned | {runs[0]['d']} |",
    ]
    if sym:
        st, fr, cpu = int(sym.group(1)), int(sym.group(2)), int(sym.group(3))
        n = int(runs[0]["n"])
        rows.append(f"| symbolization, once per distinct stack (separate, lazy) | "
                    f"{cpu / st / 1e3:,.1f} us per stack ({cpu / fr:,.0f} ns per frame); "
                    f"{cpu / n:.1f} ns per sample amortized over the {n:,} samples |")
    ok = med(rates) >= 1e6
    res["replay"] = {"rows": rows, "ok": ok, "rate": med(rates),
                     "modules": int(setup.group(1)), "depth": float(setup.group(3))}


def bench_symbols(res):
    log("symbolization: tests/bench/symbench.c vs eu-addr2line -f over libc.so.6")
    exe = bench_bin("symbench")
    if not exe:
        res["symbols"] = {"error": "build/tests/bench/symbench is not built: run `make bench-bins`"}
        return
    n_big = 1_000_000
    n_cmp = int(os.environ.get("BENCH_SYM_CMP", "20000"))
    addr_file = TMP / "addrs.txt"
    rows = {"fn": [], "fn_cpu": [], "lines": [], "eu": [], "ratio_fn": [], "ratio_lines": []}
    lib = None

    def run_timed(argv, stdin=None):
        t0 = time.monotonic()
        p = subprocess.Popen([str(a) for a in argv], stdin=stdin, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        out, _ = p.communicate()
        return out, time.monotonic() - t0

    for rep in range(REPS):
        # 1M addresses, functions only: the daemon's own mode
        before = os.times()
        out, _ = run_timed([exe, "0", n_big, addr_file])
        after = os.times()
        m = re.search(r"lib (\S+) .*ns_per_addr ([0-9.]+)", out)
        if not m:
            res["symbols"] = {"error": "symbench failed: " + out[-300:]}
            return
        lib = m.group(1)
        rows["fn"].append(float(m.group(2)))
        rows["fn_cpu"].append((after.children_user + after.children_system
                               - before.children_user - before.children_system) / n_big * 1e9)
        # the first n_cmp of the same addresses, with lines, against eu-addr2line -f
        out, _ = run_timed([exe, "1", n_cmp, addr_file])
        m2 = re.search(r"ns_per_addr ([0-9.]+)", out)
        out_fn, _ = run_timed([exe, "0", n_cmp, addr_file])
        m3 = re.search(r"ns_per_addr ([0-9.]+)", out_fn)
        # symbench rewrote addr_file with just these n_cmp addresses (same seed)
        with open(addr_file) as f:
            _, eu_s = run_timed(["eu-addr2line", "-f", "-e", lib], stdin=f)
        eu_ns = eu_s / n_cmp * 1e9
        rows["eu"].append(eu_ns)
        if m2:
            rows["lines"].append(float(m2.group(1)))
            rows["ratio_lines"].append(eu_ns / float(m2.group(1)))
        if m3:
            rows["ratio_fn"].append(eu_ns / float(m3.group(1)))
        log(f"  rep {rep + 1}/{REPS}: {rows['fn'][-1]:.0f} ns/addr (1M, functions), "
            f"eu-addr2line {eu_ns:.0f} ns/addr")
    res["symbols"] = {"lib": lib, "n_cmp": n_cmp, "rows": [
        f"| liveprof, functions, 1M addresses (wall) | {mmm(rows['fn'], '{:,.0f}')} ns/addr | |",
        f"| liveprof, functions, 1M addresses (CPU) | {mmm(rows['fn_cpu'], '{:,.0f}')} ns/addr | |",
        f"| liveprof, functions + lines + inlines, first {n_cmp:,} | "
        f"{mmm(rows['lines'], '{:,.0f}')} ns/addr | {mmm(rows['ratio_lines'], '{:.1f}')} |",
        f"| eu-addr2line -f, first {n_cmp:,} (process start included) | "
        f"{mmm(rows['eu'], '{:,.0f}')} ns/addr | 1 |",
        f"| speed-up of liveprof functions-only over eu-addr2line -f | | "
        f"{mmm(rows['ratio_fn'], '{:.1f}')} |",
    ]}


# Sessions that load more programs than the sampler: those are verified
# while the sampler already runs (bpf_session_deferred.c); bench_spin's
# mid() is the traced function.
FIRST_MODES = {"--offcpu": ["--offcpu"], "--trace mid": ["--trace", "mid"]}


def bench_first(res):
    log("time to first sample: liveprof -p (every run above) vs bpftrace first output")
    target = Target("bench_spin")
    time.sleep(1.0)
    bt, lp = [], []
    modes = {mode: [] for mode in FIRST_MODES}
    try:
        for rep in range(REPS):
            t0 = time.monotonic()
            p = subprocess.Popen(["bpftrace", "-e",
                                  f'profile:hz:99 /pid == {target.pid}/ {{ printf("x\\n"); exit(); }}'],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                 start_new_session=True)
            lines = Lines(p)
            r = lines.wait_for(lambda l: l.strip() == "x", 60)
            bt.append(r[0] - t0 if r else None)
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            # the same event as bpftrace's: the first sample's data, seen
            # by a 5 ms --interval (the first line with samples > 0)
            tool = Tool("liveprof", liveprof_argv(target.pid, 99)[:-4] +
                        ["--interval", "0.005", "--top", "0"])
            tool.wait_ready()
            tool.stop()
            lp.append(tool.first_sample_s)
            # what the other programs' verification adds to the start
            for mode, extra in FIRST_MODES.items():
                tool = Tool("liveprof", liveprof_argv(target.pid, 99)[:-4] +
                            ["--interval", "0.005", "--top", "0", *extra])
                tool.wait_ready()
                tool.stop()
                modes[mode].append(tool.first_sample_s)
            log(f"  rep {rep + 1}/{REPS}: bpftrace {bt[-1] if bt[-1] is not None else float('nan'):.3f} s")
    finally:
        target.stop()
    lp = [x for x in lp if x is not None]
    ratios = [a / b for a, b in zip(lp, bt) if a and b]
    ok = bool(lp) and med(lp) <= 0.05
    res["first"] = {"rows": [
        f"| liveprof -p PID -> first sample aggregated ({len(lp)} runs) | {mmm(lp)} s |",
        f"| bpftrace profile:hz:99 -> first output ({len(bt)} runs) | {mmm(bt)} s |",
        f"| ratio liveprof / bpftrace | {mmm(ratios, '{:.2f}')} |",
    ] + [f"| liveprof -p PID {mode} -> first sample aggregated ({len(v)} runs) | "
         f"{mmm([x for x in v if x is not None])} s |" for mode, v in modes.items()],
        "ok": ok, "lp": med(lp),
        "modes": {mode: med(v) for mode, v in modes.items() if v}}


def bench_rss(res):
    log(f"daemon cost: {RSS_S:.0f} s profile of bench_deep with 16 threads at 999 Hz")
    target = Target("bench_deep", "16", cpu=None)
    time.sleep(1.0)
    tool = Tool("liveprof", liveprof_argv(target.pid, 999, "-d", RSS_S + 60,
                                          json_out=TMP / "rss.json"))
    slices, hwm, total = [], None, None
    try:
        if tool.wait_ready():
            c_prev, t_prev = cpu_seconds(tool.proc.pid), time.monotonic()
            c_first, t_first = c_prev, t_prev
            for _ in range(int(RSS_S / 5)):
                time.sleep(5)
                c, t = cpu_seconds(tool.proc.pid), time.monotonic()
                hwm = vm_hwm_kb(tool.proc.pid) or hwm
                if c is None:
                    break
                slices.append((c - c_prev) / (t - t_prev) * 100)
                c_prev, t_prev = c, t
            if c_prev is not None:
                total = (c_prev - c_first) / (t_prev - t_first) * 100
        samples = tool.samples_now()
        rc = tool.stop()
    finally:
        target.stop()
    res["rss"] = {"rows": [
        f"| liveprof CPU% of one core, 5 s slices after start-up | {mmm(slices, '{:.2f}')} % |",
        "| liveprof CPU%, whole steady window | "
        + (f"{total:.2f} %" if total is not None else "n/a") + " |",
        "| peak RSS (VmHWM) | " + (f"{hwm / 1024:.1f} MiB" if hwm else "n/a") + " |",
        f"| samples aggregated | {samples} (exit status {rc}) |",
    ]}


SYSTEM_S = 10.0  # the whole-machine profile's steady window


def bench_system(res):
    """liveprof -a -F 99 on the whole machine: its own CPU over a steady
    10 s window (after its first --interval line) and its peak RSS, with
    bench_deep's 2 threads (deep, distinct stacks) and the machine's
    usual processes as what it samples."""
    log(f"whole machine: liveprof -a -F 99, {SYSTEM_S:.0f} s windows, {REPS} reps")
    pct, hwms, rates = [], [], []
    for rep in range(REPS):
        target = Target("bench_deep", "2", cpu=None)
        time.sleep(0.5)
        tool = Tool("liveprof", [LIVEPROF, "-a", "-F", 99, "--no-tui", "--interval", "1",
                                 "--top", "0", "-d", SYSTEM_S + 60])
        try:
            if tool.wait_ready():
                time.sleep(1.0)
                c0, n0, t0 = cpu_ns(tool.proc.pid), tool.samples_now(), time.monotonic()
                time.sleep(SYSTEM_S)
                c1, n1, t1 = cpu_ns(tool.proc.pid), tool.samples_now(), time.monotonic()
                hwm = vm_hwm_kb(tool.proc.pid)
                if None not in (c0, c1):
                    pct.append((c1 - c0) / 1e9 / (t1 - t0) * 100)
                if hwm:
                    hwms.append(hwm / 1024)
                if None not in (n0, n1):
                    rates.append((n1 - n0) / (t1 - t0))
            else:
                log(f"  liveprof -a did not start: {tool.out.text()[-300:]}")
            tool.stop()
        finally:
            target.stop()
    res["system"] = {"rows": [
        f"| liveprof CPU% of one core, steady {SYSTEM_S:.0f} s window | {mmm(pct, '{:.2f}')} % |",
        f"| peak RSS (VmHWM) | {mmm(hwms, '{:.1f}')} MiB |",
        f"| samples per second in the window (all CPUs) | {mmm(rates, '{:.0f}')} |",
    ]}


def run_script(name, timeout, **env):
    """Run tests/bench/@name; its stdout (the section's markdown), or what went wrong."""
    script = ROOT / "tests" / "bench" / name
    if not script.exists():
        return f"tests/bench/{name} does not exist in this tree."
    try:
        # progress (stderr) goes to the terminal, the table (stdout) to the report
        r = subprocess.run(["/usr/bin/python3", str(script)], cwd=ROOT, stdout=subprocess.PIPE,
                           text=True, timeout=timeout, env=dict(os.environ, **env))
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return f"{name} FAILED: timed out after {timeout:.0f} s.\n\n```\n{out[-1500:]}\n```"
    if r.returncode:
        return f"{name} FAILED (exit status {r.returncode}).\n\n```\n{r.stdout[-2000:]}\n```"
    return r.stdout.strip()


def unwind_goals(m):
    """The issue's per-sample and slowdown goals from bench_unwind's medians."""
    d999, d4999 = m.get("dwarf@999") or {}, m.get("dwarf@4999") or {}
    us = [x for x in (d999.get("cpu_us"), d4999.get("cpu_us")) if x is not None]
    slow, perf = d999.get("slowdown"), d999.get("perf_slowdown")
    return {"cpu": {"ok": len(us) == 2 and max(us) <= 1.0,
                    "text": " and ".join(f"{x:.2f} us at {hz} Hz" for x, hz in
                                         zip(us, (999, 4999)))},
            "slow": {"ok": slow is not None and perf is not None and slow <= perf + 1.0,
                     "text": (f"{slow:+.1f}% against perf's {perf:+.1f}% (median)"
                              if slow is not None and perf is not None else "n/a")}}


def bench_unwind(res):
    log("unwinding: tests/bench/bench_unwind.py")
    medians = TMP / "unwind.json"
    res["unwind"] = {"text": run_script("bench_unwind.py", 900, REPS=str(REPS),
                                        UNWIND_JSON=str(medians))}
    if medians.exists():
        res["unwind_goals"] = unwind_goals(json.loads(medians.read_text()))


def bench_interp(res):
    log("interpreters: tests/bench/bench_interp.py")
    res["interp"] = {"text": run_script("bench_interp.py", 1200, REPS=str(REPS))}


def bench_kernels(res):
    log("kernels: tests/bench/bench_kernels.py (the host's and Debian's 6.1 and 6.12 in QEMU)")
    res["kernels"] = {"text": run_script("bench_kernels.py", 3600, REPS=str(REPS))}


def bench_soak(res):
    soak_s = float(os.environ.get("SOAK_S", "600"))
    log(f"soak: tests/bench/bench_soak.py ({soak_s:.0f} s of liveprof serve, scraped)")
    res["soak"] = {"text": run_script("bench_soak.py", soak_s + 600)}


INSN_CLASSES = [("rbp", "push %rbp"), ("rbx", "push %rbx"), ("r15", "push %r15"),
                ("lea", "lea 1(%rdi),%rax (single-stepped)"), ("sub", "sub $8,%rsp (single-stepped)")]


def bench_probecost(res):
    """liveprof's estimate of a probe's cost (probe_cost_ns in --json) next
    to the cost measured from the target's own throughput, per class of
    first instruction (tests/workloads/bench_insn.c)."""
    log("probe cost: estimated vs measured, per first-instruction class")
    rows = []
    for cls, text in INSN_CLASSES:
        target = Target("bench_insn", cls)
        time.sleep(1.0)
        est, meas, ratio = [], [], []
        try:
            for rep in range(REPS):
                jpath = TMP / f"probecost-{cls}.json"
                argv = liveprof_argv(target.pid, 99, "--trace", f"insn_{cls}", json_out=jpath)
                base, val, _ = run_attached(target, "liveprof", argv)
                m = val - base if base and val else None
                e = None
                if jpath.exists():
                    try:
                        tr = json.loads(jpath.read_text()).get("traces") or []
                        e = tr[0].get("probe_cost_ns") if tr else None
                    except ValueError:
                        pass
                    jpath.unlink()
                est.append(e)
                meas.append(m)
                ratio.append(e / m if e and m else None)
                log(f"  rep {rep + 1}/{REPS} {cls}: estimated {e} ns, measured "
                    + (f"{m:.0f} ns" if m else "n/a"))
        finally:
            target.stop()
        rows.append(f"| `{text}` | {mmm(est, '{:.0f}')} | {mmm(meas, '{:.0f}')} | "
                    f"{mmm(ratio, '{:.2f}')} |")
    res["probecost"] = {"rows": rows}


BIAS_US = (5, 50)


def bench_bias(res):
    """Share of sampled calls of constwork's handle() (constant work) that
    the split classes slow at p99, against the share of all calls above the
    threshold (p0), net of the sampling cost and with --raw-latency."""
    log("sampled-call class bias: constwork, --split handle@p99")
    rows = []
    for us in BIAS_US:
        target = Target("constwork", us, cpu=TARGET_CPU)
        time.sleep(1.5)
        try:
            for hz in (99, 999):
                for mode in ("net", "raw"):
                    shares, p0s, n_s = [], [], []
                    for rep in range(REPS):
                        jpath = TMP / "bias.json"
                        argv = [LIVEPROF, "-p", target.pid, "-F", hz, "--no-tui", "--top", "0",
                                "-d", 6 if hz >= 999 else 12, "--split", "handle@p99",
                                "--json", jpath] + (["--raw-latency"] if mode == "raw" else [])
                        r = subprocess.run(pinned(TOOL_CPU, argv), capture_output=True, text=True,
                                           timeout=120)
                        s = None
                        if r.returncode == 0 and jpath.exists():
                            s = json.loads(jpath.read_text()).get("split")
                            jpath.unlink()
                        if not s:
                            log(f"  {us} us {hz} Hz {mode}: liveprof failed: {r.stderr[-300:]}")
                            continue
                        n = s["slow_calls"] + s["fast_calls"]
                        alln = s["all_slow_calls"] + s["all_fast_calls"]
                        shares.append(s["slow_calls"] / n if n else None)
                        p0s.append(s["all_slow_calls"] / alln if alln else None)
                        n_s.append(n)
                        log(f"  rep {rep + 1}/{REPS} {us} us {hz} Hz {mode}: "
                            f"{s['slow_calls']}/{n} sampled calls slow, p0 {p0s[-1]:.4f}")
                    rows.append(f"| {us} us | {hz} Hz | {mode} | {mmm(shares, '{:.3f}')} | "
                                f"{mmm(p0s, '{:.3f}')} | {mmm(n_s, '{:.0f}')} |")
        finally:
            target.stop()
    res["bias"] = {"rows": rows}



# ---------------------------------------------------------------- report

def previous_report():
    """The sections of the BENCHMARKS.md already there: title -> body."""
    out, title, body = {}, None, []
    try:
        text = (ROOT / "BENCHMARKS.md").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        if line.startswith("## "):
            if title:
                out[title] = "\n".join(body).strip("\n") + "\n"
            title, body = line[3:].strip(), []
        elif title:
            body.append(line)
    if title:
        out[title] = "\n".join(body).strip("\n") + "\n"
    return out


def write_report(res, started, load0):
    L = []
    L.append("# liveprof benchmarks\n")
    L.append(f"Written by `make bench` (`tests/bench/run_bench.py`) on "
             f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(started))}, "
             f"kernel {os.uname().release}, {NCPU} CPUs, load average at start "
             f"{load0[0]:.2f}, at end {os.getloadavg()[0]:.2f}; the run took "
             f"{(time.monotonic() - T_START) / 60:.1f} min.\n")
    L.append("## Method\n")
    L.append(f"- Every figure is a ratio of two measurements taken next to each other in this "
             f"run, repeated {REPS} times, given as **min / median / max**.")
    L.append(f"- Targets are the `tests/workloads/bench_*.c` programs (built `-O1 -g "
             f"-fno-omit-frame-pointer`); they print their own throughput or ns/call every "
             f"0.5 s. The target is pinned to CPU {TARGET_CPU}, every profiler to CPU "
             f"{TOOL_CPU} (`taskset`), so the slowdown is the cost inside the target.")
    L.append(f"- A measurement is a {WINDOW:.0f} s window untraced, immediately followed by "
             f"a {WINDOW:.0f} s window once the tool is attached (liveprof: its first "
             f"`--interval` line; bpftrace: its `Attaching` line + 0.3 s; perf: 1 s after "
             f"start). The order of the tools rotates from one repetition to the next.")
    L.append("- Tools: `liveprof -p PID -F HZ` (default stacks), `perf record -g -F HZ -p PID`, "
             "`bpftrace -e 'profile:hz:HZ /pid == PID/ { @[ustack] = count(); }'` (Debian's "
             "packages). No hardware PMU here: all sample with `cpu-clock`.")
    L.append("- The machine is a shared 2-CPU VM; a high load average means other work "
             "competed with the run, which widens the ranges.\n")

    old = previous_report()

    def section(title, key, header, note=None):
        L.append(f"## {title}\n")
        r = res.get(key)
        if not r:
            # not run this time: keep what the last run wrote
            L.append(old.get(title, "not run\n"))
            return
        if "error" in r:
            L.append(r["error"] + "\n")
            return
        if note:
            L.append(note + "\n")
        L.append(header)
        L.extend(r["rows"])
        L.append("")

    section("Target slowdown while sampling", "slowdown",
            "| Hz | liveprof | perf record -g | bpftrace profile | goal: liveprof <= perf |\n"
            "| --- | --- | --- | --- | --- |",
            "Slowdown = untraced throughput / throughput while profiled (1.000 = no cost), "
            "CPU-bound single-threaded `bench_spin`. The goal counts as met when liveprof's "
            "median is within 2% of perf's or better.")
    section("Added nanoseconds per traced call", "percall",
            "| configuration | added ns/call | ratio to the kernel floor |\n| --- | --- | --- |",
            "`bench_call` calls `bench_target()` (first instruction `push %rbp`, which the "
            "kernel emulates) in a tight loop. Added = ns/call while traced - ns/call in the "
            "untraced window just before, in the target thread's CPU time (wall time counted "
            "other processes' time on this shared machine). The floor is an empty uprobe + uretprobe pair "
            "(bpftrace with empty actions); the ratio divides by the floor measured in the "
            "same repetition. liveprof attaches its function probes as uprobe_multi links "
            "(Linux 6.6+), which run the program straight from the uprobe handler rather than "
            "through a perf event; the `classic uprobes` row is liveprof with the old kind "
            "(`LIVEPROF_UPROBES=classic`), and the `uprobe_multi links` floors are the same two "
            "floors with that kind (tests/bench/multi_floor.c). The floor with a clock read in each program is bpftrace's "
            "`$t = nsecs` in both: two reads of the clock are the least a latency needs "
            "(one `bpf_ktime_get_ns()` costs 45-60 ns of program time on this VM, whose clock "
            "source is the TSC: the second table). The two `least latency histogram` rows are what any latency histogram "
            "needs on the links liveprof attaches, and nothing more (tests/bench/"
            "latency_floor.bpf.c): a clock read at each end, liveprof's bucket and one atomic "
            "add, with the start kept between the two ends either in the thread's task-local "
            "storage (one slot: not recursion-safe, no sampling cost netted out) or in the "
            "per-call cookie of a uprobe session link (Linux 6.13+), which needs no per-thread "
            "state. The second table is the kernel's own timing of the programs "
            "(`kernel.bpf_stats_enabled`, in separate windows; a session program runs at both "
            "ends, so its column is the mean of the two).")
    section("Daemon throughput", "daemon", "| figure | min / median / max |\n| --- | --- |",
            "liveprof `-F 4999` on `bench_deep` (2 threads on one CPU, 12-28 frames, distinct "
            "stacks, about 5,000 samples a second); liveprof's own CPU time (all its threads' "
            "/proc/PID/task/*/schedstat, in ns) between two of its `--interval` lines, read as "
            "each line arrives, divided by the samples it counted between them (the line's "
            "counter, the same one as `samples` in --json): 2-7 s, and 11-21 s, which holds "
            "one pass of the reclaim that folds idle stacks (every 10 s once the window's "
            "slots are full). This is what one core ingests, unwinds, interns, symbolizes, "
            "aggregates and reclaims per second of CPU when every sample is a new stack; the "
            "arrival rate is bounded by the sampling rate. The daemon's fixed cost per second "
            "(its wake-ups: about 30-80 us of CPU each in this VM) is part of the figure, so "
            "it is given for two printing cadences, and on its own (the idle rows). The goal "
            "is judged on 11-21 s, printing once a second.")
    rp = res.get("replay") or {}
    section("Daemon throughput (replay)", "replay", "| figure | min / median / max |\n| --- | --- |",
            f"`tests/bench/replay.c` (linked with the layer archives, pinned to CPU {TOOL_CPU}) "
            f"lays out 2,000,000 sample records as consecutive ring-buffer entries over 10,000 "
            f"distinct synthetic user stacks (depth 10-40, mean {rp.get('depth', 0):.1f}, "
            f"addresses in the text of {rp.get('modules', 'a few')} mapped modules, stacks "
            f"sharing root parts), drawn with Zipf(1) popularity, and does per record what "
            f"the daemon's `on_sample()` does for a frame-pointer sample: copy the addresses, "
            f"the trampoline fix-up scan (same loop as the static `fix_trampolines()`), "
            f"`stack_store__intern()`, `counts__add()` into the total and the current window "
            f"slot (rotated and cleared like the daemon's tick). Each run starts from an empty "
            f"store; {REPS} runs, CPU time of the thread (CLOCK_THREAD_CPUTIME_ID). No BPF, "
            f"no ring-buffer polling or wake-ups, no unwinding (see the unwind table for that "
            f"cost): this is the ingest/intern/aggregate path alone, the part the live table "
            f"above cannot isolate. Symbolization is not per sample: it runs lazily once per "
            f"distinct stack (`stack_symbols__update()` over the store, fresh symbolizer on the "
            f"replay's own pid, measured once).")
    sy = res.get("symbols") or {}
    section("Symbolization", "symbols",
            "| figure | min / median / max | speed-up over eu-addr2line |\n| --- | --- | --- |",
            f"`tests/bench/symbench.c` resolves pseudo-random addresses in the text of "
            f"`{sy.get('lib', 'libc.so.6')}` mapped in its own process through a fresh "
            f"`symbolizer` (cold cache), against `eu-addr2line -f -e LIB` reading the same "
            f"address list (the comparison uses the first {sy.get('n_cmp', 0):,} addresses: "
            f"eu-addr2line takes minutes for 1M here).")
    section("Time to the first sample", "first", "| figure | min / median / max |\n| --- | --- |",
            "The same event for both tools, the first sample's data: from starting the tool "
            "to liveprof's first `--interval 0.005` line with samples > 0 (5 ms resolution) "
            "and to the line bpftrace prints from its first sample (`profile:hz:99` with "
            "`printf` and `exit()`), at 99 Hz on a spinning target, alternating.")
    section(f"Daemon CPU and memory over a {RSS_S:.0f} s profile", "rss",
            "| figure | value |\n| --- | --- |",
            "`bench_deep 16` (16 threads, both CPUs) profiled with `liveprof -F 999`; the "
            "issue asks for 60 s, cut to fit the time budget (BENCH_RSS_S).")
    section("The whole machine at 99 Hz", "system", "| figure | min / median / max |\n| --- | --- |",
            "`liveprof -a -F 99` on every process of the machine while `bench_deep 2` runs "
            "(two threads walking deep, distinct stacks) beside the machine's own "
            "processes; its CPU time (schedstat, all threads) over a 10 s window starting 1 s "
            "after it began sampling (start-up excluded), its peak RSS at the end of the window. "
            "The issue's goal: at most 1% of one core.")
    section("Estimated vs measured probe cost", "probecost",
            "| first instruction | estimated ns/call (--json probe_cost_ns) | measured ns/call | "
            "estimated / measured |\n| --- | --- | --- | --- |",
            "`bench_insn CLASS` calls a function whose first instruction is the one named (written "
            "in assembly) in a tight loop. Measured = ns/call while `liveprof --trace insn_CLASS` "
            "is attached - ns/call in the untraced window just before, both in the target thread's CPU time "
            "(its own clock, so that other load on the machine does not count); estimated = what liveprof "
            "reports for the same trace (its per-class calibration in its own process).")
    section("Sampled-call class bias at 99 and 999 Hz", "bias",
            "| handle() | rate | latencies | share of sampled calls classed slow | p0 (share of "
            "all calls above the threshold) | sampled calls |\n| --- | --- | --- | --- | --- | --- |",
            "`constwork US`: every call of `handle()` does the same work, so sampled calls should "
            "be classed slow as often as calls in general (p0, about 1%). `--split handle@p99`, "
            "6 s at 999 Hz and 12 s at 99 Hz; *net* is the default (latency net of what the "
            "sample cost the call), *raw* is `--raw-latency`. Before issue 11 the net rows did "
            "not exist: every row was raw.")
    L.append("## Unwinding (tests/bench/bench_unwind.py)\n")
    if res.get("unwind"):
        L.append(res["unwind"].get("text", "not run") + "\n")
    else:
        L.append(old.get("Unwinding (tests/bench/bench_unwind.py)", "not run\n"))

    L.append("## BPF programs on each kernel (tests/bench/bench_kernels.py)\n")
    if res.get("kernels"):
        L.append(res["kernels"].get("text", "not run") + "\n")
    else:
        L.append(old.get("BPF programs on each kernel (tests/bench/bench_kernels.py)", "not run\n"))

    L.append("## Python and Ruby (tests/bench/bench_interp.py)\n")
    if res.get("interp"):
        L.append(res["interp"].get("text", "not run") + "\n")
    else:
        L.append(old.get("Python and Ruby (tests/bench/bench_interp.py)", "not run\n"))

    L.append("## Soak of the HTTP server (tests/bench/bench_soak.py)\n")
    if res.get("soak"):
        L.append(res["soak"].get("text", "not run") + "\n")
    else:
        L.append(old.get("Soak of the HTTP server (tests/bench/bench_soak.py)", "not run\n"))



    old_goals = {}
    for line in old.get("Goals", "").splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 2 and cells[1] and not cells[1].startswith("---") and cells[1] != "goal":
            old_goals[cells[1]] = line
    L.append("## Goals\n")
    L.append("| goal | result | met |\n| --- | --- | --- |")

    def goal(name, key, text):
        r = res.get(key)
        if not r or "ok" not in r:
            L.append(old_goals.get(name, f"| {name} | not measured | - |"))
        else:
            L.append(f"| {name} | {text(r)} | {'yes' if r['ok'] else '**no**'} |")

    goal("slowdown no worse than perf's at the same rate", "slowdown",
         lambda r: "see the slowdown table")
    goal("per-call cost within 10% of the kernel floor", "percall",
         lambda r: (f"liveprof/floor = {r['lp_ratio']:.2f} (against the floor with a clock read "
                    f"in each program, which any latency needs: {r['clock_ratio']:.2f}; "
                    f"against an empty pair of the uprobe_multi links liveprof now attaches: "
                    f"{fmt2(r.get('multi_ratio'))}; with classic uprobes, as before: "
                    f"{fmt2(r.get('classic_ratio'))}). The least latency histogram measures "
                    f"{fmt2(r.get('least_ratio', {}).get(LEAST_PERTASK))} with its start in task "
                    f"storage and {fmt2(r.get('least_ratio', {}).get(LEAST_SESSION))} with it "
                    f"in a session cookie")
         if r["lp_ratio"] and r.get("clock_ratio") else "n/a")
    goal(">= 1M samples/s aggregated per core (replay of the ingest path)", "replay",
         lambda r: f"{r['rate']:,.0f} samples per CPU-second (median)" if r["rate"] else "n/a")
    goal(">= 1M samples/s aggregated per core (live daemon, end to end)", "daemon",
         lambda r: f"{r['rate']:,.0f} samples per CPU-second, 11-21 s of a run of distinct "
                   f"stacks, printing once a second ({fmt0(r.get('rate_fine'))} printing ten "
                   f"times a second)" if r["rate"] else "n/a")
    ug = res.get("unwind_goals") or {}
    res["unwind_cpu"], res["unwind_slow"] = ug.get("cpu"), ug.get("slow")
    goal("<= 1 us of daemon CPU per sample, frame-pointer-less binary (xz), default mode",
         "unwind_cpu", lambda r: r["text"])
    goal("xz slowdown at 999 Hz <= perf --call-graph dwarf's (within 1 point)", "unwind_slow",
         lambda r: r["text"])
    goal("first sample's data within 50 ms (bpftrace timed the same way)", "first",
         lambda r: (f"{r['lp'] * 1000:.0f} ms median" + "".join(
             f"; {mode}: {v * 1000:.0f} ms" for mode, v in r.get("modes", {}).items() if v))
         if r["lp"] else "n/a")
    L.append("")

    dst = ROOT / "BENCHMARKS.md"
    fd, tmp = tempfile.mkstemp(prefix=".BENCHMARKS.md.", dir=ROOT)
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(L))
    os.chmod(tmp, 0o644)
    os.replace(tmp, dst)
    log(f"wrote {dst}")


SECTIONS = {"slowdown": bench_slowdown, "percall": bench_percall, "daemon": bench_daemon,
            "replay": bench_replay, "symbols": bench_symbols, "first": bench_first, "rss": bench_rss,
            "system": bench_system,
            "unwind": bench_unwind, "interp": bench_interp, "soak": bench_soak,
            "kernels": bench_kernels,
            "probecost": bench_probecost,
            "bias": bench_bias}


def main():
    if os.geteuid() != 0:
        sys.exit("make bench: run as root (BPF, perf, bpftrace)")
    for need in ["bench_spin", "bench_call", "bench_deep"]:
        if not (BUILD / need).exists():
            sys.exit(f"missing {BUILD / need}: run make workloads")
    wanted = sys.argv[1:] or list(SECTIONS)
    started, load0 = time.time(), os.getloadavg()
    res = {}
    for name in wanted:
        try:
            SECTIONS[name](res)
        except Exception as e:  # one broken section must not lose the others
            log(f"{name} FAILED: {e!r}")
            res[name] = {"error": f"this section failed: {e!r}"}
    write_report(res, started, load0)
    subprocess.run(["rm", "-rf", str(TMP)])


if __name__ == "__main__":
    main()
