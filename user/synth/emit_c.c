// SPDX-License-Identifier: GPL-2.0
/*
 * emit_c.c - the C backend of `liveprof emit`.
 *
 * The program must show a frame-pointer profiler (perf, liveprof) exactly
 * the stacks of the input, when built with nothing more than
 * `cc -O1 -g FILE -o PROG -lpthread`. -O1 omits frame pointers and may turn
 * calls into jumps, so the file carries its own optimize pragma, every
 * function is noipa (no inlining, cloning or merging that would rename or
 * hide it), every call is followed by a store (no tail call), and every
 * function touches a volatile local array so that even a leaf has a real
 * frame (see DESIGN.md: gcc gives small leaves none otherwise).
 *
 * The generated functions are static, so a profile name such as "read"
 * cannot interpose on libc; names that clash with what the included headers
 * declare, with C keywords or with a libc symbol get the "_fn" suffix.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "user/synth/emit.h"

static const char *const c_reserved[] = {
	/* C11/C23 keywords and the spellings <stdbool.h> etc. give them. */
	"auto",
	"break",
	"case",
	"char",
	"const",
	"continue",
	"default",
	"do",
	"double",
	"else",
	"enum",
	"extern",
	"float",
	"for",
	"goto",
	"if",
	"inline",
	"int",
	"long",
	"register",
	"restrict",
	"return",
	"short",
	"signed",
	"sizeof",
	"static",
	"struct",
	"switch",
	"typedef",
	"union",
	"unsigned",
	"void",
	"volatile",
	"while",
	"asm",
	"typeof",
	"bool",
	"true",
	"false",
	"alignas",
	"alignof",
	"static_assert",
	"thread_local",
	"nullptr",
	"constexpr",
	"noreturn",
	"complex",
	"imaginary",
	"typeof_unqual",
	/* The program's own entry point and what it calls. */
	"main",
	"malloc",
	"calloc",
	"realloc",
	"free",
	"memcpy",
	"memset",
	"memmove",
	"strcmp",
	"strlen",
	"printf",
	"fprintf",
	"snprintf",
	"exit",
	"abort",
	"getenv",
	"strtod",
	"strtoul",
	"fopen",
	"fclose",
	"perror",
	"clock_gettime",
	"nanosleep",
	"alloca",
	/* Types and macros of <stdio.h>, <stdlib.h>, <time.h>, <pthread.h>. */
	"FILE",
	"fpos_t",
	"size_t",
	"ssize_t",
	"off_t",
	"va_list",
	"wchar_t",
	"div_t",
	"ldiv_t",
	"lldiv_t",
	"time_t",
	"clock_t",
	"clockid_t",
	"timer_t",
	"pid_t",
	"locale_t",
	"sigset_t",
	"NULL",
	"EOF",
	"BUFSIZ",
	"FILENAME_MAX",
	"FOPEN_MAX",
	"L_tmpnam",
	"L_ctermid",
	"SEEK_SET",
	"SEEK_CUR",
	"SEEK_END",
	"TMP_MAX",
	"P_tmpdir",
	"EXIT_SUCCESS",
	"EXIT_FAILURE",
	"RAND_MAX",
	"MB_CUR_MAX",
	"CLOCKS_PER_SEC",
	"TIME_UTC",
	"CLOCK_REALTIME",
	"CLOCK_MONOTONIC",
	"CLOCK_PROCESS_CPUTIME_ID",
	"CLOCK_THREAD_CPUTIME_ID",
	"TIMER_ABSTIME",
	"WEXITSTATUS",
	"WTERMSIG",
	"WSTOPSIG",
	"WIFEXITED",
	"WIFSIGNALED",
	"WIFSTOPPED",
	"WIFCONTINUED",
	"WCOREDUMP",
	"WNOHANG",
	"WUNTRACED",
	"offsetof",
	"errno",
	"stdin",
	"stdout",
	"stderr",
	"getc",
	"putc",
	"timespec",
	"tm",
	"sched_param",
	"cpu_set_t",
	"CPU_SET",
	"CPU_ZERO",
	"CPU_ISSET",
	"CPU_SETSIZE",
	"SCHED_OTHER",
	"SCHED_FIFO",
	"SCHED_RR",
	"CLONE_VM",
	"SCHED_BATCH",
	"SCHED_IDLE",
	"_IOFBF",
	"_IOLBF",
	"_IONBF",
	NULL,
};

