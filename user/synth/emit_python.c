// SPDX-License-Identifier: GPL-2.0
/*
 * emit_python.c - the Python backend of `liveprof emit`.
 *
 * One def per profile name, at module level, so that sys.setprofile, py-spy
 * and friends see the original names. The runtime's own names start with
 * "_lp_" (and the modules it imports are aliased that way), so no profile
 * name can shadow what the runtime needs.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "user/synth/emit.h"

static const char *const py_reserved[] = {
	/* Keywords and soft keywords. */
	"False",
	"None",
	"True",
	"and",
	"as",
	"assert",
	"async",
	"await",
	"break",
	"class",
	"continue",
	"def",
	"del",
	"elif",
	"else",
	"except",
	"finally",
	"for",
	"from",
	"global",
	"if",
	"import",
	"in",
	"is",
	"lambda",
	"nonlocal",
	"not",
	"or",
	"pass",
	"raise",
	"return",
	"try",
	"while",
	"with",
	"yield",
	"_",
	"case",
	"match",
	"type",
	/* Builtins: shadowing them confuses every reader of the program. */
	"abs",
	"aiter",
	"all",
	"anext",
	"any",
	"ascii",
	"bin",
	"bool",
	"breakpoint",
	"bytearray",
	"bytes",
	"callable",
	"chr",
	"classmethod",
	"compile",
	"complex",
	"copyright",
	"credits",
	"delattr",
	"dict",
	"dir",
	"divmod",
	"enumerate",
	"eval",
	"exec",
	"exit",
	"filter",
	"float",
	"format",
	"frozenset",
	"getattr",
	"globals",
	"hasattr",
	"hash",
	"help",
	"hex",
	"id",
	"input",
	"int",
	"isinstance",
	"issubclass",
	"iter",
	"len",
	"license",
	"list",
	"locals",
	"map",
	"max",
	"memoryview",
	"min",
	"next",
	"object",
	"oct",
	"open",
	"ord",
	"pow",
	"print",
	"property",
	"quit",
	"range",
	"repr",
	"reversed",
	"round",
	"set",
	"setattr",
	"slice",
	"sorted",
	"staticmethod",
	"str",
	"sum",
	"super",
	"tuple",
	"vars",
	"zip",
	"Exception",
	"BaseException",
	"main",
	NULL,
};

static bool py_is_reserved(const char *s)
{
	/* Dunder names mean something to the interpreter. */
	return s[0] == '_' && s[1] == '_';
}

static const struct emit_ident_rules py_rules = {
	.reserved = py_reserved,
	.is_reserved = py_is_reserved,
	.internal_prefix = "_lp_",
	.suffix = "_fn",
	.max_len = 200,
};

