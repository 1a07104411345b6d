"""Build liveprof and the workloads when a test file is run on its own.

`make test` builds everything first; a test run by hand may find a workload
missing, and then `make liveprof workloads` runs once.
"""

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "tests", "build")
LIVEPROF = os.path.join(ROOT, "liveprof")


def ensure_built(workloads):
    """Run `make liveprof workloads` if liveprof or one of @workloads is missing."""
    if os.access(LIVEPROF, os.X_OK) and all(
            os.path.exists(os.path.join(BUILD, w)) for w in workloads):
        return
    r = subprocess.run(["make", "-s", "-C", ROOT, "liveprof", "workloads"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
