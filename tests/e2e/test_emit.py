# SPDX-License-Identifier: GPL-2.0
"""End-to-end tests of `liveprof emit` and `liveprof validate` (issue 5).

The emitted programs are checked with independent tools first: perf for the
C and Go self shares, sys.setprofile for Python, TracePoint for Ruby, and
/proc/PID/stat for utilization. Expected shares are always computed from the
input profile here, never taken from the program's output. Then liveprof
checks itself with `validate`.
"""
import collections
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest


import stats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "emit")


@pytest.fixture(scope="module")
def liveprof():
    path = os.path.join(ROOT, "liveprof")
    if not os.access(path, os.X_OK):
        pytest.skip("./liveprof is not built yet (run make)")
    return path


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    return subprocess.run(cmd, **kw)


def emit(liveprof, tmp_path, src, lang="c", extra=()):
    ext = {"c": "c", "go": "go", "python": "py", "ruby": "rb"}[lang]
    out = str(tmp_path / ("prog." + ext))
    r = run([liveprof, "emit", "--lang", lang, "--from", src, "-o", out, *extra])
    assert r.returncode == 0, r.stderr
    return out


def build_c(src):
    prog = src[:-2]
    # Exactly the command the issue allows.
    r = run(["cc", "-O1", "-g", src, "-o", prog, "-lpthread"])
    assert r.returncode == 0, r.stderr
    return prog


def renames(src):
    """Profile name -> emitted name, from the file's "renamed:" comment lines."""
    m = {}
    with open(src) as f:
        for line in f:
            g = re.search(r"renamed: (.*) -> (\S+)$", line)
            if g:
                m[g.group(1)] = g.group(2)
    return m


def expected_self(folded):
    """Self share per function name: the samples whose leaf it is."""
    c = collections.Counter()
    with open(folded) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            stack, n = line.rsplit(" ", 1)
            c[stack.split(";")[-1]] += int(n)
    total = sum(c.values())
    return {k: v / total for k, v in c.items()}


def all_names(folded):
    names = set()
    with open(folded) as f:
        for line in f:
            if line.strip():
                names.update(line.rsplit(" ", 1)[0].split(";"))
    return names


def tvd(exp, meas):
    keys = set(exp) | set(meas)
    return 0.5 * sum(abs(exp.get(k, 0) - meas.get(k, 0)) for k in keys)


def perf_self_counts(pid, seconds, names):
    """perf's self samples of each of @names (others left out), by leaf symbol."""
    data = "/tmp/lp-emit-perf-%d.data" % pid
    # 200 leaves need tens of thousands of samples before sampling noise alone
    # stays well under a TVD of 0.05 (at 4,000 it is about 0.09): sample fast.
    r = run(["perf", "record", "-q", "-F", "9999", "-g", "-p", str(pid), "-o", data,
             "--", "sleep", str(seconds)])
    assert r.returncode == 0, r.stderr
    r = run(["perf", "report", "-i", data, "--no-children", "--sort", "sym", "--stdio",
             "-g", "none", "-q", "-n"])
    os.unlink(data)
    assert r.returncode == 0, r.stderr
    meas = {}
    for line in r.stdout.splitlines():
        g = re.match(r"\s*[\d.]+%\s+(\d+)\s+\[\.\]\s+(\S+)", line)
        if g and g.group(2) in names:
            meas[g.group(2)] = meas.get(g.group(2), 0) + int(g.group(1))
    assert sum(meas.values()) > 0, r.stdout[:2000]
    return meas


# The emitted program's self shares are the profile's up to the C backend's
# calibration error, which each backend promises to keep within a TVD of
# EMIT_ALLOWANCE; perf's measurement of them adds sampling noise. H0: "the
# program is within EMIT_ALLOWANCE of the profile": the measured TVD is at most
# that plus the noise bound of its sample count (stats.tvd_check, rate 1e-4).
# The C backend's calibration keeps within 0.02 (flat profiles measured by
# perf); Go's runtime shares the CPU with the emitted functions and its
# backend was measured at 0.03 here: its promise is 0.04.
EMIT_ALLOWANCE = {"c": 0.02, "go": 0.04}
EMIT_RESOLUTION = 0.05  # the noise bound the samples must bring the check to


