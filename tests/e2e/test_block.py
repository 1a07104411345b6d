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


def test_mutex_by_holder_stack(liveprof, procs, wl, tmp_path):
    """/mutex?stack=holder: the same lock waits by the stack that released
    the lock. Every wait of the main thread (at least 90% of the waiting,
    see the module docstring) ends when holder() unlocks, and every wait of
    the holder thread when lock_wait() does; each wait is woken by a futex
    call of the other thread, so each has a known releaser."""
    p = procs.start([wl("handler"), "lock", "120"])
    s = Server(liveprof, ["-p", p.pid, "-F", "99", "--offcpu"], tmp_path)
    files = {}
    try:
        import time
        time.sleep(3)
        for name, q in (("before", "mutex"), ("holder", "mutex?stack=holder"),
                        ("after", "mutex"), ("window", "mutex?seconds=2&stack=holder"),
                        ("d1", "delta_mutex?stack=holder"), ("d2", "delta_mutex?stack=holder")):
            st, _, body = s.get("/debug/pprof/" + q)
            assert st == 200, body
            files[name] = tmp_path / f"{name}.pb.gz"
            files[name].write_bytes(body)
        st, _, body = s.get("/debug/pprof/mutex?stack=nonsense")
        assert st == 400, body
    finally:
        s.stop()
    before, _, t0 = top(str(files["before"]), tmp_path)
    htotal, hcum, ht = top(str(files["holder"]), tmp_path)
    after, _, t2 = top(str(files["after"]), tmp_path)
    wtotal, _, wt = top(str(files["window"]), tmp_path)
    d1, _, d1t = top(str(files["d1"]), tmp_path)
    d2, _, d2t = top(str(files["d2"]), tmp_path)
    print(f"\nmutex by waiter {before:.0f}..{after:.0f} ms, by holder {htotal:.0f} ms: "
          f"{hcum.get('holder', 0) / max(htotal, 1e-9):.1%} released in holder(), "
          f"{hcum.get('lock_wait', 0):.1f} ms in lock_wait()")
    assert htotal > 0, ht
    # every wait has a known releaser: the same total as by waiter
    assert 0.95 * before <= htotal <= after * 1.001 + 0.01, (t0, ht, t2)
    # the releasing stack is the holder's: pthread_mutex_unlock under holder()
    assert hcum.get("holder", 0) >= 0.9 * htotal, ht
    assert any("mutex_unlock" in k for k in hcum), ht
    assert hcum.get("handle", 0) + hcum.get("holder", 0) >= 0.99 * htotal, ht
    assert "Duration: 2s" in wt and wtotal <= 2 * 2000 * 1.1, wt
    assert d1 > 0 and d2 < d1, (d1t, d2t)
