// SPDX-License-Identifier: GPL-2.0
/*
 * scenario_write_python.c - the Python program of a parsed latency
 * scenario: the C program's semantics (scenario_write.c) for CPython 3.11+,
 * so that `--split py:HANDLER@p95` can be checked against the program's own
 * LIVEPROF_TRUTH timings.
 *
 * The handler and the cause are module-level defs that keep the spec's
 * names (a py: spec is a qualname); everything else starts with "_lp_".
 * They spin on the thread's CPU clock (time.thread_time_ns) rather than
 * counting loop iterations: a loaded machine then stretches a call's wall
 * time, never its work, and the spin makes no Python call of its own, so
 * py: probes fire once per handler call (twice for a slow one).
 */
#include <errno.h>
#include <stdio.h>

#include "user/synth/emit.h"
#include "user/synth/scenario.h"

static const char py_runtime[] =
	"_lp_stop = False\n"
	"# Held by the main thread for ever: a 'block' cause times out on it.\n"
	"_lp_held = _lp_threading.Lock()\n"
	"_lp_held.acquire()\n"
	"_lp_cpu_ns = _lp_time.thread_time_ns\n"
	"\n"
	"\n"
	"def _lp_thread(calls, deadline):\n"
	"    \"\"\"Call the handler until the deadline; one (latency, slow, start) a call.\"\"\"\n"
	"    mono = _lp_time.monotonic_ns\n"
	"    step = int(1e9 / _LP_RATE) if _LP_RATE > 0 else 0\n"
	"    nxt = mono()\n"
	"    i = 0\n"
	"    while not _lp_stop:\n"
	"        now = mono()\n"
	"        if deadline and now >= deadline:\n"
	"            break\n"
	"        if step:\n"
	"            nxt += step\n"
	"            # After a long stall, restart the schedule instead of bursting.\n"
	"            if now - nxt > 1e9:\n"
	"                nxt = now\n"
	"            if nxt > now:\n"
	"                _lp_time.sleep((nxt - now) / 1e9)\n"
	"        # Exactly _LP_SLOW_FRACTION of the calls, spread evenly.\n"
	"        slow = int((i + 1) * _LP_SLOW_FRACTION) > int(i * _LP_SLOW_FRACTION)\n"
	"        m = i % (_LP_ARG_OVER + 1)\n"
	"        arg = _LP_ARG_OVER + 1 + m if slow else m\n"
	"        t0 = mono()\n"
	"        _LP_HANDLER(arg)\n"
	"        t1 = mono()\n"
	"        calls.append((t1 - t0, 1 if slow else 0, t0))\n"
	"        i += 1\n"
	"\n"
	"\n"
	"def _lp_on_signal(signum, frame):\n"
	"    global _lp_stop\n"
	"    _lp_stop = True\n"
	"\n"
	"\n"
	"def _lp_write_truth(path, per_thread):\n"
	"    \"\"\"One 'latency_ns slow' line a call, its CLOCK_MONOTONIC start in ns as\n"
	"    a third column when LIVEPROF_TRUTH_TIMES=1 (the C program's format).\"\"\"\n"
	"    times = _lp_os.environ.get('LIVEPROF_TRUTH_TIMES', '').startswith('1')\n"
	"    with open(path, 'w') as f:\n"
	"        for calls in per_thread:\n"
	"            for lat, slow, start in calls:\n"
	"                f.write('%d %d %d\\n' % (lat, slow, start) if times else\n"
	"                        '%d %d\\n' % (lat, slow))\n"
	"\n"
	"\n"
	"def _lp_main(argv):\n"
	"    try:\n"
	"        seconds = float(argv[1]) if len(argv) > 1 else _LP_SECONDS\n"
	"    except ValueError:\n"
	"        seconds = -1\n"
	"    if seconds < 0:\n"
	"        _lp_sys.stderr.write('usage: %s [SECONDS (0 = forever)]\\n' % argv[0])\n"
	"        return 2\n"
	"    _lp_signal.signal(_lp_signal.SIGINT, _lp_on_signal)\n"
	"    _lp_signal.signal(_lp_signal.SIGTERM, _lp_on_signal)\n"
	"    deadline = _lp_time.monotonic_ns() + int(seconds * 1e9) if seconds > 0 else 0\n"
	"    per_thread = [[] for _ in range(_LP_THREADS)]\n"
	"    # Tell whoever waits (liveprof validate) that the calls start now.\n"
	"    ready = _lp_os.environ.get('LIVEPROF_READY')\n"
	"    if ready:\n"
	"        open(ready, 'w').close()\n"
	"    workers = [_lp_threading.Thread(target=_lp_thread, args=(c, deadline))\n"
	"               for c in per_thread]\n"
	"    for w in workers:\n"
	"        w.start()\n"
	"    # Joined with a timeout: signal handlers run in this thread, between waits.\n"
	"    for w in workers:\n"
	"        while w.is_alive():\n"
	"            w.join(0.1)\n"
	"    truth = _lp_os.environ.get('LIVEPROF_TRUTH')\n"
	"    if truth:\n"
	"        _lp_write_truth(truth, per_thread)\n"
	"    return 0\n";