def check_perf(liveprof, tmp_path, profile, lang="c"):
    src = emit(liveprof, tmp_path, profile, lang)
    if lang == "c":
        prog = build_c(src)
    else:
        prog = src[:-3]
        env = dict(os.environ, GO111MODULE="off", GOFLAGS="")
        r = run(["go", "build", "-o", prog, src], env=env)
        assert r.returncode == 0, r.stderr
    ren = renames(src)
    exp = {}
    for name, share in expected_self(profile).items():
        ident = ren.get(name, name)
        exp["main." + ident if lang == "go" else ident] = share
    # Enough samples that sampling noise alone stays within EMIT_RESOLUTION
    # (200 leaves need ~25,000): perf records 4 s rounds until it has them.
    need = next(n for n in range(1000, 10 ** 6, 1000)
                if stats.tvd_bound(exp, n) <= EMIT_RESOLUTION)
    p = subprocess.Popen([prog, "60"], stdout=subprocess.DEVNULL)
    meas = collections.Counter()
    try:
        time.sleep(0.5)
        for _ in range(4):
            meas.update(perf_self_counts(p.pid, 4, set(exp)))
            if sum(meas.values()) >= need:
                break
    finally:
        p.kill()
        p.wait()
    stats.enough(sum(meas.values()), need, "perf samples of %s" % os.path.basename(profile))
    d, bound = stats.tvd_check(meas, exp, "%s %s: perf self shares vs the profile"
                               % (os.path.basename(profile), lang), allowance=EMIT_ALLOWANCE[lang])
    print("%s %s: perf TVD %.4f over %d samples (bound %.4f)"
          % (os.path.basename(profile), lang, d, sum(meas.values()), bound))


@pytest.mark.parametrize("name", ["flat", "deep", "wide", "recursive", "names"])
def test_c_self_shares_by_perf(liveprof, tmp_path, name):
    check_perf(liveprof, tmp_path, os.path.join(CORPUS, name + ".folded"))


def fp_blind_offsets(prog, func):
    """Offsets in func where a frame-pointer walk cannot see its caller: up
    to `mov %rsp,%rbp` (%rbp is still the caller's) and after `pop %rbp` or
    `leave` (it is the caller's again). A sample there shows the caller's
    caller next to func: a property of frame pointers, not of the program."""
    dis = run(["objdump", "-d", "--no-show-raw-insn", prog]).stdout
    body = dis.split(f"<{func}>:\n", 1)[1].split("\n\n", 1)[0]
    insns = []
    for ln in body.splitlines():
        addr, _, text = ln.strip().partition(":")
        insns.append((int(addr, 16), text.split()))
    start = insns[0][0]
    blind, framed = set(), False
    for i, (addr, words) in enumerate(insns):
        if not framed:
            blind.add(addr - start)
            framed = words[:2] == ["mov", "%rsp,%rbp"]
        elif words[:2] == ["pop", "%rbp"] or words[:1] == ["leave"]:
            blind.update(a - start for a, _ in insns[i + 1:i + 2])
    return blind


def test_c_stacks_keep_every_frame(liveprof, tmp_path):
    """The deep chain shows up whole in perf's stacks: no lost or merged frames
    (but where a frame-pointer walk is blind: fp_blind_offsets)."""
    src = emit(liveprof, tmp_path, os.path.join(CORPUS, "deep.folded"))
    prog = build_c(src)
    # Long enough to outlive perf's start on a loaded machine (killed below):
    # a 5 s run once ended before perf opened its events (ESRCH).
    p = subprocess.Popen([prog, "60"], stdout=subprocess.DEVNULL)
    blind = fp_blind_offsets(prog, "f49")
    full = 0
    try:
        time.sleep(0.3)
        # 2 s at a time until 100 stacks through f49 are checked: beside
        # test_causal's programs at nice -20 one 2 s recording gave 38
        for k in range(5):
            full += check_deep_stacks(p.pid, str(tmp_path / f"perf{k}.data"), blind)
            if full > 100:
                break
    finally:
        p.kill()
        p.wait()
    stats.enough(full, 101, "perf stacks through f49")


