// SPDX-License-Identifier: GPL-2.0
/*
 * causal_cmd.c - `liveprof causal`: the command line of causal profiling
 * (user/session/causal.h does the work). Its own options: a causal run
 * shares the daemon with a profiling run, not its command line.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "user/cli/causal_cmd.h"
#include "user/session/causal.h"
#include "user/session/daemon.h"
#include "user/session/options.h"
#include "user/session/reclaim.h"
#include "user/util/atomic_file.h"
#include "user/util/exit_codes.h"
#include "user/util/log.h"
#include "user/util/util.h"

#define MAX_CANDS CAUSAL_MAX_CAND

static volatile sig_atomic_t causal_stop;

static void on_signal(int sig)
{
	(void)sig;
	causal_stop = 1;
}

struct causal_args {
	struct causal_opts o;
	int pid;
	const char *json, *svg;
	char *cand_buf; /* --candidates, split in place */
	const char *cands[MAX_CANDS];
};

static void causal_usage(FILE *f)
{
	fprintf(f,
		"usage: liveprof causal -p PID --progress SPEC [--latency SPEC]\n"
		"                       [--candidates auto|F1,F2,...] [-d SEC] [--json FILE] [-o "
		"FILE.svg]\n"
		"\n"
		"Which function, if it were faster, would make the program faster? Each "
		"candidate's\n"
		"calls are delayed in some windows and not in others (random order); the change "
		"in\n"
		"the progress point per unit of delay predicts the effect of a speedup.\n"
		"\n"
		"  -p, --pid PID          the process\n"
		"  --progress SPEC        throughput point: calls per second of a --trace spec\n"
		"  --latency SPEC[@pNN]   latency point: the mean latency of a traced function,\n"
		"                         or its NN-th percentile (the metric when given)\n"
		"  --candidates LIST      auto (default: the top functions by CPU share, then "
		"the top lines)\n"
		"                         or F1,F2,... (functions, or source lines as FILE:LINE)\n"
		"  --auto N               how many functions auto picks (default 5)\n"
		"  -d, --duration SEC     the whole run (default 30)\n"
		"  --sample SEC           the CPU profile taken first (default 2)\n"
		"  --window SEC           one control or delayed window (default 0.1)\n"
		"  --delay PCT            delay per call, %% of the function's mean duration "
		"(default "
		"25)\n"
		"  --ci HALF              a candidate is done once its 95%% interval is +-HALF "
		"(default "
		"0.1)\n"
		"  --max-overhead PCT     injected delay at most PCT%% of one CPU (default 30)\n"
		"  --seed N               the windows' order (default: from the clock)\n"
		"  --json FILE            {\"causal\": [{function, impact, ci_low, ci_high, "
		"experiments,\n"
		"                         cpu_share, verdict, ...}]}\n"
		"  -o, --output FILE      the plot, an SVG (coz style)\n"
		"  -v, --verbose          print every pair of windows\n"
		"\n"
		"impact: %% the program speeds up per 1%% the function speeds up.\n"
		"Exit status: 0 done (also partial, after the target exited or Ctrl-C), 2 bad "
		"usage,\n"
		"3 no such process, 4 privileges, 6 BPF, 7 output, 8 a spec cannot be traced,\n"
		"11 the progress point never fired (or too rarely for its percentile).\n");
}

static bool parse_num(const char *s, const char *what, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
		lp_err("causal: invalid %s '%s' (%g..%g)", what, s, lo, hi);
		return false;
	}
	*out = v;
	return true;
}

