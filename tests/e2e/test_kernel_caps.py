"""Each capability loads on its own (issue 39).

`liveprof --check` says what the running kernel supports. A capability the
kernel refuses is lost alone: LIVEPROF_TEST_REFUSE makes the verifier
itself refuse one (its programs reach an invalid read that only that
setting makes live), and the rest keeps working. These tests also run in
every guest of the kernel matrix (tests/kernels/).
"""

import os
import re
import subprocess

from conftest import LIVEPROF

CAPS = ["sampling (frame-pointer stacks)", "stacks unwound in the kernel",
        "Python and Ruby frames", "off-CPU profiling", "function and line tracing",
        "return probes on ret instructions", "USDT tracing", "Python function tracing",
        "causal profiling", "timer-interrupt cost bracket", "allocation profiling"]
VERIFIER = re.compile(r"invalid variable-offset read from stack")


def check(env=None):
    r = subprocess.run([str(LIVEPROF), "--check", "-v"], capture_output=True, text=True,
                       timeout=120, env=env)
    rows = {}
    for line in r.stdout.splitlines():
        for cap in CAPS:
            if line.strip().startswith(cap):
                rows[cap] = line
    return r, rows


def refused_env(keys):
    return dict(os.environ, LIVEPROF_TEST_REFUSE=keys)


def test_check_lists_every_capability_as_loading():
    r, rows = check()
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith(f"kernel {os.uname().release} ")
    assert set(rows) == set(CAPS), r.stdout
    assert all(re.search(r"\syes\b", rows[c]) for c in CAPS), r.stdout
    # -v: the verifier's statistics of each program
    assert re.search(r"lp_sample_cpu\s+\d+ insns, stack \d+", r.stdout), r.stdout


def test_check_names_a_refused_capability_and_the_verifiers_reason():
    r, rows = check(refused_env("offcpu"))
    assert r.returncode == 0, r.stdout + r.stderr  # sampling still works
    line = rows["off-CPU profiling"]
    assert "no: lp_sched_switch: " in line and VERIFIER.search(line), line
    others = [c for c in CAPS if c != "off-CPU profiling"]
    assert all(re.search(r"\syes\b", rows[c]) for c in others), r.stdout


def test_refused_offcpu_fails_its_request_with_the_reason(run_lp, wl):
    r = run_lp(["-d", "3", "--offcpu", "--", wl("fastslow"), "10"], env=refused_env("offcpu"),
               timeout=60)
    assert r.rc == 6, r.stderr
    lines = [l for l in r.stderr.splitlines() if "off-CPU profiling" in l]
    assert len(lines) == 1, r.stderr
    assert "is not available on this kernel: lp_sched_switch: " in lines[0], r.stderr
    assert VERIFIER.search(lines[0]), r.stderr
    assert "Permission denied" not in r.stderr and "did not look like" not in r.stderr


def test_refused_offcpu_leaves_sampling_and_tracing(run_lp, wl):
    """fastslow calls fast() and slow() once each per round: equal counts."""
    r = run_lp(["-d", "4", "--trace", "fast", "--trace", "slow", "--", wl("fastslow"), "10"],
               env=refused_env("offcpu,pytrace"), timeout=60)
    assert r.rc == 0, r.stderr
    assert "off-CPU" not in r.stderr  # not asked for: nothing to say
    assert r.json["samples"] > 0, r.stderr
    calls = {t["function"]: t["calls"] for t in r.json["traces"]}
    assert calls["fast"] > 0 and abs(calls["fast"] - calls["slow"]) <= 1, calls
    assert any("slow" in stack for stack in r.folded), r.folded


def test_refused_py_trace_names_the_capability(run_lp, tmp_path):
    script = tmp_path / "loop.py"
    script.write_text("import time\nend = time.time() + 20\nwhile time.time() < end:\n"
                      "    time.sleep(0.01)\n")
    r = run_lp(["-d", "5", "--trace", "py:nothing", "--", "/usr/bin/python3.11", script],
               env=refused_env("pytrace"), timeout=60)
    assert r.rc != 0, r.stderr
    assert re.search(r"Python function tracing \(--trace py:\) is not available on this "
                     r"kernel: lp_py_start: ", r.stderr), r.stderr
    assert "did not look like CPython" not in r.stderr, r.stderr


def test_refused_kernel_unwinding_falls_back_to_frame_pointers(run_lp, wl):
    """The sampler's program with the CFI walk refused: sampling goes on
    with frame-pointer stacks (fastslow keeps its frame pointers), and one
    line says what was lost and why."""
    r = run_lp(["-d", "3", "--", wl("fastslow"), "10"], env=refused_env("kunwind"), timeout=60)
    assert r.rc == 0, r.stderr
    lines = [l for l in r.stderr.splitlines() if "unwound in the kernel" in l]
    assert len(lines) == 1 and "lp_sample_cpu: " in lines[0], r.stderr
    assert VERIFIER.search(lines[0]) and "frame pointers" in lines[0], r.stderr
    assert r.json["samples"] > 0 and not r.json["unwound_in_kernel"], r.json
    assert any("slow" in s and "spin" in s for s in r.folded), r.folded
