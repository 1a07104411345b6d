"""Hostile targets and hostile input (issue 8): liveprof keeps working, never
crashes and never writes through a planted symlink.

Each test that attaches BPF starts one liveprof and waits for its first
--interval line (the programs are attached) before doing anything hostile,
so the hostile part always happens while liveprof is profiling.
"""

import json
import os
import shutil
import signal
import subprocess
import threading
import time

import pytest

from conftest import parse_folded

READY_TIMEOUT = 120  # loading the BPF object can take a while on a busy VM


class Live:
    """liveprof in batch mode with --interval, read line by line."""

    def __init__(self, liveprof, args, cwd=None):
        self.proc = subprocess.Popen([str(liveprof), "--no-tui", "--interval", "0.5",
                                      "--top", "5"] + [str(a) for a in args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, cwd=cwd)
        self.lines = []
        self.ready = threading.Event()
        self.err = []
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=lambda: self.err.extend(self.proc.stderr), daemon=True).start()

    def _read_out(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            if line.startswith("--- "):
                self.ready.set()
        self.ready.set()

    def wait_ready(self):
        assert self.ready.wait(READY_TIMEOUT), "liveprof never started sampling"
        assert self.proc.poll() is None, self.result()

    def finish(self, timeout=60):
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail("liveprof did not stop:\n" + self.result())
        time.sleep(0.1)
        return self.proc.returncode

    def result(self):
        return f"rc={self.proc.returncode}\nstdout:\n{''.join(self.lines)[-3000:]}\n" \
               f"stderr:\n{''.join(self.err)[-3000:]}"


def _wait_started(p, word, timeout=10):
    """Read the workload's stdout until @word appears."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        line = p.stdout.readline()
        if word in line:
            return
    pytest.fail(f"workload never printed {word!r}")


def test_replaced_binary_and_library_and_planted_symlink(liveprof, wl, procs, tmp_path):
    """Executable and shared library replaced on disk (garbage, truncated)
    while profiled; the output path is a symlink planted to a victim file."""
    # an executable, replaced by garbage once running (writing to a running
    # executable gives ETXTBSY, so the path is unlinked and recreated)
    exe = tmp_path / "spin_copy"
    shutil.copy(wl("bench_spin"), exe)
    # a program whose shared library is replaced by a truncated copy of itself
    libdir = tmp_path / "lib"
    libdir.mkdir()
    shutil.copy(wl("uselib"), libdir / "uselib")
    shutil.copy(wl("libwl.so"), libdir / "libwl.so")
    p_exe = procs.start([exe])
    p_lib = procs.start([libdir / "uselib"])

    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    out = shared / "out.folded"
    out.symlink_to(victim)
    jpath = tmp_path / "s.json"

    lp = Live(liveprof, ["-p", f"{p_exe.pid},{p_lib.pid}", "-d", "4", "-o", out,
                         "--json", jpath])
    lp.wait_ready()
    data = exe.read_bytes()
    exe.unlink()
    exe.write_bytes(b"\x7fELF garbage" + os.urandom(4096))
    lib = (libdir / "libwl.so").read_bytes()
    (libdir / "libwl.so").unlink()
    (libdir / "libwl.so").write_bytes(lib[:len(lib) // 3])
    assert len(data) > 0
    rc = lp.finish()
    assert rc == 0, lp.result()
    assert p_exe.poll() is None and p_lib.poll() is None, "a target died"

    assert victim.read_text() == "precious\n", "liveprof wrote through the symlink"
    assert not out.is_symlink() and out.is_file(), "the output should replace the link"
    stacks = parse_folded(out)
    names = {f for s in stacks for f in s.split(";")}
    assert "leaf" in names or "mid" in names, f"replaced executable not symbolized: {names}"
    assert "lib_hot" in names or "lib_call" in names, \
        f"replaced library not symbolized: {sorted(names)[:40]}"
    assert json.loads(jpath.read_text())["samples"] > 0


def test_no_write_through_planted_temp_symlink(liveprof, wl, procs, tmp_path):
    """Make the temporary name predictable (getrandom shim via LD_PRELOAD),
    plant symlinks under the first names: the victim stays untouched."""
    shim_c = tmp_path / "shim.c"
    shim_c.write_text(
        "#include <stddef.h>\n#include <string.h>\n#include <sys/types.h>\n"
        "static unsigned long long n;\n"
        "ssize_t getrandom(void *buf, size_t len, unsigned int flags)\n"
        "{ (void)flags; unsigned long long v = n++;\n"
        "  memset(buf, 0, len); memcpy(buf, &v, len < 8 ? len : 8); return (ssize_t)len; }\n")
    shim = tmp_path / "shim.so"
    r = subprocess.run(["cc", "-shared", "-fPIC", "-o", str(shim), str(shim_c)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    outdir = tmp_path / "shared"
    outdir.mkdir()
    for i in range(16):
        (outdir / f".flat.folded.tmp{i:016x}").symlink_to(victim)
    prof = tmp_path / "in.folded"
    prof.write_text("main;work 10\nmain;idle 5\n")
    # emit writes through the same atomic_file code as the profile writers
    r = subprocess.run([str(liveprof), "emit", "--from", str(prof), "-o",
                        str(outdir / "flat.folded")],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, LD_PRELOAD=str(shim)))
    assert victim.read_text() == "precious\n", "liveprof wrote through a planted symlink"
    assert r.returncode in (0, 7), r.stderr
    if r.returncode == 0:
        assert not (outdir / "flat.folded").is_symlink()
        assert "work" in (outdir / "flat.folded").read_text()


MALFORMED = {
    "count.folded": b"main;work x\n",
    "nocount.folded": b"main;work\n",
    "empty_frame.folded": b"main;;work 3\n",
    "binary.folded": b"\x00\x01\x02 \xff\xfe 9\n",
    "huge.folded": b"a;b 99999999999999999999999999\n",
    "trunc.pb.gz": b"\x1f\x8b\x08\x00\x00\x00\x00\x00",
    "badproto.pb.gz": None,  # filled below: valid gzip, garbage protobuf
    "keyword.scenario": b"handler handle\nfrobnicate 3\n",
    "pct.scenario": b"handler handle\ncause slow\nslow 150%\n",
    "empty.scenario": b"",
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_input_one_line_error(liveprof, tmp_path, name):
    import gzip
    data = MALFORMED[name]
    if data is None:
        data = gzip.compress(b"\x0a\xff\xff\xff\xff\x0f" + b"\x12\x05abc")
    src = tmp_path / name
    src.write_bytes(data)
    flag = "--scenario" if name.endswith(".scenario") else "--from"
    r = subprocess.run([str(liveprof), "emit", flag, str(src), "-o", str(tmp_path / "o.c")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, f"rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, f"expected a one-line error, got:\n{r.stderr}"
    assert lines[0].startswith("liveprof: ") and str(src) in lines[0], lines[0]
    assert not (tmp_path / "o.c").exists()


@pytest.mark.parametrize("trace", [[], ["--trace", "libc:malloc"], ["--trace", "foo"]])
def test_fifo_as_command_refused(liveprof, tmp_path, trace):
    """A FIFO (executable bits and all) as the command: exec refuses it,
    and liveprof says so at once with exit status 3. With a trace, the
    command's file used to be opened to classify it and to resolve the
    spec before the exec, and the open waited for a writer for ever."""
    fifo = tmp_path / "cmd"
    os.mkfifo(fifo, 0o755)
    r = subprocess.run([str(liveprof), "--no-tui", *trace, "--", str(fifo)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 3, f"rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and str(fifo) in lines[0], r.stderr


def test_ringbuf_overflow_reports_lost(liveprof, wl, procs, tmp_path):
    """A 1 MiB ring buffer at 20 kHz with off-CPU on: events are lost,
    the loss is reported (JSON and stdout) and nothing breaks."""
    p = procs.start([wl("bench_deep"), "2"])
    jpath = tmp_path / "r.json"
    lp = Live(liveprof, ["-p", p.pid, "-F", "20000", "--ringbuf-mb", "1", "--offcpu",
                         "-d", "4", "--json", jpath, "-o", tmp_path / "r.folded"])
    lp.wait_ready()
    # stall the daemon so the ring buffer has no choice but to fill up
    lp.proc.send_signal(signal.SIGSTOP)
    time.sleep(1.5)
    lp.proc.send_signal(signal.SIGCONT)
    rc = lp.finish()
    assert rc == 0, lp.result()
    j = json.loads(jpath.read_text())
    assert j["lost"] > 0, f"nothing lost with a 1 MiB ring buffer: {j['samples']} samples"
    assert j["samples"] > 0
    out = "".join(lp.lines) + "".join(lp.err)
    assert "lost" in out and str(j["lost"]) in out, out[-2000:]
    assert p.poll() is None


def test_fork_exec_storm_and_thread_storm(liveprof, wl, procs, tmp_path):
    """Children that exec /bin/true in a loop, and 1,000 short-lived threads,
    in two targets profiled at once."""
    fe = procs.start([wl("bench_forkexec"), "600"])
    ts = procs.start([wl("bench_threadstorm"), "1000", "-1", "10"], stdout=subprocess.PIPE,
                     text=True)
    _wait_started(ts, "ready")
    jpath = tmp_path / "f.json"
    lp = Live(liveprof, ["-p", f"{fe.pid},{ts.pid}", "-F", "999", "-d", "3", "--json", jpath,
                         "-o", tmp_path / "f.folded"])
    lp.wait_ready()
    ts.send_signal(signal.SIGUSR1)
    rc = lp.finish()
    assert rc == 0, lp.result()
    j = json.loads(jpath.read_text())
    assert j["samples"] > 0
    names = {f for s in parse_folded(tmp_path / "f.folded") for f in s.split(";")}
    assert "spin" in names, sorted(names)[:40]
    assert "thread_work" in names, "no sample from the short-lived threads"
    out, _ = ts.communicate(timeout=30)
    assert "threads 1000" in out
    assert fe.poll() is None, "the fork/exec target died"
