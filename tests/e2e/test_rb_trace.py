"""--trace rb:Class#method and --split rb:Class#method@p95 (issue 15), on
Debian's ruby 3.1 through libruby's method__entry/method__return USDT probes.

Ground truth: tests/workloads/ruby/rb_handler.rb. Handler#call(i) spins
100 + (37 i mod 400) us of CPU time, and one call in 50 (i % 50 == 49) also
runs slow_extra, SLOW_US (30 ms) of CPU time: slow_extra is called exactly
once per 50 calls, its calls last at least SLOW_US, and every sample inside
it is in a call above the p95 threshold (2% of the calls are that long; the
others only if kept waiting 29.5 ms). The workload enables an empty
TracePoint(:call, :return): without one, Ruby 3.1 never fires the probes
for Ruby methods (rb_shares.rb, which has none, shows it).
"""

import json
import subprocess
from pathlib import Path

import pytest

import lputil

import rb_names

HERE = Path(__file__).resolve().parent
RB = HERE.parent / "workloads" / "ruby"
RUBY = "/usr/bin/ruby"
SLOW_US = 30000
BUCKET = 0.016  # a latency is a histogram bucket's middle: within 1.6%


def folded_count(path, frame):
    """Samples of @path's stacks that hold @frame, and all of them."""
    hit = total = 0
    for line in Path(path).read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        total += int(n)
        if frame in stack.split(";"):
            hit += int(n)
    return hit, total


def test_trace_and_split_ruby_method(run_lp, procs, tmp_path):
    target = procs.start([RUBY, "--disable-gems", RB / "rb_handler.rb", "60", SLOW_US],
                         settle=1.0)
    out = tmp_path / "split"
    # --raw-latency: a busy wait's length is a lower bound of the raw
    # latency; net of the samples' cost (30 us each here) it is not
    r = run_lp(["-p", target.pid, "-F", "499", "-d", "6", "--raw-latency",
                "--trace", "rb:Handler#slow_extra",
                "--split", "rb:Handler#call@p95", "-o", f"{out}/"], timeout=90, folded=False)
    assert r.rc == 0, r
    call, extra = r.trace("rb:Handler#call"), r.trace("rb:Handler#slow_extra")
    assert call["kind"] == "function" and call["calls"] > 1000, call
    # Exactly one slow_extra per 50 calls; the window may cut one cycle
    # of 50 short at each end.
    assert abs(call["calls"] - 50 * extra["calls"]) <= 2 * 50, (call["calls"], extra["calls"])
    # slow_extra waits at least SLOW_US; a call at least 100 us.
    assert extra["p50_ns"] >= SLOW_US * 1e3 * (1 - BUCKET), extra
    assert call["p50_ns"] >= 100e3 * (1 - BUCKET), call
    print(f"\nrb:Handler#call {call['calls']} calls p50 {call['p50_ns'] / 1e3:.0f}us "
          f"p99 {call['p99_ns'] / 1e3:.0f}us; slow_extra {extra['calls']} calls "
          f"p50 {extra['p50_ns'] / 1e3:.0f}us")

    s = r.json["split"]
    assert s["function"] == "rb:Handler#call" and s["percentile"] == 95, s
    # the frame as Ruby's full label names it: the split ranks the frames
    # below Handler#call's own, found by its qualified name
    name = rb_names.frame(RB / "rb_handler.rb", "slow_extra")
    assert name.startswith("Handler#slow_extra (rb_handler.rb:"), name
    slow_hit, slow_all = folded_count(out / "slow.folded", name)
    fast_hit, fast_all = folded_count(out / "fast.folded", name)
    # Seen in 2 of about 14 fresh clones under make test's load: a split
    # with no ranked frame at all, its calls counted (6,307, 371 slow).
    # The figures this prints showed why (every sample held, none classed):
    # a call that began and ended between the attaching of the entry and
    # the return probes stayed in flight under every later call. Returns
    # are now attached first (test_usdt.py's stale-frame test). Should it
    # come back, show everything that could tell why.
    if not s["top_frames"]:
        figures = {k: v for k, v in s.items() if k not in ("latency_hist", "top_frames")}
        merge = [l for l in (r.stdout + r.stderr).splitlines() if "ruby" in l]
        heads = {n: sorted((l for l in (out / f"{n}.folded").read_text().splitlines()),
                           key=lambda l: -int(l.rpartition(" ")[2]))[:4]
                 for n in ("slow", "fast") if (out / f"{n}.folded").exists()}
        pytest.fail(f"no ranked frame: {figures}\n{merge}\n{heads}")
    print(f"slow_extra samples: {slow_hit} slow, {fast_hit} fast "
          f"(of {slow_all} / {fast_all}); top {s['top_frames'][0]['frame']}")
    # Issue 15: >= 90% of the extra function's samples in the slow profile.
    assert slow_hit >= 50 and slow_hit >= 0.9 * (slow_hit + fast_hit), (slow_hit, fast_hit)
    top = s["top_frames"][0]
    assert top["frame"] == name and top["significant"], s["top_frames"][:3]


