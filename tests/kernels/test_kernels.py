"""The kernel matrix: liveprof's capabilities on Debian's own kernels.

Each kernel of the matrix (vm.py's SERIES: bookworm's 6.1 and 6.12) boots
once in QEMU with this machine's files; in it, `liveprof --check` and a
named subset of the end-to-end tests run against their workloads, and each
of those tests passes or fails here as itself, per kernel. The host's own
kernel (6.18 on these machines) runs the whole suite beside them.
"""

import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import vm

ROOT = Path(__file__).resolve().parents[2]

# One test per capability of the matrix, each checked against a workload of
# known truth (the tests' own docstrings say which).
SUBSET = [
    "tests/e2e/test_sampling.py::test_fastslow_shares",            # sampling, fp stacks
    "tests/e2e/test_kunwind.py::test_nofp_same_shares_as_fp",     # unwound in the kernel
    "tests/e2e/test_split.py::test_blocking_cause_needs_offcpu",  # a split with --offcpu
    "tests/e2e/test_tracing.py::test_percentiles_vs_ground_truth",  # function traces
    "tests/e2e/test_tracing.py::test_line_in_loop_hit_count",     # line traces
    "tests/e2e/test_py_trace.py::test_split_python_function",     # py: traces
    "tests/e2e/test_alloc.py::test_heap_inuse_and_alloc_space",   # --alloc
    "tests/e2e/test_sampling.py::test_pprof_loads_in_go_tool",    # pprof for go tool pprof
    "tests/e2e/test_serve.py::test_pprof_profile_shape",          # serve
    "tests/e2e/test_causal.py::test_auto_picks_the_hot_line",     # a causal run
    "tests/e2e/test_kernel_caps.py",                              # --check, refusals
]

MISSING = [t for t in ("qemu-system-x86_64", "busybox") if not shutil.which(t)]


def _guest_script():
    tests = " ".join(SUBSET)
    return (f"./liveprof --check -v > $LPVM_JOB/check.txt 2>&1; "
            f"/usr/bin/python3 -m pytest -p no:cacheprovider -q --no-header -rfE "
            f"-o junit_family=xunit1 --junitxml=$LPVM_JOB/junit.xml {tests} "
            f"> $LPVM_JOB/pytest.txt 2>&1")


_RUNS = {}


def guest_run(series):
    """The subset's results in a guest of SERIES: {nodeid: (outcome, text)}."""
    if series in _RUNS:
        return _RUNS[series]
    files = {}
    rc, out = vm.run(series, _guest_script(), cwd=ROOT, timeout=1500, cpus=2, files=files)
    results = {}
    if "junit.xml" in files:
        for case in ET.fromstring(files["junit.xml"]).iter("testcase"):
            mod = case.get("file") or ("tests/e2e/" + case.get("classname").split(".")[-1] + ".py")
            nodeid = f"{mod}::{case.get('name')}"
            outcome, text = "passed", ""
            for kind in ("failure", "error", "skipped"):
                el = case.find(kind)
                if el is not None:
                    outcome = kind
                    text = (el.get("message") or "") + "\n" + (el.text or "")
            results[nodeid] = (outcome, text)
    # kept for a person (and BENCHMARKS.md's per-kernel table): the guest's
    # --check -v, its pytest output and its console
    keep = ROOT / "tests" / "build" / "kernels" / series
    keep.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (keep / name).write_bytes(data)
    (keep / "console.txt").write_text(out)
    log = (files.get("pytest.txt", b"").decode(errors="replace")[-4000:] +
           "\n--- console ---\n" + out[-3000:])
    _RUNS[series] = (results, files.get("check.txt", b"").decode(errors="replace"), log, rc)
    return _RUNS[series]


@pytest.fixture(params=sorted(vm.SERIES), scope="module")
def series(request):
    if MISSING:
        pytest.skip(f"not installed: {', '.join(MISSING)} (make deps)")
    return request.param


def test_check_says_every_capability_loads(series):
    results, check, log, rc = guest_run(series)
    assert check.startswith("kernel "), log
    refused = [l for l in check.splitlines() if re.search(r"\s(no: )", l)
               and "uprobe_multi" not in l]
    assert not refused, check


@pytest.mark.parametrize("nodeid", SUBSET)
def test_in_guest(series, nodeid):
    results, check, log, rc = guest_run(series)
    mine = {k: v for k, v in results.items()
            if k == nodeid or k.startswith(nodeid + "::") or k.startswith(nodeid + "[")
            or (nodeid.endswith(".py") and k.startswith(nodeid))}
    assert mine, f"{nodeid} did not run in the {series} guest:\n{log}"
    bad = {k: v[1][-3000:] for k, v in mine.items() if v[0] != "passed"}
    assert not bad, f"in the {series} guest:\n" + "\n".join(f"{k}:\n{v}" for k, v in bad.items())
