"""Every call is counted, whatever its depth (issue 11).

Ground truth: tests/workloads/deeprec.c prints how many times grow() ran
("grow N"); it recurses to every depth from 1 to DEPTH. Deeper than the
calls liveprof times per thread (128) and than the return probes the
kernel keeps pending per thread (64), a call cannot be timed, but it must
still be counted: calls = timed (histogram) + untimed, exactly. The drops
are shown beside the figures they affect.
"""

import re
import subprocess


def run_deeprec(liveprof, wl, tmp_path, depth, reps):
    out = tmp_path / f"d{depth}"
    out.mkdir()
    cmd = [str(liveprof), "--no-tui", "--top", "0", "--json", str(out / "out.json"),
           "--trace", "grow", "--", wl("deeprec"), str(depth), str(reps)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr
    import json
    j = json.loads((out / "out.json").read_text())
    want = int(re.search(r"^grow (\d+)$", p.stdout, re.M).group(1))
    t = next(t for t in j["traces"] if t["spec"] == "grow")
    return p, j, t, want


def test_counts_exact_beyond_every_depth_limit(liveprof, wl, tmp_path):
    p, j, t, want = run_deeprec(liveprof, wl, tmp_path, 200, 10)
    print(f"\ndeeprec 200 x 10: program made {want}, liveprof counted {t['calls']} "
          f"({t['untimed_calls']} untimed), calls_dropped={j['calls_dropped']}, "
          f"calls_unwound={j['calls_unwound']}")
    assert want == 10 * 200 * 201 // 2
    assert t["calls"] == want, t
    # Only calls deeper than a limit can go untimed: at least the ones
    # below depth 200 - 128 of every descent to depth > 128 are timed...
    assert 0 < t["untimed_calls"] < want, t
    # ...and the drop is shown beside the count, in the table and summary.
    assert re.search(r"^grow .*untimed", p.stdout, re.M) or "untimed" in p.stderr, p.stdout


def test_counts_exact_and_all_timed_when_shallow(liveprof, wl, tmp_path):
    p, j, t, want = run_deeprec(liveprof, wl, tmp_path, 40, 50)
    assert t["calls"] == want == 50 * 40 * 41 // 2, t
    assert t["untimed_calls"] == 0 and j["calls_dropped"] == 0, t
