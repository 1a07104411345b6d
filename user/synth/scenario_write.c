// SPDX-License-Identifier: GPL-2.0
/*
 * scenario_write.c - the C program of a parsed latency scenario: a fixed
 * runtime (spin calibration, pacing, threads, the LIVEPROF_TRUTH file of
 * "latency_ns slow" lines) around a cause function and a handler written
 * from the scenario. The spec format and its parser are in scenario.c.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user/synth/emit.h"
#include "user/synth/emit_tree.h"
#include "user/synth/scenario.h"

static const char sc_runtime[] =
	"static volatile sig_atomic_t lp_stop;\n"
	"static volatile unsigned long lp_sink;\n"
	"static unsigned long lp_work_iters, lp_cause_iters;\n"
	"static double lp_deadline;\n"
	"/* Locked by main and never released: a slow call blocks on it. */\n"
	"static pthread_mutex_t lp_held = PTHREAD_MUTEX_INITIALIZER;\n"
	"\n"
	"struct lp_call {\n"
	"\tunsigned long long latency_ns;\n"
	"\tunsigned long long start_ns; /* CLOCK_MONOTONIC */\n"
	"\tunsigned char slow;\n"
	"};\n"
	"\n"
	"struct lp_thread_data {\n"
	"\tpthread_t tid;\n"
	"\tstruct lp_call *calls;\n"
	"\tsize_t n, cap;\n"
	"\tunsigned long long dropped;\n"
	"};\n"
	"\n";

static const char sc_calibrate[] =
	"static double lp_calibrate(void)\n"
	"{\n"
	"\tdouble best = 0;\n"
	"\tint k;\n"
	"\n"
	"\tfor (k = 0; k < 5; k++) {\n"
	"\t\tdouble t0 = lp_now(CLOCK_THREAD_CPUTIME_ID), dt;\n"
	"\n"
	"\t\tlp_spin(1UL << 20);\n"
	"\t\tdt = lp_now(CLOCK_THREAD_CPUTIME_ID) - t0;\n"
	"\t\tif (dt > 0 && (1UL << 20) / dt > best)\n"
	"\t\t\tbest = (1UL << 20) / dt;\n"
	"\t}\n"
	"\treturn best > 0 ? best : 1e9;\n"
	"}\n"
	"\n"
	"static void lp_sleep_until(double t)\n"
	"{\n"
	"\tstruct timespec ts = { (time_t)t, (long)((t - (time_t)t) * 1e9) };\n"
	"\n"
	"\tclock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);\n"
	"}\n";