def test_split_singleton_method(run_lp, procs, tmp_path):
    """rb:Codec#decode splits the singleton method Codec.decode: Ruby's
    probes give it class Codec and method decode, its frame is named
    "Codec.decode (...)" as Ruby's full label is, and the split ranks the
    frames below that one (tests/workloads/ruby/rb_singleton.rb)."""
    script = RB / "rb_singleton.rb"
    target = procs.start([RUBY, "--disable-gems", script, "60"], settle=1.0)
    out = tmp_path / "split"
    r = run_lp(["-p", target.pid, "-F", "499", "-d", "5", "--split", "rb:Codec#decode@p95",
                "-o", f"{out}/"], timeout=90, folded=False)
    assert r.rc == 0, r
    assert r.trace("rb:Codec#decode")["calls"] > 100, r.trace("rb:Codec#decode")
    s = r.json["split"]
    name = rb_names.frame(script, "slow_path")
    assert name.startswith("Codec.slow_path (rb_singleton.rb:"), name
    slow_hit, _ = folded_count(out / "slow.folded", name)
    fast_hit, _ = folded_count(out / "fast.folded", name)
    print(f"\nCodec.slow_path samples: {slow_hit} slow, {fast_hit} fast; "
          f"top {s['top_frames'][0]['frame'] if s['top_frames'] else None}")
    # every slow_path call is above the threshold: its samples are slow ones
    assert slow_hit >= 50 and slow_hit >= 0.9 * (slow_hit + fast_hit), (slow_hit, fast_hit)
    assert s["top_frames"] and s["top_frames"][0]["frame"] == name, s["top_frames"][:3]

def test_launched_ruby_traced_from_its_first_call(run_lp):
    """rb: on a launched ruby, whose libruby is not mapped before the exec:
    its USDT probes go on the file the dynamic linker lists (traces_needed.c),
    so a run shorter than liveprof's 100 ms look at the maps is traced whole.
    Ground truth: the script calls foo exactly 1000 times, with a
    TracePoint(:call, :return) enabled; it used to come out 0 calls."""
    script = "TracePoint.new(:call, :return) {}.enable; def foo; end; 1000.times { foo }"
    r = run_lp(["--trace", "rb:Object#foo", "--", RUBY, "--disable-gems", "-e", script],
               timeout=60, folded=False)
    assert r.rc == 0, r
    t = r.trace("rb:Object#foo")
    assert t["calls"] == 1000 and t["untimed_calls"] == 0, t


def test_no_probe_fires_without_a_tracepoint(run_lp, procs):
    """The measured reason rb: needs a TracePoint in the target."""
    target = procs.start([RUBY, "--disable-gems", RB / "rb_shares.rb", "60"], settle=1.0)
    r = run_lp(["-p", target.pid, "-d", "2", "--trace", "rb:Runner#round",
                "--trace", "usdt:libruby:ruby:cmethod__entry"], timeout=60, folded=False)
    assert r.rc == 0, r
    assert "TracePoint" in r.stderr, r.stderr
    # The probes are attached and their semaphores up: C methods fire
    # (Array#shuffle! and Process.clock_gettime each round), Ruby methods do not.
    assert r.trace("usdt:libruby:ruby:cmethod__entry")["calls"] > 0
    assert r.trace("rb:Runner#round")["calls"] == 0


