"""Runs the C unit tests (tests/unit/test_*.c) as pytest tests.

The Makefile builds them: `make unit` into build/tests/, and `make test` also
ASan+UBSan copies into build-san/tests/. This driver only runs what it built:
every source must have its binary in build/ (and in build-san/ once that tree
exists), no older than the source, and the binary must run exactly as many
tests as the source defines with UNIT_TEST (unit.h registers them itself).
Each binary runs from the repository root.
"""

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "tests" / "unit").glob("test_*.c"))
TREES = ("build", "build-san")
TIMEOUT = 300
UNIT_TEST = re.compile(r"^UNIT_TEST\((\w+)\)", re.M)
RESULT = re.compile(r"^(PASS|FAIL) (\w+)$", re.M)


def _cases():
    return [pytest.param(tree, src, id=f"{tree}/{src.stem}") for tree in TREES for src in SOURCES]


def _binary(tree, src):
    tests = ROOT / tree / "tests"
    if tree == "build-san" and not tests.is_dir():
        pytest.skip("no sanitizer build: `make test` builds build-san/tests")
    exe = tests / src.stem
    if not exe.is_file():
        pytest.fail(f"{exe.relative_to(ROOT)} is not built: run `make unit`", pytrace=False)
    if exe.stat().st_mtime < src.stat().st_mtime:
        pytest.fail(f"{exe.relative_to(ROOT)} is older than {src.relative_to(ROOT)}: "
                    "run `make unit`", pytrace=False)
    return exe


def test_sources_follow_the_makefile_glob():
    # The Makefile picks tests up by this glob; a file elsewhere would never run.
    assert SOURCES, "no tests/unit/test_*.c"
    stray = [p.name for p in (ROOT / "tests" / "unit").glob("*.c") if not p.name.startswith("test_")]
    assert not stray, f"unit test sources must be named test_*.c: {stray}"


@pytest.mark.parametrize("tree,src", _cases())
def test_unit(tree, src):
    exe = _binary(tree, src)
    env = dict(os.environ)
    if tree == "build-san":
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    try:
        p = subprocess.run([str(exe)], cwd=str(ROOT), env=env, capture_output=True,
                           text=True, errors="replace", timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{exe} timed out after {TIMEOUT}s\n{e.stdout or ''}{e.stderr or ''}")
    out = (f"--- stdout ---\n{p.stdout[-8000:]}\n--- stderr ---\n{p.stderr[-8000:]}")
    if p.returncode != 0:
        pytest.fail(f"{exe.relative_to(ROOT)} exited {p.returncode}\n{out}", pytrace=False)
    defined = UNIT_TEST.findall(src.read_text())
    ran = [name for _, name in RESULT.findall(p.stdout)]
    assert ran == defined, (f"{exe.relative_to(ROOT)} ran {ran}, the source defines {defined} "
                            "(in source order)")
