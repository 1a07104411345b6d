"""Runs the C unit tests (tests/unit/test_*.c) as pytest tests.

`make unit` builds them into build/tests/; `make test` also builds ASan+UBSan
copies into build-san/tests/. Each binary found runs from the repository root
and fails the test with its output when it exits non-zero.
"""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 300


def _binaries():
    found = []
    for tree in ("build", "build-san"):
        d = ROOT / tree / "tests"
        if not d.is_dir():
            continue
        for p in sorted(d.glob("test_*")):
            if p.suffix or not p.is_file() or not os.access(p, os.X_OK):
                continue  # skip test_x.d, .o and the like
            found.append(pytest.param(p, id=f"{tree}/{p.name}"))
    return found


BINARIES = _binaries()


@pytest.mark.skipif(not BINARIES, reason="no unit test binaries: run `make unit`")
@pytest.mark.parametrize("binary", BINARIES or [None])
def test_unit(binary):
    env = dict(os.environ)
    if "build-san" in binary.parts:
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    try:
        p = subprocess.run([str(binary)], cwd=str(ROOT), env=env, capture_output=True,
                           text=True, errors="replace", timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{binary} timed out after {TIMEOUT}s\n{e.stdout or ''}{e.stderr or ''}")
    if p.returncode != 0:
        pytest.fail(f"{binary.relative_to(ROOT)} exited {p.returncode}\n"
                    f"--- stdout ---\n{p.stdout[-8000:]}\n--- stderr ---\n{p.stderr[-8000:]}",
                    pytrace=False)
