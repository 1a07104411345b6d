// SPDX-License-Identifier: GPL-2.0
/*
 * emit_ruby.c - the Ruby backend of `liveprof emit`.
 *
 * One top-level def per profile name, so TracePoint, stackprof and rbspy
 * see the original names. A top-level def becomes a private method of
 * Object and would override Kernel's for the whole program, so every
 * Kernel/Object method name is reserved, not only the keywords. Calls are
 * always written with parentheses: a name starting with a capital letter
 * is then still a method call, not a constant.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "user/synth/emit.h"

static const char *const rb_reserved[] = {
	/* Keywords. */
	"BEGIN",
	"END",
	"alias",
	"and",
	"begin",
	"break",
	"case",
	"class",
	"def",
	"defined",
	"do",
	"else",
	"elsif",
	"end",
	"ensure",
	"false",
	"for",
	"if",
	"in",
	"module",
	"next",
	"nil",
	"not",
	"or",
	"redo",
	"rescue",
	"retry",
	"return",
	"self",
	"super",
	"then",
	"true",
	"undef",
	"unless",
	"until",
	"when",
	"while",
	"yield",
	"__FILE__",
	"__LINE__",
	"__ENCODING__",
	"__method__",
	"__dir__",
	"__callee__",
	"__id__",
	"__send__",
	/* Kernel and Object methods (Ruby 3.1). */
	"Array",
	"Complex",
	"Float",
	"Hash",
	"Integer",
	"Rational",
	"String",
	"abort",
	"at_exit",
	"autoload",
	"binding",
	"caller",
	"caller_locations",
	"catch",
	"clone",
	"define_singleton_method",
	"display",
	"dup",
	"enum_for",
	"eval",
	"exec",
	"exit",
	"extend",
	"fail",
	"fork",
	"format",
	"freeze",
	"gem",
	"gets",
	"global_variables",
	"hash",
	"initialize",
	"initialize_clone",
	"initialize_copy",
	"initialize_dup",
	"inspect",
	"instance_eval",
	"instance_exec",
	"instance_variable_get",
	"instance_variable_set",
	"instance_variables",
	"itself",
	"lambda",
	"load",
	"local_variables",
	"loop",
	"method",
	"method_missing",
	"methods",
	"object_id",
	"open",
	"p",
	"pp",
	"print",
	"printf",
	"private_methods",
	"proc",
	"protected_methods",
	"public_method",
	"public_methods",
	"public_send",
	"putc",
	"puts",
	"raise",
	"rand",
	"readline",
	"readlines",
	"remove_instance_variable",
	"require",
	"require_relative",
	"respond_to_missing",
	"select",
	"send",
	"set_trace_func",
	"singleton_class",
	"singleton_method",
	"singleton_methods",
	"sleep",
	"spawn",
	"sprintf",
	"srand",
	"syscall",
	"system",
	"tap",
	"test",
	"then",
	"throw",
	"to_enum",
	"to_s",
	"trace_var",
	"trap",
	"untrace_var",
	"warn",
	"yield_self",
	"class",
	"main",
	"Thread",
	"Process",
	"Kernel",
	"Object",
	"Integer",
	NULL,
};

static const struct emit_ident_rules rb_rules = {
	.reserved = rb_reserved,
	.internal_prefix = "lp_",
	.suffix = "_fn",
	.max_len = 200,
};

