"""The kernel matrix: liveprof's capabilities on Debian's own kernels.

Each kernel of the matrix (vm.py's SERIES: bookworm's 6.1 and 6.12) boots
once in QEMU with this machine's files; in it, `liveprof --check` and a
named subset of the end-to-end tests (matrix.py's SUBSET) run against their
workloads, and each of those tests passes or fails here as itself, per
kernel. The host's own kernel (6.18 on these machines) runs the whole
suite beside them.

The guests boot, both at once, when the first test here needs them;
tests/conftest.py puts this file last, so that under `make test` they run
once the host's tests have left the CPUs (several of those time calls and
samples under the load they meet; the guests, starved beside them, lost
samples). Their files stay in tests/build/kernels/SERIES/ for a person.
"""

import os
import re
import shutil
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import matrix
import vm

ROOT = Path(__file__).resolve().parents[2]
MISSING = [t for t in ("qemu-system-x86_64", "busybox") if not shutil.which(t)]

_RUNS = {}
_THREADS = {}


def _results_dir(series):
    """Where @series's guest left its files: this run's, once it has ended.
    The first call boots every guest of the matrix, each in a thread."""
    out = ROOT / "tests" / "build" / "kernels"
    if not _THREADS:
        for s in vm.SERIES:
            shutil.rmtree(out / s, ignore_errors=True)
            _THREADS[s] = threading.Thread(target=matrix.run_series, args=(s, out))
            _THREADS[s].start()
    _THREADS[series].join()
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
