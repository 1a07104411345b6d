# SPDX-License-Identifier: GPL-2.0
"""End-to-end tests of `liveprof causal` (issue 17), on real BPF and emitted
programs (`liveprof emit --scenario causal-spin`; `validate --causal` emits the rest).

causal-spin: a worker thread runs compute() (150 work units), waits 50 us
and calls item_done() (the progress point); a poller thread runs
spin_poll() back to back, burns the most CPU and gates nothing.

Each liveprof run loads the whole BPF object, which takes from 3 s on a
quiet machine to 30 s or more on a loaded one. The runs below start from
a module fixture: the three validate runs first, one at a time (each
scenario takes both CPUs), then the two causal-spin runs together, at
nice -10; each test waits for its own.

- test_validate_scenario[lock, spin, pipeline]: `validate --causal NAME`
  predicts with liveprof causal, then measures the real speedups of
  emitted variants (the gating function, then the other, with 30% less
  work) in paired quarter seconds. Both checks must PASS: the gating
  function's prediction agrees with its real speedup (lock: critical,
  ~27%; spin: compute, ~14%; pipeline: encode, ~14%) and is far from 0,
  the other's (prepare, spin_poll, parse: the top CPU user of two of
  them) with its real ~0, and it ranks below the gating one.
- test_validate_kink_fails: `validate --causal kink`, the pipeline with
  parse near the bottleneck: a delay of parse gates, a speedup does not.
  parse's check must FAIL, over-predicted (the method's stated limit).
- test_partial_report_and_skips: three candidates, the first not in the
  program; the target is killed 4 s into the experiments on compute (-d is
  120 s). The run must end at once with a report of what it measured:
  compute with its pairs, the missing function skipped with its reason,
  spin_poll "not measured", the JSON saying the target exited, the SVG plot
  written whole.
- test_progress_never_fires: --progress main (entered once, before the
  probe) never fires: exit 11 and a one-line message after a few seconds;
  the target runs on.

Source lines as candidates (delays triggered by samples) are tested in
this module, not in a file of their own: make test's two workers run
files side by side, and beside validate's programs at nice -20 the
lines' target got too few ticks to decide (266 of the 300 needed, in 2
runs of 3). Here they run once every run above has ended.
tests/workloads/causal_lines.c makes items on one thread: the same loop
runs 3 units on LINE_BIG, 1 on LINE_SMALL and a random 0-2 (mean 1) on
LINE_JITTER, then item_done() (the progress point). From the source:
LINE_BIG holds 3/5 of the thread's user time and LINE_SMALL 1/5 (less
item_done() and the clock read, under 1%), so a 1% faster LINE_BIG makes
the program 0.6% faster and LINE_SMALL 0.2%. LINE_COLD runs once per
1,000 items.

Checked: each line's share of the ticks that delay it, against 3/5 and
1/5, pooled over its control windows (the JSON lists each window's tick
counts): under load one window's share strayed far beyond its binomial
spread (70.6% of 494 ticks for 60% in a fresh clone, 49% in 2 of 6 runs
beside two busy loops), so the tolerance is a t interval from the windows'
own spread (stats.clustered_share, at 1e-4);
LINE_BIG helps (its 95% sign-test interval is above 0) and more than
LINE_SMALL; LINE_COLD is skipped with its reason. The impacts themselves
are not compared with 0.6 and 0.2: under the load of the other tests the
thread waits for a CPU, and the README shows how that biases a prediction
(0.45 for 0.6 was measured at load 3.6).

A latency point's percentile is checked by `validate --causal tail`
(test_validate_scenario[tail]): the metric is handle()'s p95, which extra()
decides (impact 0.73) more than common() (0.27) although common holds most
of the CPU and of the mean; both predictions are checked against the
emitted variants' real p95, and extra must rank above common.
"""
import concurrent.futures
import json
import os
import re
import subprocess
import time
import xml.etree.ElementTree as ET

import pytest
import stats
from lputil import scaled

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIVEPROF = os.environ.get("LIVEPROF", os.path.join(ROOT, "liveprof"))
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_NO_TARGET = 0, 1, 2, 3
EXIT_INCONCLUSIVE, EXIT_NO_PROGRESS = 10, 11
# Other test files and jobs may keep this 2-core machine loaded: at nice 0,
# loading liveprof's BPF object took up to 60 s there. Targets and liveprof
# run at nice -10 (validate raises its own to -20), as root may.
NICE = ["nice", "-n", "-10"]