static const char rb_runtime[] =
	"# Busy-loop length of a node this round; carries fractions over.\n"
	"def lp_iters(node)\n"
	"  st = Thread.current[:lp_state]\n"
	"  want = LP_SELF[node] * st[:ipu] + st[:carry][node]\n"
	"  n = want.to_i\n"
	"  st[:carry][node] = want - n\n"
	"  n\n"
	"end\n"
	"\n"
	"def lp_cpu_now\n"
	"  Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)\n"
	"end\n"
	"\n"
	"def lp_calibrate\n"
	"  best = 0.0\n"
	"  3.times do\n"
	"    t0 = lp_cpu_now\n"
	"    x = 0\n"
	"    i = 0\n"
	"    while i < 100_000\n"
	"      x += i\n"
	"      i += 1\n"
	"    end\n"
	"    dt = lp_cpu_now - t0\n"
	"    best = [best, 100_000 / dt].max if dt > 0\n"
	"  end\n"
	"  best > 0 ? best : 1e7\n"
	"end\n"
	"\n"
	"def lp_thread(base, deadline, utilization)\n"
	"  st = { carry: Array.new(LP_SELF.size, 0.0), ipu: base }\n"
	"  Thread.current[:lp_state] = st\n"
	"  wall0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)\n"
	"  cpu0 = lp_cpu_now\n"
	"  rnd = 0\n"
	"  while deadline.zero? || Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline\n"
	"    # Rounds vary in length so they cannot lock in phase with a profiler's\n"
	"    # clock; scaling a whole round keeps every share.\n"
	"    g = rnd * 0.6180339887498949\n"
	"    st[:ipu] = base * (0.75 + 0.5 * (g - g.floor))\n"
	"    rnd += 1\n"
	"    lp_root\n"
	"    next if utilization >= 1\n"
	"\n"
	"    # Sleep until the CPU used so far is U of the time elapsed.\n"
	"    now = Process.clock_gettime(Process::CLOCK_MONOTONIC)\n"
	"    due = wall0 + (lp_cpu_now - cpu0) / utilization\n"
	"    if due > now\n"
	"      Kernel.sleep(due - now)\n"
	"    elsif now - due > 1.0\n"
	"      wall0 = now\n"
	"      cpu0 = lp_cpu_now\n"
	"    end\n"
	"  end\n"
	"end\n"
	"\n"
	"def lp_main(argv)\n"
	"  seconds = argv[0] ? Float(argv[0]) : LP_SECONDS\n"
	"  utilization = argv[1] ? Float(argv[1]) : LP_UTILIZATION\n"
	"  threads = argv[2] ? Integer(argv[2]) : LP_THREADS\n"
	"  raise ArgumentError if seconds.negative? || !(utilization > 0 && utilization <= 1) ||\n"
	"                        threads < 1\n"
	"\n"
	"  # One round is about 50 ms of CPU, whatever the profile's total.\n"
	"  base = lp_calibrate * 0.050 / LP_TOTAL\n"
	"  now = Process.clock_gettime(Process::CLOCK_MONOTONIC)\n"
	"  deadline = seconds.positive? ? now + seconds : 0\n"
	"  Array.new(threads) { Thread.new { lp_thread(base, deadline, utilization) } "
	"}.each(&:join)\n"
	"  0\n"
	"rescue ArgumentError, TypeError\n"
	"  warn \"usage: #{$PROGRAM_NAME} [SECONDS (0 = forever) [UTILIZATION (0-1] [THREADS]]]\"\n"
	"  2\n"
	"end\n";

static int rb_write(FILE *f, const struct emit_tree *t, const struct emit_opts *o)
{
	size_t i, j;

	fprintf(f, "# frozen_string_literal: true\n#\n");
	emit_script_header(f, t, o, "ruby");
	fprintf(f,
		"\nLP_SECONDS = %.6g\nLP_UTILIZATION = %.6g\nLP_THREADS = %u\nLP_TOTAL = %llu\n\n",
		o->duration_s, o->utilization, o->threads, (unsigned long long)t->total);
	fprintf(f, "# Samples that ended at each tree node: its self work per round.\n"
		   "LP_SELF = [");
	for (i = 0; i < t->n_nodes; i++)
		fprintf(f, "%s%llu,", i % 12 ? " " : "\n  ", (unsigned long long)t->nodes[i].self);
	fprintf(f, "\n].freeze\n\n");
	fputs(rb_runtime, f);

	for (i = 0; i < t->n_names; i++) {
		const struct emit_name *nm = &t->names[i];

		fprintf(f, "\n# %u place%s in the tree.\ndef %s(node)\n  case node\n", nm->count,
			nm->count == 1 ? "" : "s", nm->ident);
		for (j = 0; j < nm->count; j++) {
			uint32_t id = t->name_nodes[nm->first + j];
			const struct emit_node *n = &t->nodes[id];

			fprintf(f, "  when %u # self %llu of %llu\n", id,
				(unsigned long long)n->self, (unsigned long long)n->total);
			/* The loop is written out so that its samples land here. */
			fprintf(f,
				"    n = lp_iters(%u)\n    x = 0\n    i = 0\n    while i < n\n"
				"      x += i\n      i += 1\n    end\n",
				id);
			emit_write_child_calls(f, t, id, "    ");
		}
		fprintf(f, "  end\n  nil\nend\n");
	}
	fprintf(f, "\n# One round: the root's children once each.\ndef lp_root\n");
	emit_write_child_calls(f, t, 0, "  ");
	fprintf(f, "  nil\nend\n\nexit(lp_main(ARGV)) if $PROGRAM_NAME == __FILE__\n");
	return ferror(f) ? -EIO : 0;
}

const struct emit_backend emit_backend_ruby = {
	.lang = "ruby",
	.rules = &rb_rules,
	.write = rb_write,
};
