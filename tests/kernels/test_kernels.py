"""The kernel matrix: liveprof's capabilities on Debian's own kernels.

Each kernel of the matrix (vm.py's SERIES: bookworm's 6.1 and 6.12) boots
once in QEMU with this machine's files; in it, `liveprof --check` and a
named subset of the end-to-end tests (matrix.py's SUBSET) run against their
workloads, and each of those tests passes or fails here as itself, per
kernel. The host's own kernel (6.18 on these machines) runs the whole
suite beside them.

`make test` starts the guests before pytest (matrix.py, results in
LIVEPROF_MATRIX_DIR) so that they overlap the host's tests; run alone, this
file boots them itself, one after the other.
"""

import os
import re
import shutil
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import matrix
import vm

ROOT = Path(__file__).resolve().parents[2]
MISSING = [t for t in ("qemu-system-x86_64", "busybox") if not shutil.which(t)]

_RUNS = {}


def _results_dir(series):
    """Where @series's guest left its files: make test's background run, or
    a run of our own, in tests/build/kernels/ (kept for a person to read)."""
    shared = os.environ.get("LIVEPROF_MATRIX_DIR")
    if shared:
        done = Path(shared) / series / "done"
        end = time.monotonic() + matrix.TIMEOUT + 120
        while not done.exists() and time.monotonic() < end:
            time.sleep(1)
        return Path(shared) / series
    out = ROOT / "tests" / "build" / "kernels"
    matrix.run_series(series, out)
    return out / series


def _read(d, name):
    p = d / name
    return p.read_bytes() if p.exists() else b""


def guest_run(series):
    """The subset's results in a guest of @series: ({nodeid: (outcome, text)},
    its --check output, a log for failure messages)."""
    if series in _RUNS:
        return _RUNS[series]
    d = _results_dir(series)
    results = {}
    junit = _read(d, "junit.xml")
    if junit:
        for case in ET.fromstring(junit).iter("testcase"):
            mod = case.get("file") or ("tests/e2e/" + case.get("classname").split(".")[-1] +
                                       ".py")
            outcome, text = "passed", ""
            for kind in ("failure", "error", "skipped"):
                el = case.find(kind)
                if el is not None:
                    outcome = kind
                    text = (el.get("message") or "") + "\n" + (el.text or "")
            results[f"{mod}::{case.get('name')}"] = (outcome, text)
    log = (_read(d, "pytest.txt").decode(errors="replace")[-4000:] + "\n--- console ---\n" +
           _read(d, "console.txt").decode(errors="replace")[-3000:])
    _RUNS[series] = (results, _read(d, "check.txt").decode(errors="replace"), log)
    return _RUNS[series]


@pytest.fixture(params=sorted(vm.SERIES), scope="module")
def series(request):
    if MISSING:
        pytest.skip(f"not installed: {', '.join(MISSING)} (make deps)")
    return request.param


def test_check_says_every_capability_loads(series):
    results, check, log = guest_run(series)
    assert check.startswith("kernel "), log
    refused = [line for line in check.splitlines()
               if re.search(r"\sno: ", line) and "uprobe_multi" not in line]
    assert not refused, check


@pytest.mark.parametrize("nodeid", matrix.SUBSET)
def test_in_guest(series, nodeid):
    results, check, log = guest_run(series)
    mine = {k: v for k, v in results.items()
            if k == nodeid or k.startswith(nodeid + "[") or
            (nodeid.endswith(".py") and k.startswith(nodeid + "::"))}
    assert mine, f"{nodeid} did not run in the {series} guest:\n{log}"
    bad = {k: v[1][-3000:] for k, v in mine.items() if v[0] != "passed"}
    assert not bad, f"in the {series} guest:\n" + "\n".join(f"{k}:\n{v}" for k, v in bad.items())
