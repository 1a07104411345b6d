"""End-to-end tests of the HTTP endpoints (issue 16) on real BPF.

Ground truth comes from the workloads' source: fastslow.c does 4x the work in
slow() as in fast() (slow = 80% of the samples under main), handler.c runs
slow_path() in every 20th call of handle(), latency.c measures every call of
work() itself and writes the latencies out. The clients are the real ones:
`go tool pprof`, `promtool` and a Prometheus server.
"""

import concurrent.futures
import json
import math
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from serve_util import Server, go_env, pprof_top, wilson


@pytest.fixture
def server(liveprof, tmp_path):
    started = []

    def start(args, name="lp"):
        s = Server(liveprof, args, tmp_path, name)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def slow_share_check(rows, text):
    """slow vs fast under main must be 4:1 (fastslow.c) within a Wilson bound."""
    fast, slow = rows.get("fast", (0, 0))[1], rows.get("slow", (0, 0))[1]
    n = int(fast + slow)
    assert n >= 100, f"too few samples to judge ({n}):\n{text}"
    lo, hi = wilson(int(slow), n)
    assert lo <= 0.8 <= hi, f"slow share {slow / n:.3f} of {n}, 95%+ bound [{lo:.3f}, {hi:.3f}]"
    return slow / n, n


def test_pprof_profile_three_concurrent_scrapes(server, procs, wl, tmp_path):
    p = procs.start([wl("fastslow"), "120"])
    s = server(["-p", p.pid, "-F", "999"])
    url = s.url + "/debug/pprof/profile?seconds=5"
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(3) as ex:
        futs = [ex.submit(pprof_top, ["-sample_index=samples", url], tmp_path / f"c{i}")
                for i in range(3)]
        results = [f.result() for f in futs]
    elapsed = time.monotonic() - t0
    # Three 5 s windows side by side from the one sampler, not one after another.
    assert elapsed < 12, f"3 concurrent 5 s scrapes took {elapsed:.1f}s"
    shares = [slow_share_check(rows, text) for rows, text in results]
    print("\nslow share per scrape (truth 0.8): " +
          ", ".join(f"{sh:.3f} of {n}" for sh, n in shares))
    for rows, text in results:
        assert "Duration: 5" in text, text[:500]
    assert s.alive()


def test_pprof_profile_shape(server, procs, wl, tmp_path):
    """Go's shape: sample types, period, duration, time, mappings with build-ids."""
    p = procs.start([wl("fastslow"), "120"])
    s = server(["-p", p.pid, "-F", "499"])
    st, hdr, body = s.get("/debug/pprof/profile?seconds=2")
    assert st == 200 and body[:2] == b"\x1f\x8b", (st, body[:100])
    pb = tmp_path / "cpu.pb.gz"
    pb.write_bytes(body)
    raw = subprocess.run(["go", "tool", "pprof", "-raw", str(pb)], capture_output=True,
                         text=True, env=go_env(tmp_path), timeout=120)
    assert raw.returncode == 0, raw.stderr
    out = raw.stdout
    assert re.search(r"PeriodType: cpu nanoseconds", out), out[:400]
    assert f"Period: {10**9 // 499}\n" in out, out[:400]
    m = re.search(r"Duration: ([\d.]+)s", out)
    assert m and 1.9 <= float(m.group(1)) <= 2.2, out[:400]
    assert re.search(r"Time: 20\d\d-", out), out[:400]
    assert re.search(r"samples/count cpu/nanoseconds", out), out[:600]
    build_id = subprocess.run(["readelf", "-n", wl("fastslow")], capture_output=True,
                              text=True).stdout
    bid = re.search(r"Build ID: ([0-9a-f]+)", build_id).group(1)
    assert re.search(rf"{re.escape(wl('fastslow'))} {bid}", out), \
        f"no mapping of fastslow with build-id {bid}:\n" + out[out.find("Mappings"):][:800]


