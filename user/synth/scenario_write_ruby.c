// SPDX-License-Identifier: GPL-2.0
/*
 * scenario_write_ruby.c - the Ruby program of a parsed latency scenario:
 * the C program's semantics (scenario_write.c) for CRuby 3.1, so that
 * `--split rb:Handler#HANDLER@p95` can be checked against the program's
 * own LIVEPROF_TRUTH timings.
 *
 * The handler and the cause are methods of class Handler that keep the
 * spec's names (an rb: spec is Class#method); the runtime's names start
 * with "lp_"/"LP_". They spin on the thread's CPU clock: a loaded machine
 * then stretches a call's wall time, never its work, and the spin calls
 * only a C method, so rb: probes fire once per handler call (twice for a
 * slow one).
 */
#include <errno.h>
#include <stdio.h>

#include "user/synth/emit.h"
#include "user/synth/scenario.h"

static const char rb_runtime_head[] =
	"# Ruby 3.1 fires its method__entry/method__return USDT probes (what\n"
	"# `liveprof --trace rb:Class#method` attaches to) for Ruby methods only\n"
	"# while a TracePoint for :call/:return is enabled: the VM reaches them\n"
	"# through the trace instructions it puts in only then. An empty one\n"
	"# costs about 120 ns a call.\n"
	"TracePoint.new(:call, :return) {}.enable\n"
	"\n"
	"$lp_stop = false\n"
	"# Nobody signals it: a 'block' cause waits on it until it times out.\n"
	"LP_HELD = Mutex.new\n"
	"LP_NEVER = ConditionVariable.new\n"
	"\n"
	"# The clocks are read inline, never through a Ruby method of ours: every\n"
	"# Ruby call between the two readings would add the probes' cost to the\n"
	"# program's timing of the handler.\n"
	"LP_MONO = Process::CLOCK_MONOTONIC\n"
	"\n";

/* Up to the handler's call, whose name is the spec's. */
static const char rb_thread_head[] =
	"# Call the handler until the deadline; one [latency, slow, start] a call.\n"
	"def lp_thread(calls, deadline)\n"
	"  h = " SCENARIO_RUBY_CLASS ".new\n"
	"  step = LP_RATE > 0 ? (1e9 / LP_RATE).to_i : 0\n"
	"  nxt = Process.clock_gettime(LP_MONO, :nanosecond)\n"
	"  i = 0\n"
	"  until $lp_stop\n"
	"    now = Process.clock_gettime(LP_MONO, :nanosecond)\n"
	"    break if deadline > 0 && now >= deadline\n"
	"    if step > 0\n"
	"      nxt += step\n"
	"      # After a long stall, restart the schedule instead of bursting.\n"
	"      nxt = now if now - nxt > 1_000_000_000\n"
	"      sleep((nxt - now) / 1e9) if nxt > now\n"
	"    end\n"
	"    # Exactly LP_SLOW_FRACTION of the calls, spread evenly.\n"
	"    slow = ((i + 1) * LP_SLOW_FRACTION).to_i > (i * LP_SLOW_FRACTION).to_i\n"
	"    m = i % (LP_ARG_OVER + 1)\n"
	"    arg = slow ? LP_ARG_OVER + 1 + m : m\n"
	"    t0 = Process.clock_gettime(LP_MONO, :nanosecond)\n";

static const char rb_thread_tail[] = "    t1 = Process.clock_gettime(LP_MONO, :nanosecond)\n"
				     "    calls << [t1 - t0, slow ? 1 : 0, t0]\n"
				     "    i += 1\n"
				     "  end\n"
				     "end\n"
				     "\n";