def check_deep_stacks(pid, data, blind):
    """Record @pid's stacks with perf for 2 s; assert that each stack whose
    leaf is f49 (at an offset not in @blind) has the whole chain f49 ... f00;
    return how many there were."""
    r = run(["perf", "record", "-q", "-F", "499", "-g", "-p", str(pid), "-o", data,
             "--", "sleep", "2"])
    assert r.returncode == 0, r.stderr
    r = run(["perf", "script", "-i", data, "-F", "ip,sym,symoff"])
    assert r.returncode == 0, r.stderr
    full = 0
    for block in r.stdout.split("\n\n"):
        at = [ln.split()[1].rpartition("+0x") for ln in block.strip().splitlines()
              if len(ln.split()) >= 2]
        syms = [name or off for name, _, off in at]
        if syms and syms[0] == "f49" and int(at[0][2], 16) not in blind:
            # Leaf first: f49 f48 ... f00 lp_root.
            assert syms[:50] == ["f%02d" % i for i in range(49, -1, -1)], syms[:52]
            full += 1
    return full


def test_go_builds_offline_and_matches_perf(liveprof, tmp_path):
    if not shutil.which("go"):
        pytest.skip("go is not installed")
    check_perf(liveprof, tmp_path, os.path.join(CORPUS, "flat.folded"), "go")


def test_python_calls_exactly_the_profile_functions(liveprof, tmp_path):
    profile = os.path.join(CORPUS, "recursive.folded")
    src = emit(liveprof, tmp_path, profile, "python")
    runner = (
        "import runpy, sys, threading\n"
        "path = sys.argv[1]\n"
        "called = set()\n"
        "def prof(frame, event, arg):\n"
        "    if event == 'call' and frame.f_code.co_filename == path:\n"
        "        called.add(frame.f_code.co_name)\n"
        "g = runpy.run_path(path, run_name='synthetic')\n"
        "sys.setprofile(prof)\n"
        "threading.setprofile(prof)\n"
        "rc = g['_lp_main']([path, '1'])\n"
        "sys.setprofile(None)\n"
        "print(' '.join(sorted(n for n in called\n"
        "                      if not n.startswith('_lp_') and not n.startswith('<'))))\n"
        "sys.exit(rc)\n")
    r = run([sys.executable, "-c", runner, src])
    assert r.returncode == 0, r.stderr
    ren = renames(src)
    want = {ren.get(n, n) for n in all_names(profile)}
    assert set(r.stdout.split()) == want


def test_ruby_calls_exactly_the_profile_functions(liveprof, tmp_path):
    if not shutil.which("ruby"):
        pytest.skip("ruby is not installed")
    profile = os.path.join(CORPUS, "names.folded")
    src = emit(liveprof, tmp_path, profile, "ruby")
    runner = (
        "called = {}\n"
        "tp = TracePoint.new(:call) { |t| called[t.method_id.to_s] = 1 if t.path == ARGV[0] }\n"
        "load ARGV[0]\n"
        "tp.enable\n"
        "rc = lp_main(['1'])\n"
        "tp.disable\n"
        "puts called.keys.reject { |n| n.start_with?('lp_') }.sort.join(' ')\n"
        "exit rc\n")
    r = run(["ruby", "-e", runner, src])
    assert r.returncode == 0, r.stderr
    ren = renames(src)
    want = {ren.get(n, n) for n in all_names(profile)}
    assert set(r.stdout.split()) == want
    # The renames are the ones the issue asks for.
    assert ren["puts"] == "puts_fn" and ren["print"] == "print_fn"




def test_duration_and_threads(liveprof, tmp_path):
    src = emit(liveprof, tmp_path, os.path.join(CORPUS, "flat.folded"), "c",
               ["--duration", "1", "--threads", "3"])
    prog = build_c(src)
    t0 = time.monotonic()
    p = subprocess.Popen([prog])
    time.sleep(0.5)
    threads = len(os.listdir("/proc/%d/task" % p.pid))
    assert p.wait(timeout=10) == 0
    assert 0.9 <= time.monotonic() - t0 < 3
    assert threads == 4  # main + 3 workers


def test_header_gives_build_and_run_commands(liveprof, tmp_path):
    src = emit(liveprof, tmp_path, os.path.join(CORPUS, "names.folded"))
    head = open(src).read(3000)
    assert " * Build: cc -O1 -g %s -o %s -lpthread" % (src, src[:-2]) in head
    assert " * Run:   %s [SECONDS" % src[:-2] in head
    ren = renames(src)
    assert ren["main"] == "main_fn" and ren["malloc"] == "malloc_fn"
    assert ren["1st"] == "_1st"