static const char sc_main[] =
	"static void *lp_thread(void *arg)\n"
	"{\n"
	"\tstruct lp_thread_data *td = arg;\n"
	"\tdouble next = lp_now(CLOCK_MONOTONIC);\n"
	"\tunsigned long long i;\n"
	"\n"
	"\tfor (i = 0; !lp_stop; i++) {\n"
	"\t\tdouble now = lp_now(CLOCK_MONOTONIC), t0, t1;\n"
	"\t\tlong long arg;\n"
	"\t\tint slow;\n"
	"\n"
	"\t\tif (lp_deadline > 0 && now >= lp_deadline)\n"
	"\t\t\tbreak;\n"
	"\t\tif (LP_RATE > 0) {\n"
	"\t\t\tnext += 1.0 / LP_RATE;\n"
	"\t\t\t/* After a long stall, restart the schedule instead of bursting. */\n"
	"\t\t\tif (now - next > 1.0)\n"
	"\t\t\t\tnext = now;\n"
	"\t\t\tif (next > now)\n"
	"\t\t\t\tlp_sleep_until(next);\n"
	"\t\t}\n"
	"\t\t/* Exactly LP_SLOW_FRACTION of the calls, spread evenly. */\n"
	"\t\tslow = (unsigned long long)((i + 1) * LP_SLOW_FRACTION) >\n"
	"\t\t       (unsigned long long)(i * LP_SLOW_FRACTION);\n"
	"\t\targ = slow ? LP_ARG_OVER + 1 + (long long)(i % (LP_ARG_OVER + 1))\n"
	"\t\t\t   : (long long)(i % (LP_ARG_OVER + 1));\n"
	"\t\tt0 = lp_now(CLOCK_MONOTONIC);\n"
	"\t\tLP_HANDLER(arg);\n"
	"\t\tt1 = lp_now(CLOCK_MONOTONIC);\n"
	"\t\tif (td->n == td->cap) {\n"
	"\t\t\tsize_t cap = td->cap ? td->cap * 2 : 4096;\n"
	"\t\t\tstruct lp_call *c = cap > (64UL << 20) ? NULL :\n"
	"\t\t\t\t\t\t\t    realloc(td->calls, cap * sizeof(*c));\n"
	"\n"
	"\t\t\tif (!c) {\n"
	"\t\t\t\ttd->dropped++;\n"
	"\t\t\t\tcontinue;\n"
	"\t\t\t}\n"
	"\t\t\ttd->calls = c;\n"
	"\t\t\ttd->cap = cap;\n"
	"\t\t}\n"
	"\t\ttd->calls[td->n].latency_ns = (unsigned long long)((t1 - t0) * 1e9);\n"
	"\t\ttd->calls[td->n].slow = (unsigned char)slow;\n"
	"\t\ttd->calls[td->n].start_ns = (unsigned long long)(t0 * 1e9);\n"
	"\t\ttd->n++;\n"
	"\t}\n"
	"\treturn NULL;\n"
	"}\n"
	"\n"
	"static void lp_on_signal(int sig)\n"
	"{\n"
	"\t(void)sig;\n"
	"\tlp_stop = 1;\n"
	"}\n"
	"\n"
	"/*\n"
	" * The ground truth: one \"latency_ns slow\" line per call, and the call's\n"
	" * CLOCK_MONOTONIC start in ns as a third column when LIVEPROF_TRUTH_TIMES=1\n"
	" * (validate keeps the calls of its profiling window).\n"
	" */\n"
	"static int lp_write_truth(const char *path, struct lp_thread_data *td, unsigned long n)\n"
	"{\n"
	"\tconst char *times = getenv(\"LIVEPROF_TRUTH_TIMES\");\n"
	"\tint with_times = times && times[0] == '1';\n"
	"\tunsigned long long dropped = 0;\n"
	"\tunsigned long t;\n"
	"\tFILE *f = fopen(path, \"w\");\n"
	"\tsize_t i;\n"
	"\n"
	"\tif (!f) {\n"
	"\t\tperror(path);\n"
	"\t\treturn 1;\n"
	"\t}\n"
	"\tfor (t = 0; t < n; t++) {\n"
	"\t\tfor (i = 0; i < td[t].n; i++) {\n"
	"\t\t\tfprintf(f, \"%llu %d\", td[t].calls[i].latency_ns, td[t].calls[i].slow);\n"
	"\t\t\tif (with_times)\n"
	"\t\t\t\tfprintf(f, \" %llu\", td[t].calls[i].start_ns);\n"
	"\t\t\tfputc('\\n', f);\n"
	"\t\t}\n"
	"\t\tdropped += td[t].dropped;\n"
	"\t}\n"
	"\tif (fclose(f)) {\n"
	"\t\tperror(path);\n"
	"\t\treturn 1;\n"
	"\t}\n"
	"\tif (dropped)\n"
	"\t\tfprintf(stderr, \"%llu calls not recorded (out of memory)\\n\", dropped);\n"
	"\treturn 0;\n"
	"}\n"
	"\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tconst char *truth = getenv(\"LIVEPROF_TRUTH\");\n"
	"\tdouble seconds = argc > 1 ? strtod(argv[1], NULL) : LP_SECONDS, ips;\n"
	"\tstruct lp_thread_data *td;\n"
	"\tstruct sigaction sa;\n"
	"\tunsigned long t;\n"
	"\tint ret = 0;\n"
	"\n"
	"\tif (seconds < 0) {\n"
	"\t\tfprintf(stderr, \"usage: %s [SECONDS (0 = forever)]\\n\", argv[0]);\n"
	"\t\treturn 2;\n"
	"\t}\n"
	"\tmemset(&sa, 0, sizeof(sa));\n"
	"\tsa.sa_handler = lp_on_signal;\n"
	"\tsigaction(SIGINT, &sa, NULL);\n"
	"\tsigaction(SIGTERM, &sa, NULL);\n"
	"\tips = lp_calibrate();\n"
	"\tlp_work_iters = (unsigned long)(ips * LP_WORK_US * 1e-6);\n"
	"\tlp_cause_iters = (unsigned long)(ips * LP_CAUSE_US * 1e-6);\n"
	"\tpthread_mutex_lock(&lp_held);\n"
	"\tif (seconds > 0)\n"
	"\t\tlp_deadline = lp_now(CLOCK_MONOTONIC) + seconds;\n"
	"\ttd = calloc(LP_THREADS, sizeof(*td));\n"
	"\tif (!td) {\n"
	"\t\tperror(\"calloc\");\n"
	"\t\treturn 1;\n"
	"\t}\n"
	"\tfor (t = 0; t < LP_THREADS; t++) {\n"
	"\t\tif (pthread_create(&td[t].tid, NULL, lp_thread, &td[t])) {\n"
	"\t\t\tfprintf(stderr, \"cannot create thread %lu\\n\", t);\n"
	"\t\t\treturn 1;\n"
	"\t\t}\n"
	"\t}\n"
	"\tfor (t = 0; t < LP_THREADS; t++)\n"
	"\t\tpthread_join(td[t].tid, NULL);\n"
	"\tif (truth)\n"
	"\t\tret = lp_write_truth(truth, td, LP_THREADS);\n"
	"\tfor (t = 0; t < LP_THREADS; t++)\n"
	"\t\tfree(td[t].calls);\n"
	"\tfree(td);\n"
	"\treturn ret;\n"
	"}\n";