static bool c_is_reserved(const char *s)
{
	static void *libc, *libm;
	static bool tried;

	/* The implementation's namespace: __x and _X. */
	if (s[0] == '_' && (s[1] == '_' || (s[1] >= 'A' && s[1] <= 'Z')))
		return true;
	/* <pthread.h> and <sched.h> hold macros as well as functions. */
	if (!strncmp(s, "pthread_", 8) || !strncmp(s, "PTHREAD_", 8) || !strncmp(s, "sched_", 6) ||
	    !strncmp(s, "CLOCK_", 6))
		return true;
	/*
	 * Whatever libc exports may be declared by the included headers, and a
	 * static function of that name would not compile: ask libc (and libm)
	 * itself. The handles stay open for the life of the process.
	 */
	if (!tried) {
		tried = true;
		libc = dlopen("libc.so.6", RTLD_LAZY);
		/* gcc knows the math functions as builtins: "log" must not be redefined. */
		libm = dlopen("libm.so.6", RTLD_LAZY);
	}
	return (libc && dlsym(libc, s)) || (libm && dlsym(libm, s));
}

static const struct emit_ident_rules c_rules = {
	.reserved = c_reserved,
	.is_reserved = c_is_reserved,
	.internal_prefix = "lp_",
	.suffix = "_fn",
	.max_len = 200,
};

/* The node's path for a comment: "caller <- name" is enough to find it. */
static void write_node_comment(FILE *f, const struct emit_tree *t, uint32_t id)
{
	const struct emit_node *n = &t->nodes[id];

	fprintf(f, "node %u", id);
	if (n->parent != EMIT_NONE && t->nodes[n->parent].name != EMIT_NONE)
		fprintf(f, ", called by %s", t->names[t->nodes[n->parent].name].ident);
	else
		fprintf(f, ", a root");
	fprintf(f, ": self %llu of %llu", (unsigned long long)n->self,
		(unsigned long long)n->total);
}

static const char c_runtime[] =
	"static double lp_seconds = %.6g;\n"
	"static double lp_utilization = %.6g;\n"
	"static unsigned long lp_threads = %u;\n"
	"\n"
	"/* Busy-loop iterations per unit (sample) of work, set by calibration. */\n"
	"static double lp_base_iters_per_unit;\n"
	"static double lp_deadline;\n"
	"\n"
	"/* Per thread: this round's scale and the fractions of iterations carried\n"
	" * over, so that nodes with few samples get exactly their share in the long\n"
	" * run. */\n"
	"static __thread double lp_iters_per_unit;\n"
	"static __thread double *lp_carry;\n"
	"static __thread volatile unsigned long lp_sink;\n"
	"\n";

/*
 * What both C emitters (this one and scenario_write.c) put in every
 * program: lp_now(), seconds of a clock, and lp_spin(), the busy loop: one
 * dependent multiply-add per iteration, so its speed is set by the
 * multiplier's latency and not by where the loop happens to be aligned in
 * each function; always inlined, so the samples belong to its caller.
 */
const char emit_c_clock_fn[] =
	"static double lp_now(clockid_t clock)\n"
	"{\n"
	"\tstruct timespec ts;\n"
	"\n"
	"\tclock_gettime(clock, &ts);\n"
	"\treturn ts.tv_sec + ts.tv_nsec * 1e-9;\n"
	"}\n"
	"\n";

const char emit_c_spin_fn[] =
	"/* The busy loop: a dependent multiply-add chain, always inlined. */\n"
	"static inline __attribute__((always_inline)) void lp_spin(unsigned long n)\n"
	"{\n"
	"\tunsigned long x = lp_sink, i;\n"
	"\n"
	"\tfor (i = 0; i < n; i++)\n"
	"\t\tx = x * 6364136223846793005UL + 1442695040888963407UL;\n"
	"\tlp_sink = x;\n"
	"}\n"
	"\n";

