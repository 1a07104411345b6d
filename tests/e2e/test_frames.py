# SPDX-License-Identifier: GPL-2.0
"""End-to-end tests of frames (issue 11): no broken frame in any stack,
and inlined frames shown by default, against real BPF.

Ground truth comes from the workloads' source (tests/workloads/frames_*.c):
their call graphs are fixed, so every frame of every stack is one of their
functions, in an order the source allows, from glibc's start to the leaf.
"""
import math
import os
import re
import shutil
import subprocess
import time

import pytest

import lputil
import stats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "tests", "build")
LIVEPROF = os.environ.get("LIVEPROF", os.path.join(ROOT, "liveprof"))

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (BPF)")

WORKLOADS = ["frames_tramp", "frames_split", "frames_burn", "frames_inline"]
START = ["_start", "__libc_start_main", "__libc_start_call_main", "main"]
# each workload's call graph below main, from its source
CALLS = {
    "frames_tramp": {"main": {"handle"}, "handle": {"leaf"}},
    "frames_split": {"main": {"handle"}, "handle": {"part_a", "part_b"}},
    "frames_burn": {"main": {"burn_a", "burn_b"}},
}
# what main calls besides (clock_gettime, through the vdso or libc)
# the clock read: glibc's, the vDSO's, or the PLT stub on the way (clock_gettime@plt)
CLOCK = re.compile(r"^(__)?(vdso_)?clock_gettime(@@.*|@plt)?$|^__vdso_clock_gettime$")
MARKERS = {"[unwind-error]", "[truncated]"}
PROBE = "[uprobe single-step]"  # the leaf while a probed instruction is stepped
@pytest.fixture(scope="module", autouse=True)
def built():
    lputil.ensure_built(WORKLOADS)


def exec_maps(pid):
    """[(start, end)] of the executable mappings of pid."""
    out = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if "x" in parts[1]:
                out.append((lo, hi))
    return out


def read_folded(path):
    out = {}
    with open(path) as f:
        for line in f:
            st, _, n = line.rstrip("\n").rpartition(" ")
            if st:
                out[st] = out.get(st, 0) + int(n)
    return out


