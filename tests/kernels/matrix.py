#!/usr/bin/python3
"""Run the kernel matrix's guests: `liveprof --check -v` and a named subset
of the end-to-end tests in each kernel of vm.SERIES, all guests at once.

    tests/kernels/matrix.py OUTDIR    (make test starts it beside pytest)

Each guest's results go to OUTDIR/SERIES/ (check.txt, junit.xml,
pytest.txt, console.txt, rc), then OUTDIR/SERIES/done. test_kernels.py
reads them there when LIVEPROF_MATRIX_DIR names OUTDIR, and otherwise
runs the guests itself. Under TCG a guest takes one host CPU (vm.py runs
it single-threaded), so the guests overlap the host's own tests instead of
adding their minutes to the suite's.
"""

import sys
import threading
from pathlib import Path

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

TIMEOUT = 1500  # seconds a guest may take (about 3-4 minutes when alone)


def guest_script():
    """What a guest runs, in this checkout, with $LPVM_JOB for its results."""
    return ("./liveprof --check -v > $LPVM_JOB/check.txt 2>&1; "
            "/usr/bin/python3 -m pytest -p no:cacheprovider -q --no-header -rfE "
            "-o junit_family=xunit1 --junitxml=$LPVM_JOB/junit.xml " + " ".join(SUBSET) +
            " > $LPVM_JOB/pytest.txt 2>&1")


def run_series(series, outdir):
    """Boot @series, run the subset, and write its files to @outdir/@series/."""
    out = Path(outdir) / series
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    try:
        rc, console = vm.run(series, guest_script(), cwd=ROOT, timeout=TIMEOUT, cpus=2,
                             files=files)
    except Exception as e:  # the test reports it: no guest, no results
        rc, console = None, f"lpvm: {e!r}\n"
    for name, data in files.items():
        (out / name).write_bytes(data)
    (out / "console.txt").write_text(console)
    (out / "rc").write_text(f"{rc}\n")
    (out / "done").write_text("")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[0] + "\nusage: matrix.py OUTDIR")
    threads = [threading.Thread(target=run_series, args=(s, sys.argv[1])) for s in vm.SERIES]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