const char *scenario_wait_name(enum scenario_wait w)
{
	return w == SCENARIO_SLEEP ? "sleep" : w == SCENARIO_BLOCK ? "block" : "cpu";
}

void scenario_write_intro(FILE *f, const struct scenario *sc, const struct emit_opts *o,
			  const char *lang, const char *pfx, double seconds)
{
	char build[2048], prog[1024];
	long long over = sc->arg_over >= 0 ? sc->arg_over : 0;
	bool script = strcmp(lang, "c") != 0;
	/* A blank comment line: the prefix without its trailing blank. */
	int blank = (int)strlen(pfx) - (pfx[0] && pfx[strlen(pfx) - 1] == ' ');

	fprintf(f, "%sLatency scenario written by `liveprof emit --scenario%s%s` from '",
		script ? "# " : "/*\n * ", script ? " --lang " : "", script ? lang : "");
	emit_comment_text(f, o->source ? o->source : "-", script ? NULL : "*/");
	fprintf(f,
		"'.\n"
		"%.*s\n"
		"%s%s() is called %s by %u thread%s. Every call spends %g us on CPU in\n"
		"%s%s() itself; %g%% of the calls (the slow ones, arg > %lld) also call\n"
		"%s%s(), which spends %g us %s.\n"
		"%.*s\n",
		blank, pfx, pfx, sc->handler, sc->rate > 0 ? "at a fixed rate" : "back to back",
		sc->threads, sc->threads == 1 ? "" : "s", sc->work_us, pfx, sc->handler,
		sc->slow_pct, over, pfx, sc->cause, sc->cause_us,
		sc->wait == SCENARIO_CPU     ? "on CPU"
		: sc->wait == SCENARIO_SLEEP ? "asleep"
					     : "blocked on a lock held by another thread",
		blank, pfx);
	if (script) {
		fprintf(f,
			"%sRun:   [LIVEPROF_TRUTH=FILE] %s [SECONDS]   (default %g, 0 = forever)\n",
			pfx, emit_build_command(lang, o->out_path, build, sizeof(build)), seconds);
	} else {
		fprintf(f, "%sBuild: %s\n", pfx,
			emit_build_command(lang, o->out_path, build, sizeof(build)));
		fprintf(f,
			"%sRun:   [LIVEPROF_TRUTH=FILE] %s [SECONDS]   (default %g, 0 = forever)\n",
			pfx, emit_prog_path(o->out_path, prog, sizeof(prog)), seconds);
	}
	fprintf(f,
		"%.*s\n"
		"%sWith LIVEPROF_TRUTH=FILE it writes one \"latency_ns slow\" line per call\n"
		"%s(slow is 0 or 1) when it exits: after SECONDS, or on SIGINT/SIGTERM.\n",
		blank, pfx, pfx, pfx);
	if (script)
		fprintf(f, "%sWith LIVEPROF_READY=FILE it creates FILE once it starts its calls.\n",
			pfx);
	if (!script)
		fprintf(f, " */\n");
}

void scenario_write_constants(FILE *f, const struct scenario *sc, const char *pfx, double seconds)
{
	/* The C program's #defines, as a script's constants: the same values. */
	fprintf(f,
		"%sSECONDS = %.6g\n%sRATE = %.9g\n%sTHREADS = %u\n%sSLOW_FRACTION = %.9g\n"
		"%sARG_OVER = %lld\n%sWORK_NS = %.0f\n%sCAUSE_NS = %.0f\n\n",
		pfx, seconds, pfx, sc->rate, pfx, sc->threads, pfx, sc->slow_pct / 100, pfx,
		sc->arg_over >= 0 ? sc->arg_over : 0, pfx, sc->work_us * 1e3, pfx,
		sc->cause_us * 1e3);
}

