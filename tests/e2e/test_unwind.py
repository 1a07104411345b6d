# SPDX-License-Identifier: GPL-2.0
"""End-to-end tests of user stack unwinding (issue 7), against real BPF.

Ground truth comes from the workloads' source (tests/workloads/unwind_*.c)
and, for a Debian binary liveprof did not build, from perf's own DWARF
unwinding of the same process at the same time (tests/compare_perf.py).
"""
import math
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import lputil
from lputil import callers, cpu_seconds, frames

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "tests", "build")
LIVEPROF = os.path.join(ROOT, "liveprof")
sys.path.insert(0, os.path.join(ROOT, "tests"))
import compare_perf  # noqa: E402
import stats  # noqa: E402

WORKLOADS = ["unwind_leaf", "unwind_leaf_nofp", "unwind_deep", "unwind_mixed"]
# main's callers as glibc and the symbolizer name them
START = {"_start", "__libc_start_main", "__libc_start_call_main", "main"}

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (BPF)")


@pytest.fixture(scope="module", autouse=True)
def built():
    lputil.ensure_built(WORKLOADS)




def sampling(pid):
    """True once liveprof (pid) has opened its perf events."""
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]"
                   for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def profile(tmp_path, argv, mode, seconds=6, extra=(), name="out", need=None, hz=None):
    """Run workload argv, profile it, return the folded Counter.

    With need and hz: sample until the workload has had the CPU time for
    `need` samples at hz (25% spare), at most `seconds`; else for `seconds`.
    """
    out = str(tmp_path / f"{name}.folded")
    target = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    if hz:
        extra = ("-F", str(hz), *extra)
    try:
        time.sleep(0.3)
        lp = subprocess.Popen([LIVEPROF, "-p", str(target.pid), "-d", str(seconds), "--no-tui",
                               "--top", "0", "--call-graph", mode, *extra, "-o", out],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if need:
            end = time.monotonic() + seconds + 30
            while lp.poll() is None and not sampling(lp.pid) and time.monotonic() < end:
                time.sleep(0.05)
            cpu0 = cpu_seconds(target.pid)
            while lp.poll() is None and cpu_seconds(target.pid) - cpu0 < 1.25 * need / hz:
                time.sleep(0.05)
            if lp.poll() is None:
                lp.send_signal(signal.SIGINT)
        so, se = lp.communicate(timeout=seconds + 60)
        assert lp.returncode == 0, se
    finally:
        target.kill()
        target.wait()
    return compare_perf.read_folded(out)






# work()'s callers: slow() 80%, fast() 20% (4x the work); a wrong or missing
# caller counts against both. H0: each sample in work() names slow() with
# probability 0.8 and fast() with 0.2; two exact binomial checks at 1e-4 / 2.
# Enough samples to see a 5-point error with power 0.9:
LEAF_NEED = stats.needed(0.8, 0.05, rate=stats.RATE / 2, power=0.9)
LEAF_HZ = 999


def check_callers(per, what):
    n = sum(per.values())
    stats.enough(n, LEAF_NEED, f"{what}: samples in work")
    stats.share(per["slow"], n, 0.8, f"{what}: slow() as work's caller", rate=stats.RATE / 2)
    stats.share(per["fast"], n, 0.2, f"{what}: fast() as work's caller", rate=stats.RATE / 2)


@pytest.mark.parametrize("mode", ["fp", "dwarf", "auto"])
def test_frameless_leaf_callers(tmp_path, mode):
    """work() has no frame (gcc -O2 -fno-omit-frame-pointer): slow 80%, fast 20%."""
    stacks = profile(tmp_path, [os.path.join(BUILD, "unwind_leaf")], mode, seconds=30,
                     need=LEAF_NEED, hz=LEAF_HZ)
    per = callers(stacks, "work")
    print(mode, dict(per))
    check_callers(per, mode)


def test_no_frame_pointers_same_shares(tmp_path):
    """-O2 -fomit-frame-pointer: the same 20/80, every stack reaches main."""
    res = {}
    for wl in ["unwind_leaf", "unwind_leaf_nofp"]:
        stacks = profile(tmp_path, [os.path.join(BUILD, wl)], "auto", seconds=30,
                         need=LEAF_NEED, hz=LEAF_HZ, name=wl)
        res[wl] = per = callers(stacks, "work")
        print(wl, dict(per))
        if wl == "unwind_leaf_nofp":
            for st, n in stacks.items():
                f = frames(st)
                assert "main" in f and "[truncated]" not in f, st
                assert set(f[:f.index("main") + 1]) <= START, st
        check_callers(per, wl)
    # and the two builds agree with each other (H0: one share; Fisher's exact test)
    a, b = res["unwind_leaf"], res["unwind_leaf_nofp"]
    stats.two_shares(a["slow"], sum(a.values()), b["slow"], sum(b.values()),
                     "slow() as work's caller, frame pointers vs none")


def test_mixed_stack_whole(tmp_path):
    """A frame-pointer program called back from glibc's qsort (no frame pointers)."""
    stacks = profile(tmp_path, [os.path.join(BUILD, "unwind_mixed")], "auto",
                     extra=("-F", "299"))
    in_cmp = {st: n for st, n in stacks.items() if "cmp" in frames(st)}
    assert sum(in_cmp.values()) >= 20
    for st in in_cmp:
        f = frames(st)
        # root to cmp: glibc's start, main, sort_all, qsort's internals, cmp
        assert f[f.index("main") + 1] == "sort_all", st
        assert any(x.startswith("qsort") for x in f), st


# Every sample must be right: enough samples that a defect in 1% of them
# shows with probability 0.99 ((1 - 0.01)^n <= 0.01).
DEEP_NEED = math.ceil(math.log(0.01) / math.log(1 - 0.01))


def test_truncated_not_wrong(tmp_path):
    """Recursion 2000 deep, 4 KiB copied: marked [truncated], no wrong frame.

    unwind_deep spins at the bottom of the recursion without calling
    anything (it used to call elapsed() -> clock_gettime() there, which
    liveprof rightly showed as the leaf of a few samples)."""
    stacks = profile(tmp_path, [os.path.join(BUILD, "unwind_deep")], "dwarf",
                     extra=("--stack-size", "4"), seconds=30, need=DEEP_NEED, hz=299)
    total = sum(stacks.values())
    stats.enough(total, DEEP_NEED, "unwind_deep")
    marked = sum(n for st, n in stacks.items() if "[truncated]" in frames(st))
    assert marked == total, stacks
    for st in stacks:
        bad = [f for f in frames(st) if f not in START | {"recurse", "[truncated]"}]
        assert not bad, st


DEBIAN_LOOP = """
import json, re
def build(n):
    return {str(i): [i, i * 2, "x" * (i % 7)] for i in range(n)}
def encode(d):
    return json.dumps(d)
def words(s):
    return sorted(re.findall(r"\\d+", s))
while True:
    w = words(encode(build(300)))
"""


@pytest.mark.skipif(not shutil.which("perf"), reason="perf is not installed")
def test_debian_binary_matches_perf(tmp_path):
    """Debian's python3 (no frame pointers) by liveprof and perf at once: the top 10
    functions' shares agree within sampling noise. liveprof unwinds copies of
    the stack with libdw (--call-graph copy, the fallback and the reference
    of the BPF walk, which test_kunwind compares with perf): about 2,000
    samples, in 5 s at 399 Hz."""
    seconds = 5
    # A higher priority so the shares rest on enough samples on a busy host.
    target = subprocess.Popen(["nice", "-n", "-5", "/usr/bin/python3", "-c", DEBIAN_LOOP])
    folded, data = str(tmp_path / "live.folded"), str(tmp_path / "perf.data")
    try:
        time.sleep(0.5)
        perf = subprocess.Popen(["perf", "record", "-q", "--call-graph", "dwarf", "-F", "399",
                                 "-p", str(target.pid), "-o", data, "--", "sleep", str(seconds)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r = subprocess.run([LIVEPROF, "-p", str(target.pid), "-d", str(seconds), "--no-tui",
                            "--top", "0", "-F", "399", "--call-graph", "copy", "--no-inline",
                            "--no-interp", "-o", folded],
                           capture_output=True, text=True, timeout=seconds + 60)
        assert r.returncode == 0, r.stderr
        perf.wait(timeout=seconds + 60)
    finally:
        target.kill()
        target.wait()
    # Every stack reaches _start: Debian's python3 runs shallow here, well
    # within the 16 KiB copied. A sample in a PLT stub (whose CFA rule
    # reads rip) ended at the stub before libdwfl was given rip.
    cut = [ln for ln in open(folded) if ";_start;" not in ln]
    assert not cut, cut[:5]
    script = str(tmp_path / "perf.txt")
    with open(script, "w") as f:
        subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,time,ip,sym"],
                       stdout=f, stderr=subprocess.DEVNULL, check=True)
    # H0: liveprof and perf draw their samples from the same process at the
    # same time, so each function's inclusive share is one share for both:
    # Fisher's exact test per function, Bonferroni over the functions compared
    rc = compare_perf.main([folded, script, "--top", "10", "--rate", str(stats.RATE)])
    stats.record("liveprof vs perf, top 10 inclusive shares", stats.RATE)
    assert rc == 0
