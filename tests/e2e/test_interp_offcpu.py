"""Off-CPU stacks with Python and Ruby frames (issue 15), on real interpreters.

Ground truth: tests/workloads/python/py_offcpu.py and ruby/rb_offcpu.rb.
Each round of their main thread sleeps L = 120 ms in nap_long and S = 40
ms in nap_short: each sleep is one block. A sleep asked for d lasts d + e,
e its wake-up latency, taken here to be at most E = 10 ms (a timer's slack
of 50 us plus the wait for a CPU on a loaded 2-core VM; at load average 15
its mean was measured at 4.5 ms). A window of liveprof's holds n_l naps of
one kind and n_s of the other, |n_l - n_s| <= 1 (blocks cut by the
window's ends are not reported), so nap_long's part of the blocked time
lies between
  L n / (L n + (S + E)(n + 1))  and  (L + E)(n + 1) / ((L + E)(n + 1) + S n)
with n >= T_long / (L + E); at the n that gives, both bounds are the
loosest. The frames must be read at the switch-out, while the thread is
still current, and carry the line of each function's def.
"""

import re
from pathlib import Path

import pytest

import rb_names

WORKLOADS = Path(__file__).resolve().parent.parent / "workloads"
CASES = {
    "python": ("/usr/bin/python3.11", WORKLOADS / "python" / "py_offcpu.py", []),
    "ruby": ("/usr/bin/ruby", WORKLOADS / "ruby" / "rb_offcpu.rb", ["--disable-gems"]),
}
L_MS, S_MS, E_MS = 120.0, 40.0, 10.0
SECONDS = 4


def frame(script, func):
    """'func (script:N)', N the line of its def in the source; a Ruby
    method qualified by its class ('Object#func' at the top level)."""
    if script.suffix == ".rb":
        return rb_names.frame(script, func)
    for no, text in enumerate(script.read_text().splitlines(), 1):
        if re.match(rf"\s*def {func}\b", text):
            return f"{func} ({script.name}:{no})"
    raise AssertionError(f"no def {func} in {script}")


@pytest.mark.parametrize("lang", sorted(CASES))
def test_offcpu_stacks_carry_interpreter_frames(run_lp, procs, lang):
    interp, script, flags = CASES[lang]
    if not Path(interp).exists():
        pytest.skip(f"{interp} is not installed")
    target = procs.start([interp, *flags, script, "60"], settle=0.5)
    r = run_lp(["-p", target.pid, "-F", 49, "-d", SECONDS, "--offcpu"], timeout=40)
    assert r.rc == 0, r
    naps = {f: frame(script, f) for f in ("nap_long", "nap_short")}
    main = frame(script, "main")
    blocked = {f: 0 for f in naps}
    for stack, ns in r.folded.items():
        frames = stack.split(";")
        if frames[-1] != "[off-cpu]":
            continue
        for f, name in naps.items():
            if name in frames:
                blocked[f] += ns
                # the chain of the source: main calls the nap directly
                assert frames.index(name) == frames.index(main) + 1, stack
    long_ms, short_ms = blocked["nap_long"] / 1e6, blocked["nap_short"] / 1e6
    n = int(long_ms // (L_MS + E_MS))
    # most of the run is spent blocked in the two: at least half its rounds
    assert n >= 0.5 * SECONDS * 1000 / (L_MS + S_MS + 2 * E_MS), (blocked, r.stderr)
    share = long_ms / (long_ms + short_ms)
    lo = L_MS * n / (L_MS * n + (S_MS + E_MS) * (n + 1))
    hi = (L_MS + E_MS) * (n + 1) / ((L_MS + E_MS) * (n + 1) + S_MS * n)
    print(f"{lang}: about {n} rounds, nap_long {100 * share:.1f}% of the time blocked "
          f"(bounds {100 * lo:.1f}..{100 * hi:.1f}%)")
    assert lo <= share <= hi, (share, lo, hi, blocked)
    assert f"{lang}: 1 process" in r.stdout + r.stderr, r.stderr
