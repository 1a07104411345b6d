"""Small helpers the end-to-end test files share.

ensure_built: `make test` builds everything first; a test file run by hand
may find a workload missing, and then `make liveprof workloads` runs once.
"""

import collections
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "tests", "build")
LIVEPROF = os.path.join(ROOT, "liveprof")


# How much longer a run that collects samples gets on this machine: 1 here;
# tests/kernels/vm.py sets it in its TCG guests, which run user code about
# ten times slower (and verify BPF programs in seconds, not milliseconds).
TIME_SCALE = float(os.environ.get("LIVEPROF_TIME_SCALE", "1"))


def scaled(seconds):
    """@seconds of profiling, stretched by TIME_SCALE for a slow machine."""
    return seconds * TIME_SCALE


def ensure_built(workloads):
    """Run `make liveprof workloads` if liveprof or one of @workloads is missing."""
    if os.access(LIVEPROF, os.X_OK) and all(
            os.path.exists(os.path.join(BUILD, w)) for w in workloads):
        return
    r = subprocess.run(["make", "-s", "-C", ROOT, "liveprof", "workloads"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def tmux(session, *args, check=True):
    """Run a tmux command against @session's own server (-L @session).

    Tests on two xdist workers once shared the default server: when one
    killed the server's last session, it exited as the other's new-session
    reached it ("server exited unexpectedly"). A server per session shares
    nothing; it exits with its session."""
    r = subprocess.run(["tmux", "-L", session, *args], capture_output=True, text=True)
    if check:
        assert r.returncode == 0, f"tmux {args}: {r.stderr}"
    return r.stdout


def tmux_close(session):
    """End @session's server and remove its socket (tmux leaves it behind)."""
    tmux(session, "kill-server", check=False)
    sock = os.path.join(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}", session)
    try:
        os.unlink(sock)
    except FileNotFoundError:
        pass


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), from the kernel; inf
    once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("inf")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def frames(stack):
    """The frames of a folded stack, root first, without the process root."""
    return stack.split(";")[1:]


def callers(stacks, leaf):
    """Counter: the frame right above `leaf` in the samples where it is the leaf."""
    per = collections.Counter()
    for st, n in stacks.items():
        f = frames(st)
        if f and f[-1] == leaf:
            per[f[-2] if len(f) > 1 else "(none)"] += n
    return per


def attach_on_cue(liveprof, target, args, cues):
    """Attach `liveprof -v -p TARGET ARGS` to @target, a process that waits
    on its stdin (a text-mode pipe), and tell it to go on step by step: as
    each cue of @cues (substring of liveprof's stderr -> the line to write
    to the target, in order) shows, write its line; the target's stdin is
    closed after the last cue, or when liveprof ends first. Returns
    (liveprof's return code, its stderr, the target's stdout); both have
    ended by then (liveprof stops once its target has exited)."""
    lp = subprocess.Popen([str(liveprof), "--no-tui", "--top", "0", "-F", "99", "-v", "-p",
                           str(target.pid), *[str(a) for a in args]],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err, cues = [], list(cues.items())
    for line in lp.stderr:
        err.append(line)
        if cues and cues[0][0] in line:
            target.stdin.write(cues.pop(0)[1])
            target.stdin.flush()
        if not cues:
            break
    target.stdin.close()
    out = target.stdout.read()
    target.wait(timeout=60)
    err.append(lp.stderr.read())
    lp.wait(timeout=60)
    return lp.returncode, "".join(err), out
