# SPDX-License-Identifier: GPL-2.0
"""Source lines as causal candidates (issue 17): delays triggered by samples.

tests/workloads/causal_lines.c makes items on one thread: the same loop
runs 3 units on LINE_BIG, 1 on LINE_SMALL and a random 0-2 (mean 1) on
LINE_JITTER, then item_done() (the progress point). From the source:
LINE_BIG holds 3/5 of the thread's user time and LINE_SMALL 1/5 (less
item_done() and the clock read, under 1%), so a 1% faster LINE_BIG makes
the program 0.6% faster and LINE_SMALL 0.2%. LINE_COLD runs once per
1,000 items.

Checked: each line's share of the ticks that delay it, against 3/5 and
1/5 (exact binomial regions at 1e-4, from the tick counts in the JSON);
LINE_BIG helps (its 95% sign-test interval is above 0) and more than
LINE_SMALL; LINE_COLD is skipped with its reason. The impacts themselves
are not compared with 0.6 and 0.2: under the load of the other tests the
thread waits for a CPU, and the README shows how that biases a prediction
(0.45 for 0.6 was measured at load 3.6).
"""
import json
import os
import re
import subprocess

import stats

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


def test_lines_as_candidates(procs, liveprof, wl, tmp_path, h):
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
        stats.share(round(n * c["cpu_share"] / 100), n, truth, f"{c['function']}'s share")
    assert big["ci_low"] > 0, big
    assert big["impact"] > small["impact"], (big, small)
    assert cold["verdict"] == "skipped" and "too little" in cold["skipped"], cold
    assert (tmp_path / "causal.svg").read_text().rstrip().endswith("</svg>")


def test_auto_picks_the_hot_line(procs, liveprof, wl, tmp_path, h):
    """`auto` adds the lines where most samples land, after the functions:
    LINE_BIG (3/5 of the samples) must be one, measured, and help."""
    lines = source_lines(os.path.join(h.WORKLOADS, "causal_lines.c"))
    target = procs.start(["nice", "-n", "-10", wl("causal_lines"), "120"], settle=0.5)
    js = tmp_path / "causal.json"
    r = subprocess.run(["nice", "-n", "-10", str(liveprof), "causal", "-p", str(target.pid),
                        "--progress", "item_done", "-d", "14", "--json", str(js)],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    print("\n" + r.stdout)
    by = {c["function"]: c for c in json.loads(js.read_text())["causal"]}
    big = by.get(f"causal_lines.c:{lines['LINE_BIG']}")
    assert big, f"auto did not pick LINE_BIG: {sorted(by)}"
    assert big["kind"] == "line" and big["verdict"] != "skipped", big
    assert big["ci_low"] > 0, big