static const char c_work[] =
	"/* A node's self work for one round. */\n"
	"static inline __attribute__((always_inline)) void lp_work(unsigned int node)\n"
	"{\n"
	"\tdouble want = lp_self[node] * lp_iters_per_unit + lp_carry[node];\n"
	"\tunsigned long n = (unsigned long)want;\n"
	"\n"
	"\tlp_carry[node] = want - (double)n;\n"
	"\tlp_spin(n);\n"
	"}\n";

static const char c_main[] =
	"/* Iterations of the busy loop per second of CPU, best of a few tries. */\n"
	"static LP_FN double lp_calibrate(void)\n"
	"{\n"
	"\tdouble best = 0;\n"
	"\tint k;\n"
	"\n"
	"\tfor (k = 0; k < 5; k++) {\n"
	"\t\tdouble t0 = lp_now(CLOCK_THREAD_CPUTIME_ID), dt;\n"
	"\t\tunsigned long n = 1UL << 20;\n"
	"\n"
	"\t\tlp_spin(n);\n"
	"\t\tdt = lp_now(CLOCK_THREAD_CPUTIME_ID) - t0;\n"
	"\t\tif (dt > 0 && n / dt > best)\n"
	"\t\t\tbest = n / dt;\n"
	"\t}\n"
	"\treturn best > 0 ? best : 1e9;\n"
	"}\n"
	"\n"
	"static LP_FN void *lp_thread(void *arg)\n"
	"{\n"
	"\tdouble wall0 = lp_now(CLOCK_MONOTONIC), cpu0 = lp_now(CLOCK_THREAD_CPUTIME_ID);\n"
	"\tunsigned long round;\n"
	"\n"
	"\t(void)arg;\n"
	"\tlp_carry = calloc(LP_NODES, sizeof(*lp_carry));\n"
	"\tif (!lp_carry) {\n"
	"\t\tperror(\"calloc\");\n"
	"\t\texit(1);\n"
	"\t}\n"
	"\tunsigned long long rng = 0x9e3779b97f4a7c15ULL ^ (unsigned long)&round;\n"
	"\n"
	"\tfor (round = 0;; round++) {\n"
	"\t\tdouble now, due;\n"
	"\n"
	"\t\tif (lp_deadline > 0 && lp_now(CLOCK_MONOTONIC) >= lp_deadline)\n"
	"\t\t\tbreak;\n"
	"\t\t/*\n"
	"\t\t * Rounds are short (~1 ms) and of random length (0.5x to 1.5x,\n"
	"\t\t * xorshift) so that a sampling clock meets every point of a\n"
	"\t\t * round equally often: rounds near the sampling period with a\n"
	"\t\t * regular pattern of lengths locked in phase with 99 Hz and\n"
	"\t\t * skewed the shares. Scaling a whole round keeps every share.\n"
	"\t\t */\n"
	"\t\trng ^= rng << 13;\n"
	"\t\trng ^= rng >> 7;\n"
	"\t\trng ^= rng << 17;\n"
	"\t\tlp_iters_per_unit = lp_base_iters_per_unit *\n"
	"\t\t\t\t    (0.5 + (double)(rng >> 11) / 9007199254740992.0);\n"
	"\t\tlp_root();\n"
	"\t\tif (lp_utilization >= 1)\n"
	"\t\t\tcontinue;\n"
	"\t\t/*\n"
	"\t\t * Sleep until the CPU used so far is U of the time elapsed: this\n"
	"\t\t * absorbs oversleeping and time lost to other processes.\n"
	"\t\t */\n"
	"\t\tnow = lp_now(CLOCK_MONOTONIC);\n"
	"\t\tdue = wall0 + (lp_now(CLOCK_THREAD_CPUTIME_ID) - cpu0) / lp_utilization;\n"
	"\t\tif (due > now) {\n"
	"\t\t\tstruct timespec ts = { (time_t)due, (long)((due - (time_t)due) * 1e9) };\n"
	"\n"
	"\t\t\tclock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);\n"
	"\t\t} else if (now - due > 1.0) {\n"
	"\t\t\t/* Far behind (the machine is busy): do not burst to catch up. */\n"
	"\t\t\twall0 = now;\n"
	"\t\t\tcpu0 = lp_now(CLOCK_THREAD_CPUTIME_ID);\n"
	"\t\t}\n"
	"\t}\n"
	"\tfree(lp_carry);\n"
	"\treturn NULL;\n"
	"}\n"
	"\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tpthread_t *tids;\n"
	"\tunsigned long i;\n"
	"\n"
	"\tif (argc > 1)\n"
	"\t\tlp_seconds = strtod(argv[1], NULL);\n"
	"\tif (argc > 2)\n"
	"\t\tlp_utilization = strtod(argv[2], NULL);\n"
	"\tif (argc > 3)\n"
	"\t\tlp_threads = strtoul(argv[3], NULL, 10);\n"
	"\tif (lp_seconds < 0 || !(lp_utilization > 0 && lp_utilization <= 1) ||\n"
	"\t    lp_threads < 1 || lp_threads > 4096) {\n"
	"\t\tfprintf(stderr, \"usage: %s [SECONDS (0 = forever) [UTILIZATION (0-1] \"\n"
	"\t\t\t\t\"[THREADS]]]\\n\", argv[0]);\n"
	"\t\treturn 2;\n"
	"\t}\n"
	"\t/*\n"
	"\t * One round is about 1 ms of CPU, whatever the profile's total, or\n"
	"\t * 10 us per tree node in big trees: a node's call and bookkeeping cost\n"
	"\t * 50-70 ns, which a profiler sees in the callers, so at 1 ms a\n"
	"\t * 4,700-node round spent a third of its time outside the self work.\n"
	"\t */\n"
	"\tlp_base_iters_per_unit = lp_calibrate() * LP_ROUND_S / LP_TOTAL;\n"
	"\tif (lp_seconds > 0)\n"
	"\t\tlp_deadline = lp_now(CLOCK_MONOTONIC) + lp_seconds;\n"
	"\ttids = calloc(lp_threads, sizeof(*tids));\n"
	"\tif (!tids) {\n"
	"\t\tperror(\"calloc\");\n"
	"\t\treturn 1;\n"
	"\t}\n"
	"\tfor (i = 0; i < lp_threads; i++) {\n"
	"\t\tif (pthread_create(&tids[i], NULL, lp_thread, NULL)) {\n"
	"\t\t\tfprintf(stderr, \"cannot create thread %lu\\n\", i);\n"
	"\t\t\treturn 1;\n"
	"\t\t}\n"
	"\t}\n"
	"\tfor (i = 0; i < lp_threads; i++)\n"
	"\t\tpthread_join(tids[i], NULL);\n"
	"\tfree(tids);\n"
	"\treturn 0;\n"
	"}\n";

