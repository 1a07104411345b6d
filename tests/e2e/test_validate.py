# SPDX-License-Identifier: GPL-2.0
"""End-to-end tests of `liveprof validate --from` on a real profile (issue 12).

The profile is captured by liveprof itself from Debian's /usr/bin/python3
running a stdlib-heavy script: a program not written for these tests, with
about 2,000 call-tree nodes and a long tail of small functions.

validate's verdicts and their error rates (user/validate_plan.c derives them):
with O the observed total variation distance, q the 1 - alpha bound of the
TVD that multinomial sampling noise alone gives at the samples taken
(simulated from the profile), and T the tolerance (0.05):
FAIL when O > T + q, PASS when O + q <= T, else INCONCLUSIVE. alpha is
0.001 per run split over up to 3 looks, so a program whose own distance is
within T fails with probability <= 1 in 1,000 by design.

- test_real_profile_passes: liveprof's distance here is ~0.01 (the emitted
  program's call overhead); PASS needs O + q <= 0.05 and the planner takes
  samples until q is small enough, so a miss is an INCONCLUSIVE on a machine
  too loaded to give ~5,000 samples in 60 s, reported as such.
- test_perturbed_profile_fails: 10% of the weight moved between leaves makes
  D = 0.10; FAIL needs O > 0.05 + q with q ~0.03: P(miss) is that of the noise
  exceeding 0.02 beyond its own bound, far below 1 in 10^6.
- test_tiny_budget_is_inconclusive: 0.3 s give at most 300 samples; the
  noise bound of even the coarsest comparison (top function vs the rest,
  top share p in [0.1, 0.9]) is then >= 3.4 sqrt(0.09 / 300) = 0.059 > T, so
  PASS is impossible, and FAIL would need O > 0.109 (6 sd): deterministic.
"""
import collections
import os
import re
import subprocess
import time

import pytest

import stats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = "/usr/bin/python3"
EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_NO_TARGET, EXIT_INCONCLUSIVE = 0, 1, 2, 3, 10

# A stdlib-heavy workload: json, re, difflib, decimal, zlib, hashlib, csv ...
SCRIPT = r'''
import json, re, difflib, decimal, zlib, hashlib, textwrap, collections
import fractions, statistics, base64, html, csv, io, sys, time
def work():
    data = [{"id": i, "name": "item%d" % i, "tags": ["a", "b", str(i % 7)],
             "v": i * 1.5} for i in range(300)]
    s = json.dumps(data)
    json.loads(s)
    re.findall(r"item(\d+)", s)
    a = textwrap.wrap(s[:3000], 40)
    list(difflib.unified_diff(a, a[::-1][:50]))
    decimal.getcontext().prec = 40
    sum(decimal.Decimal(i) / decimal.Decimal(7) for i in range(200))
    zlib.compress(s.encode())
    hashlib.sha256(s.encode()).hexdigest()
    collections.Counter(s)
    sum(fractions.Fraction(i, i + 1) for i in range(1, 80))
    statistics.stdev([float(i % 13) for i in range(500)])
    base64.b64encode(s.encode()[:5000])
    html.escape(s[:5000])
    out = io.StringIO(); w = csv.writer(out)
    for d in data:
        w.writerow([d["id"], d["name"], d["v"]])
end = time.time() + float(sys.argv[1])
while time.time() < end:
    work()
'''


@pytest.fixture(scope="module")
def liveprof():
    path = os.path.join(ROOT, "liveprof")
    if not os.access(path, os.X_OK):
        pytest.skip("./liveprof is not built yet (run make)")
    return path


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 240)
    return subprocess.run(cmd, **kw)


def read_folded(path):
    rows = collections.Counter()
    with open(path) as f:
        for line in f:
            if line.strip():
                stack, n = line.rstrip("\n").rsplit(" ", 1)
                rows[stack] += int(n)
    return rows


def tree_nodes(rows):
    nodes = set()
    for stack in rows:
        fr = stack.split(";")
        for k in range(len(fr)):
            nodes.add(tuple(fr[:k + 1]))
    return len(nodes)


def write_folded(path, rows):
    with open(path, "w") as f:
        for stack, n in rows.items():
            if n > 0:
                f.write("%s %d\n" % (stack, n))


