"""Source lines and debug info from wherever they are (issue 18).

A real debuginfod server (Debian's `debuginfod`) runs on loopback for the
module, indexing a directory that holds only the debug file of the `annot`
workload (`objcopy --only-keep-debug`). liveprof profiles a stripped copy
(no .symtab, no DWARF, no .gnu_debuglink): every name, line, probe and
source must come through the server.

Truth: tests/workloads/annot.c runs loop A n times and loop B 3n times over
the same machine code, so loop A holds 1/4 of work()'s CPU time. The line
numbers are read from the LINE_* markers of the source; the lines liveprof
may name are those eu-addr2line gives for work()'s bytes in the unstripped
binary.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

import stats
from lputil import BUILD, LIVEPROF, ROOT, ensure_built, tmux, tmux_close

WORKLOAD = os.path.join(BUILD, "annot")
SOURCE = os.path.join(ROOT, "tests", "workloads", "annot.c")

# Loop A's share of work(): 1/4 by construction. The same instructions run
# 1:3 times, but the two copies sit at different addresses and the other
# core is busy; perf annotate measures 25-27% here. The allowance is the
# issue's "within 3 points"; binomial noise comes on top of it.
LOOP_A_SHARE = 0.25
ALLOWANCE = 0.03


def marker_lines():
    """{marker: line number} of the LINE_* comments in annot.c."""
    out = {}
    with open(SOURCE) as f:
        for no, text in enumerate(f, 1):
            m = re.search(r"/\* (LINE_[A-Z_]+) \*/", text)
            if m:
                out[m.group(1)] = no
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_id(path):
    r = subprocess.run(["eu-readelf", "-n", path], capture_output=True, text=True, check=True)
    return re.search(r"Build ID: ([0-9a-f]+)", r.stdout).group(1)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(url, stripped binary, build-id, tmp dir) with debuginfod serving annot's debug file."""
    ensure_built(["annot"])
    if not shutil.which("debuginfod"):
        pytest.fail("debuginfod is not installed: run `make deps` (Debian package debuginfod)")
    tmp = tmp_path_factory.mktemp("debuginfod")
    dbg = tmp / "debug"
    dbg.mkdir()
    subprocess.run(["objcopy", "--only-keep-debug", WORKLOAD, str(dbg / "annot.debug")],
                   check=True)
    stripped = tmp / "annot"
    subprocess.run(["objcopy", "--strip-all", WORKLOAD, str(stripped)], check=True)
    nm = subprocess.run(["nm", str(stripped)], capture_output=True, text=True)
    assert "work" not in nm.stdout, "the copy under test still has its symbols"
    bid = build_id(str(stripped))
    port = free_port()
    log = open(tmp / "debuginfod.log", "w")
    proc = subprocess.Popen(["debuginfod", "-p", str(port), "-d", str(tmp / "index.sqlite"),
                             "-F", str(dbg)], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{url}/buildid/{bid}/debuginfo", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                pass
            assert proc.poll() is None, "debuginfod exited: " + open(tmp / "debuginfod.log").read()
            assert time.time() < deadline, "debuginfod did not index the debug file in 30 s"
            time.sleep(0.2)
        yield url, str(stripped), bid, tmp
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def client_env(url, cache):
    env = dict(os.environ, DEBUGINFOD_URLS=url, DEBUGINFOD_CACHE_PATH=str(cache))
    env.pop("DEBUGINFOD_PROGRESS", None)
    return env


def addr2line_lines(func):
    """Every line eu-addr2line gives for the bytes of @func in the unstripped binary."""
    nm = subprocess.run(["nm", "-S", WORKLOAD], capture_output=True, text=True, check=True)
    m = re.search(r"^([0-9a-f]+) ([0-9a-f]+) T " + func + "$", nm.stdout, re.M)
    start, size = int(m.group(1), 16), int(m.group(2), 16)
    addrs = [hex(a) for a in range(start, start + size)]
    r = subprocess.run(["eu-addr2line", "-e", WORKLOAD, "-i"] + addrs, capture_output=True,
                       text=True, check=True)
    return {int(x) for x in re.findall(r"annot\.c:(\d+)", r.stdout)}


def test_stripped_binary_names_lines_and_probe(server, tmp_path):
    """Stacks, file:line, --trace FUNC and --trace FILE:LINE of a stripped binary,
    through debuginfod."""
    url, stripped, bid, _ = server
    cache = tmp_path / "cache"
    folded, js = tmp_path / "out.folded", tmp_path / "out.json"
    t0 = time.time()
    ret_line = f"annot.c:{marker_lines()['LINE_RET']}"
    r = subprocess.run([LIVEPROF, "--no-tui", "--lines", "-F", "499", "-d", "2", "--top", "0",
                        "--trace", "work", "--trace", ret_line, "-o", str(folded),
                        "--json", str(js), "--", stripped, "4"],
                       capture_output=True, text=True, timeout=60, env=client_env(url, cache))
    assert r.returncode == 0, r.stderr
    assert time.time() - t0 < 45, "a local server must not slow the run down"
    assert "debuginfod: debuginfo of 'annot'" in r.stderr, r.stderr
    assert os.path.exists(cache / bid / "debuginfo"), "nothing in the debuginfod cache"
    counts = {}
    for line in folded.read_text().splitlines():
        stack, n = line.rsplit(" ", 1)
        for fr in stack.split(";"):
            m = re.match(r"(work|step) \(annot\.c:(\d+)\)", fr)
            if m:
                counts[int(m.group(2))] = counts.get(int(m.group(2)), 0) + int(n)
    total = sum(int(l.rsplit(" ", 1)[1]) for l in folded.read_text().splitlines())
    in_work = sum(int(l.rsplit(" ", 1)[1]) for l in folded.read_text().splitlines()
                  if ";work (annot.c:" in l)
    assert counts, "no frame of work() with a line: " + folded.read_text()[:2000]
    allowed = addr2line_lines("work")
    assert set(counts) <= allowed, f"lines {sorted(counts)} not all in {sorted(allowed)}"
    # work() is most of the CPU time (dephase() is the rest); H0: >= 50%
    stats.share_at_least(in_work, total, 0.5, "samples in work() of the stripped binary")
    traces = json.loads(js.read_text())["traces"]
    assert traces[0]["function"] == "work" and traces[0]["calls"] > 100, traces
    # FILE:LINE through the fetched line table: the return line runs once per call
    calls, hits = traces[0]["calls"], traces[1]["calls"]
    assert traces[1]["kind"] == "line" and abs(hits - calls) <= max(5, calls // 50), traces


def loop_shares(text, lines):
    """(loop A self, loop B self, work self, rows) from work()'s source section."""
    sec = text.split("== work ", 1)[1].split("\n== ", 1)[0]
    rows = {}
    for row in sec.split("address", 1)[0].splitlines():
        m = re.match(r"\s+(\d+)\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(\d+) (.{4})", row)
        if m:
            rows[int(m.group(3))] = (int(m.group(1)), m.group(4), row)
    self_work = int(re.search(r"samples: self (\d+)", sec).group(1))
    a = sum(rows.get(lines[k], (0,))[0] for k in ("LINE_A_FOR", "LINE_A_BODY"))
    b = sum(rows.get(lines[k], (0,))[0] for k in ("LINE_B_FOR", "LINE_B_BODY"))
    return a, b, self_work, rows, sec


def test_annotate_stripped_with_source_from_debuginfod(server, tmp_path):
    """annotate.txt of the stripped binary: per-line shares against the truth, the
    inlined call folded under its line, loops marked, and the source text fetched from
    debuginfod (the source tree is hidden from liveprof by a private mount)."""
    url, stripped, _, _ = server
    out = tmp_path / "annotate.txt"
    wl_dir = os.path.dirname(SOURCE)
    cmd = [LIVEPROF, "--no-tui", "-F", "999", "-d", "4", "--top", "0", "-o", str(out),
           "--", stripped, "6"]
    sh = f"mount -t tmpfs none {wl_dir} && exec " + " ".join(cmd)
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", sh],
                       capture_output=True, text=True, timeout=60,
                       env=client_env(url, tmp_path / "cache"))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    lines = marker_lines()
    a, b, self_work, rows, sec = loop_shares(text, lines)
    assert "debug info: debuginfod" in sec, sec[:600]
    assert "(debuginfod)" in sec.split("\n")[3], "source not from debuginfod:\n" + sec[:600]
    assert "LINE_B_BODY" in rows[lines["LINE_B_BODY"]][2], "source text missing"
    assert lines["LINE_STEP"] not in rows, "inlined step() not folded under its call line"
    assert "[inlined: step]" in rows[lines["LINE_B_BODY"]][2]
    assert "L" in rows[lines["LINE_A_FOR"]][1] and "L" in rows[lines["LINE_B_FOR"]][1]
    n = a + b
    # +-3 points needs no more: the binomial noise of 200 samples is about as wide
    stats.enough(n, 200, "samples in work()'s two loops")
    assert n >= 0.95 * self_work, f"only {n} of work()'s {self_work} self samples on loop lines"
    rate = stats.RATE / 2
    lo, _ = stats.acceptance(n, LOOP_A_SHARE - ALLOWANCE, rate)
    _, hi = stats.acceptance(n, LOOP_A_SHARE + ALLOWANCE, rate)
    stats.record("loop A's share of work() in annotate.txt", stats.RATE)
    assert lo <= a <= hi, (f"loop A: {a}/{n} = {100 * a / n:.1f}% of work(), truth 25% "
                           f"(+-3 points): outside {lo}..{hi}\n{sec[:2500]}")


def mapped_libraries(pid):
    """The file names of the shared objects process PID has mapped."""
    with open(f"/proc/{pid}/maps") as f:
        return {os.path.basename(l.split()[-1]) for l in f if ".so" in l}


def libraries_while_running(cmd, env, ready, stream):
    """Run liveprof CMD until a line of its STREAM ("stdout" or "stderr")
    satisfies READY, then the shared objects it has mapped; it is then
    stopped with SIGINT."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    seen = []
    try:
        for line in getattr(p, stream):
            seen.append(line)
            if ready(line):
                return mapped_libraries(p.pid), "".join(seen)
        pytest.fail("liveprof ended before it was ready:\n" + "".join(seen))
    finally:
        p.send_signal(2)
        p.communicate(timeout=30)


def test_debuginfod_client_loaded_on_first_query(server, tmp_path):
    """libdebuginfod (and the libcurl, Kerberos and LDAP it brings) is opened
    on the first query only: linked, its constructors cost every start 3.6 ms.
    Without DEBUGINFOD_URLS none of it is mapped while liveprof samples; with
    a query, it is, and the query works (test_stripped_binary_names_lines_and_probe
    checks what it brings)."""
    url, stripped, _, _ = server
    env = dict(os.environ)
    env.pop("DEBUGINFOD_URLS", None)
    libs, _ = libraries_while_running(
        [LIVEPROF, "--no-tui", "-F", "99", "--interval", "0.2", "--top", "0", "--",
         WORKLOAD, "6"], env, lambda l: re.match(r"^--- .*: [1-9][0-9]* samples", l), "stdout")
    assert any(l.startswith("libdw") for l in libs), libs
    assert not {l for l in libs if l.startswith(("libdebuginfod", "libcurl", "libkrb5", "libldap"))}, libs
    libs, err = libraries_while_running(
        [LIVEPROF, "--no-tui", "-F", "99", "--top", "0", "--trace", "work", "--",
         stripped, "6"], client_env(url, tmp_path / "cache"),
        lambda l: "debuginfod: debuginfo of 'annot'" in l, "stderr")
    assert any(l.startswith("libdebuginfod") for l in libs), (libs, err)


def test_annotate_source_path_and_mismatch(tmp_path):
    """--source-path finds the file when the DWARF path is gone; a file shorter than
    the code's lines is flagged, never shown as the source; without any source the
    listing still comes, with where it looked."""
    ensure_built(["annot"])
    wl_dir = os.path.dirname(SOURCE)
    short, full = tmp_path / "short", tmp_path / "full"
    short.mkdir()
    full.mkdir()
    (short / "annot.c").write_text("/* an old version */\nint main(void) { return 0; }\n")
    shutil.copy(SOURCE, full / "annot.c")
    env = dict(os.environ)
    env.pop("DEBUGINFOD_URLS", None)
    out = {}
    for what, extra in (("short", ["--source-path", str(short)]),
                        ("full", ["--source-path", str(full)]), ("none", [])):
        out[what] = tmp_path / f"{what}.annotate"
        cmd = [LIVEPROF, "--no-tui", "-F", "499", "-d", "1", "--top", "0", *extra,
               "-o", str(out[what]), "--", WORKLOAD, "2"]
        sh = f"mount -t tmpfs none {wl_dir} && exec " + " ".join(cmd)
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", sh],
                           capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 0, r.stderr
    text = {k: v.read_text().split("== work ", 1)[1].split("\n== ", 1)[0] for k, v in out.items()}
    assert "MISMATCH" in text["short"] and "int main" not in text["short"], text["short"][:800]
    assert f"'{full / 'annot.c'}' (--source-path)" in text["full"], text["full"][:800]
    assert "LINE_A_BODY" in text["full"] and "MISMATCH" not in text["full"]
    assert "source: not found; looked at" in text["none"], text["none"][:800]
    assert SOURCE in text["none"] and "DEBUGINFOD_URLS not set" in text["none"]
    assert "jcc work+0x" in text["none"], "no disassembly without the source"


def test_unreachable_server_costs_timeout_once(tmp_path):
    """A server that accepts and never answers: the profile is still written, and the
    time-out is paid once per build-id, not per address. Without any symbol, each
    function is still one frame, named after its .eh_frame FDE's start."""
    ensure_built(["annot"])
    stripped = tmp_path / "annot"
    subprocess.run(["objcopy", "--strip-all", WORKLOAD, str(stripped)], check=True)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    folded = tmp_path / "out.folded"
    try:
        t0 = time.time()
        r = subprocess.run([LIVEPROF, "--no-tui", "-F", "499", "-d", "1", "--top", "0",
                            "--debuginfod-timeout", "2", "-o", str(folded),
                            "--", str(stripped), "3"], capture_output=True, text=True,
                           timeout=60, env=client_env(url, tmp_path / "cache"))
        took = time.time() - t0
    finally:
        silent.close()
    assert r.returncode == 0, r.stderr
    text = folded.read_text()
    assert text.strip(), "no profile written"
    # no symbols anywhere: one frame per function, named by its FDE's start
    nm = subprocess.run(["nm", WORKLOAD], capture_output=True, text=True, check=True).stdout
    funcs = {int(a, 16): n for a, t, n in (l.split() for l in nm.splitlines() if len(l.split()) == 3)
             if t in "Tt"}
    work = next(a for a, n in funcs.items() if n == "work")
    names = set(re.findall(r"\[annot\+0x([0-9a-f]+)\]", text))
    assert f"{work:x}" in names, f"work() not one frame [annot+0x{work:x}]: {sorted(names)}"
    assert {int(a, 16) for a in names} <= set(funcs), f"{sorted(names)} are not all function starts"
    # every query that waits is reported once: annot's, and no other (libc and
    # ld.so have their debug files in /usr/lib/debug from libc6-dbg)
    waits = [l for l in r.stderr.splitlines() if "debuginfod:" in l]
    assert len(waits) == 1 and "debuginfo of 'annot': not found" in waits[0], r.stderr
    secs = float(re.search(r"\(([\d.]+) s\)", waits[0]).group(1))
    assert 1.5 <= secs <= 4, f"the 2 s time-out took {secs} s"
    # 1 s of profiling and one 2 s time-out; the rest is start-up on a busy machine
    assert took < 30, f"took {took:.1f} s"


# ---- the TUI's Source view, driven in tmux as a person would ----------------

COLS, ROWS = 160, 40


class Pane:
    def __init__(self, name):
        self.name = name

    def screen(self):
        return tmux(self.name, "capture-pane", "-p", "-t", self.name, check=False).rstrip("\n").split("\n")

    def wait(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        while True:
            s = self.screen()
            got = pred(s)
            if got:
                return got
            if time.monotonic() > deadline:
                pytest.fail(f"{what} within {timeout}s; screen:\n" + "\n".join(s))
            time.sleep(0.1)

    def keys(self, *keys):
        tmux(self.name, "send-keys", "-t", self.name, *keys)

    def type(self, text):
        tmux(self.name, "send-keys", "-t", self.name, "-l", text)


def source_rows(screen, lines):
    """{marker: (self samples, marks, hits or None)} of the Source view's rows."""
    out = {}
    for row in screen:
        for marker, no in lines.items():
            if f"/* {marker} */" not in row:
                continue
            m = re.match(r"\s*(?:(\d+)\s+[\d.]+%\s+#*\s+[\d.]+%)?\s+(\d+) (.{6}) (.{32}) ", row)
            if m and int(m.group(2)) == no:
                hits = re.match(r"\s*(\d+)", m.group(4))
                out[marker] = (int(m.group(1) or 0), m.group(3),
                               int(hits.group(1)) if hits else None, row)
    return out


def test_tui_source_view(server, tmp_path):
    """Key 5 on the hot function: per-line shares against the truth, marks, then
    Enter probes LINE_A_BODY (hits rise), Enter removes it, d shows the loop's
    backward jump. The binary is the stripped copy: all through debuginfod."""
    url, stripped, _, _ = server
    lines = marker_lines()
    target = subprocess.Popen([stripped, "120"], stdout=subprocess.DEVNULL)
    name = f"lpsrc{os.getpid()}"
    env = f"DEBUGINFOD_URLS={url} DEBUGINFOD_CACHE_PATH={tmp_path / 'cache'}"
    tmux(name, "new-session", "-d", "-s", name, "-x", str(COLS), "-y", str(ROWS), "sh", "-c",
         f"env {env} {LIVEPROF} -F 999 --debuginfod-timeout 30 -p {target.pid}; "
         "echo EXITED $?; sleep 60")
    pane = Pane(name)
    try:
        # a busy machine slows BPF loading and the first fetch: wait as a person would
        pane.wait(lambda s: "?:help" in s[-1] and re.search(r"\swork\s*$", "\n".join(s), re.M),
                  60, "no samples of 'work' in Top")
        # select work() in Top (the filter leaves it alone on top), then open its source
        pane.keys("/")
        pane.type("work")
        pane.keys("Enter")
        time.sleep(0.3)
        pane.keys("5")
        rows = pane.wait(lambda s: (lambda r: r if len(r) == 4 and sum(
            r[k][0] for k in r) >= 600 else None)(
            {k: v for k, v in source_rows(s, lines).items() if k.startswith("LINE_A")
             or k.startswith("LINE_B")}), 30, "600 samples on work()'s loop lines")
        scr = "\n".join(pane.screen())
        assert "work in annot" in scr and "debug info: debuginfod" in scr, scr
        a = rows["LINE_A_FOR"][0] + rows["LINE_A_BODY"][0]
        n = a + rows["LINE_B_FOR"][0] + rows["LINE_B_BODY"][0]
        rate = stats.RATE / 2
        lo, _ = stats.acceptance(n, LOOP_A_SHARE - ALLOWANCE, rate)
        _, hi = stats.acceptance(n, LOOP_A_SHARE + ALLOWANCE, rate)
        stats.record("loop A's share of work() in the Source view", stats.RATE)
        assert lo <= a <= hi, f"loop A {a}/{n}, outside {lo}..{hi}:\n{scr}"
        assert "L" in rows["LINE_A_FOR"][1] and "L" in rows["LINE_B_FOR"][1], scr
        assert "[inlined: step]" in rows["LINE_B_BODY"][3], scr

        pane.keys("Escape")  # clear Top's filter, then search the source
        time.sleep(0.3)
        pane.keys("/")
        pane.type("LINE_A_BODY")
        pane.keys("Enter")
        time.sleep(0.3)
        pane.keys("Enter")
        spec = f"annot.c:{lines['LINE_A_BODY']}"
        h1 = pane.wait(lambda s: source_rows(s, lines).get("LINE_A_BODY", (0, 0, None))[2],
                       20, f"hits of the probe on {spec}")
        time.sleep(1.5)
        h2 = pane.wait(lambda s: (lambda h: h if h and h > h1 else None)(
            source_rows(s, lines).get("LINE_A_BODY", (0, 0, None))[2]), 10,
            "the hit count rising")
        assert h2 > h1
        pane.keys("Enter")
        pane.wait(lambda s: f"removed the probe on {spec}" in "\n".join(s), 10,
                  "the probe removed by Enter")
        pane.keys("d")
        pane.wait(lambda s: "(loop)" in "\n".join(s) and "[disassembly]" in "\n".join(s), 10,
                  "the disassembly with the loop's backward jump")
        pane.keys("q")
        pane.wait(lambda s: any("EXITED 0" in l for l in s), 20, "liveprof exiting with 0")
    finally:
        tmux_close(name)
        target.kill()
        target.wait(timeout=5)


def test_libc_argument_from_installed_debug_file(tmp_path):
    """Argument capture reads DWARF from /usr/lib/debug/.build-id (libc6-dbg):
    'libc.so.6:malloc(bytes)' used to exit 8 with "has no DWARF". allocs.c mallocs
    4 blocks of 4096 bytes and one of 1024 per round."""
    ensure_built(["allocs"])
    js = tmp_path / "out.json"
    r = subprocess.run([LIVEPROF, "--no-tui", "-d", "1", "--top", "0", "--json", str(js),
                        "--trace", "libc.so.6:malloc(bytes)", "--",
                        os.path.join(BUILD, "allocs"), "200", str(tmp_path / "allocs.out")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    vals = json.loads(js.read_text())["traces"][0]["values"][0]
    assert vals["type"] == "size_t", vals
    top = {v["value"]: v["count"] for v in vals["top"]}
    assert top.get("4096", 0) >= 4 * 200 and top.get("1024", 0) >= 200, top


def test_ret_of_stripped_library_needs_no_dwarf(tmp_path):
    """'LIB:FUNC(ret)' on a library without DWARF reads rax (bpftrace's retval):
    libwl.c's lib_call(x) returns 2 * x, and uselib calls it with x = calls & 7."""
    ensure_built(["uselib", "libwl.so"])
    for f in ("uselib", "libwl.so"):
        shutil.copy(os.path.join(BUILD, f), tmp_path / f)
    subprocess.run(["strip", "--strip-all", str(tmp_path / "libwl.so")], check=True)
    target = subprocess.Popen([str(tmp_path / "uselib"), "30"], stdout=subprocess.DEVNULL)
    js = tmp_path / "out.json"
    try:
        time.sleep(0.3)
        r = subprocess.run([LIVEPROF, "--no-tui", "-d", "1", "--top", "0", "--json", str(js),
                            "--trace", "libwl.so:lib_call(ret)", "-p", str(target.pid)],
                           capture_output=True, text=True, timeout=60)
    finally:
        target.kill()
        target.wait(timeout=5)
    assert r.returncode == 0, r.stderr
    vals = json.loads(js.read_text())["traces"][0]["values"][0]
    assert "no DWARF" in vals["type"] and vals["at_return"], vals
    top = {int(v["value"]): v["count"] for v in vals["top"]}
    assert set(top) <= {2 * x for x in range(8)} and len(top) == 8, top
    n = sum(top.values())
    stats.shares(top, {2 * x: 1 / 8 for x in range(8)}, "lib_call's return values")
    assert n > 100


def test_split_dwarf_dwo(tmp_path):
    """-gsplit-dwarf: the inline chain, annotate's folded call line and argument
    capture come from the .dwo next to the binary."""
    exe = tmp_path / "annot_dwo"
    subprocess.run(["gcc", "-O1", "-g", "-gsplit-dwarf", "-fno-omit-frame-pointer",
                    "-fno-optimize-sibling-calls", "-fno-inline",
                    "-I", os.path.dirname(SOURCE), "-o", str(exe), SOURCE],
                   check=True, cwd=tmp_path)
    assert list(tmp_path.glob("*.dwo")), "gcc wrote no .dwo"
    lines = marker_lines()
    folded, js, ann = tmp_path / "o.folded", tmp_path / "o.json", tmp_path / "o.annotate"
    r = subprocess.run([LIVEPROF, "--no-tui", "--lines", "-F", "499", "-d", "1", "--top", "0",
                        "--trace", "work(n, m)", "-o", str(folded), "-o", str(ann),
                        "--json", str(js), "--", str(exe), "3"],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    step = f"work (annot.c:{lines['LINE_B_BODY']});step (annot.c:{lines['LINE_STEP']})_[i]"
    assert step in folded.read_text(), folded.read_text()[:1500]
    assert "[inlined: step]" in ann.read_text()
    vals = json.loads(js.read_text())["traces"][0]["values"]
    assert [v["top"][0]["value"] for v in vals] == ["200000", "600000"], vals


def test_http_source_page(tmp_path):
    """GET /source?function=work on --http: the per-line text of the Source view."""
    ensure_built(["annot"])
    port = free_port()
    proc = subprocess.Popen([LIVEPROF, "--no-tui", "-F", "499", "-d", "20", "--top", "0",
                             "--http", f"127.0.0.1:{port}", "--", WORKLOAD, "20"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/source?function=work"
    try:
        deadline, text = time.time() + 20, ""
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    text = r.read().decode()
                    ctype = r.headers["Content-Type"]
                if re.search(r"^\s+\d+ .*LINE_A_BODY", text, re.M):
                    break
            except (urllib.error.URLError, ConnectionError):
                pass
            time.sleep(0.3)
        assert ctype.startswith("text/plain")
        assert "== work " in text and re.search(r"^\s+\d+ .*LINE_A_BODY", text, re.M), text
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url + "&view=bogus", timeout=5)
        assert e.value.code == 400
    finally:
        proc.terminate()
        proc.wait(timeout=20)
