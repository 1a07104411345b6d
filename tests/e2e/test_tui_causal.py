"""`:causal` in the terminal UI (issue 17), driven in tmux like a person.

Ground truth from tests/workloads/tui_handler.c: one thread calls handle()
back to back; every call does one UNIT of work() and one call in 32 also
runs slow_path(), 50 UNITs. With handle() as the progress point, the time
per point is all CPU on one thread, so the program's response to a
function's speed is linear, and a 1% speedup of slow_path() saves 1% of
its 50 of every 82 UNITs: impact 50/82 = 0.61, a little less once the
progress point's own probes (a few % of a call) share the time.

On a quiet machine the run lands on it (+0.65 [+0.42, +0.91]); under the
load of other tests on these 2 cores, delay injection over-predicts a
CPU-bound thread's sensitivity (1.5-2x: see the README, "Causal
profiling"), so the check here is the one that must hold under any load:
the interval does not say slow_path() is of no effect (wholly below 0.1),
as a broken run (no delay, or a delay on the wrong function) would.
"""

import re
import time

from test_tui import tui  # noqa: F401 (the fixture: liveprof in tmux on tui_handler)

TRUTH_LO, TRUTH_HI = 0.55, 50 / 82  # slow_path's impact, with and without probe costs


def causal_row(lines, name):
    """(cpu %, impact, ci lo, ci hi, pairs, verdict) of a causal table row."""
    for line in lines:
        m = re.match(rf"\s*{name}\s+([\d.]+)%\s+([+-][\d.]+)\s+\[\s*([+-][\d.]+),\s*([+-][\d.]+)\]"
                     r"\s+(\d+)\s+[\d.]+%\s+(.+?)\s*$", line)
        if m:
            return (float(m.group(1)), float(m.group(2)), float(m.group(3)),
                    float(m.group(4)), int(m.group(5)), m.group(6))
    return None


def test_causal_command_runs_experiments_live(tui):
    tui.start()
    tui.command("causal handle slow_path -d 12")
    tui.wait(lambda s: "causal: progress point 'handle'" in "\n".join(s), 30,
             "the Causal view did not show the run")
    s = tui.wait(lambda s: any("causal profile:" in l for l in s), 90,
                 "the causal run did not finish")
    row = causal_row(s, "slow_path")
    assert row, "\n".join(s)
    cpu, impact, lo, hi, pairs, verdict = row
    print(f"\nslow_path: cpu {cpu}%, impact {impact:+.3f} [{lo:+.3f}, {hi:+.3f}], {pairs} pairs,"
          f" {verdict}; truth {TRUTH_LO:.2f}-{TRUTH_HI:.2f}")
    assert pairs >= 6
    assert hi > 0.1 and impact > 0.1, "\n".join(s)
    # Sampling runs again after the experiments, and the candidate's probes
    # are gone: the Latency view lists only the progress point.
    tui.keys("1")

    def sampling(s):
        m = re.search(r"(\d+) samples/s", s[0])
        return m and int(m.group(1)) > 0 and "causal:" not in s[0]

    # The first rate after the run spans it; wait for a tick with samples.
    time.sleep(2.5)
    tui.wait(sampling, 15, "sampling did not resume after the experiments")
    tui.keys("3")
    # the Latency view's own header, not the Top view still on screen
    # (which lists handle and slow_path too: a loaded fresh clone read it)
    lat = tui.wait(lambda s: any("CALLS" in l and "P99" in l for l in s) and
                   any("handle" in l for l in s[2:]), 10, "no latency view")
    assert not any("slow_path" in l for l in lat[2:-2]), "\n".join(lat)
    assert tui.alive()


def test_causal_escape_stops_with_what_was_measured(tui):
    tui.start()
    tui.command("causal handle work,slow_path -d 120")
    tui.wait(lambda s: any(re.match(r"work\s.*\d+ pairs\s+running", l) for l in s), 60,
             "the experiments on work did not start")
    time.sleep(2)
    t0 = time.monotonic()
    tui.keys("Escape")
    s = tui.wait(lambda s: any("causal profile:" in l for l in s), 15,
                 "Esc did not end the run")
    took = time.monotonic() - t0
    print(f"\nstopped {took:.1f} s after Esc")
    assert causal_row(s, "work"), "\n".join(s)
    assert any("slow_path" in l and "not measured" in l for l in s) or \
        not causal_row(s, "slow_path"), "\n".join(s)
    assert tui.alive()