int scenario_check_names(const struct scenario *sc, const char *lang, char *err, size_t errsz)
{
	const struct emit_backend *b = emit_backend_find(lang);
	const char *names[] = {sc->handler, sc->cause};
	size_t i;

	/* C names are checked by the parser; a script's must also be its own. */
	if (!b || !strcmp(lang, "c"))
		return 0;
	for (i = 0; i < 2; i++) {
		char *s = emit_sanitize(names[i], b->rules);
		bool same = s && !strcmp(s, names[i]);

		free(s);
		if (!s)
			return -ENOMEM;
		if (!same) {
			/* Renamed, it would not come back as the spec's name. */
			snprintf(err, errsz,
				 "scenario: '%s' cannot be a %s function name here (a keyword, "
				 "a builtin or the program's own name space)",
				 names[i], lang);
			return -EINVAL;
		}
	}
	return 0;
}

int scenario_write_c(FILE *f, const struct scenario *sc, const struct emit_opts *o)
{
	double seconds = o->duration_s > 0 ? o->duration_s : sc->seconds;
	long long over = sc->arg_over >= 0 ? sc->arg_over : 0;

	scenario_write_intro(f, sc, o, "c", " * ", seconds);
	fprintf(f,
		"#pragma GCC optimize(\"no-omit-frame-pointer\", \"no-optimize-sibling-calls\")\n"
		"\n"
		"#include <pthread.h>\n#include <signal.h>\n#include <stdio.h>\n"
		"#include <stdlib.h>\n#include <string.h>\n#include <time.h>\n\n"
		"#if defined(__clang__)\n#define LP_FN __attribute__((noinline, used))\n#else\n"
		"#define LP_FN __attribute__((noipa, used))\n#endif\n\n");
	fprintf(f,
		"#define LP_SECONDS %.6g\n#define LP_RATE %.9g\n#define LP_THREADS %uUL\n"
		"#define LP_SLOW_FRACTION %.9g\n#define LP_ARG_OVER %lldLL\n"
		"#define LP_WORK_US %.9g\n#define LP_CAUSE_US %.9g\n#define LP_HANDLER %s\n\n",
		seconds, sc->rate, sc->threads, sc->slow_pct / 100, over, sc->work_us, sc->cause_us,
		sc->handler);
	fputs(sc_runtime, f);
	fputs(emit_c_clock_fn, f);
	fputs(emit_c_spin_fn, f);
	fputs(sc_calibrate, f);
	fprintf(f, "\n/* The cause of slow calls: %g us %s. */\n", sc->cause_us,
		scenario_wait_name(sc->wait));
	fprintf(f,
		"static LP_FN void %s(void)\n{\n\tvolatile char lp_frame[8];\n\n"
		"\tlp_frame[0] = 0;\n",
		sc->cause);
	if (sc->wait == SCENARIO_CPU) {
		fprintf(f, "\tlp_spin(lp_cause_iters);\n");
	} else if (sc->wait == SCENARIO_SLEEP) {
		fprintf(f, "\tstruct timespec ts = { (time_t)(LP_CAUSE_US / 1e6),\n"
			   "\t\t\t\t(long)(LP_CAUSE_US * 1e3) %% 1000000000L };\n\n"
			   "\tnanosleep(&ts, NULL);\n");
	} else {
		fprintf(f, "\t/* Times out: the lock is held by main for ever. */\n"
			   "\tstruct timespec ts;\n\n"
			   "\tclock_gettime(CLOCK_REALTIME, &ts);\n"
			   "\tts.tv_nsec += (long)(LP_CAUSE_US * 1e3);\n"
			   "\tts.tv_sec += ts.tv_nsec / 1000000000L;\n"
			   "\tts.tv_nsec %%= 1000000000L;\n"
			   "\tif (!pthread_mutex_timedlock(&lp_held, &ts))\n"
			   "\t\tpthread_mutex_unlock(&lp_held);\n");
	}
	fprintf(f, "\tlp_frame[1] = 0;\n}\n\n");
	fprintf(f,
		"/* The handler: its own work, then the cause when the call is slow. */\n"
		"static LP_FN void %s(long long arg)\n{\n\tvolatile char lp_frame[8];\n\n"
		"\tlp_frame[0] = 0;\n\tlp_spin(lp_work_iters);\n"
		"\tif (arg > LP_ARG_OVER) {\n\t\t%s();\n\t\tlp_frame[1]++;\n\t}\n"
		"\tlp_frame[2] = lp_frame[1];\n}\n\n",
		sc->handler, sc->cause);
	fputs(sc_main, f);
	return ferror(f) ? -EIO : 0;
}

scenario_write_fn *scenario_writer(const char *lang)
{
	if (!strcmp(lang, "c"))
		return scenario_write_c;
	if (!strcmp(lang, "python"))
		return scenario_write_python;
	if (!strcmp(lang, "ruby"))
		return scenario_write_ruby;
	return NULL;
}