def test_bad_inputs(liveprof, tmp_path):
    bad = tmp_path / "bad.folded"
    bad.write_text("a;b 1\nmain;work;leaf 12x\n")
    r = run([liveprof, "emit", "--from", str(bad), "-o", str(tmp_path / "x.c")])
    assert r.returncode == 2
    assert ("bad folded line 2, column 18: the count '12x' is not a number"
            in r.stderr), r.stderr
    assert r.stderr.startswith("liveprof: ") and r.stderr.count("\n") == 1
    assert not (tmp_path / "x.c").exists()

    junk = tmp_path / "junk.pb.gz"
    junk.write_bytes(gzip.compress(os.urandom(512)))
    r = run([liveprof, "emit", "--from", str(junk), "-o", str(tmp_path / "x.c")])
    assert r.returncode == 2 and "not a pprof file" in r.stderr, r.stderr

    raw = tmp_path / "raw.pb"
    raw.write_bytes(b"\x0a\x04\x08\x01\x10\x02\x00\x00")
    r = run([liveprof, "emit", "--from", str(raw), "-o", str(tmp_path / "x.c")])
    assert r.returncode == 2 and "gzip" in r.stderr, r.stderr

    spec = tmp_path / "bad.scenario"
    spec.write_text("handler handle rate 2000\nfsat 95% 50us\n")
    r = run([liveprof, "emit", "--scenario", str(spec), "-o", str(tmp_path / "x.c")])
    assert r.returncode == 2
    assert "scenario line 2, column 1: unknown keyword 'fsat'" in r.stderr, r.stderr

    r = run([liveprof, "emit", "--from", str(bad)])
    assert r.returncode == 2 and "-o FILE is required" in r.stderr
    r = run([liveprof, "emit", "--help"])
    assert r.returncode == 0 and "Exit status" in r.stdout
    r = run([liveprof, "validate", "--help"])
    assert r.returncode == 0 and "Exit status" in r.stdout


def test_scenario_ground_truth(liveprof, tmp_path):
    out = str(tmp_path / "scenario.c")
    r = run([liveprof, "emit", "--scenario", os.path.join(CORPUS, "handler_cpu.scenario"),
             "-o", out])
    assert r.returncode == 0, r.stderr
    prog = build_c(out)
    truth = tmp_path / "truth.txt"
    r = run([prog, "1"], env=dict(os.environ, LIVEPROF_TRUTH=str(truth)))
    assert r.returncode == 0, r.stderr
    calls = [tuple(map(int, ln.split())) for ln in truth.read_text().splitlines()]
    # Paced to absolute times, 1000 a second: never more calls than that
    # (a starved machine may give fewer, so no lower bound but one call).
    assert 1 <= len(calls) <= 1000 * 1 + 1
    slow = [ns for ns, s in calls if s]
    fast = [ns for ns, s in calls if not s]
    # Slow calls are spread deterministically: exactly floor(n * 8%) of n.
    assert len(slow) == int(len(calls) * 0.08 + 1e-9), (len(slow), len(calls))
    # Wall time is never less than the CPU work done: 200 us for every call,
    # 1 ms more for slow ones, as calibrated by the emitted program (its
    # stated promise: within 5% of the nominal work; more than half the calls
    # of each class must keep it). Upper bounds would depend on the machine's
    # load; the percentile checks against liveprof are in validate --scenario.
    med_fast, med_slow = sorted(fast)[len(fast) // 2], sorted(slow)[len(slow) // 2]
    assert med_fast >= 0.95 * 200e3 and med_slow >= 0.95 * 1.2e6, (med_fast, med_slow)

    # SIGTERM ends a program that would run for ever, and it still writes its truth.
    out2 = str(tmp_path / "lock.c")
    r = run([liveprof, "emit", "--scenario", os.path.join(CORPUS, "handler_lock.scenario"),
             "-o", out2])
    assert r.returncode == 0, r.stderr
    prog2 = build_c(out2)
    truth2 = tmp_path / "truth2.txt"
    p = subprocess.Popen([prog2, "0"], env=dict(os.environ, LIVEPROF_TRUTH=str(truth2)))
    time.sleep(1)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=10) == 0
    lines = truth2.read_text().splitlines()
    slow = sorted(int(ln.split()[0]) for ln in lines if ln.endswith(" 1"))
    assert len(slow) == int(len(lines) * 0.05 + 1e-9), (len(slow), len(lines))
    # a slow call blocks 1 ms on the lock: never less
    assert slow and slow[0] >= 1e6, slow[:3]


