"""Fixtures for liveprof's end-to-end tests against real BPF.

Every ground truth comes from the workloads in tests/workloads (their source
or what they print or write), never from liveprof's own output.
"""

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from lputil import cpu_seconds

import stats

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "tests" / "build"
WORKLOADS = ROOT / "tests" / "workloads"
LIVEPROF = Path(os.environ.get("LIVEPROF", ROOT / "liveprof"))

NEEDED = ["fastslow", "threads4", "uselib", "libwl.so", "latency", "calls",
          "argso2", "reqs", "midleaf", "rate", "churn", "spinexit", "constwork", "deeprec",
          "probesafe", "usdt", "phases", "causal_lines", "execpair", "reload"]


def pytest_collection_modifyitems(config, items):
    if os.geteuid() != 0:
        skip = pytest.mark.skip(reason="end-to-end tests need root (BPF)")
        for item in items:
            if "/e2e/" in str(item.fspath):
                item.add_marker(skip)


# ---- statistical checks: which tests run them, at what false-failure rate ----

_STATISTICAL = {}  # nodeid -> [(what, rate)] of the stats.* checks the test ran


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    stats.reset()
    yield
    # Carried by the test's report, so that with pytest-xdist (make test
    # runs two workers) the controller, which prints the summary, has it.
    if item.fspath.basename != "test_stats.py" and stats.spent():
        item.user_properties.append(("statistical_checks", list(stats.spent())))
    stats.reset()


def pytest_runtest_logreport(report):
    for key, value in report.user_properties:
        if key == "statistical_checks" and report.when == "call":
            _STATISTICAL[report.nodeid] = [tuple(c) for c in value]


def pytest_terminal_summary(terminalreporter):
    """Before pytest's last line: each statistical test, its checks and their
    false-failure rate by design, and the suite's (their sum: a union bound)."""
    if not _STATISTICAL:
        return
    tr = terminalreporter
    tr.write_sep("-", "statistical checks (H0 and derived bound in each; tests/e2e/stats.py)")
    total = 0.0
    for nodeid, checks in sorted(_STATISTICAL.items()):
        rate = sum(r for _, r in checks)
        total += rate
        tr.write_line(f"  {rate:8.1e}  {len(checks)} check{'s' if len(checks) > 1 else ' '}  "
                      f"{nodeid}")
    tr.write_line(f"  {total:8.1e}  in all: {len(_STATISTICAL)} statistical tests; a correct "
                  f"liveprof fails this run with probability <= {total:.1e} (about 1 run in "
                  f"{int(1 / total):,})")


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def liveprof():
    if not LIVEPROF.exists():
        pytest.fail(f"{LIVEPROF} is not built (run make)")
    return LIVEPROF


@pytest.fixture(scope="session")
def wl():
    """Path of a built workload: wl('fastslow'). Builds them once if needed."""
    if any(not (BUILD / n).exists() for n in NEEDED):
        r = subprocess.run(["make", "-s", "-C", str(WORKLOADS)],
                           capture_output=True, text=True)
        if r.returncode:
            pytest.fail("make workloads failed:\n" + r.stdout + r.stderr)

    def path(name):
        p = BUILD / name
        assert p.exists(), f"workload {p} missing"
        return str(p)

    return path


class Procs:
    """Starts workloads and always kills them at teardown."""

    def __init__(self):
        self.procs = []

    def start(self, args, settle=0.3, **kw):
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        p = subprocess.Popen([str(a) for a in args], **kw)
        self.procs.append(p)
        time.sleep(settle)
        assert p.poll() is None, f"{args} exited early with {p.returncode}"
        return p

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


@pytest.fixture
def procs():
    ps = Procs()
    yield ps
    ps.cleanup()


def parse_folded(path):
    """folded file -> {stack string: count}."""
    out = {}
    text = Path(path).read_text()
    for line in text.splitlines():
        if not line.strip():
            continue
        stack, _, n = line.rpartition(" ")
        out[stack] = out.get(stack, 0) + int(n)
    return out


class Result:
    def __init__(self, rc, stdout, stderr, json_data, folded, elapsed, outdir):
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.json = json_data
        self.folded = folded
        self.elapsed = elapsed
        self.outdir = outdir

    def __repr__(self):
        return (f"<liveprof rc={self.rc} elapsed={self.elapsed:.1f}s\n"
                f"stdout:\n{self.stdout[-3000:]}\nstderr:\n{self.stderr[-3000:]}>")

    def trace(self, spec):
        assert self.json, f"no JSON: {self!r}"
        for t in self.json.get("traces", []):
            if t.get("spec") == spec:
                return t
        raise AssertionError(f"no trace {spec!r} in JSON: "
                             f"{[t.get('spec') for t in self.json.get('traces', [])]}")


