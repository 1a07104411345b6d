"""Helpers for the HTTP tests: start `liveprof serve` and wait for it."""

import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request

import stats

# False-failure rate of each check, and its two-sided z.
RATE = 1e-4
Z = stats.z(RATE)


def wilson(k, n):
    """Wilson score interval of a binomial proportion k/n at RATE."""
    return stats.wilson(k, n, RATE)


class Server:
    """A running `liveprof serve`; stderr goes to a file the tests read."""

    def __init__(self, liveprof, args, tmp_path, name="lp"):
        self.err_path = tmp_path / f"{name}.stderr"
        self.err = open(self.err_path, "w")
        self.cmd = [str(liveprof), "serve", "--http", "127.0.0.1:0"] + [str(a) for a in args]
        self.p = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=self.err)
        self.url = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = re.search(r"serving (http://\S+)/", self.err_path.read_text())
            if m:
                self.url = m.group(1)
                break
            if self.p.poll() is not None:
                break
            time.sleep(0.1)
        assert self.url, f"liveprof serve did not start: {self.stderr()}"

    def stderr(self):
        return self.err_path.read_text()

    def get(self, path, headers=None, timeout=30, method="GET", data=None):
        """(status, headers, body bytes); HTTP errors are returned, not raised."""
        req = urllib.request.Request(self.url + path, headers=headers or {}, method=method,
                                     data=data)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def alive(self):
        return self.p.poll() is None

    def stop(self, timeout=20):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
            try:
                self.p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.err.close()
        return self.p.returncode


def go_env(tmp_path):
    return dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "gocache"),
                PPROF_TMPDIR=str(tmp_path / "pprof"))


def pprof_top(args, tmp_path, timeout=120):
    """`go tool pprof -top ARGS` -> {function: (flat, cum)} in the sample_index unit."""
    r = subprocess.run(["go", "tool", "pprof", "-top"] + args, capture_output=True,
                       text=True, env=go_env(tmp_path), timeout=timeout)
    assert r.returncode == 0, r.stderr + r.stdout
    rows = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s*([\d.]+)\w*\s+[\d.]+%\s+[\d.]+%\s+([\d.]+)\w*\s+[\d.]+%\s+(.+)$", line)
        if m:
            rows[m.group(3).strip()] = (float(m.group(1)), float(m.group(2)))
    return rows, r.stdout