static bool split_candidates(struct causal_args *a, const char *list)
{
	char *save = NULL, *tok;

	if (!strcmp(list, "auto"))
		return true;
	a->cand_buf = strdup(list);
	if (!a->cand_buf) {
		lp_err("causal: out of memory");
		return false;
	}
	for (tok = strtok_r(a->cand_buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (a->o.n_candidates >= MAX_CANDS) {
			lp_err("causal: at most %d candidates", MAX_CANDS);
			return false;
		}
		a->cands[a->o.n_candidates++] = tok;
	}
	a->o.candidates = a->cands;
	return a->o.n_candidates > 0 || (lp_err("causal: empty --candidates"), false);
}

enum {
	OPT_PROGRESS = 256,
	OPT_LATENCY,
	OPT_CANDS,
	OPT_AUTO,
	OPT_SAMPLE,
	OPT_WINDOW,
	OPT_DELAY,
	OPT_CI,
	OPT_OVH,
	OPT_SEED,
	OPT_JSON
};

/* One case per option; returns -1 to go on, else the exit status. */
/* A bad percentile is a usage error, found before anything is loaded. */
static bool latency_point_ok(const char *arg)
{
	char spec[256], err[256];
	double pct;

	if (!causal__point_parse(arg, spec, sizeof(spec), &pct, err, sizeof(err)))
		return true;
	lp_err("causal: %s", err);
	return false;
}

static int parse_opt(struct causal_args *a, int c, const char *arg)
{
	double v;
	bool ok = true;

	switch (c) {
	case 'p':
		ok = parse_num(arg, "pid", 1, 4194304, &v);
		a->pid = (int)v;
		break;
	case OPT_PROGRESS:
		a->o.progress = arg;
		break;
	case OPT_LATENCY:
		a->o.latency = arg;
		ok = latency_point_ok(arg);
		break;
	case OPT_CANDS:
		ok = split_candidates(a, arg);
		break;
	case OPT_AUTO:
		ok = parse_num(arg, "--auto", 1, MAX_CANDS, &v);
		a->o.auto_n = (int)v;
		break;
	case 'd':
		ok = parse_num(arg, "duration", 1, 86400, &a->o.duration_s);
		break;
	case OPT_SAMPLE:
		ok = parse_num(arg, "--sample", 0.2, 600, &a->o.sample_s);
		break;
	case OPT_WINDOW:
		ok = parse_num(arg, "--window", 0.02, 60, &a->o.window_s);
		break;
	case OPT_DELAY:
		ok = parse_num(arg, "--delay", 1, 100, &a->o.delay_pct);
		break;
	case OPT_CI:
		ok = parse_num(arg, "--ci", 0.001, 100, &a->o.target_half);
		break;
	case OPT_OVH:
		ok = parse_num(arg, "--max-overhead", 0.1, 100, &a->o.max_overhead_pct);
		break;
	case OPT_SEED:
		ok = parse_num(arg, "--seed", 1, 1e15, &v);
		a->o.seed = (uint64_t)v;
		break;
	case OPT_JSON:
		a->json = arg;
		break;
	case 'o':
		a->svg = arg;
		break;
	case 'v':
		a->o.verbose = true;
		break;
	case 'h':
		causal_usage(stdout);
		return EXIT_OK;
	case ':':
		lp_err("causal: option '%s' needs an argument", arg);
		return EXIT_USAGE;
	default:
		lp_err("causal: unknown option '%s' (see liveprof causal --help)", arg);
		return EXIT_USAGE;
	}
	return ok ? -1 : EXIT_USAGE;
}

static int parse_args(int argc, char **argv, struct causal_args *a)
{
	static const struct option longopts[] = {
		{"pid", required_argument, NULL, 'p'},
		{"progress", required_argument, NULL, OPT_PROGRESS},
		{"latency", required_argument, NULL, OPT_LATENCY},
		{"candidates", required_argument, NULL, OPT_CANDS},
		{"auto", required_argument, NULL, OPT_AUTO},
		{"duration", required_argument, NULL, 'd'},
		{"sample", required_argument, NULL, OPT_SAMPLE},
		{"window", required_argument, NULL, OPT_WINDOW},
		{"delay", required_argument, NULL, OPT_DELAY},
		{"ci", required_argument, NULL, OPT_CI},
		{"max-overhead", required_argument, NULL, OPT_OVH},
		{"seed", required_argument, NULL, OPT_SEED},
		{"json", required_argument, NULL, OPT_JSON},
		{"output", required_argument, NULL, 'o'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:d:o:vh", longopts, NULL)) != -1) {
		r = parse_opt(a, c, c == '?' || c == ':' ? argv[optind - 1] : optarg);
		if (r >= 0)
			return r;
	}
	if (optind < argc) {
		lp_err("causal: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (!a->pid || (!a->o.progress && !a->o.latency)) {
		lp_err("causal: -p PID and --progress SPEC (or --latency SPEC) are required");
		return EXIT_USAGE;
	}
	return -1;
}

/* Outputs are checked before anything is attached, like the profiler's. */
static int check_outputs(const struct causal_args *a)
{
	const char *paths[2] = {a->json, a->svg};

	for (int i = 0; i < 2; i++) {
		int err = paths[i] ? atomic_file__check_writable(paths[i]) : 0;

		if (err) {
			lp_err("cannot write '%s': %s", paths[i], strerror(-err));
			return EXIT_OUTPUT;
		}
	}
	if (kill(a->pid, 0) && errno == ESRCH) {
		lp_err("no such process '%d'", a->pid);
		return EXIT_NO_TARGET;
	}
	return EXIT_OK;
}

static int write_outputs(const struct causal_args *a, const struct causal_run *r)
{
	int err = 0;

	causal__print(r, stdout);
	fflush(stdout);
	if (a->json) {
		json_t *j = causal__json(r);
		struct atomic_file af;

		err = j ? atomic_file__open(&af, a->json) : -ENOMEM;
		if (!err && json_dumpf(j, af.fp, JSON_INDENT(2)) == 0) {
			fputc('\n', af.fp);
			err = atomic_file__commit(&af);
		} else if (!err) {
			atomic_file__abort(&af);
			err = -EIO;
		}
		json_decref(j);
		if (err)
			lp_err("cannot write '%s': %s", a->json, strerror(-err));
	}
	if (!err && a->svg) {
		err = causal__write_svg(r, a->svg);
		if (err)
			lp_err("cannot write '%s': %s", a->svg, strerror(-err));
	}
	return err ? EXIT_OUTPUT : EXIT_OK;
}

/* A Python or Ruby function's spec. */
static bool interp_spec(const char *spec)
{
	return spec && (!strncmp(spec, "py:", 3) || !strncmp(spec, "rb:", 3));
}

/* The daemon's own options, through its parser, so its defaults hold. */
static int open_daemon(struct daemon *d, struct options *po, const struct causal_args *a)
{
	char pid[16], ovh[32];
	/* Frame-pointer stacks and no interpreter frames: the CPU shares need
	 * only the leaf functions, and the BPF unwinder's programs take
	 * seconds to verify on a busy machine. A py: or rb: point needs the
	 * interpreter's programs (its frames name the function to count). */
	char *argv[] = {"liveprof",	  "-p", pid,	 "--no-tui", "-F",	     "199",
			"--max-overhead", ovh,	"--top", "0",	     "--call-graph", "fp",
			"--no-interp",	  NULL};
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1, rc;

	if (interp_spec(a->o.progress) || interp_spec(a->o.latency))
		argv[--argc] = NULL;
	snprintf(pid, sizeof(pid), "%d", a->pid);
	snprintf(ovh, sizeof(ovh), "%g", a->o.max_overhead_pct);
	if (options_parse(argc, argv, po))
		return EXIT_USAGE;
	po->verbose = a->o.verbose;
	/* What a sample costs a traced call matters to latencies measured while
	 * sampling; the experiments run after sampling has stopped. */
	po->no_sample_calib = true;
	rc = daemon__open(d, po, true);
	/* auto's lines symbolize the whole run's stacks again, by line */
	if (!rc)
		d->keep_addresses = true;
	if (!rc && daemon__add_target(d, a->pid)) {
		lp_err("cannot follow process '%d'", a->pid);
		rc = EXIT_NO_TARGET;
	}
	if (!rc)
		rc = daemon__start(d);
	/* experiments need their probes: the programs loaded and attached */
	if (!rc && daemon__programs_ready(d, true) < 0)
		rc = EXIT_BPF;
	return rc;
}

static int causal_status(int err)
{
	switch (err) {
	case -ENODATA:
		return EXIT_NO_PROGRESS;
	case -ESRCH:
		return EXIT_NO_TARGET;
	case -ENOENT:
	case -EINVAL:
	case -EEXIST:
		return EXIT_PROBE;
	case -EINTR:
		return EXIT_OK;
	default:
		return EXIT_RUNTIME;
	}
}

int cmd_causal(int argc, char **argv)
{
	struct causal_args a = {.o = {.auto_n = 5,
				      .duration_s = 30,
				      .sample_s = 2,
				      .window_s = 0.1,
				      .delay_pct = 25,
				      .target_half = 0.1,
				      .max_overhead_pct = 30,
				      .no_progress_s = 3}};
	struct sigaction sa = {.sa_handler = on_signal};
	struct causal_run *r = NULL;
	struct options po;
	struct daemon d;
	char err[768];
	uint64_t t0;
	int rc;

	rc = parse_args(argc, argv, &a);
	if (rc >= 0) /* --help, or bad usage */
		goto out;
	rc = check_outputs(&a);
	if (rc)
		goto out;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	memset(&d, 0, sizeof(d));
	r = calloc(1, sizeof(*r));
	t0 = lp_now_ns();
	rc = r ? open_daemon(&d, &po, &a) : EXIT_RUNTIME;
	if (a.o.verbose)
		lp_info("causal: BPF loaded and calibrated in %.1f s",
			(double)(lp_now_ns() - t0) / 1e9);
	if (!rc) {
		int e = causal__run(&d, &a.o, r, &causal_stop, err, sizeof(err));

		if (e && !r->n_cand)
			lp_err("%s", err);
		rc = e && !r->n_cand ? causal_status(e) : write_outputs(&a, r);
		if (e && r->n_cand)
			lp_err("%s", err);
	}
	t0 = lp_now_ns();
	daemon__close(&d);
	if (a.o.verbose)
		lp_info("causal: detached in %.1f s", (double)(lp_now_ns() - t0) / 1e9);
out:
	free(r);
	free(a.cand_buf);
	return rc;
}