@pytest.fixture(scope="module")
def python_profile(liveprof, tmp_path_factory):
    """A ~2,000-node profile of /usr/bin/python3, captured in 4 s pieces until it has
    2,000 nodes (how many samples a piece gets depends on the machine's load)."""
    if not os.access(PYTHON, os.X_OK):
        pytest.skip("%s is not installed" % PYTHON)
    d = tmp_path_factory.mktemp("pyprof")
    script = d / "stdlib_mix.py"
    script.write_text(SCRIPT)
    rows = collections.Counter()
    for piece in range(6):
        out = str(d / ("piece%d.folded" % piece))
        r = run([liveprof, "-F", "999", "-d", "4", "--no-tui", "--top", "0", "--no-interp", "-o", out,
                 "--", PYTHON, str(script), "5"], timeout=60)
        assert r.returncode == 0, r.stderr
        rows.update(read_folded(out))
        if tree_nodes(rows) >= 2000:
            break
    path = str(d / "python3.folded")
    write_folded(path, rows)
    print("captured %d samples, %d nodes" % (sum(rows.values()), tree_nodes(rows)))
    assert tree_nodes(rows) >= 1500
    return path


def summary(stdout):
    """validate's report without the table rows: plan, build, looks, granularity, verdict."""
    return "\n".join(ln for ln in stdout.splitlines()
                     if not re.match(r"^.{40} +-?[\d.]+% +-?[\d.]+% ", ln))


def verdict(stdout):
    g = re.search(r"^TVD ([\d.]+) \(noise ([\d.]+) \+- ([\d.]+) at (\d+) samples, "
                  r"[\d.]+% bound ([\d.]+); compared at ([\w -]+)\): (\w+)$", stdout, re.M)
    assert g, stdout
    return {"tvd": float(g.group(1)), "mean": float(g.group(2)), "sd": float(g.group(3)),
            "n": int(g.group(4)), "bound": float(g.group(5)), "level": g.group(6),
            "verdict": g.group(7)}


@pytest.fixture(scope="module")
def passed_run(liveprof, python_profile, tmp_path_factory):
    """validate on the captured profile, keeping the program it built."""
    keep = str(tmp_path_factory.mktemp("keep"))
    t0 = time.monotonic()
    r = run([liveprof, "validate", "--from", python_profile, "--keep", keep])
    return r, keep, time.monotonic() - t0


def test_real_profile_passes(passed_run):
    r, _, secs = passed_run
    print(summary(r.stdout), r.stderr, "validate took %.1f s" % secs)
    stats.record("liveprof validate: FAIL when the distance is within T", 1e-3)
    v = verdict(r.stdout)
    if r.returncode == EXIT_INCONCLUSIVE:
        pytest.skip("the machine gave too few samples in 60 s: %s" % r.stdout[-300:])
    assert r.returncode == EXIT_PASS and v["verdict"] == "PASS", r.stdout[-3000:] + r.stderr
    assert v["tvd"] + v["bound"] <= 0.05
    assert "leaf-function level" in v["level"]
    # The plan and the granularity are stated.
    assert re.search(r"^plan: about \d+ samples", r.stdout, re.M)
    assert re.search(r"^granularity: leaf-function level, \d+ functions? compared one by one",
                     r.stdout, re.M)


def perturb(rows, frac=0.10):
    """Move @frac of the total weight from the largest leaf functions (each giving at
    most 90% of its own) to the next one: the expected shares move by TVD = @frac."""
    leaf = collections.Counter()
    for stack, n in rows.items():
        leaf[stack.split(";")[-1]] += n
    total = sum(leaf.values())
    order = [name for name, _ in leaf.most_common()]
    want, take = frac * total, {}
    for name in order:
        if want <= 0:
            break
        take[name] = min(0.9 * leaf[name], want)
        want -= take[name]
    dst = order[len(take)]
    out = collections.Counter()
    moved = 0
    for stack, n in rows.items():
        name = stack.split(";")[-1]
        k = round(n * take[name] / leaf[name]) if name in take else 0
        out[stack] = n - k
        moved += k
    for stack, n in rows.items():
        if stack.split(";")[-1] == dst:
            out[stack] += round(n * moved / leaf[dst])
    return out, moved / total, sorted(take), dst


def test_perturbed_profile_fails(liveprof, python_profile, passed_run, tmp_path):
    """The program built from the real profile, checked against a copy of the profile
    with 10% of the weight moved: liveprof measures the program, so validate FAILs."""
    _, keep, _ = passed_run
    prog = os.path.join(keep, "synthetic")
    assert os.access(prog, os.X_OK)
    rows, moved, src, dst = perturb(read_folded(python_profile))
    pert = str(tmp_path / "perturbed.folded")
    write_folded(pert, rows)
    print("moved %.3f of the weight from %s to %s" % (moved, src, dst))
    assert abs(moved - 0.10) < 0.005
    t0 = time.monotonic()
    r = run([liveprof, "validate", "--from", pert, "--program", prog])
    print(summary(r.stdout), r.stderr, "validate took %.1f s" % (time.monotonic() - t0))
    # Missing a D = 0.10 perturbation needs the noise 0.02 beyond its own bound.
    stats.record("liveprof validate: no FAIL on a 10% perturbation", 1e-6)
    v = verdict(r.stdout)
    assert r.returncode == EXIT_FAIL and v["verdict"] == "FAIL", r.stdout[-3000:] + r.stderr
    assert v["tvd"] > 0.05 + v["bound"]