/* The calls of one node: each child once per round, then a store so no call is a tail call. */
static void write_calls(FILE *f, const struct emit_tree *t, uint32_t id, const char *indent,
			const char *after)
{
	uint32_t c;

	for (c = t->nodes[id].first_child; c != EMIT_NONE; c = t->nodes[c].next_sibling) {
		fprintf(f, "%s%s(%u);\n", indent, t->names[t->nodes[c].name].ident, c);
		fprintf(f, "%s%s\n", indent, after);
	}
}

static int c_write(FILE *f, const struct emit_tree *t, const struct emit_opts *o)
{
	char build[2048], prog[1024];
	size_t i, j;

	fprintf(f, "/*\n * Synthetic workload written by `liveprof emit --lang c` from '");
	emit_comment_text(f, o->source ? o->source : "-", "*/");
	fprintf(f,
		"'.\n"
		" *\n"
		" * It reproduces that profile's call tree: %zu functions, %zu tree nodes,\n"
		" * %llu samples. Each function does the self work of its tree nodes (a\n"
		" * calibrated busy loop, in proportion to their samples) and calls their\n"
		" * children once per round, so a profiler should measure the input's self\n"
		" * share for every function.\n"
		" *\n",
		t->n_names, t->n_nodes - 1, (unsigned long long)t->total);
	fprintf(f, " * Build: %s\n", emit_build_command("c", o->out_path, build, sizeof(build)));
	fprintf(f, " * Run:   %s [SECONDS [UTILIZATION [THREADS]]]\n",
		emit_prog_path(o->out_path, prog, sizeof(prog)));
	fprintf(f, " *        (defaults: %g s (0 = forever), utilization %g, %u thread%s)\n",
		o->duration_s, o->utilization, o->threads, o->threads == 1 ? "" : "s");
	emit_write_renames(f, t, " * ", "*/");
	fprintf(f, " */\n");
	fprintf(f,
		"#pragma GCC optimize(\"no-omit-frame-pointer\", \"no-optimize-sibling-calls\")\n"
		"\n"
		"#include <pthread.h>\n"
		"#include <stdio.h>\n"
		"#include <stdlib.h>\n"
		"#include <time.h>\n"
		"\n"
		"/* Never inlined, cloned or merged: each function keeps its name and frame. */\n"
		"#if defined(__clang__)\n"
		"#define LP_FN __attribute__((noinline, used))\n"
		"#else\n"
		"#define LP_FN __attribute__((noipa, used))\n"
		"#endif\n"
		"\n"
		"#define LP_NODES %zu\n"
		"#define LP_TOTAL %llu.0\n"
		"#define LP_ROUND_S (LP_NODES * 10e-6 > 0.001 ? LP_NODES * 10e-6 : 0.001)\n"
		"\n"
		"/* Samples that ended at each tree node: its self work per round. */\n"
		"static const unsigned long long lp_self[LP_NODES] = {",
		t->n_nodes, (unsigned long long)t->total);
	for (i = 0; i < t->n_nodes; i++)
		fprintf(f, "%s%llu,", i % 12 ? " " : "\n\t", (unsigned long long)t->nodes[i].self);
	fprintf(f, "\n};\n\n");
	fprintf(f, c_runtime, o->duration_s, o->utilization, o->threads);
	fputs(emit_c_clock_fn, f);
	fputs(emit_c_spin_fn, f);
	fputs(c_work, f);

	fprintf(f, "\n");
	for (i = 0; i < t->n_names; i++)
		fprintf(f, "static LP_FN void %s(unsigned int node);\n", t->names[i].ident);

	for (i = 0; i < t->n_names; i++) {
		const struct emit_name *nm = &t->names[i];

		fprintf(f, "\n/* %s: %u place%s in the tree */\n", nm->ident, nm->count,
			nm->count == 1 ? "" : "s");
		fprintf(f, "static LP_FN void %s(unsigned int node)\n{\n", nm->ident);
		fprintf(f, "\tvolatile char lp_frame[8];\n\n\tlp_frame[0] = 0;\n");
		fprintf(f, "\tswitch (node) {\n");
		for (j = 0; j < nm->count; j++) {
			uint32_t id = t->name_nodes[nm->first + j];

			fprintf(f, "\tcase %u: /* ", id);
			write_node_comment(f, t, id);
			fprintf(f, " */\n\t\tlp_work(%u);\n", id);
			write_calls(f, t, id, "\t\t", "lp_frame[1]++;");
			fprintf(f, "\t\tbreak;\n");
		}
		fprintf(f, "\tdefault:\n\t\tbreak;\n\t}\n\tlp_frame[2] = lp_frame[1];\n}\n");
	}
	fprintf(f, "\n/* One round: the root's children once each. */\n");
	fprintf(f, "static LP_FN void lp_root(void)\n{\n\tvolatile char lp_frame[8];\n\n"
		   "\tlp_frame[0] = 0;\n");
	write_calls(f, t, 0, "\t", "lp_frame[1]++;");
	fprintf(f, "}\n\n");
	fputs(c_main, f);
	return ferror(f) ? -EIO : 0;
}

const struct emit_backend emit_backend_c = {
	.lang = "c",
	.rules = &c_rules,
	.write = c_write,
};