/* The cause's body, per kind of wait, at four spaces. */
static void py_write_cause(FILE *f, const struct scenario *sc)
{
	fprintf(f, "\n\ndef %s():\n    \"\"\"The cause of slow calls: %g us %s.\"\"\"\n", sc->cause,
		sc->cause_us, scenario_wait_name(sc->wait));
	if (sc->wait == SCENARIO_CPU)
		fprintf(f, "    end = _lp_cpu_ns() + _LP_CAUSE_NS\n"
			   "    while _lp_cpu_ns() < end:\n"
			   "        pass\n");
	else if (sc->wait == SCENARIO_SLEEP)
		fprintf(f, "    _lp_time.sleep(_LP_CAUSE_NS / 1e9)\n");
	else
		fprintf(f, "    # Times out: the lock is held by the main thread for ever.\n"
			   "    if _lp_held.acquire(timeout=_LP_CAUSE_NS / 1e9):\n"
			   "        _lp_held.release()\n");
}

int scenario_write_python(FILE *f, const struct scenario *sc, const struct emit_opts *o)
{
	double seconds = o->duration_s > 0 ? o->duration_s : sc->seconds;

	fprintf(f, "#!/usr/bin/env python3\n");
	scenario_write_intro(f, sc, o, "python", "# ", seconds);
	if (sc->threads > 1)
		fprintf(f,
			"#\n"
			"# The threads share the GIL: one runs Python code at a time, so a call\n"
			"# also waits for the GIL (up to sys.getswitchinterval(), 5 ms, per\n"
			"# switch). Its timing and liveprof's both include that wait.\n");
	fprintf(f, "\nimport os as _lp_os\nimport signal as _lp_signal\nimport sys as _lp_sys\n"
		   "import threading as _lp_threading\nimport time as _lp_time\n\n");
	scenario_write_constants(f, sc, "_LP_", seconds);
	fputs(py_runtime, f);
	py_write_cause(f, sc);
	fprintf(f,
		"\n\ndef %s(arg):\n"
		"    \"\"\"The handler: its own work, then the cause when the call is slow.\"\"\"\n"
		"    end = _lp_cpu_ns() + _LP_WORK_NS\n"
		"    while _lp_cpu_ns() < end:\n"
		"        pass\n"
		"    if arg > _LP_ARG_OVER:\n"
		"        %s()\n",
		sc->handler, sc->cause);
	/* The entry point comes after every def it reaches. */
	fprintf(f,
		"\n\n_LP_HANDLER = %s\n\nif __name__ == '__main__':\n"
		"    _lp_sys.exit(_lp_main(_lp_sys.argv))\n",
		sc->handler);
	return ferror(f) ? -EIO : 0;
}