def test_tiny_budget_is_inconclusive(liveprof, python_profile, passed_run):
    _, keep, _ = passed_run
    r = run([liveprof, "validate", "--from", python_profile, "--program",
             os.path.join(keep, "synthetic"), "--seconds", "0.3"])
    print(r.stdout[-1500:], r.stderr)
    assert r.returncode == EXIT_INCONCLUSIVE, r.stdout[-3000:] + r.stderr
    g = re.search(r"^INCONCLUSIVE: (?:needs about (\d+) samples|no samples)", r.stdout, re.M)
    assert g, r.stdout
    if g.group(1):
        assert int(g.group(1)) > verdict(r.stdout)["n"]


BAD_INPUTS = {
    "empty": ("", r"no samples"),
    "zero": ("a;b 0\n", r"no samples"),
    "single": ("main 100\n", r"single function \('main'\)"),
    "negative": ("a;b -5\na;c 3\n", r"'-5' is not a number"),
    "huge_line": ("a;b 99999999999999999999999\n", r"too large"),
    "huge_sum": ("a;b 18446744073709551615\na;c 18446744073709551615\n", r"2\^53"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input(liveprof, tmp_path, name):
    text, msg = BAD_INPUTS[name]
    path = tmp_path / (name + ".folded")
    path.write_text(text)
    keep = tmp_path / "keep"
    r = run([liveprof, "validate", "--from", str(path), "--seconds", "1", "--keep", str(keep)],
            timeout=30)
    assert r.returncode == EXIT_USAGE, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(msg, lines[0]), r.stderr
    assert str(path) in lines[0]
    # Nothing was emitted or built.
    assert not keep.exists() or not os.listdir(keep)


@pytest.mark.parametrize("lang,cmd", [("c", "cc"), ("go", "go")])
def test_missing_compiler_is_named(liveprof, tmp_path, lang, cmd):
    prof = tmp_path / "two.folded"
    prof.write_text("app;parse 60\napp;compute 40\n")
    empty = tmp_path / "bin"
    empty.mkdir()
    r = run([liveprof, "validate", "--from", str(prof), "--lang", lang, "--seconds", "1"],
            env=dict(os.environ, PATH=str(empty)), timeout=30)
    assert r.returncode == EXIT_NO_TARGET, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "'%s' is not installed" % cmd in lines[0], r.stderr


def test_help_documents_the_outcomes(liveprof):
    r = run([liveprof, "validate", "--help"])
    assert r.returncode == 0
    text = re.sub(r"\s+", " ", r.stdout)
    for s in ("0 PASS", "1 FAIL", "10 INCONCLUSIVE", "1 run in 1,000"):
        assert s in text, r.stdout


FIVE = """server;main;handle;decode_frame 30
server;main;handle;parse_header 25
server;main;handle;checksum 20
server;main;handle;write_reply 15
server;main;log_line 10
"""


def test_go_five_functions(liveprof, tmp_path):
    """The 5-function profile of issue 12 through the Go backend. Its old rounds
    (~10 ms, lengths from a golden-ratio sequence) aliased with 99 Hz (10.1 ms)
    when the calibration put the mean round near that period (decode_frame
    37.8% instead of 30% in 1 run of 3); that needs an idle CPU and an unlucky
    calibration, so this test passes without the fix on most runs: the aliasing
    is shown by tests/emit/go_alias_sim.py (a simulation, not a test)."""
    import shutil
    if not shutil.which("go"):
        pytest.skip("go is not installed")
    prof = tmp_path / "five.folded"
    prof.write_text(FIVE)
    home = tmp_path / "gohome"
    home.mkdir()
    env = dict(os.environ, GO111MODULE="off", GOFLAGS="", HOME=str(home),
               GOCACHE=str(home / "cache"), GOPATH=str(home / "go"))
    r = run([liveprof, "validate", "--from", str(prof), "--lang", "go", "--seconds", "30"],
            env=env)
    print(r.stdout[-2000:], r.stderr)
    stats.record("liveprof validate: FAIL when the distance is within T", 1e-3)
    if r.returncode == EXIT_INCONCLUSIVE:
        pytest.skip("too few samples: " + r.stdout.strip().splitlines()[-1])
    assert r.returncode == EXIT_PASS, r.stdout + r.stderr
    assert verdict(r.stdout)["verdict"] == "PASS"