def test_pprof_split_labels(server, procs, wl, tmp_path):
    """handler.c: slow_path() runs only in slow calls, so its samples carry class=slow."""
    p = procs.start([wl("handler"), "cpu", "120"])
    s = server(["-p", p.pid, "-F", "499", "--split", "handle"])
    st, _, body = s.get("/debug/pprof/profile?seconds=6")
    assert st == 200
    pb = tmp_path / "split.pb.gz"
    pb.write_bytes(body)
    slow_rows, t1 = pprof_top(["-sample_index=samples", "-tagfocus=class=slow", str(pb)],
                              tmp_path)
    fast_rows, t2 = pprof_top(["-sample_index=samples", "-tagfocus=class=fast", str(pb)],
                              tmp_path)
    in_slow = slow_rows.get("slow_path", (0, 0))[1]
    in_fast = fast_rows.get("slow_path", (0, 0))[1]
    n = int(in_slow + in_fast)
    assert n >= 20, f"too few slow_path samples in labelled calls ({n}):\n{t1}\n{t2}"
    # Truth: every slow_path sample is in a slow call (1.0); a few calls near
    # the threshold may be misclassified, so ask for 90% as test_split does.
    assert in_slow / n >= 0.9, f"slow_path: {in_slow} in slow calls, {in_fast} in fast"
    tags = subprocess.run(["go", "tool", "pprof", "-tags", str(pb)], capture_output=True,
                          text=True, env=go_env(tmp_path), timeout=120)
    assert "function" in tags.stdout and "handle" in tags.stdout, tags.stdout


def test_metrics_promtool(server, procs, wl, tmp_path):
    if not shutil.which("promtool"):
        pytest.skip("promtool not installed (make deps)")
    p = procs.start([wl("fastslow"), "120"])
    s = server(["-p", p.pid, "-F", "199", "--trace", "fast", "--split", "slow"])
    time.sleep(2)
    st, hdr, body = s.get("/metrics")
    assert st == 200 and hdr["Content-Type"].startswith("text/plain; version=0.0.4"), hdr
    text = body.decode()
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    for needle in ('liveprof_call_duration_seconds_bucket{function="fast",le="+Inf"}',
                   'liveprof_call_duration_seconds_count{function="slow",class="slow"}',
                   'liveprof_call_duration_seconds_count{function="slow",class="fast"}',
                   'liveprof_calls_total{function="fast"}', "liveprof_samples_total ",
                   "liveprof_lost_events_total ", 'liveprof_probe_cost_seconds{function="fast"}'):
        assert needle in text, needle
    # fastslow.c calls fast() and slow() alternately: once both are attached
    # (one after the other), their counts grow alike (+-1 call in flight).
    calls1 = dict(re.findall(r'liveprof_calls_total\{function="(\w+)"\} (\d+)', text))
    time.sleep(2)
    calls2 = dict(re.findall(r'liveprof_calls_total\{function="(\w+)"\} (\d+)',
                             s.get("/metrics")[2].decode()))
    grew = {f: int(calls2[f]) - int(calls1[f]) for f in ("fast", "slow")}
    assert grew["fast"] > 0 and abs(grew["fast"] - grew["slow"]) <= 1, (calls1, calls2)


def free_port():
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def latency_design_ns(i):
    """The duration latency.c's work(i) spins for (its source: a 200-call cycle)."""
    k = i % 200
    return 500_000 if k < 170 else 2_000_000 if k < 194 else 6_000_000 if k < 199 else 15_000_000


def bucket_edges_ns():
    """The documented le edges of liveprof_call_duration_seconds (8 per octave)."""
    return [((64 + sub) << shift) for shift in range(4, 31) for sub in range(0, 64, 8)]