def test_tui_completes_rb_methods(tmp_path, monkeypatch):
    """Tab after `:trace rb:` completes the Ruby methods seen in samples,
    qualified as their frames are (rb_shares.rb: Object#work_a/b/c, defined
    at the top level, and Runner#round); blocks and <main> are not offered."""
    import time

    import test_tui
    monkeypatch.setattr(test_tui, "WORKLOAD", Path(RUBY))
    test_tui.ensure_built()
    tui = test_tui.Tui(tmp_path)
    try:
        # the workload's argv: the script, then its seconds
        tui.start(seconds=RB / "rb_shares.rb", mode=("120",), warm=False)
        # once unit is in Top, 3 s at 99 Hz put about 30 samples in work_c (10%)
        tui.wait(lambda s: any("Object#unit (rb_shares.rb" in l for l in s), 30,
                 "no Ruby frame of Object#unit in Top")
        time.sleep(3)
        tui.keys(":")
        tui.wait(lambda s: s[-1].startswith(":"), 3, "the prompt did not open")
        tui.type("trace rb:Runner#ro")
        tui.keys("Tab")
        tui.wait(lambda s: s[-1].rstrip() == ":trace rb:Runner#round", 5,
                 "no completion of rb:Runner#round")
        # a unique completion is followed by a space
        for _ in range(len("Runner#round ")):
            tui.keys("BSpace")
        tui.wait(lambda s: s[-1].rstrip() == ":trace rb:", 5, "backspace did not erase")
        tui.type("Object#work_")
        tui.keys("Tab")
        # three candidates: the common prefix stays, the list is shown
        tui.wait(lambda s: all(f"rb:Object#work_{c}" in "\n".join(s) for c in "abc"), 5,
                 "no completion list of rb:Object#work_")
        tui.type("a")
        tui.keys("Tab")
        tui.wait(lambda s: s[-1].rstrip() == ":trace rb:Object#work_a", 5,
                 "no completion of rb:Object#work_a")
        tui.keys("Enter")
        # attached: its row in the traces' table (no calls: rb_shares.rb
        # enables no TracePoint, and the message line says so)
        tui.wait(lambda s: any(l.strip().startswith("rb:Object#work_a ") for l in s), 30,
                 ":trace rb:Object#work_a failed")
        assert tui.alive()
    finally:
        tui.close()


def test_c_function_left_mid_call_by_a_fiber(liveprof, procs, tmp_path):
    """A libruby C function (rb_ary_each) traced in a program whose fiber
    switches away inside it (rb_fibers.rb). Ruby's fibers switch stacks
    (coroutine_transfer); with return probes the interpreter was killed at
    the first switch back. liveprof probes its ret instructions instead:
    the program ends normally, and the calls of the main fiber's each are
    timed (one [4].each per round besides the fiber's). The program starts
    its rounds once the probes are on."""
    n, js = 20000, tmp_path / "o.json"
    target = procs.start([RUBY, "--disable-gems", RB / "rb_fibers.rb", n, "wait"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    lp_rc, stderr, out = lputil.attach_on_cue(
        liveprof, target, ["--trace", "libruby:rb_ary_each", "-d", "120", "--json", js],
        {"programs verified and attached": "go\n"})
    assert target.returncode == 0, f"ruby ended with {target.returncode}: {stderr[-2000:]}"
    assert lp_rc == 0 and f"rounds {n}" in out, stderr[-3000:]
    assert "probe 'libruby:rb_ary_each': ret-insn at" in stderr, stderr[-3000:]
    t = next(t for t in json.loads(js.read_text())["traces"]
             if t["spec"] == "libruby:rb_ary_each")
    assert t["returns_on_ret"], t
    assert t["calls"] - t["untimed_calls"] >= n, t


def test_fiber_script_launched_by_its_shebang(run_lp, tmp_path):
    """rb_fibers.rb run as a '#!/usr/bin/env ruby' script: what the exec
    loads is ruby, so libruby and its fibers are known before it runs
    (lp_exec_resolve, command_libs.c): rb_ary_each is probed on the file at
    once, on its ret instructions. Before, a script was taken for a program
    of its own: the trace waited for libruby, then could not attach (the
    ret-instruction program was not loaded) and timed nothing."""
    n, script = 20000, tmp_path / "fibers"
    script.write_text("#!/usr/bin/env -S ruby --disable-gems\n" +
                      (RB / "rb_fibers.rb").read_text())
    script.chmod(0o755)
    r = run_lp(["--trace", "libruby:rb_ary_each", "--", script, n], timeout=90, folded=False)
    assert r.rc == 0 and f"rounds {n}" in r.stdout, r
    t = r.trace("libruby:rb_ary_each")
    assert t["returns_on_ret"], t
    # one [4].each per round besides the fiber's, all timed
    assert t["calls"] - t["untimed_calls"] >= n, t