def validate_passed(r):
    """validate's own verdict (see tests/e2e/test_validate.py for its error rates:
    FAIL at most 1 run in 1,000 when liveprof is within the tolerance). An
    INCONCLUSIVE (exit 10: the machine gave too few samples in the budget) is
    neither a pass nor a failure: the test is skipped and says so."""
    print(r.stdout[-2500:], r.stderr)
    stats.record("liveprof validate: FAIL when the distance is within T", 1e-3)
    if r.returncode == 10:
        pytest.skip("validate was inconclusive: " + r.stdout.strip().splitlines()[-1])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    assert re.search(r"^TVD [\d.]+ \(noise .*\): PASS$", r.stdout, re.M), r.stdout


def test_validate_c(liveprof):
    # validate stops at its first look (8 s) when it can decide; the rest
    # of the budget is for a run whose program the other tests crowd out
    # (one gave 150 samples a second, and 20 s was too short to decide)
    r = run([liveprof, "validate", "--from", os.path.join(CORPUS, "flat.folded"),
             "--seconds", "30"], timeout=120)
    assert "total variation distance" in r.stdout, r.stderr
    validate_passed(r)


def test_validate_reads_liveprof_pprof(liveprof, tmp_path):
    """A profile captured by liveprof from a real program round-trips through emit."""
    src = emit(liveprof, tmp_path, os.path.join(CORPUS, "wide.folded"))
    prog = build_c(src)
    p = subprocess.Popen([prog, "6"], stdout=subprocess.DEVNULL)
    pb = str(tmp_path / "captured.pb.gz")
    try:
        time.sleep(0.3)
        r = run([liveprof, "-p", str(p.pid), "-F", "199", "-d", "2", "-o", pb, "--no-tui"])
    finally:
        p.kill()
        p.wait()
    if r.returncode != 0 or not os.path.exists(pb):
        pytest.skip("liveprof could not write pprof here: " + r.stderr[-300:])
    again = str(tmp_path / "again.c")
    r = run([liveprof, "emit", "--from", pb, "-o", again])
    if r.returncode == 2 and "no samples" in r.stderr:
        pytest.skip("liveprof wrote a pprof without samples: " + r.stderr.strip())
    assert r.returncode == 0, r.stderr
    build_c(again)
    # Every sample ends in a leaf, so the capture has some; which ones depends on
    # the samples the machine gave (leaf_199 is 1% of the work: missed in 2 s at
    # 199 Hz with probability 0.99^n, 37% at n = 100), so the check is that the
    # names came back exactly, not that a given leaf was sampled.
    got = set(re.findall(r"\bleaf_\d{3}\b", open(again).read()))
    assert got and got <= set("leaf_%03d" % i for i in range(200)), got


def test_validate_scenario(liveprof):
    r = run([liveprof, "validate", "--scenario",
             os.path.join(CORPUS, "handler_cpu.scenario"), "--seconds", "6"], timeout=120)
    print(r.stdout, r.stderr)
    if r.returncode != 0 and "--split" in r.stderr and "support" in r.stderr:
        pytest.skip("this liveprof cannot --split yet: " + r.stderr.strip())
    if r.returncode == 10:
        pytest.skip("too few calls to bound a percentile: " + r.stdout[-500:])
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^split at p\d+: .* in slow.folded, .*: PASS$", r.stdout, re.M), r.stdout
    # liveprof's p50/p95/p99 against the truth of its own window (issue 12): the
    # bounds come from the call counts (binomial ranks, 1 in 1,000 over the three),
    # the histogram's bucket width and the probes' measured cost.
    for pct in ("p50", "p95", "p99"):
        assert re.search(r"^  %s: liveprof [\d.]+ us, truth [\d.]+ us, bounds \[[\d.]+, [\d.]+\] "
                         r"us: PASS$" % pct, r.stdout, re.M), r.stdout