@pytest.fixture
def run_lp(liveprof, tmp_path):
    """run_lp(args, timeout=30, json=True, folded=True) -> Result.

    Adds --no-tui, --json OUT/out.json and -o OUT/out.folded (unless told
    not to), runs liveprof with a timeout (killing it if it hangs) and
    parses the outputs that exist.
    """
    counter = [0]

    def run(args, timeout=30, json_out=True, folded=True, env=None, until_cpu=None, **kw):
        """until_cpu=(pid, seconds): stop liveprof (SIGINT, which writes every
        output) once process pid has used that much CPU time since sampling
        began, so that a statistical test gets the samples it needs however
        busy the machine is; -d in args is the upper bound."""
        counter[0] += 1
        out = tmp_path / f"run{counter[0]}"
        out.mkdir()
        cmd = [str(liveprof), "--no-tui"]
        if json_out:
            cmd += ["--json", str(out / "out.json")]
        if folded:
            cmd += ["-o", str(out / "out.folded")]
        cmd += [str(a) for a in args]  # a "-- COMMAND" part must come last
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=str(out), env=env, **kw)
        if until_cpu:
            pid, need = until_cpu
            if wait_sampling(p, timeout):
                cpu0 = cpu_seconds(pid)
                while p.poll() is None and time.monotonic() - t0 < timeout:
                    if cpu_seconds(pid) - cpu0 >= need:
                        p.send_signal(signal.SIGINT)
                        break
                    time.sleep(0.05)
        try:
            so, se = p.communicate(timeout=max(1, timeout - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            p.kill()
            so, se = p.communicate()
            raise AssertionError(f"liveprof hung (> {timeout}s): {cmd}\n{so}\n{se}")
        elapsed = time.monotonic() - t0
        jd = None
        if json_out and (out / "out.json").exists():
            jd = json.loads((out / "out.json").read_text())
        fd = None
        if folded and (out / "out.folded").exists():
            fd = parse_folded(out / "out.folded")
        return Result(p.returncode, so, se, jd, fd, elapsed, out)

    return run


def lp_prog_ids():
    """IDs of loaded BPF programs named lp_* (liveprof's)."""
    r = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return {p["id"] for p in json.loads(r.stdout or "[]")
            if str(p.get("name", "")).startswith("lp_")}


def prog_ids_of(pid):
    """IDs of the BPF programs a process holds (fds and links), from fdinfo."""
    ids = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return ids
    for fd in fds:
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids




def cpu_for(need, hz, share=1.0, margin=1.25):
    """CPU seconds a target must run to give `need` samples at hz when
    `share` of its CPU time is in what is counted (25% more for the
    samples lost at the edges)."""
    return margin * need / (hz * share)


def read_rates(path):
    """rate.c's log -> [(t, calls, cpu_seconds)]."""
    rows = []
    for line in Path(path).read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:
            rows.append((float(parts[0]), int(parts[1]), float(parts[2])))
    return rows


def rate_between(rows, t0, t1):
    """rate.c's calls per CPU-second it used between monotonic times t0 and
    t1 (per CPU-second, so that other load on the machine does not count;
    a probe's cost is the target's CPU time and does)."""
    sel = [r for r in rows if t0 <= r[0] <= t1]
    assert len(sel) >= 3, f"too few rate rows in [{t0}, {t1}]: {len(sel)}"
    cpu = sel[-1][2] - sel[0][2]
    assert cpu > 0.05, f"rate.c got only {cpu:.3f} CPU-s in [{t0}, {t1}]"
    return (sel[-1][1] - sel[0][1]) / cpu


def _count_fds(pid, wanted):
    """How many of @pid's fds satisfy wanted(fd, link target); 0 if it is gone."""
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                n += bool(wanted(fd, os.readlink(f"/proc/{pid}/fd/{fd}")))
            except OSError:
                pass
    except OSError:
        return 0
    return n


def probe_fds(pid):
    """perf_event fds (sampling, classic uprobes) plus uprobe_multi link fds
    (liveprof's function and line probes where the kernel has them)."""
    def multi_link(fd, target):
        if target != "anon_inode:bpf_link":
            return False
        with open(f"/proc/{pid}/fdinfo/{fd}") as f:
            return re.search(r"^link_type:\s+u(ret)?probe_multi$", f.read(), re.M)

    return perf_event_fds(pid) + _count_fds(pid, multi_link)


def perf_event_fds(pid):
    """Number of perf_event fds a process holds (liveprof opens them when it
    starts sampling, after loading its BPF programs)."""
    return _count_fds(pid, lambda fd, target: target == "anon_inode:[perf_event]")


def wait_sampling(proc, timeout=60):
    """Wait until liveprof (a Popen) has opened its perf events; False if it
    exited or the timeout passed first."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        if perf_event_fds(proc.pid) > 0:
            return True
        time.sleep(0.05)
    return False


def wait_for(pred, timeout, step=0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def sigint_after(proc, seconds, sig=signal.SIGINT):
    time.sleep(seconds)
    proc.send_signal(sig)


def frames_of(stack):
    return stack.split(";")


def percentile(sorted_vals, q):
    """Nearest-rank percentile of a sorted list (q in 0..100)."""
    import math
    n = len(sorted_vals)
    k = max(1, math.ceil(q / 100.0 * n))
    return sorted_vals[k - 1]


@pytest.fixture(scope="session")
def h():
    """The helpers above, as a fixture (test modules do not import conftest)."""
    import types
    return types.SimpleNamespace(
        parse_folded=parse_folded, lp_prog_ids=lp_prog_ids, cpu_seconds=cpu_seconds,
        cpu_for=cpu_for, prog_ids_of=prog_ids_of, read_rates=read_rates,
        rate_between=rate_between, wait_for=wait_for, wait_sampling=wait_sampling,
        perf_event_fds=perf_event_fds, probe_fds=probe_fds, frames_of=frames_of,
        percentile=percentile, BUILD=BUILD, ROOT=ROOT, WORKLOADS=WORKLOADS)
