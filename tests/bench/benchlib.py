# SPDX-License-Identifier: GPL-2.0
"""benchlib.py - what the benchmark scripts under tests/bench share.

Progress lines, CPU pinning, a process's CPU time from schedstat, the
stdout lines of a running tool, liveprof's --interval counter, stopping a
tool, min / median / max, and the kernel's own run-time statistics of
liveprof's BPF programs (kernel.bpf_stats_enabled).
"""
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time

NCPU = os.cpu_count() or 1
# The target runs on the last CPU, the tools on CPU 0: what is measured is
# the cost inside the target, not two processes fighting over one core.
TARGET_CPU = str(NCPU - 1)
TOOL_CPU = "0"
INTERVAL_RE = re.compile(r"^--- [0-9.]+ s: (\d+) samples, (\d+) lost")
T0 = time.monotonic()


def log(msg):
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def pinned(cpu, argv):
    argv = [str(a) for a in argv]
    return ["taskset", "-c", cpu] + argv if NCPU > 1 else argv


def cpu_ns(pid):
    """CPU time of all threads of @pid in ns (schedstat), or None."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    except OSError:
        return None
    return total


def mmm(xs, fmt="{:.1f}"):
    """min / median / max of the values that are not None, or n/a."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "n/a"
    return " / ".join(fmt.format(v) for v in (min(xs), statistics.median(xs), max(xs)))


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


class Lines:
    """The stdout lines of a running process, collected by a thread."""

    def __init__(self, proc):
        self.proc, self.lines, self.cv = proc, [], threading.Condition()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        for line in self.proc.stdout:
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.cv.notify_all()
        with self.cv:
            self.cv.notify_all()

    def next_interval(self, after, timeout=30):
        """(index, samples) of the first --interval line at index >= after."""
        end = time.monotonic() + timeout
        with self.cv:
            i = after
            while True:
                while i < len(self.lines):
                    m = INTERVAL_RE.match(self.lines[i])
                    if m:
                        return i, int(m.group(1))
                    i += 1
                left = end - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return None
                self.cv.wait(min(left, 0.2))


def stop_tool(proc, timeout=60):
    """SIGINT to the tool's process group, SIGKILL after @timeout; its exit status."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode


class BpfStats:
    """Run count and run time of BPF programs by name, while enabled.

    kernel.bpf_stats_enabled makes the kernel time every run of every BPF
    program (two clock reads around it, which the times include); it is
    turned back off when the block ends.
    """

    def __enter__(self):
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            self.before = f.read().strip()
        self._set("1")
        return self

    def __exit__(self, *exc):
        self._set(self.before)

    @staticmethod
    def _set(v):
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(v)

    @staticmethod
    def prog_ids(pid):
        """The ids of the BPF programs process @pid holds open (its fdinfo)."""
        ids = set()
        try:
            for fd in os.listdir(f"/proc/{pid}/fdinfo"):
                try:
                    with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                        for line in f:
                            if line.startswith("prog_id:"):
                                ids.add(int(line.split()[1]))
                except (OSError, ValueError):
                    pass
        except OSError:
            pass
        return ids

    @staticmethod
    def snapshot(pid=None):
        """name -> (run_cnt, run_time_ns), summed over programs of that name
        (those that process @pid holds, if given: other tools' are not mixed in)."""
        r = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True)
        out = {}
        try:
            progs = json.loads(r.stdout or "[]")
        except ValueError:
            return out
        if pid is not None:
            ids = BpfStats.prog_ids(pid)
            progs = [p for p in progs if p.get("id") in ids]
        for p in progs:
            n, t = p.get("run_cnt", 0), p.get("run_time_ns", 0)
            c = out.get(p.get("name"), (0, 0))
            out[p.get("name")] = (c[0] + n, c[1] + t)
        return out

    @staticmethod
    def run_ns(a, b, name):
        """ns that the programs named @name ran between snapshots @a and @b."""
        return b.get(name, (0, 0))[1] - a.get(name, (0, 0))[1]

    @staticmethod
    def ns_per_run(a, b, name):
        """Mean ns per run of @name between snapshots @a and @b, or None."""
        (n0, t0), (n1, t1) = a.get(name, (0, 0)), b.get(name, (0, 0))
        return (t1 - t0) / (n1 - n0) if n1 > n0 else None