def go_env(tmp_path):
    """go 1.19 offline: GOPATH mode, and a private HOME and build cache."""
    home = tmp_path / "gohome"
    home.mkdir(exist_ok=True)
    return dict(os.environ, GO111MODULE="off", GOFLAGS="", HOME=str(home),
                GOCACHE=str(home / "cache"), GOPATH=str(home / "go"))


def test_go_function_traced(liveprof, tmp_path):
    """A Go function's returns are probed on its `ret` instructions (a
    uretprobe would crash a Go target, whose runtime moves stacks), by a
    program liveprof loads only for Go targets (target_kind.c: 0.4 s of a
    tracing session's load); it must find this target Go. Every call of
    main.alpha is then timed: counted, none untimed, latencies positive.
    A C target loads neither that program nor the py: pair (-v says so)."""
    if not shutil.which("go"):
        pytest.skip("go is not installed")
    prof = tmp_path / "ab.folded"
    prof.write_text("main;alpha 60\nmain;beta 40\n")
    progs = {}
    for lang in ("go", "c"):
        d = tmp_path / lang
        d.mkdir()
        src = emit(liveprof, d, str(prof), lang)
        if lang == "c":
            progs[lang] = build_c(src)
        else:
            progs[lang] = src[:-3]
            r = run(["go", "build", "-o", progs[lang], src], env=go_env(tmp_path))
            assert r.returncode == 0, r.stderr
    for lang, func in (("go", "main.alpha"), ("c", "alpha")):
        p = subprocess.Popen([progs[lang], "20"], stdout=subprocess.DEVNULL)
        js = str(tmp_path / (lang + ".json"))
        try:
            time.sleep(0.3)
            r = run([liveprof, "-p", str(p.pid), "--trace", func, "-d", "1.5", "--no-tui", "-v",
                     "--json", js])
        finally:
            p.kill()
            p.wait()
        assert r.returncode == 0, r.stderr[-2000:]
        loads = re.search(r"loading the ret-instruction return program: (\w+)[^;]*; "
                          r"the py: programs: (\w+)",
                          r.stderr)
        assert loads, r.stderr[-2000:]
        assert loads.groups() == (("yes", "no") if lang == "go" else ("no", "no")), loads.group(0)
        if lang == "go":
            assert re.search(r"probe 'main.alpha': ret-insn at", r.stderr), r.stderr[-2000:]
        with open(js) as f:
            t = next(t for t in json.load(f)["traces"] if t["spec"] == func)
        assert t["calls"] > 100 and t["untimed_calls"] == 0, t
        assert 0 < t["p50_ns"] <= t["p99_ns"], t


def validate_tvd(stdout):
    g = re.search(r"total variation distance: ([\d.]+)", stdout)
    assert g, stdout
    return float(g.group(1))


def validate_samples(stdout):
    g = re.search(r"samples: (\d+) in the profile's functions", stdout)
    assert g, stdout
    return int(g.group(1))


def test_validate_go(liveprof, tmp_path):
    """Gap 1: the Go backend validates (issue 12: its rounds no longer alias with 99 Hz).

    Go shows the emitted functions as main.NAME; validate maps them back to the
    profile's names (and main_fn, the renamed 'main', back to 'main')."""
    if not shutil.which("go"):
        pytest.skip("go is not installed")
    # A 40 s budget lets validate plan for every function as a cell of its
    # own (at 20 s its noise bound merges the three smaller ones); it stops
    # at the first look that decides, usually the first.
    r = run([liveprof, "validate", "--from", os.path.join(CORPUS, "flat.folded"),
             "--lang", "go", "--seconds", "40"], env=go_env(tmp_path), timeout=150)
    # Every function of the input was found under its own name.
    for name in ("parse", "compute", "encode", "log"):
        assert re.search(r"^%s\s+[\d.]+%%\s+[1-9][\d.]*%%" % name, r.stdout, re.M), r.stdout
    validate_passed(r)


