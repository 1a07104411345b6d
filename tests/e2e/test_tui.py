"""The terminal UI, driven as a person would: the real binary in tmux
(send-keys, capture-pane) against tests/workloads/tui_handler.c, a loop that
calls handle(i); one call in 32 also calls slow_path(), which does 50x the
work. Every expectation comes from that source: work() is the hot leaf,
handle() calls work() and slow_path(), and the slow 5% of handle() calls (p95)
hold every call that calls slow_path().

Run as root: /usr/bin/python3 -m pytest tests/e2e/test_tui.py
"""

import os
import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from lputil import tmux, tmux_close

ROOT = Path(__file__).resolve().parents[2]
LIVEPROF = ROOT / "liveprof"
WORKLOAD = ROOT / "tests" / "build" / "tui_handler"
COLS, ROWS = 120, 40

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (BPF)")


def ensure_built():
    if LIVEPROF.exists() and WORKLOAD.exists():
        return
    r = subprocess.run(["make", "-s", "liveprof", "workloads"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0, "make failed:\n" + r.stdout + r.stderr


class Tui:
    """liveprof in a detached tmux pane, inside a shell that reports how it
    ended and whether the terminal modes came back."""

    def __init__(self, tmp):
        self.tmp = Path(tmp)
        self.name = f"lptui{os.getpid()}_{int(time.monotonic() * 1000) % 100000}"
        self.target = None
        self.started = False

    def start(self, extra="", warm=True, mode=(), seconds=120):
        self.target = subprocess.Popen([str(WORKLOAD), str(seconds), *mode],
                                       stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
        time.sleep(0.2)
        assert self.target.poll() is None, "workload exited early"
        before, after = self.tmp / "stty.before", self.tmp / "stty.after"
        # The shell traps SIGINT so that Ctrl-C reaches liveprof and the
        # shell lives on to report how liveprof ended.
        cmd = (f"trap true INT; stty -g > {before}; "
               f"{shlex.quote(str(LIVEPROF))} -p {self.target.pid} {extra}; "
               f"echo EXITED $?; stty -g > {after}; sleep 60")
        tmux(self.name, "new-session", "-d", "-s", self.name, "-x", str(COLS), "-y",
             str(ROWS), "sh", "-c", cmd)
        self.started = True
        # The UI is up once its status line and help bar are drawn.
        self.wait(lambda s: "liveprof" in s[0] and "?:help" in s[-1], 30,
                  "the UI never came up")
        if warm:
            # First samples symbolized: what a person waits for before typing.
            self.wait(lambda s: any(top_row(l, "work") for l in self.content(s)), 20,
                      "no samples of 'work' in Top")
        return self

    def screen(self):
        out = tmux(self.name, "capture-pane", "-p", "-t", self.name, check=False)
        lines = out.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return lines

    def text(self):
        return "\n".join(self.screen())

    def wait(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        while True:
            s = self.screen()
            # A capture can land in the middle of a redraw (the new view's
            # top rows above the old view's bottom rows): a screen counts
            # once a second capture, a moment later, satisfies it too.
            if pred(s):
                time.sleep(0.05)
                again = self.screen()
                if pred(again):
                    return again
                continue
            if time.monotonic() > deadline:
                pytest.fail(f"{what} within {timeout}s; screen:\n" + "\n".join(s))
            time.sleep(0.1)

    def keys(self, *keys):
        tmux(self.name, "send-keys", "-t", self.name, *keys)

    def type(self, text):
        # -l: literal, so that "q" in a word is not a key binding of tmux.
        tmux(self.name, "send-keys", "-t", self.name, "-l", text)

    def command(self, line):
        self.keys(":")
        self.wait(lambda s: s[-1].startswith(":"), 3, "the prompt did not open")
        self.type(line)
        self.keys("Enter")

    def content(self, s=None):
        """Rows between the column header and the message line."""
        s = s or self.screen()
        return s[3:len(s) - 2]

    def alive(self):
        return "EXITED" not in self.text()

    def close(self):
        if self.started:
            tmux_close(self.name)
        if self.target and self.target.poll() is None:
            self.target.kill()
            self.target.wait(timeout=5)


@pytest.fixture
def tui(tmp_path):
    ensure_built()
    t = Tui(tmp_path)
    yield t
    t.close()


def top_row(line, name):
    """A Top row: self%, samples, cum%, samples, function."""
    return re.match(r"\s*[\d.]+%\s+\d+\s+[\d.]+%\s+\d+\s+" + re.escape(name) + r"\s*$",
                    line) is not None


def test_hot_function_in_top_within_2s(tui):
    tui.start(warm=False)
    t0 = time.monotonic()
    s = tui.wait(lambda s: any(top_row(l, "work") for l in tui.content(s)), 2.0,
                 "the hot function 'work' did not show in Top")
    assert time.monotonic() - t0 <= 2.5
    # work() is the leaf of every stack: it must be the first row by self.
    rows = [l for l in tui.content(s) if l.strip()]
    assert top_row(rows[0], "work"), rows


def top_cum(line, name):
    """The cumulative samples of a Top row of @name, else 0."""
    m = re.match(r"\s*[\d.]+%\s+\d+\s+[\d.]+%\s+(\d+)\s+" + re.escape(name) + r"\s*$", line)
    return int(m.group(1)) if m else 0


def test_tree_zoom_shows_only_the_subtree(tui):
    tui.start()
    # handle's two callees both drawn: work directly has 1/2.56 of handle's
    # samples (tui_handler.c), so 60 samples of handle miss it with
    # probability (1 - 1/2.56)^60 < 1e-12; a loaded machine's first few
    # samples could all be in slow_path (seen once in a fresh clone).
    tui.wait(lambda s: any(top_row(l, "slow_path") for l in tui.content(s)) and
             max(top_cum(l, "handle") for l in tui.content(s)) >= 60, 20,
             "no 60 samples in handle, with slow_path among them")
    tui.keys("2")
    tui.wait(lambda s: "CALL TREE" in s[2], 3, "the Tree view did not open")
    tui.keys("/")
    tui.type("handle")
    tui.keys("Enter")
    time.sleep(0.3)
    tui.keys("Enter")
    s = tui.wait(lambda s: "zoomed: handle" in s[2], 3, "Enter did not zoom into handle")
    names = [l.split()[-1] for l in tui.content(s) if re.match(r"\s*[\d.]+%", l)]
    assert names and names[0] == "handle", names
    assert "slow_path" in names and "work" in names, names
    # Only handle's subtree: none of its callers.
    for caller in ("main", "_start", "__libc_start_main", "tui_handler"):
        assert caller not in names, names
    # :save in a zoomed Tree writes the samples under the zoomed frame only.
    out = tui.tmp / "zoom.folded"
    tui.command(f"save {out}")
    tui.wait(lambda s: "zoomed frame" in s[-2], 10, "no confirmation of :save")
    stacks = [l.rpartition(" ")[0].split(";") for l in out.read_text().splitlines()]
    assert stacks and all("handle" in st for st in stacks), stacks
    # Enter on the frame zoomed into offers to trace it (a pre-filled prompt).
    tui.keys("Enter")
    tui.wait(lambda s: s[-1].rstrip() == ":trace handle", 3, "Enter did not offer a trace")
    tui.keys("Escape")
    tui.wait(lambda s: s[-1].startswith("?:help"), 3, "Esc did not close the prompt")
    # The same zoom drawn as an icicle: handle spans the width, its callees below.
    tui.keys("i")
    s = tui.wait(lambda s: "ICICLE zoomed: handle" in s[2], 3, "no icicle view")
    assert s[3].split()[0] == "handle", s[3]
    assert "slow_path" in s[4] and "work" in s[4], s[4]
    tui.keys("i")
    tui.wait(lambda s: "zoomed: handle" in s[2] and "ICICLE" not in s[2], 3, "i: back to list")
    # Backspace goes back to the whole tree.
    tui.keys("BSpace")
    s = tui.wait(lambda s: "zoomed" not in s[2], 3, "Backspace did not zoom out")
    assert "main" in [l.split()[-1] for l in tui.content(s) if l.strip()]


def test_split_ranks_slow_path_first(tui):
    tui.start()
    tui.command("split handle")

    def ranked(s):
        rows = [l for l in tui.content(s)[1:] if re.match(r"\s*[\d.]+%\s+[\d.]+%\s+[-+]", l)]
        return rows and rows[0].split()[-1] == "slow_path"

    s = tui.wait(ranked, 30, "the Split view did not rank slow_path first")
    assert "handle at p95" in s[2], s[2]
    # Red rows need a significant positive delta for slow_path.
    first = [l for l in tui.content(s)[1:] if "slow_path" in l][0]
    assert "+" in first.split()[2], first
    # The Latency view shows the trace with its percentiles.
    tui.keys("3")
    s = tui.wait(lambda s: any(l.split()[:1] == ["handle"] for l in s[3:6]), 3,
                 "handle missing from the Latency view")
    assert any("<- p95" in l for l in s), "the split threshold is not marked"


def test_trace_error_keeps_the_ui_running(tui):
    tui.start()
    tui.command("trace nosuchfn")
    tui.wait(lambda s: "nosuchfn" in s[-2], 15, "no error shown for nosuchfn")
    assert tui.alive()
    tui.command("frobnicate")
    tui.wait(lambda s: "unknown command" in s[-2], 3, "no error for an unknown command")
    # Still live: Top keeps showing samples afterwards.
    tui.keys("1")
    tui.wait(lambda s: any(top_row(l, "work") for l in tui.content(s)), 5,
             "Top stopped updating after an error")
    assert tui.alive()


def test_save_writes_a_valid_folded_file(tui, tmp_path):
    out = tmp_path / "x.folded"
    tui.start()
    # saved at once, the first samples of all could miss slow_path: its
    # stacks are 1 - 1/2.56 of handle's (tui_handler.c), so 60 samples of
    # handle miss it with probability 0.39^60 < 1e-24 (saved as soon as work
    # showed, it failed once in make test, with no slow_path in the file)
    tui.wait(lambda s: any(top_row(l, "slow_path") for l in tui.content(s)) and
             max(top_cum(l, "handle") for l in tui.content(s)) >= 60, 20,
             "no 60 samples in handle, with slow_path among them")
    tui.command(f"save {out}")
    tui.wait(lambda s: "wrote" in s[-2], 10, "no confirmation of :save")
    lines = out.read_text().splitlines()
    assert lines
    total = 0
    for line in lines:
        stack, _, n = line.rpartition(" ")
        assert stack and n.isdigit(), line
        total += int(n)
    assert total > 0
    assert any(l.split(" ")[0].split(";")[-1] == "work" for l in lines)
    assert any("handle;slow_path;work" in l for l in lines)
    # An unknown extension is an error in the UI, not the end of it.
    tui.command(f"save {tmp_path / 'x.xyz'}")
    tui.wait(lambda s: "unknown format" in s[-2], 3, "no error for a bad extension")
    assert tui.alive()


def exited(tui, how):
    s = tui.wait(lambda s: any("EXITED" in l for l in s), 15, f"liveprof did not exit on {how}")
    code = [l for l in s if "EXITED" in l][0].split()[-1]
    assert code == "0", s
    # Out of the alternate screen, and the tty modes are back as they were.
    assert tmux(tui.name, "display-message", "-p", "-t", tui.name, "#{alternate_on}").strip() == "0"
    deadline = time.monotonic() + 5
    after = tui.tmp / "stty.after"
    while not after.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (tui.tmp / "stty.before").read_text() == after.read_text()


def test_q_restores_the_terminal(tui):
    tui.start()
    tui.keys("q")
    exited(tui, "q")


def test_sigint_restores_the_terminal(tui):
    tui.start()
    tui.keys("C-c")
    exited(tui, "Ctrl-C")


def test_target_exit_ends_the_ui_cleanly(tui):
    tui.start()
    # It ends once the UI is up and sampling it, however long that took (a
    # target that ran a fixed time could end first on a loaded machine).
    tui.target.terminate()
    # Reap it as a real parent would: a zombie still answers kill(pid, 0).
    tui.target.wait(timeout=20)
    exited(tui, "the target's exit")


def test_resize_to_80x24(tui):
    tui.start()
    tui.wait(lambda s: any(top_row(l, "work") for l in tui.content(s)), 10, "no samples")
    tmux(tui.name, "resize-window", "-t", tui.name, "-x", "80", "-y", "24")

    def fits(s):
        return len(s) == 24 and s[23].startswith("?:help") and "liveprof" in s[0]

    s = tui.wait(fits, 5, "the UI did not redraw at 80x24")
    assert all(len(l) <= 80 for l in s)
    tui.keys("2")
    tui.wait(lambda s: "CALL TREE" in s[2] and s[23].startswith("?:help"), 3,
             "Tree at 80x24")
    assert tui.alive()


def test_prompt_completion_and_history(tui):
    tui.start()
    tui.keys(":")
    tui.wait(lambda s: s[-1].startswith(":"), 3, "the prompt did not open")
    # Command names, then function names from the target's symbols.
    tui.type("tr")
    tui.keys("Tab")
    tui.wait(lambda s: s[-1].rstrip() == ":trace", 3, "no completion of 'tr'")
    tui.type("slow_p")
    tui.keys("Tab")
    tui.wait(lambda s: s[-1].rstrip() == ":trace slow_path", 20, "no completion of 'slow_p'")
    tui.keys("Enter")
    tui.wait(lambda s: "tracing 'slow_path'" in s[-2], 15, ":trace slow_path failed")
    tui.command("window 5")
    tui.wait(lambda s: "window 5s" in s[0], 3, "the status line does not show the window")
    # Up walks back through the history, Down comes forward again.
    tui.keys(":")
    tui.wait(lambda s: s[-1].startswith(":"), 3, "the prompt did not open")
    tui.keys("Up")
    tui.wait(lambda s: s[-1].rstrip() == ":window 5", 3, "Up did not recall ':window 5'")
    tui.keys("Up")
    tui.wait(lambda s: s[-1].rstrip() == ":trace slow_path", 3, "Up did not go further back")
    tui.keys("Down", "Down")
    tui.wait(lambda s: s[-1].rstrip() == ":", 3, "Down did not return to the empty line")
    tui.keys("Escape")
    tui.wait(lambda s: s[-1].startswith("?:help"), 3, "Esc did not close the prompt")
    assert tui.alive()


def test_pause_filter_and_help(tui):
    tui.start()
    tui.wait(lambda s: any(top_row(l, "slow_path") for l in tui.content(s)), 10, "no samples")
    tui.keys("p")
    tui.wait(lambda s: s[0].rstrip().endswith("PAUSED"), 3, "p did not pause")
    tui.keys("p")
    tui.wait(lambda s: s[0].rstrip().endswith("LIVE"), 3, "p did not resume")
    # The search string filters Top.
    tui.keys("/")
    tui.type("slow")
    tui.keys("Enter")
    s = tui.wait(lambda s: top_row(tui.content(s)[0], "slow_path"), 3, "the filter failed")
    assert not any(top_row(l, "work") for l in tui.content(s))
    tui.keys("Escape")
    tui.wait(lambda s: any(top_row(l, "work") for l in tui.content(s)), 3,
             "Esc did not clear the filter")
    tui.keys("?")
    s = tui.wait(lambda s: any("key to screen" in l for l in s), 3, "? shows no help")
    tui.keys("x")
    tui.wait(lambda s: not any("key to screen" in l for l in s), 3, "the help did not close")
    assert tui.alive()


def test_redraw_within_100ms_with_10000_stacks(tui):
    """The quality bar of the issue: with 10,000 distinct stacks interned,
    every key is on screen within 100 ms. The UI measures key-to-screen
    itself (from reading the key to doupdate) and shows it in its help."""
    tui.start(extra="-F 4999", mode=("stacks",))
    tui.keys("?")

    def stacks(s):
        m = [re.search(r"(\d+) stacks", l) for l in s]
        return max([int(x.group(1)) for x in m if x] or [0])

    tui.wait(lambda s: stacks(s) >= 10000, 90, "fewer than 10000 distinct stacks")
    tui.keys("x")
    # Keys that move over the model: views, tree walks, search, sort.
    for k in ["2", "Down", "Down", "Space", "End", "Home", "i", "Down", "Right", "i",
              "1", "s", "s", "PageDown", "3", "4", "2"]:
        tui.keys(k)
        time.sleep(0.05)
    tui.keys("/")
    tui.type("level1")
    tui.keys("Enter")
    tui.keys("n", "n", "Enter", "BSpace")
    time.sleep(0.5)
    tui.keys("?")
    s = tui.wait(lambda s: any("key to screen" in l for l in s), 3, "no help")
    line = [l for l in s if "key to screen" in l][0]
    worst = float(re.search(r"max ([\d.]+)\)", line).group(1))
    print(line.strip(" |\u2502"))
    assert stacks(s) >= 10000, line
    assert worst < 100.0, line