def build_spin(d):
    src, prog = os.path.join(d, "spin.c"), os.path.join(d, "spin")
    r = subprocess.run([LIVEPROF, "emit", "--scenario", "causal-spin", "-o", src],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(["cc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", src, "-o",
                        prog], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return prog


# scenario: (the gating function, the one that gates nothing)
SCENARIOS = {"lock": ("critical", "prepare"), "spin": ("compute", "spin_poll"),
             "pipeline": ("encode", "parse"), "tail": ("extra", "common")}


# Seconds of experiments validate gives its prediction. lock gets 12: on
# an AMD EPYC host whose speed varied by a third from one 0.1 s window to
# the next, 8 s (13 pairs a function) left critical's check INCONCLUSIVE in
# 3 runs of 4 (intervals as wide as [0.66, 1.85]); 12 s decided 2 of 2.
# kink too: at 8 s under the suite's load parse's interval was [0.40,
# 0.83], a tolerance of 12.9 points against a 12.2-point gap. tail's
# intervals are tight within 6 pairs: 6 s is enough.
PREDICT_S = {"lock": 12, "kink": 12, "tail": 6}


def run_validate(name, before=None):
    """validate --causal NAME, once the run @before (a future) has ended."""
    if before is not None:
        before.exception()
    t0 = time.monotonic()
    r = subprocess.run([LIVEPROF, "validate", "--causal", name, "--seconds",
                        str(PREDICT_S.get(name, 8)), "--speedup", "30"],
                       capture_output=True, text=True, timeout=240)
    return r, time.monotonic() - t0


def run_partial(prog, d):
    """liveprof causal on a target killed 4 s into the second candidate."""
    target = subprocess.Popen(NICE + [prog, "0"], stdout=subprocess.DEVNULL)
    js, svg = os.path.join(d, "partial.json"), os.path.join(d, "partial.svg")
    lp = subprocess.Popen(NICE + [LIVEPROF, "causal", "-p", str(target.pid), "--progress",
                           "item_done", "--candidates", "no_such_function,compute,spin_poll",
                           # --ci so narrow that compute never ends early:
                           # the target must die during its experiments (at
                           # +-0.1, 6 tight pairs ended it in 2 s once, and
                           # spin_poll ran 8 pairs before the kill)
                           "-d", "120", "--ci", "0.001", "--json", js, "-o", svg],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err_lines, killed_at = [], None
    for line in lp.stderr:
        err_lines.append(line)
        if "experiments on 'compute'" in line and killed_at is None:
            time.sleep(4.0)
            target.kill()
            target.wait()
            killed_at = time.monotonic()
    out = lp.stdout.read()
    rc = lp.wait(timeout=60)
    ended = time.monotonic()
    if target.poll() is None:
        target.kill()
        target.wait()
    return rc, out, "".join(err_lines), js, svg, (ended - killed_at) if killed_at else None


def run_never(prog):
    target = subprocess.Popen(NICE + [prog, "0"], stdout=subprocess.DEVNULL)
    try:
        t0 = time.monotonic()
        r = subprocess.run(NICE + [LIVEPROF, "causal", "-p", str(target.pid), "--progress", "main",
                            "--candidates", "compute", "-d", "20"],
                           capture_output=True, text=True, timeout=120)
        alive = target.poll() is None
    finally:
        target.kill()
        target.wait()
    return r, alive, time.monotonic() - t0


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root for BPF")
    d = str(tmp_path_factory.mktemp("causal"))
    prog = build_spin(d)
    # The validate runs first, one at a time and alone: each scenario's
    # threads take both CPUs (causal-spin's poller would take one from the
    # lock scenario's four threads for the whole run). The two causal-spin
    # runs start together once they are done.
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=3 + len(SCENARIOS))
    futs, last = {}, None
    for name in list(SCENARIOS) + ["kink"]:
        last = futs["validate-" + name] = pool.submit(run_validate, name, last)

    def after_validate(fn, *args):
        last.exception()
        return fn(*args)

    futs["partial"] = pool.submit(after_validate, run_partial, prog, d)
    futs["never"] = pool.submit(after_validate, run_never, prog)
    yield futs
    pool.shutdown(wait=True)


def test_usage_errors():
    r = subprocess.run([LIVEPROF, "causal", "-p", "1"], capture_output=True, text=True)
    assert r.returncode == EXIT_USAGE and "--progress" in r.stderr
    r = subprocess.run([LIVEPROF, "causal", "-p", "999999999", "--progress", "f"],
                       capture_output=True, text=True)
    assert r.returncode == EXIT_USAGE
    r = subprocess.run([LIVEPROF, "causal", "-p", "4000000", "--progress", "f"],
                       capture_output=True, text=True)
    assert r.returncode == EXIT_NO_TARGET and "no such process" in r.stderr
    r = subprocess.run([LIVEPROF, "emit", "--scenario", "causal-spin:main=10", "-o", "-"],
                       capture_output=True, text=True)
    assert r.returncode == EXIT_USAGE and "compute or spin_poll" in r.stderr


def test_progress_never_fires(runs):
    r, alive, _ = runs["never"].result()
    assert r.returncode == EXIT_NO_PROGRESS, r.stdout + r.stderr
    lines = [l for l in r.stderr.splitlines() if "never fired" in l]
    assert len(lines) == 1 and "'main'" in lines[0], r.stderr
    assert alive, "the target must outlive the run"


def test_partial_report_and_skips(runs):
    rc, out, err, js, svg, exit_after_kill = runs["partial"].result()
    assert rc == EXIT_OK, out + err
    assert exit_after_kill is not None, "never reached the third candidate:\n" + out + err
    # The run ends within a window or two of the target's exit, not at -d.
    assert exit_after_kill < 5, exit_after_kill
    with open(js) as f:
        doc = json.load(f)
    assert doc["target_exited"] is True
    # The delays happened (BPF's own count), and some yielded to the scheduler
    # or not: either is fine, but never more yields than delays.
    assert doc["delayed_hits"] > 0 and 0 <= doc["yielded_hits"] <= doc["delayed_hits"]
    by = {c["function"]: c for c in doc["causal"]}
    assert set(by) == {"compute", "no_such_function", "spin_poll"}
    missing = by["no_such_function"]
    assert missing["verdict"] == "skipped" and missing["impact"] is None
    assert "no_such_function" in missing["skipped"] and "no function" in missing["skipped"]
    assert by["spin_poll"]["experiments"] == 0
    assert "target exited" in by["spin_poll"]["skipped"]
    comp = by["compute"]
    # 4 s at 0.25 s a pair, less its calibration window and attaching.
    assert comp["experiments"] >= 4, comp
    assert 0 < comp["cpu_share"] < 100 and 0 < comp["mean_us"]
    if comp["experiments"] >= 6:  # fewer have no interval (null)
        assert comp["ci_low"] <= comp["impact"] <= comp["ci_high"]
        # compute gates every item: an interval wholly below 0.1 would say
        # it does not matter, which is false (measured 0.6-1.0 here).
        assert comp["ci_high"] > 0.1, comp
    else:
        assert comp["ci_low"] is None and comp["verdict"] == "inconclusive"
    assert "skipped" in out and "target exited" in out
    # The plot: well-formed, with a panel naming compute.
    tree = ET.parse(svg)
    texts = "".join(t.text or "" for t in tree.iter("{http://www.w3.org/2000/svg}text"))
    assert "compute" in texts


def check_fields(line):
    """{key: value} of a causal-check line of validate."""
    return dict(kv.split("=", 1) for kv in line.split()[2:] if "=" in kv)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_validate_scenario(runs, name):
    """validate --causal NAME end to end: it predicts both functions, builds
    and measures both real variants (30% less work), and checks each pair.
    Each scenario's truth is derived from its source (causal_scenario.c,
    in units of 0.45 us here):
    - lock: the time per item is critical plus the lock's hand-over, so 30%
      less critical work saves 24-30% of it; prepare gates nothing (its
      thread only queues longer).
    - spin: compute is 67 of the 142 us an item takes (impact 0.47, 14% for
      30% less work); spin_poll spins on a thread of its own and gates
      nothing.
    - pipeline: encode is 108 of the consumer's 235 us an item (0.46, 14%);
      parse is the top CPU user, with 1.4x slack or more, on a CPU of its
      own, and gates nothing.
    - tail: the metric is handle()'s p95 (`--latency handle@p95`); extra
      is 300 of its 410 units (0.73, 22% for 30% less work), common 110
      (0.27, 8%): common is the top CPU user and the mean's main cause,
      but matters less to the tail.
    The gating function's check must PASS: agree by Welch's test at 0.27%
    (3 to 4 combined standard errors) and be far from 0 (a prediction of 0
    would fail it: INCONCLUSIVE). For spin and pipeline, INCONCLUSIVE (an
    interval too wide to decide, under load) skips with its figures. The other function's must PASS too,
    against its real speedup near 0, and rank below the gating one: its
    interval wholly under the gating one's (for spin, pipeline and tail,
    intervals that overlap under load skip as undecided; one wholly above
    still fails). Not asserted: that its 95%
    interval holds 0 (near_zero, printed), which a true 0 misses in 5% of
    runs by construction."""
    gating, idle = SCENARIOS[name]
    r, secs = runs["validate-" + name].result()
    checks = [l for l in r.stdout.splitlines() if l.startswith("causal-check")]
    assert len(checks) == 2, r.stdout + r.stderr
    gate, other = check_fields(checks[0]), check_fields(checks[1])
    assert gate["function"] == gating and other["function"] == idle, checks
    # the prediction's delays happened; how many yielded to the scheduler
    # is printed with the checks (their rest moves to later calls)
    delays = [l for l in r.stdout.splitlines() if l.startswith("causal-delays")]
    assert len(delays) == 1 and int(check_fields("x " + delays[0])["delayed_hits"]) > 0, delays
    print("\n" + "\n".join(checks + delays) + "\nvalidate took %.1f s" % secs)
    ci = {}
    for c in (gate, other):
        lo, hi = (float(v) for v in c["ci"].strip("[]").split(","))
        assert lo <= float(c["impact"]) <= hi, c
        assert float(c["se_real"]) > 0 and float(c["tolerance"]) > 0, c
        ci[c["function"]] = (lo, hi)
    assert other["verdict"] == "PASS", r.stdout
    if gate["verdict"] == "INCONCLUSIVE" and name != "lock":
        # Too wide to decide, which is its own outcome: under the other
        # test worker's load, spin's poller, its worker and that load
        # share 2 CPUs, and one run of 3 here gave compute 13 pairs over
        # [0.51, 1.12] (a 17.6-point tolerance against a real 15%). A
        # FAIL still fails; lock, whose threads leave a CPU free, must
        # decide.
        pytest.skip("%s: %s's check undecided under load: %s" % (name, gating, checks[0]))
    assert gate["verdict"] == "PASS", r.stdout
    assert r.returncode == EXIT_OK, r.stdout + r.stderr
    # The ranking that causal profiling is for: never the other way round,
    # and decided where the intervals part. Under load the idle function's
    # interval can be wide enough to reach the gating one's (a fresh clone:
    # spin_poll [.., 0.473] against compute [0.463, ..], a 22-point
    # tolerance): undecided, its own outcome, except for lock (see above).
    assert ci[gating][1] > ci[idle][0], checks
    if ci[idle][1] >= ci[gating][0] and name != "lock":
        pytest.skip("%s: %s and %s not ranked under load: %s" % (name, gating, idle, checks))
    assert ci[idle][1] < ci[gating][0], checks


def test_validate_kink_fails(runs):
    """Where a delay is not a speedup, shown: causal-kink is the pipeline
    with parse at 490 units against a consumer of 520 (encode 240 and
    flush 280, on the CPU: the slack is in units alone), 1.06x slack, and
    a queue of 2 items (64 would absorb a slower parse for a whole 0.1 s
    window). Delayed by a quarter of its duration, parse (612) becomes the
    bottleneck: the delay measures an impact of about (612 - 520) / 520 /
    0.25 = 0.71 (0.63 and 0.78 measured: 19-23% for 30%); 30% faster, it
    still waits for the consumer: a real 0 (-2.1 and -2.5%). liveprof must
    see the slope (parse's interval above 0.1: the delay worked) and
    validate must FAIL parse's check on the side of over-prediction, and
    exit 1. encode's check is printed, not asserted: 30% faster, it leaves
    the consumer at 448, under parse (a real 1 - 490/520 = 5.8%, 5.2-5.5%
    measured, against 16% predicted: the kink on its fast side)."""
    r, secs = runs["validate-kink"].result()
    checks = [l for l in r.stdout.splitlines() if l.startswith("causal-check")]
    assert len(checks) == 2, r.stdout + r.stderr
    print("\n" + "\n".join(checks) + "\nvalidate took %.1f s" % secs)
    parse = check_fields(checks[1])
    assert parse["function"] == "parse", checks
    lo = float(parse["ci"].strip("[]").split(",")[0])
    assert lo > 0.1, parse
    assert parse["verdict"] == "FAIL", r.stdout
    assert float(parse["predicted"]) - float(parse["real"]) > float(parse["tolerance"]), parse
    assert r.returncode == EXIT_FAIL, r.stdout + r.stderr


def after_the_runs(request):
    """Wait until every run the module fixture started has ended: the lines'
    target needs the CPUs those runs take. When this session runs none of
    the tests that need them (the kernel matrix's guests run one test of
    this module), the fixture's runs are not started at all."""
    if any(item.name.startswith(("test_validate_", "test_partial_", "test_progress_never"))
           for item in request.session.items):
        concurrent.futures.wait(list(request.getfixturevalue("runs").values()))


LINE_RE = re.compile(r"/\* (LINE_[A-Z]+) \*/")


def source_lines(path):
    """{LINE_X: its line number} from the workload's own markers."""
    out = {}
    with open(path) as f:
        for n, text in enumerate(f, 1):
            m = LINE_RE.search(text)
            if m:
                out[m.group(1)] = n
    return out


def test_lines_as_candidates(request, procs, liveprof, wl, tmp_path, h):
    after_the_runs(request)
    lines = source_lines(os.path.join(h.WORKLOADS, "causal_lines.c"))
    target = procs.start(["nice", "-n", "-10", wl("causal_lines"), "120"], settle=0.5)
    spec = {k: f"causal_lines.c:{v}" for k, v in lines.items()}
    js = tmp_path / "causal.json"
    r = subprocess.run(["nice", "-n", "-10", str(liveprof), "causal", "-p", str(target.pid),
                        "--progress", "item_done", "--candidates",
                        ",".join([spec["LINE_BIG"], spec["LINE_SMALL"], spec["LINE_COLD"]]),
                        "-d", "16", "--json", str(js), "-o", str(tmp_path / "causal.svg")],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    print("\n" + r.stdout)
    by = {c["function"]: c for c in json.loads(js.read_text())["causal"]}
    big, small, cold = by[spec["LINE_BIG"]], by[spec["LINE_SMALL"]], by[spec["LINE_COLD"]]
    for c, truth in ((big, 0.6), (small, 0.2)):
        assert c["kind"] == "line" and c["verdict"] != "skipped", c
        n = c["share_ticks"]
        stats.enough(n, 300, f"{c['function']}: ticks of the target")
        wins = c["share_windows"]
        assert sum(u for _, u in wins) == n, c
        assert abs(100 * sum(k for k, _ in wins) / n - c["cpu_share"]) < 1e-6, c
        stats.clustered_share(wins, truth, f"{c['function']}'s share")
    assert big["ci_low"] > 0, big
    assert big["impact"] > small["impact"], (big, small)
    assert cold["verdict"] == "skipped" and "too little" in cold["skipped"], cold
    assert (tmp_path / "causal.svg").read_text().rstrip().endswith("</svg>")


def test_auto_picks_the_hot_line(request, procs, liveprof, wl, tmp_path, h):
    """`auto` adds the lines where most samples land, after the functions:
    LINE_BIG (3/5 of the samples) must be one, measured, and help."""
    after_the_runs(request)
    lines = source_lines(os.path.join(h.WORKLOADS, "causal_lines.c"))
    target = procs.start(["nice", "-n", "-10", wl("causal_lines"), "120"], settle=0.5)
    js = tmp_path / "causal.json"
    r = subprocess.run(["nice", "-n", "-10", str(liveprof), "causal", "-p", str(target.pid),
                        "--progress", "item_done", "-d", str(scaled(14)), "--json", str(js)],
                       capture_output=True, text=True, timeout=240 + scaled(14))
    assert r.returncode == 0, r.stdout + r.stderr
    print("\n" + r.stdout)
    by = {c["function"]: c for c in json.loads(js.read_text())["causal"]}
    big = by.get(f"causal_lines.c:{lines['LINE_BIG']}")
    assert big, f"auto did not pick LINE_BIG: {sorted(by)}"
    assert big["kind"] == "line" and big["verdict"] != "skipped", big
    assert big["ci_low"] > 0, big


def test_latency_percentile_usage(liveprof):
    """A bad percentile is a usage error before anything is loaded."""
    for bad in ("handle@p100", "handle@p", "@p95"):
        r = subprocess.run([str(liveprof), "causal", "-p", "1", "--latency", bad],
                           capture_output=True, text=True)
        assert r.returncode == EXIT_USAGE, (bad, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