def nearest_rank(sorted_vals, pct):
    """The pct-th percentile as the smallest value with >= pct% of the calls at or below."""
    k = max(1, -(-len(sorted_vals) * pct // 100))
    return sorted_vals[int(k) - 1]


def pin_children(parent, cpu, seconds):
    """Move every thread of @parent's child processes to @cpu for @seconds."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            kids = open("/proc/%d/task/%d/children" % (parent, parent)).read().split()
        except OSError:
            return
        for kid in kids:
            try:
                for tid in os.listdir("/proc/%s/task" % kid):
                    os.sched_setaffinity(int(tid), {cpu})
            except OSError:
                pass
        time.sleep(0.02)


def test_scenario_percentiles_match_truth(liveprof, tmp_path):
    """Gap 2: liveprof's p50/p95/p99 of handle() agree with the program's truth (5%).

    The truth is the program's own clock_gettime around each call, so it also holds
    the uprobe + uretprobe cost (a few us): the scenario's 200 us calls keep that
    near 1%. liveprof's tracer wakes liveprof for each call; if liveprof shares the
    program's CPU, that wakeup can preempt the program just after the uretprobe
    took its end time, which only the truth sees (p99 off by up to 14% in trials).
    So liveprof runs on CPU 0 and the program on CPU 1, as an observer should."""
    out = str(tmp_path / "X.c")
    r = run([liveprof, "emit", "--scenario", os.path.join(CORPUS, "handler_cpu.scenario"),
             "-o", out])
    assert r.returncode == 0, r.stderr
    prog = out[:-2]
    r = run(["cc", "-O1", "-g", out, "-o", prog, "-lpthread", "-lm"])
    assert r.returncode == 0, r.stderr
    truth = tmp_path / "truth.txt"
    js = tmp_path / "J.json"
    pin = len(os.sched_getaffinity(0)) >= 2
    lp = subprocess.Popen([liveprof, "--no-tui", "--json", str(js), "--trace", "handle",
                           "--", prog, "8"],
                          env=dict(os.environ, LIVEPROF_TRUTH=str(truth)),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          preexec_fn=(lambda: os.sched_setaffinity(0, {0})) if pin else None)
    if pin:
        pin_children(lp.pid, 1, 1.0)
    o, e = lp.communicate(timeout=60)
    assert lp.returncode == 0, o[-2000:] + e
    calls = [tuple(map(int, ln.split())) for ln in truth.read_text().splitlines()]
    lat = sorted(ns for ns, _ in calls)
    tr = json.load(open(js))["traces"][0]
    print("calls: truth %d, liveprof %d" % (len(lat), tr["calls"]))
    assert abs(tr["calls"] - len(lat)) <= 0.01 * len(lat)
    for pct in (50, 95, 99):
        want = nearest_rank(lat, pct)
        got = tr["p%d_ns" % pct]
        print("p%d: truth %.1f us, liveprof %.1f us (%+.2f%%)"
              % (pct, want / 1e3, got / 1e3, 100 * (got / want - 1)))
        assert abs(got - want) <= 0.05 * want, (pct, got, want)


def write_big_tree(path, nodes=1000, leaf_names=40, seed=5):
    """A wide, deep call tree of @nodes nodes: inner functions have their own
    names, leaves share @leaf_names names (a name at many places is one function)."""
    import random
    rnd = random.Random(seed)
    tree = {0: []}
    depth = {0: 0}
    frontier = [0]
    n = 1
    while n < nodes:
        parent = frontier[rnd.randrange(len(frontier))]
        if depth[parent] >= 14 or len(tree[parent]) >= 8:
            frontier.remove(parent)
            continue
        tree[n] = []
        tree[parent].append(n)
        depth[n] = depth[parent] + 1
        frontier.append(n)
        n += 1
    leaf = {i: "leaf_%02d" % rnd.randrange(leaf_names) for i in tree if not tree[i]}
    lines = []

    def walk(i, stack):
        name = leaf.get(i, "fn_%04d" % i)
        stack = stack + [name]
        if i in leaf:
            lines.append("%s %d" % (";".join(stack), rnd.randint(1, 20)))
        elif rnd.random() < 0.02:
            lines.append("%s %d" % (";".join(stack), rnd.randint(1, 10)))
        for c in tree[i]:
            walk(c, stack)

    walk(0, [])
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return sum(1 for i in tree if not tree[i])


def noise_tvd(profile, n):
    """Expected TVD from sampling noise alone, for @n samples of @profile's self
    shares: each share's measured value is binomial, E|p^ - p| ~ sqrt(2p(1-p)/(pi n)),
    so E[TVD] = 0.5 * sum_i sqrt(2 p_i (1 - p_i) / (pi n))."""
    import math
    return 0.5 * sum(math.sqrt(2 * p * (1 - p) / (math.pi * n))
                     for p in expected_self(profile).values())


@pytest.fixture(scope="module")
def captured_1000(liveprof, tmp_path_factory):
    """A 1,000-node profile captured by liveprof (folded and pprof) from a real program."""
    d = tmp_path_factory.mktemp("cap1000")
    syn = str(d / "synthetic.folded")
    leaves = write_big_tree(syn)
    src = emit(liveprof, d, syn)
    prog = build_c(src)
    p = subprocess.Popen([prog, "12"], stdout=subprocess.DEVNULL)
    folded, pb = str(d / "cap.folded"), str(d / "cap.pb.gz")
    try:
        time.sleep(0.5)
        # Two liveprofs on the same process: one writes folded, the other pprof.
        # --no-inline: the emitted functions' inlined busy loop would otherwise be
        # the leaf of nearly every sample, leaving 2-3 functions to compare.
        cmds = [[liveprof, "-p", str(p.pid), "-F", "999", "-d", "8", "--no-tui", "--no-inline",
                 "-o", out] for out in (folded, pb)]
        lps = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True) for c in cmds]
        errs = [lp.communicate(timeout=60)[1] for lp in lps]
    finally:
        p.kill()
        p.wait()
    for lp, err in zip(lps, errs):
        assert lp.returncode == 0, err
    nodes = set()
    with open(folded) as f:
        for line in f:
            stack = line.rsplit(" ", 1)[0].split(";")
            for k in range(len(stack)):
                nodes.add(tuple(stack[:k + 1]))
    print("synthetic tree: 1000 nodes, %d leaves; captured: %d nodes" % (leaves, len(nodes)))
    return folded, pb, len(nodes)


def check_round_trip(liveprof, profile, shares_from=None):
    # validate derives its own check from the profile (issue 12): it plans the
    # samples, merges functions too small to resolve, and weighs the TVD against
    # the simulated sampling noise at the samples it took.
    r = run([liveprof, "validate", "--from", profile, "--seconds", "30"], timeout=180)
    n = validate_samples(r.stdout)
    print("noise_tvd at n=%d over every leaf: %.4f" % (n, noise_tvd(shares_from or profile, n)))
    validate_passed(r)


def test_round_trip_1000_nodes_folded(liveprof, captured_1000):
    """Gap 3: a 1,000-node profile captured by liveprof round-trips through validate."""
    folded, _, nodes = captured_1000
    assert nodes >= 800  # nearly the whole tree was seen
    check_round_trip(liveprof, folded)


def test_round_trip_1000_nodes_pprof(liveprof, captured_1000):
    """The same capture written as pprof validates too (read_pprof.c's path)."""
    folded, pb, _ = captured_1000
    with open(pb, "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    # Both files were captured from the same process over the same 8 s, so the
    # folded one's shares stand for the pprof's in the noise estimate.
    check_round_trip(liveprof, pb, shares_from=folded)


def test_validate_wide_at_4999hz(liveprof):
    """Gap 4: the wide profile (200 leaves) validates within 0.05 at 4999 Hz.

    Sampling noise alone: each leaf's measured share is binomial, so
    E[TVD] = 0.5 * sum_i sqrt(2 p_i (1 - p_i) / (pi n)) (noise_tvd). For this
    profile that is 0.174 at 99 Hz over 10 s (n ~ 990, ~5 samples a leaf): 0.05 is
    out of reach whatever the program does. At 999 Hz it is still 0.055 with a
    whole CPU (n = 10,000) and 0.071 at the ~6,000 samples a busy 2-core VM gives.
    At 4999 Hz (n ~ 30,000-50,000) it is 0.025-0.032, which leaves room for the
    calibration's own error under 0.05."""
    profile = os.path.join(CORPUS, "wide.folded")
    print("expected noise TVD: n=990 %.3f, n=10000 %.3f, n=30000 %.3f"
          % (noise_tvd(profile, 990), noise_tvd(profile, 10000), noise_tvd(profile, 30000)))
    r = run([liveprof, "validate", "--from", profile, "--seconds", "10", "-F", "4999"],
            timeout=120)
    n = validate_samples(r.stdout)
    print("noise at the measured n=%d: %.3f" % (n, noise_tvd(profile, n)))
    validate_passed(r)