static const char py_runtime[] =
	"_lp_local = _lp_threading.local()\n"
	"\n"
	"\n"
	"def _lp_iters(node):\n"
	"    \"\"\"Busy-loop length of a node this round; carries fractions over.\"\"\"\n"
	"    st = _lp_local\n"
	"    want = _LP_SELF[node] * st.ipu + st.carry[node]\n"
	"    n = int(want)\n"
	"    st.carry[node] = want - n\n"
	"    return n\n"
	"\n"
	"\n"
	"def _lp_calibrate():\n"
	"    best = 0.0\n"
	"    for _k in range(3):\n"
	"        t0 = _lp_time.thread_time()\n"
	"        x = 0\n"
	"        for i in range(100000):\n"
	"            x += i\n"
	"        dt = _lp_time.thread_time() - t0\n"
	"        if dt > 0:\n"
	"            best = max(best, 100000 / dt)\n"
	"    return best or 1e7\n"
	"\n"
	"\n"
	"def _lp_thread(base, deadline, utilization):\n"
	"    _lp_local.carry = [0.0] * len(_LP_SELF)\n"
	"    wall0, cpu0 = _lp_time.monotonic(), _lp_time.thread_time()\n"
	"    rnd = 0\n"
	"    while deadline == 0 or _lp_time.monotonic() < deadline:\n"
	"        # Rounds vary in length so they cannot lock in phase with a\n"
	"        # profiler's clock; scaling a whole round keeps every share.\n"
	"        g = rnd * 0.6180339887498949\n"
	"        _lp_local.ipu = base * (0.75 + 0.5 * (g - int(g)))\n"
	"        rnd += 1\n"
	"        _lp_root()\n"
	"        if utilization >= 1:\n"
	"            continue\n"
	"        # Sleep until the CPU used so far is U of the time elapsed.\n"
	"        now = _lp_time.monotonic()\n"
	"        due = wall0 + (_lp_time.thread_time() - cpu0) / utilization\n"
	"        if due > now:\n"
	"            _lp_time.sleep(due - now)\n"
	"        elif now - due > 1.0:\n"
	"            wall0, cpu0 = now, _lp_time.thread_time()\n"
	"\n"
	"\n"
	"def _lp_main(argv):\n"
	"    try:\n"
	"        seconds = float(argv[1]) if len(argv) > 1 else _LP_SECONDS\n"
	"        utilization = float(argv[2]) if len(argv) > 2 else _LP_UTILIZATION\n"
	"        threads = int(argv[3]) if len(argv) > 3 else _LP_THREADS\n"
	"    except ValueError:\n"
	"        seconds = -1\n"
	"    if seconds < 0 or not 0 < utilization <= 1 or threads < 1:\n"
	"        print('usage: %s [SECONDS (0 = forever) [UTILIZATION (0-1] [THREADS]]]' % "
	"argv[0],\n"
	"              file=_lp_sys.stderr)\n"
	"        return 2\n"
	"    _lp_sys.setrecursionlimit(max(1000, _LP_MAX_DEPTH + 200))\n"
	"    # One round is about 50 ms of CPU, whatever the profile's total.\n"
	"    base = _lp_calibrate() * 0.050 / _LP_TOTAL\n"
	"    deadline = _lp_time.monotonic() + seconds if seconds > 0 else 0\n"
	"    workers = [_lp_threading.Thread(target=_lp_thread, args=(base, deadline, "
	"utilization))\n"
	"               for _ in range(threads)]\n"
	"    for w in workers:\n"
	"        w.start()\n"
	"    for w in workers:\n"
	"        w.join()\n"
	"    return 0\n";

static int py_write(FILE *f, const struct emit_tree *t, const struct emit_opts *o)
{
	size_t i, j;

	fprintf(f, "#!/usr/bin/env python3\n");
	emit_script_header(f, t, o, "python");
	fprintf(f, "\nimport sys as _lp_sys\nimport threading as _lp_threading\n"
		   "import time as _lp_time\n\n");
	fprintf(f,
		"_LP_SECONDS = %.6g\n_LP_UTILIZATION = %.6g\n_LP_THREADS = %u\n"
		"_LP_TOTAL = %llu\n_LP_MAX_DEPTH = %u\n\n",
		o->duration_s, o->utilization, o->threads, (unsigned long long)t->total,
		t->max_depth);
	fprintf(f, "# Samples that ended at each tree node: its self work per round.\n"
		   "_LP_SELF = [");
	for (i = 0; i < t->n_nodes; i++)
		fprintf(f, "%s%llu,", i % 12 ? " " : "\n    ",
			(unsigned long long)t->nodes[i].self);
	fprintf(f, "\n]\n\n\n");
	fputs(py_runtime, f);

	for (i = 0; i < t->n_names; i++) {
		const struct emit_name *nm = &t->names[i];

		fprintf(f, "\n\ndef %s(node):\n", nm->ident);
		fprintf(f, "    \"\"\"%u place%s in the tree.\"\"\"\n", nm->count,
			nm->count == 1 ? "" : "s");
		for (j = 0; j < nm->count; j++) {
			uint32_t id = t->name_nodes[nm->first + j];
			const struct emit_node *n = &t->nodes[id];

			fprintf(f, "    %s node == %u:  # self %llu of %llu\n", j ? "elif" : "if",
				id, (unsigned long long)n->self, (unsigned long long)n->total);
			/* The loop is written out so that its samples land here. */
			fprintf(f,
				"        x = 0\n        for i in range(_lp_iters(%u)):\n"
				"            x += i\n",
				id);
			emit_write_child_calls(f, t, id, "        ");
		}
	}
	fprintf(f,
		"\n\ndef _lp_root():\n    \"\"\"One round: the root's children once each.\"\"\"\n");
	emit_write_child_calls(f, t, 0, "    ");
	/* The entry point must come after every def it reaches. */
	fprintf(f, "\n\nif __name__ == '__main__':\n    _lp_sys.exit(_lp_main(_lp_sys.argv))\n");
	return ferror(f) ? -EIO : 0;
}

const struct emit_backend emit_backend_python = {
	.lang = "python",
	.rules = &py_rules,
	.write = py_write,
};
