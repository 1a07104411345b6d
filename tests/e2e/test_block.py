"""/debug/pprof/block and /mutex (and godeltaprof's delta_*) from --offcpu
(issue 16), read by `go tool pprof`.

Ground truth from tests/workloads/handler.c in lock mode: a holder thread
keeps the mutex 2 ms of every 2.05 ms (sleeping in nanosleep while it holds
it); handle() takes it in 1 of 32 requests and waits. The main thread also
sleeps 100 us between requests. So every block of the main thread on the
lock is under handle(); the holder can only wait while handle() holds the
lock for a few instructions, so at least 90% of the lock waiting is under
handle(). Sleeps are blocks but not lock waits.
"""

import re
import subprocess

from serve_util import Server, go_env


def top(src, tmp_path, extra=()):
    r = subprocess.run(["go", "tool", "pprof", "-top", "-sample_index=delay", "-unit=ms",
                        *extra, src], capture_output=True, text=True, env=go_env(tmp_path),
                       timeout=120)
    assert r.returncode == 0, r.stderr
    total = re.search(r"Total samples = ([\d.]+)ms", r.stdout)
    cum = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s*[\d.]+m?s?\s+[\d.]+%\s+[\d.]+%\s+([\d.]+)m?s?\s+[\d.]+%\s+(.+)$", line)
        if m:
            cum[m.group(2).strip()] = float(m.group(1))
    return (float(total.group(1)) if total else 0.0), cum, r.stdout


def test_block_and_mutex(liveprof, procs, wl, tmp_path):
    p = procs.start([wl("handler"), "lock", "120"])
    s = Server(liveprof, ["-p", p.pid, "-F", "99", "--offcpu"], tmp_path)
    try:
        import time
        time.sleep(3)
        mtotal, mcum, mtext = top(s.url + "/debug/pprof/mutex", tmp_path)
        btotal, bcum, btext = top(s.url + "/debug/pprof/block?seconds=2", tmp_path)
        d1, _, d1text = top(s.url + "/debug/pprof/delta_mutex", tmp_path)
        d2, _, d2text = top(s.url + "/debug/pprof/delta_mutex", tmp_path)
    finally:
        s.stop()
    assert mtotal > 0, mtext
    lock = max((v for k, v in mcum.items() if re.search(r"lll_lock_wait|pthread_mutex_lock|"
                                                         r"futex_wait", k)), default=0)
    # Every stack of the mutex profile waits on a lock...
    assert abs(lock - mtotal) <= 0.01 * mtotal + 0.01, mtext
    # ... and no sleep is in it.
    assert not any("nanosleep" in k for k in mcum), mtext
    # The waiting is handle()'s (see the module docstring).
    print(f"\nmutex: {mtotal:.0f} ms waited, {mcum.get('handle', 0) / mtotal:.1%} under handle; "
          f"block (2 s window): {btotal:.0f} ms")
    assert mcum.get("handle", 0) >= 0.9 * mtotal, mtext
    # The block profile of a 2 s window holds the sleeps and the lock waits.
    assert "Duration: 2s" in btext, btext
    assert any("nanosleep" in k for k in bcum) and any("lll_lock_wait" in k or
                                                       "futex_wait" in k for k in bcum), btext
    # Two threads block for at most the window each, plus a scheduling slack.
    assert btotal <= 2 * 2000 * 1.1, btext
    # delta_mutex: the first holds the run so far, the next only what came after.
    assert d1 > 0 and d2 < d1, (d1text, d2text)