static const char rb_main[] =
	"# One \"latency_ns slow\" line a call, its CLOCK_MONOTONIC start in ns as a\n"
	"# third column when LIVEPROF_TRUTH_TIMES=1 (the C program's format).\n"
	"def lp_write_truth(path, per_thread)\n"
	"  times = ENV.fetch('LIVEPROF_TRUTH_TIMES', '').start_with?('1')\n"
	"  File.open(path, 'w') do |f|\n"
	"    per_thread.each do |calls|\n"
	"      calls.each do |lat, slow, start|\n"
	"        f.write(times ? \"#{lat} #{slow} #{start}\\n\" : \"#{lat} #{slow}\\n\")\n"
	"      end\n"
	"    end\n"
	"  end\n"
	"end\n"
	"\n"
	"seconds = ARGV[0] ? Float(ARGV[0], exception: false) || -1 : LP_SECONDS\n"
	"if seconds < 0\n"
	"  warn \"usage: #{$0} [SECONDS (0 = forever)]\"\n"
	"  exit 2\n"
	"end\n"
	"Signal.trap('INT') { $lp_stop = true }\n"
	"Signal.trap('TERM') { $lp_stop = true }\n"
	"deadline = seconds > 0 ? Process.clock_gettime(LP_MONO, :nanosecond) + (seconds * "
	"1e9).to_i : 0\n"
	"per_thread = Array.new(LP_THREADS) { [] }\n"
	"# Tell whoever waits (liveprof validate) that the calls start now.\n"
	"File.write(ENV['LIVEPROF_READY'], '') if ENV['LIVEPROF_READY']\n"
	"workers = per_thread.map { |c| Thread.new { lp_thread(c, deadline) } }\n"
	"# Joined with a timeout: trap handlers run in this thread, between waits.\n"
	"workers.each { |w| nil until w.join(0.1) }\n"
	"truth = ENV['LIVEPROF_TRUTH']\n"
	"lp_write_truth(truth, per_thread) if truth && !truth.empty?\n";

/* The cause's body, per kind of wait, at four spaces. */
static void rb_write_cause(FILE *f, const struct scenario *sc)
{
	fprintf(f, "\n  # The cause of slow calls: %g us %s.\n  def %s\n", sc->cause_us,
		scenario_wait_name(sc->wait), sc->cause);
	if (sc->wait == SCENARIO_CPU)
		fprintf(f, "    t_end = Process.clock_gettime(LP_CPU, :nanosecond) + LP_CAUSE_NS\n"
			   "    nil while Process.clock_gettime(LP_CPU, :nanosecond) < t_end\n");
	else if (sc->wait == SCENARIO_SLEEP)
		fprintf(f, "    sleep(LP_CAUSE_NS / 1e9)\n");
	else
		fprintf(f,
			"    # Blocks until it times out: nothing signals LP_NEVER.\n"
			"    LP_HELD.synchronize { LP_NEVER.wait(LP_HELD, LP_CAUSE_NS / 1e9) }\n");
	fprintf(f, "  end\n");
}

int scenario_write_ruby(FILE *f, const struct scenario *sc, const struct emit_opts *o)
{
	double seconds = o->duration_s > 0 ? o->duration_s : sc->seconds;

	scenario_write_intro(f, sc, o, "ruby", "# ", seconds);
	if (sc->threads > 1)
		fprintf(f, "#\n"
			   "# The threads share the GVL: one runs Ruby code at a time, so a call\n"
			   "# also waits for the GVL (a 100 ms time slice at most per switch).\n"
			   "# Its timing and liveprof's both include that wait.\n");
	fputc('\n', f);
	scenario_write_constants(f, sc, "LP_", seconds);
	fputs(rb_runtime_head, f);
	fprintf(f,
		"# The handler and its cause: `--split rb:" SCENARIO_RUBY_CLASS
		"#%s@p95`. They spin on\n"
		"# the thread's CPU clock, read inline (a method of ours would be a Ruby\n"
		"# call, probed, per turn of the loop).\n"
		"class " SCENARIO_RUBY_CLASS "\n"
		"  LP_CPU = Process::CLOCK_THREAD_CPUTIME_ID\n",
		sc->handler);
	rb_write_cause(f, sc);
	fprintf(f,
		"\n  # The handler: its own work, then the cause when the call is slow.\n"
		"  def %s(arg)\n"
		"    t_end = Process.clock_gettime(LP_CPU, :nanosecond) + LP_WORK_NS\n"
		"    nil while Process.clock_gettime(LP_CPU, :nanosecond) < t_end\n"
		"    %s if arg > LP_ARG_OVER\n"
		"  end\n"
		"end\n\n",
		sc->handler, sc->cause);
	fputs(rb_thread_head, f);
	fprintf(f, "    h.%s(arg)\n", sc->handler);
	fputs(rb_thread_tail, f);
	fputs(rb_main, f);
	return ferror(f) ? -EIO : 0;
}
