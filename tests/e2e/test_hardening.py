"""Hardening basics (issue 8, the fast ones): liveprof killed hard leaves
nothing behind, and a target that churns through threads is no problem."""

import re
import signal
import subprocess
import time


def test_sigkill_leaves_target_unharmed(procs, liveprof, wl, tmp_path, h):
    log = tmp_path / "rate.log"
    target = procs.start([wl("rate"), log], settle=1.0)
    lp = subprocess.Popen([str(liveprof), "--no-tui", "-p", str(target.pid), "-d", "30",
                           "--trace", "tick", "-o", str(tmp_path / "out.folded")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert h.wait_sampling(lp), "liveprof never started"
        time.sleep(1.5)
        ours = h.prog_ids_of(lp.pid)
        lp.send_signal(signal.SIGKILL)
        lp.wait(timeout=10)
    finally:
        if lp.poll() is None:
            lp.kill()
            lp.wait()
    assert lp.returncode == -signal.SIGKILL
    assert ours, "liveprof held no BPF programs"
    assert h.wait_for(lambda: not (h.lp_prog_ids() & ours), 5), \
        f"liveprof's programs still loaded: {h.lp_prog_ids() & ours}"
    # the target lives on, is not stopped, and keeps making progress
    assert target.poll() is None, "the target died"
    with open(f"/proc/{target.pid}/stat") as f:
        state = f.read().rsplit(")", 1)[1].split()[0]
    assert state in ("R", "S"), f"target state {state}"
    n0 = h.read_rates(log)[-1][1]
    time.sleep(0.5)
    assert h.read_rates(log)[-1][1] > n0
    # no half-written output left where the profile would have gone
    assert not (tmp_path / "out.folded").exists() or (tmp_path / "out.folded").stat().st_size


def test_200_short_lived_threads(run_lp, wl):
    r = run_lp(["-d", "20", "--per-thread", "--trace", "churn_work", "--", wl("churn")],
               timeout=90)
    assert r.rc == 0, r
    assert re.search(r"^threads 200$", r.stdout, re.M), r.stdout
    assert r.json.get("exit_status") == 0, r.json
    t = r.trace("churn_work")
    assert t["calls"] == 200, t
    tids = {s.split(";")[1] for s in r.folded if "churn_work" in s.split(";")}
    print(f"\nchurn: {sum(r.folded.values())} samples, {len(tids)} threads seen, "
          f"{t['calls']} churn_work calls traced")
    assert len(tids) >= 20, tids


def test_sigint_during_startup(procs, liveprof, wl, tmp_path, h):
    """Ctrl-C while liveprof is still loading its BPF programs (that takes
    seconds here) must also end in exit 0 with nothing left loaded."""
    target = procs.start([wl("fastslow")])
    lp = subprocess.Popen([str(liveprof), "--no-tui", "-p", str(target.pid), "-d", "30",
                           "-o", str(tmp_path / "out.folded")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    started = h.perf_event_fds(lp.pid) > 0
    lp.send_signal(signal.SIGINT)
    try:
        so, se = lp.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        lp.kill()
        so, se = lp.communicate()
        raise AssertionError("liveprof did not stop on SIGINT during startup")
    print(f"\nSIGINT at 0.3 s (sampling started: {started}): rc {lp.returncode}")
    assert lp.returncode == 0, f"rc {lp.returncode}\n{so}{se}"
    assert target.poll() is None