def test_prometheus_p99(liveprof, wl, tmp_path):
    if not shutil.which("prometheus"):
        pytest.skip("prometheus not installed (make deps)")
    truth_file = tmp_path / "latencies.txt"
    n = 12000  # ~11 s: 200-call cycles of 178 ms (latency.c)
    s = Server(liveprof, ["-F", "99", "--trace", "work", "--", wl("latency"), n, truth_file],
               tmp_path)
    target = s.url.split("//")[1]
    port = free_port()
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                   "scrape_configs:\n  - job_name: liveprof\n    static_configs:\n"
                   f"      - targets: ['{target}']\n")
    prom = subprocess.Popen(
        ["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "w"))
    try:
        s.p.wait(timeout=120)  # liveprof ends with the workload
        assert s.p.returncode == 0, s.stderr()
        time.sleep(1.5)
        query = ('histogram_quantile(0.99, last_over_time('
                 'liveprof_call_duration_seconds_bucket{function="work"}[5m]))')
        url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query})
        with urllib.request.urlopen(url, timeout=10) as r:
            res = json.load(r)
        got = [float(v["value"][1]) for v in res["data"]["result"]]
        assert len(got) == 1, (res, (tmp_path / "prometheus.log").read_text()[-2000:])
        got_ns = got[0] * 1e9
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?query="
                                    "count_over_time(liveprof_samples_total[5m])",
                                    timeout=10) as r:
            scrapes = int(float(json.load(r)["data"]["result"][0]["value"][1]))
    finally:
        prom.terminate()
        prom.wait(timeout=30)
        s.stop()
    clock = [int(x) for x in truth_file.read_text().split()]
    # Each call's latency as the probes see it lies between what latency.c's
    # source makes it (work() spins until its entry time plus the designed
    # duration, read after the entry probe) and what the program's own
    # clock says (it reads the time before the entry probe and after the
    # return probe; a preemption when the return probe's trap goes back to
    # user space, common on a loaded machine, is only on the program's
    # clock). So the probes' p99 lies between the designed durations' p99
    # (6 ms, mid-plateau) and the clock's p99, give or take the few calls by
    # which the two counts of calls may differ, and histogram_quantile
    # answers inside the bucket that holds it.
    design = sorted(latency_design_ns(i) for i in range(len(clock)))
    clock.sort()
    rank = math.ceil(0.99 * len(clock)) - 1
    low, want = design[max(0, rank - 5)], clock[min(len(clock) - 1, rank + 5)]
    edges = bucket_edges_ns()
    lo = max(e for e in edges if e <= low)
    hi = min(e for e in edges if e > want)
    print(f"\np99 via Prometheus {got_ns / 1e3:.0f} us; designed p99 {low / 1e3:.0f} us, "
          f"program's clock p99 {clock[rank] / 1e3:.0f} us; buckets [{lo / 1e3:.0f}, "
          f"{hi / 1e3:.0f}] us, {scrapes} scrapes")
    assert scrapes >= 5, scrapes
    assert lo <= got_ns <= hi, (got_ns, low, want, lo, hi)


def test_http_in_batch_mode(liveprof, procs, wl, tmp_path):
    """--http next to a batch run: served while it runs, outputs written at its end."""
    p = procs.start([wl("fastslow"), "120"])
    port = free_port()
    out = tmp_path / "out.folded"
    lp = subprocess.Popen([str(liveprof), "--no-tui", "-p", str(p.pid), "-F", "199", "-d", "8",
                           "--http", f"127.0.0.1:{port}", "-o", str(out)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        body = None
        while time.monotonic() < deadline and body is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    body = r.read().decode()
            except OSError:
                time.sleep(0.2)
        assert body and "liveprof_samples_total" in body, body
        so, se = lp.communicate(timeout=60)
    finally:
        if lp.poll() is None:
            lp.kill()
            lp.wait()
    assert lp.returncode == 0, se
    assert f"serving http://127.0.0.1:{port}/" in se, se
    assert out.stat().st_size > 0



def test_retrace_at_an_address_that_had_another_probe(server, procs, wl):
    """Trace parse_request(), untrace it, then trace handle() (which takes
    its freed probe id, the lowest) and parse_request() again (which gets
    another), live. The tracer's per-thread memo of probe ids by address
    (tracer.bpf.h) must start anew when uprobes come and go: a memo kept
    would time parse_request()'s calls under its old id, now handle()'s,
    and handle() would count twice its calls and parse_request() none.
    handler.c calls parse_request() once in every handle()."""
    p = procs.start([wl("handler"), "cpu", "120"])
    s = server(["-p", p.pid, "-F", "99"])
    csrf = json.loads(s.get("/api/state")[2])["csrf"]

    def command(cmd, arg):
        body = json.dumps({"cmd": cmd, "arg": arg}).encode()
        st, _, out = s.get("/api/command", method="POST", data=body,
                           headers={"X-Liveprof-Csrf": csrf, "Content-Type": "application/json"})
        assert st == 200, (st, out, s.stderr()[-2000:])

    def calls(want, timeout=30):
        """{spec: calls} once every trace has counted at least @want calls."""
        deadline = time.monotonic() + timeout
        while True:
            traces = json.loads(s.get("/api/state")[2])["traces"]
            n = {t["spec"]: t["calls"] for t in traces}
            if min(n.values()) >= want or time.monotonic() > deadline:
                return n
            time.sleep(0.5)

    command("trace", "parse_request")
    # handle() runs about every 100 us: thousands of calls a second
    assert calls(1000)["parse_request"] >= 1000, s.stderr()[-2000:]
    command("untrace", "parse_request")
    command("trace", "handle")
    command("trace", "parse_request")
    n = calls(1000)
    print(f"\ntraced again: {n}")
    assert n["parse_request"] >= 1000, (n, s.stderr()[-2000:])
    # one parse_request() in every handle(): the counts differ by the calls
    # in flight when each probe went live, and by the probes' own timing
    assert abs(n["handle"] - n["parse_request"]) <= 0.05 * n["handle"], n