def run(tmp_path, wl, args, seconds=6, outs=("all.folded",)):
    """Profile workload wl for `seconds`; returns (outputs dir, JSON, maps)."""
    import json
    target = subprocess.Popen([os.path.join(BUILD, wl), "1000"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        maps = exec_maps(target.pid)
        cmd = [LIVEPROF, "--no-tui", "-p", str(target.pid), "-d", str(seconds),
               "--top", "0", "--json", str(tmp_path / "out.json")]
        for o in outs:
            cmd += ["-o", str(tmp_path / o)]
        r = subprocess.run(cmd + list(args), capture_output=True, text=True,
                           timeout=seconds + 60)
        assert r.returncode == 0, r.stderr
        assert target.poll() is None, "the target died"
    finally:
        target.kill()
        target.wait()
    with open(tmp_path / "out.json") as f:
        return tmp_path, json.load(f), maps


UNKNOWN = re.compile(r"^\[(.*)\+0x([0-9a-f]+)\]$")


def frame_errors(wl, stacks, maps):
    """{stack: why} for every stack with a frame its workload cannot have."""
    graph = CALLS[wl]
    bad = {}
    for st in stacks:
        fr = st.split(";")[1:]  # below the process root
        why = None
        for f in fr:
            m = UNKNOWN.match(f)
            if m and m.group(1) == "[unknown]":
                a = int(m.group(2), 16)
                if not any(lo <= a < hi for lo, hi in maps):
                    why = f"{f} is outside the executable mappings"
        cut = bool(fr) and fr[0] in MARKERS
        if cut:
            fr = fr[1:]
        if not why and fr and fr[-1] == PROBE:
            fr = fr[:-1]
        if not why and not cut and fr[:4] != START:
            why = "does not start at glibc's start and main"
        if not why:
            # every step from a frame to the next is a call in the source
            # (a cut stack may start anywhere, but goes on along calls)
            chain = fr[fr.index("main"):] if "main" in fr else fr
            if not cut and fr[:fr.index("main") + 1] != START:
                why = "frames before main are not glibc's start"
            for a, b in zip(chain, chain[1:]):
                if b in graph.get(a, ()) or (a == "main" and CLOCK.match(b)):
                    continue
                if CLOCK.match(a) and (CLOCK.match(b) or b.startswith("__vdso")):
                    continue
                why = f"{a} -> {b} is no call of the source"
                break
            known = set(START) | set(graph) | {c for v in graph.values() for c in v}
            if not why and any(f not in known and not CLOCK.match(f) for f in chain):
                why = "a frame that is no function of the workload"
        if why:
            bad[st] = why
    return bad


def check_clean(wl, stacks, maps, js, label):
    total = sum(stacks.values())
    stats.enough(total, 300, label)  # enough stacks for a broken frame to show
    bad = frame_errors(wl, stacks, maps)
    nbad = sum(stacks[s] for s in bad)
    print(f"{label}: {total} samples, {nbad} with a broken frame")
    assert not bad, "\n".join(f"{stacks[s]:6d} {s}   <- {w}" for s, w in
                              sorted(bad.items(), key=lambda x: -stacks[x[0]])[:10])
    # a cut stack is allowed, counted, and rare: H0 "at least 98% of the
    # stacks reach main uncut" (a requirement, not a truth: the truth is 100%)
    cut = sum(n for s, n in stacks.items() if "[unwind-error]" in s.split(";"))
    stats.share_at_least(total - cut, total, 0.98, f"{label}: stacks not cut")
    return total, cut


def test_no_broken_frames_with_pending_uretprobes(tmp_path):
    """frames_tramp under --trace handle: ~10^6 calls/s, the CPU largely in
    the kernel's return-probe handling, where the user ip is the trampoline."""
    out, js, maps = run(tmp_path, "frames_tramp", ["--trace", "handle", "-F", "999"])
    stacks = read_folded(out / "all.folded")
    total, cut = check_clean("frames_tramp", stacks, maps, js, "tramp")
    assert js["unwind_errors"] == cut, js
    # the case is exercised: samples in the [uprobes] page were put back
    assert js["uprobe_page_fixed"] > 0, js


def test_no_broken_frames_in_constant_work_split(tmp_path):
    """frames_split under --split handle@p99 -F 999: neither profile, nor the
    whole run, shows a stack address as a frame."""
    out, js, maps = run(tmp_path, "frames_split", ["--split", "handle@p99", "-F", "999",
                                                   "-o", str(tmp_path / "split") + "/"])
    whole = read_folded(out / "all.folded")
    total, cut = check_clean("frames_split", whole, maps, js, "whole run")
    assert js["unwind_errors"] == cut, js
    for cls in ["slow", "fast"]:
        stacks = read_folded(out / "split" / f"{cls}.folded")
        bad = frame_errors("frames_split", stacks, maps)
        assert not bad, f"{cls}: " + "\n".join(f"{stacks[s]} {s} <- {w}"
                                               for s, w in list(bad.items())[:10])


def test_no_register_constant_as_return_address(tmp_path):
    """frames_burn (-O2, no frame pointers) under --trace burn_a: the
    multiplier 0x5851f42d4c957f2d in a register never becomes a frame, and a
    sample while burn_a's first instruction is single-stepped is under
    main;burn_a."""
    out, js, maps = run(tmp_path, "frames_burn", ["--trace", "burn_a", "-F", "999"])
    stacks = read_folded(out / "all.folded")
    check_clean("frames_burn", stacks, maps, js, "burn")
    for st in stacks:
        fr = st.split(";")
        # (a call the entry program could not record leaves only frame
        # pointers, which are data here: such a stack is cut, and counted)
        if fr[-1] == PROBE and not MARKERS & set(fr):
            assert fr[-2] == "burn_a", st


# ---------------------------------------------------------------- inlined frames

INL_A = ["hot", "inl_a_[i]", "spin_[i]"]
INL_B = ["hot", "inl_b_[i]", "inl_c_[i]", "spin_[i]"]


def below(st, fn):
    """Frames of stack st from fn to the leaf, or None."""
    fr = st.split(";")
    return fr[fr.index(fn):] if fn in fr else None


def test_inlined_frames_by_default(tmp_path):
    """frames_inline: inl_a (1/4 of hot's work) and inl_b -> inl_c (3/4) are
    always_inline; by default they are frames marked _[i], with shares that
    fit the source (exact binomial, false-failure rate 1e-4)."""
    go = shutil.which("go")
    out, js, maps = run(tmp_path, "frames_inline", ["-F", "999"], seconds=12,
                        outs=("all.folded", "all.pb.gz", "all.svg"))
    stacks = read_folded(out / "all.folded")
    k_a = k_b = other = 0
    for st, n in stacks.items():
        b = below(st, "hot")
        if b is None:
            continue
        if b == INL_A:
            k_a += n
        elif b == INL_B:
            k_b += n
        elif b == ["hot"]:
            other += n  # hot's own instructions around the loops
        else:
            raise AssertionError(f"a stack the source cannot have: {st}")
    n = k_a + k_b
    # H0: each sample in the loops is inl_a's with probability 1/4 (the
    # source's work split); enough samples to see a share 0.10 off
    stats.enough(n, stats.needed(0.25, 0.10), "inlined loops")
    lo, hi = stats.wilson(k_a, n)
    print(f"inl_a {k_a}/{n} = {k_a / n:.3f} (Wilson {lo:.3f}..{hi:.3f}, truth 0.25); "
          f"hot itself {other}")
    stats.share(k_a, n, 0.25, "inl_a's share of the inlined loops")
    # hot's own code is a few instructions per 4 * 10^6 loop iterations
    stats.share_at_least(n, n + other, 0.99, "samples inside the inlined loops")
    svg = (out / "all.svg").read_text()
    assert "inl_c [inlined]" in svg and "hot [inlined]" not in svg

    if go:
        # one Location per address, its Lines innermost first (go tool pprof -raw)
        raw = subprocess.run([go, "tool", "pprof", "-raw", str(out / "all.pb.gz")],
                             capture_output=True, text=True, timeout=120)
        assert raw.returncode == 0, raw.stderr
        locs, cur = {}, None
        text = raw.stdout.split("\nLocations\n")[1].split("\nMappings\n")[0]
        for line in text.splitlines():
            m = re.match(r"^\s*(\d+): 0x[0-9a-f]+ M=\d+ (\S+)", line)
            if m:
                cur = int(m.group(1))
                locs[cur] = [m.group(2)]
            elif cur is not None and line.strip():
                locs[cur].append(line.split()[0])
        chains = {tuple(v) for v in locs.values()}
        assert ("spin", "inl_a", "hot") in chains, chains
        assert ("spin", "inl_c", "inl_b", "hot") in chains, chains
        assert all("frames_inline" not in c for c in chains), "process name as a frame"
        top = subprocess.run([go, "tool", "pprof", "-top", str(out / "all.pb.gz")],
                             capture_output=True, text=True, timeout=120)
        assert "File: frames_inline" in top.stdout, top.stdout[:300]
        tags = subprocess.run([go, "tool", "pprof", "-tags", str(out / "all.pb.gz")],
                              capture_output=True, text=True, timeout=120)
        assert "process" in tags.stdout and "frames_inline" in tags.stdout, tags.stdout


def test_no_inline_restores_old_output(tmp_path):
    """--no-inline: hot is the leaf, no _[i] frame; --lines keeps the marks."""
    out, js, maps = run(tmp_path, "frames_inline", ["-F", "499", "--no-inline"], seconds=3)
    stacks = read_folded(out / "all.folded")
    hot = {st: n for st, n in stacks.items() if "hot" in st.split(";")}
    assert sum(hot.values()) >= 100, stacks
    assert all(st.split(";")[-1] == "hot" for st in hot), hot
    assert not any("_[i]" in st for st in stacks), stacks

    out, js, maps = run(tmp_path, "frames_inline", ["-F", "499", "--lines"], seconds=3)
    stacks = read_folded(out / "all.folded")
    marked = [st for st in stacks if re.search(r";inl_c \(frames_inline\.c:\d+\)_\[i\];", st)]
    assert marked, stacks


# ---------------------------------------------------------------- small lies (item 7)

def test_wrote_only_after_rename(tmp_path):
    """An output whose rename fails (an immutable file: EPERM) exits 7 and is
    never announced as written; the other outputs still are."""
    ro, ok = tmp_path / "ro.svg", tmp_path / "ok.folded"
    ro.write_text("old")
    if subprocess.run(["chattr", "+i", str(ro)], capture_output=True).returncode:
        pytest.skip("chattr +i is not supported here")
    target = subprocess.Popen([os.path.join(BUILD, "frames_split"), "30"])
    try:
        time.sleep(0.3)
        r = subprocess.run([LIVEPROF, "--no-tui", "-p", str(target.pid), "-d", "1", "--top", "0",
                            "-o", str(ro), "-o", str(ok)], capture_output=True, text=True,
                           timeout=60)
    finally:
        subprocess.run(["chattr", "-i", str(ro)])
        target.kill()
        target.wait()
    assert r.returncode == 7, r
    assert f"wrote {ro}" not in r.stdout + r.stderr, r.stdout
    assert f"cannot write '{ro}'" in r.stderr, r.stderr
    assert f"wrote {ok}" in r.stdout and ok.exists(), r.stdout
    assert ro.read_text() == "old"


def test_kernel_thread_is_an_error():
    """-p of a kernel thread (kthreadd, pid 2) exits 9 with its own message."""
    with open("/proc/2/comm") as f:
        comm = f.read().strip()
    r = subprocess.run([LIVEPROF, "--no-tui", "-p", "2", "-d", "1"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 9, r
    assert r.stderr.strip() == (f"liveprof: '2' is a kernel thread ({comm}): "
                                "it has no user space to profile"), r.stderr


def test_latency_svg_log_count_axis(tmp_path):
    """latency.svg: bar heights are log10(1 + calls) of the tallest bar's, with
    ticks labelled in calls at each decade."""
    out, js, maps = run(tmp_path, "frames_split", ["--split", "handle@p99", "-o",
                                                   str(tmp_path / "split") + "/"], seconds=3)
    svg = (out / "split" / "latency.svg").read_text()
    bars = [(float(h), float(n)) for h, n in re.findall(
        r'<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="([\d.]+)" fill="#[0-9a-f]+">'
        r'<title>[^<]*: (\d+) calls</title>', svg)]
    assert len(bars) >= 5, svg[:2000]
    hmax, nmax = max(bars, key=lambda b: b[1])
    for h, n in bars:
        want = max(1.0, math.log10(1 + n) / math.log10(1 + nmax) * hmax)
        assert abs(h - want) <= 0.11, (h, n, want)  # printed to 0.1 px
    ticks = [int(t) for t in re.findall(r'class="ytick"[^>]*>(\d+)<', svg)]
    assert ticks[:2] == [1, 10], ticks
    assert sum(n for _, n in bars) == int(re.search(r"\((\d+) calls\)</text>", svg).group(1))


@pytest.mark.skipif(not shutil.which("tmux"), reason="tmux is not installed")
def test_tui_marks_inlined_frames(tmp_path):
    """The TUI's Top view lists inlined functions as "name [inlined]"."""
    target = subprocess.Popen([os.path.join(BUILD, "frames_inline"), "60"])
    name = f"lpframes{os.getpid()}"
    try:
        time.sleep(0.3)
        lputil.tmux(name, "new-session", "-d", "-s", name, "-x", "120", "-y", "40",
             f"{LIVEPROF} -p {target.pid} -F 499; sleep 30")
        deadline, screen = time.monotonic() + 30, ""
        while time.monotonic() < deadline:
            screen = lputil.tmux(name, "capture-pane", "-p", "-t", name, check=False)
            if re.search(r"\sinl_c \[inlined\]\s*$", screen, re.M) and \
               re.search(r"\sspin \[inlined\]\s*$", screen, re.M):
                break
            time.sleep(0.2)
        assert re.search(r"\sinl_c \[inlined\]\s*$", screen, re.M), screen
        assert re.search(r"\shot\s*$", screen, re.M), screen  # the real function, unmarked
    finally:
        lputil.tmux_close(name)
        target.kill()
        target.wait()
