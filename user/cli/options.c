// SPDX-License-Identifier: GPL-2.0
/*
 * options.c - command-line parsing for `liveprof [options] (-p PID | -a | -- CMD)`.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user/session/options.h"
#include "user/util/log.h"
#include "user/serve/query.h"
#include "user/session/daemon.h" /* split_spec_parse */
#include "user/session/split_rank.h"

enum {
	OPT_JSON = 256,
	OPT_KERNEL,
	OPT_LINES,
	OPT_NO_INLINE,
	OPT_NO_INTERP,
	OPT_NO_TUI,
	OPT_TRACE,
	OPT_BY,
	OPT_WINDOW,
	OPT_INTERVAL,
	OPT_MAX_OVERHEAD,
	OPT_SPLIT,
	OPT_WHEN,
	OPT_OFFCPU,
	OPT_PER_CALL,
	OPT_CALL_GRAPH,
	OPT_STACK_SIZE,
	OPT_TOP,
	OPT_PER_THREAD,
	OPT_RINGBUF,
	OPT_HTTP,
	OPT_HTTP_TOKEN,
	OPT_ALLOC,
	OPT_ALLOC_RATE,
	OPT_RAW_LATENCY,
	OPT_SPLIT_ALPHA,
	OPT_MAX_FRAMES,
	OPT_UNWIND_ROWS,
	OPT_UNWIND_CHECK,
	OPT_ANNOTATE,
	OPT_SOURCE_PATH,
	OPT_DEBUGINFOD_TIMEOUT,
};

static const struct option long_opts[] = {
	{"pid", required_argument, NULL, 'p'},
	{"all", no_argument, NULL, 'a'},
	{"freq", required_argument, NULL, 'F'},
	{"duration", required_argument, NULL, 'd'},
	{"output", required_argument, NULL, 'o'},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"json", required_argument, NULL, OPT_JSON},
	{"kernel", no_argument, NULL, OPT_KERNEL},
	{"lines", no_argument, NULL, OPT_LINES},
	{"no-inline", no_argument, NULL, OPT_NO_INLINE},
	{"no-interp", no_argument, NULL, OPT_NO_INTERP},
	{"no-tui", no_argument, NULL, OPT_NO_TUI},
	{"trace", required_argument, NULL, OPT_TRACE},
	{"by", required_argument, NULL, OPT_BY},
	{"window", required_argument, NULL, OPT_WINDOW},
	{"interval", required_argument, NULL, OPT_INTERVAL},
	{"max-overhead", required_argument, NULL, OPT_MAX_OVERHEAD},
	{"split", required_argument, NULL, OPT_SPLIT},
	{"when", required_argument, NULL, OPT_WHEN},
	{"offcpu", no_argument, NULL, OPT_OFFCPU},
	{"per-call", no_argument, NULL, OPT_PER_CALL},
	{"call-graph", required_argument, NULL, OPT_CALL_GRAPH},
	{"stack-size", required_argument, NULL, OPT_STACK_SIZE},
	{"top", required_argument, NULL, OPT_TOP},
	{"per-thread", no_argument, NULL, OPT_PER_THREAD},
	{"ringbuf-mb", required_argument, NULL, OPT_RINGBUF},
	{"http", required_argument, NULL, OPT_HTTP},
	{"http-token", required_argument, NULL, OPT_HTTP_TOKEN},
	{"alloc", no_argument, NULL, OPT_ALLOC},
	{"alloc-rate", required_argument, NULL, OPT_ALLOC_RATE},
	{"raw-latency", no_argument, NULL, OPT_RAW_LATENCY},
	{"split-alpha", required_argument, NULL, OPT_SPLIT_ALPHA},
	{"max-frames", required_argument, NULL, OPT_MAX_FRAMES},
	{"unwind-rows", required_argument, NULL, OPT_UNWIND_ROWS},
	{"unwind-check", no_argument, NULL, OPT_UNWIND_CHECK},
	{"annotate", required_argument, NULL, OPT_ANNOTATE},
	{"source-path", required_argument, NULL, OPT_SOURCE_PATH},
	{"debuginfod-timeout", required_argument, NULL, OPT_DEBUGINFOD_TIMEOUT},
	{NULL, 0, NULL, 0},
};

void options_usage(FILE *f)
{
	fputs("usage: liveprof [options] -p PID[,PID...]\n"
	      "       liveprof [options] -a\n"
	      "       liveprof [options] -- COMMAND [ARGS...]\n"
	      "       liveprof serve [options] -p PID | -a   (HTTP server, default "
	      "127.0.0.1:6060)\n"
	      "       liveprof emit ...      (liveprof emit --help)\n"
	      "       liveprof validate ...  (liveprof validate --help)\n"
	      "       liveprof causal ...    (liveprof causal --help)\n"
	      "       liveprof --check [-v]  what this kernel supports, and why not\n"
	      "\n"
	      "Sampling:\n"
	      "  -p, --pid PID[,PID]   profile running processes (all threads, also new ones)\n"
	      "  -a, --all             profile every process\n"
	      "  -F, --freq HZ         samples per second per CPU (default 99)\n"
	      "  -d, --duration SEC    stop after SEC seconds (default: Ctrl-C or target exit)\n"
	      "      --kernel          add kernel frames\n"
	      "      --lines           add file:line to frame names (DWARF)\n"
	      "      --no-inline       no inlined frames (shown by default, from DWARF)\n"
	      "      --no-interp       no Python or Ruby frames in place of the interpreter's\n"
	      "                        (CPython 3.11-3.13, CRuby 3.1)\n"
	      "      --per-thread      put the thread id under the process root frame\n"
	      "      --call-graph M    fp, dwarf, auto (default: dwarf, CFI walked in BPF) or "
	      "copy\n"
	      "      --max-frames N    user frames per stack, at most 127 (default 127)\n"
	      "      --unwind-rows N   capacity of the in-kernel CFI tables (default 1000000)\n"
	      "      --stack-size KIB  user stack copied per sample with --call-graph copy (16)\n"
	      "      --unwind-check    also copy the stack and compare every BPF walk with "
	      "libdw's\n"
	      "      --ringbuf-mb MB   event ring buffer, a power of two (default 16)\n"
	      "Tracing:\n"
	      "  --trace SPEC          FUNC, BIN:FUNC, FILE:LINE, FUNC+OFF, FUNC(arg, p->f, ret)\n"
	      "                        usdt:[BIN:]PROVIDER:NAME[,RETURN][(arg0, arg1:str)],\n"
	      "                        rb:Class#method, py:[MODULE.]QUALNAME\n"
	      "  --by EXPR             group the latency of the (first) trace by a value\n"
	      "  --window SEC          sliding window for live figures (default 10)\n"
	      "  --interval SEC        print the tables every SEC seconds\n"
	      "  --max-overhead PCT    detach a trace whose estimated cost passes PCT% of a CPU\n"
	      "  --raw-latency         latencies as measured, not net of liveprof's own cost\n"
	      "Split:\n"
	      "  --split FUNC[@pNN]    slow (>= pNN, default p95) vs fast calls of FUNC\n"
	      "  --when FILE:LINE      keep only calls in which that line ran\n"
	      "  --offcpu              add off-CPU (blocked) time, weighted by time blocked\n"
	      "  --per-call            normalise the split by calls instead of samples\n"
	      "  --split-alpha A       family-wise error rate of the significant frames (0.01)\n"
	      "Output:\n"
	      "  -o, --output FILE     by extension: .folded/.txt, .svg, .pb.gz; DIR/ with "
	      "--split\n"
	      "                        annotate.txt or *.annotate: samples per source line\n"
	      "      --annotate FUNC   print FUNC's samples per source line and instruction\n"
	      "      --source-path DIR also look for source files under DIR\n"
	      "      --debuginfod-timeout SEC  bound on one debuginfod query (default 10;\n"
	      "                        debuginfod is asked when DEBUGINFOD_URLS is set)\n"
	      "      --json FILE       machine-readable summary\n"
	      "      --top N           rows of the top table at exit (default 20, 0 = none)\n"
	      "      --no-tui          batch mode even on a terminal\n"
	      "  -v, --verbose         libbpf and verifier messages\n"
	      "  -h, --help            this text\n"
	      "Memory (--alloc, served as /debug/pprof/heap, allocs, delta_heap):\n"
	      "      --alloc           probe malloc/calloc/realloc/free/posix_memalign/\n"
	      "                        aligned_alloc and anonymous mmap/munmap in libc\n"
	      "      --alloc-rate B    sample one allocation per B bytes on average (524288)\n"
	      "HTTP:\n"
	      "      --http ADDR:PORT  serve /debug/pprof/*, /metrics and a live view at /\n"
	      "      --http-token FILE requests must send 'Authorization: Bearer <token in FILE>'\n"
	      "                        (required for an address other than loopback)\n"
	      "\n"
	      "Exit status: 0 ok (also after target exit or Ctrl-C), 1 runtime error,\n"
	      "2 usage, 3 no such process / command, 4 missing privileges (root or\n"
	      "CAP_BPF+CAP_PERFMON), 5 kernel unsupported (no BTF or perf events),\n"
	      "6 BPF load/attach failed, 7 output not writable, 8 probe not resolvable,\n"
	      "9 -p names a kernel thread, 10 validate inconclusive (see liveprof\n"
	      "validate --help).\n",
	      f);
}

/*
 * A number in [@min, @max]; with @whole a count (Hz, KiB, rows, MiB), which
 * must be a whole number rather than be truncated silently.
 */
static int parse_number(const char *arg, const char *what, double min, double max, bool whole,
			double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	/* written so that NaN, which compares false with everything, fails */
	if (errno || end == arg || *end || !(v >= min && v <= max) ||
	    (whole && v != (double)(long long)v)) {
		lp_err("invalid %s '%s' (expected a %s from %g to %g)", what, arg,
		       whole ? "whole number" : "number", min, max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_double(const char *arg, const char *what, double min, double max, double *out)
{
	return parse_number(arg, what, min, max, false, out);
}

static int parse_whole(const char *arg, const char *what, double min, double max, double *out)
{
	return parse_number(arg, what, min, max, true, out);
}

static int parse_pids(const char *arg, struct options *o)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		long pid;

		errno = 0;
		pid = strtol(tok, &end, 10);
		if (errno || end == tok || *end || pid <= 0 || pid > 0x3fffffff) {
			lp_err("invalid pid '%s'", tok);
			err = -EINVAL;
			break;
		}
		if (o->n_pids == MAX_PIDS) {
			lp_err("too many pids (at most %d)", MAX_PIDS);
			err = -EINVAL;
			break;
		}
		o->pids[o->n_pids++] = (int)pid;
	}
	free(copy);
	return err;
}

/*
 * One option from getopt_long into @o: 0, 1 after --help, or -EINVAL with
 * the message printed. One case per option, in --help's order: a table
 * would only move the same lines elsewhere, so this stays one switch.
 */
static int apply_option(struct options *o, int c, char **argv)
{
	double v;

	switch (c) {
	case 'p':
		if (parse_pids(optarg, o))
			return -EINVAL;
		break;
	case 'a':
		o->all = true;
		break;
	case 'F':
		if (parse_whole(optarg, "frequency", 1, 100000, &v))
			return -EINVAL;
		o->freq = (unsigned int)v;
		break;
	case 'd':
		if (parse_double(optarg, "duration", 0.01, 1e7, &o->duration_s))
			return -EINVAL;
		break;
	case 'o':
		if (o->n_outputs == MAX_OUTPUTS) {
			lp_err("too many outputs (at most %d)", MAX_OUTPUTS);
			return -EINVAL;
		}
		o->outputs[o->n_outputs++] = optarg;
		break;
	case 'v':
		o->verbose = true;
		break;
	case 'h':
		options_usage(stdout);
		return 1;
	case OPT_JSON:
		o->json_path = optarg;
		break;
	case OPT_KERNEL:
		o->kernel = true;
		break;
	case OPT_NO_INTERP:
		o->no_interp = true;
		break;
	case OPT_NO_INLINE:
		o->no_inline = true;
		break;
	case OPT_LINES:
		o->lines = true;
		break;
	case OPT_NO_TUI:
		o->no_tui = true;
		break;
	case OPT_TRACE:
		if (o->n_traces == MAX_TRACES) {
			lp_err("too many --trace (at most %d)", MAX_TRACES);
			return -EINVAL;
		}
		o->traces[o->n_traces++] = optarg;
		break;
	case OPT_BY:
		o->by_expr = optarg;
		break;
	case OPT_WINDOW:
		if (parse_double(optarg, "window", 1, 3600, &o->window_s))
			return -EINVAL;
		break;
	case OPT_INTERVAL:
		if (parse_double(optarg, "interval", 0.001, 1e6, &o->interval_s))
			return -EINVAL;
		break;
	case OPT_MAX_OVERHEAD:
		if (parse_double(optarg, "overhead", 0.001, 100, &o->max_overhead_pct))
			return -EINVAL;
		break;
	case OPT_SPLIT:
		o->split_spec = optarg;
		break;
	case OPT_WHEN:
		o->when_spec = optarg;
		break;
	case OPT_OFFCPU:
		o->offcpu = true;
		break;
	case OPT_RAW_LATENCY:
		o->raw_latency = true;
		break;
	case OPT_SPLIT_ALPHA:
		if (parse_double(optarg, "split-alpha", 1e-9, 0.5, &o->split_alpha))
			return -EINVAL;
		break;
	case OPT_PER_CALL:
		o->per_call = true;
		break;
	case OPT_CALL_GRAPH:
		if (!strcmp(optarg, "fp"))
			o->call_graph = CALL_GRAPH_FP;
		else if (!strcmp(optarg, "dwarf"))
			o->call_graph = CALL_GRAPH_DWARF;
		else if (!strcmp(optarg, "auto"))
			o->call_graph = CALL_GRAPH_AUTO;
		else if (!strcmp(optarg, "copy"))
			o->call_graph = CALL_GRAPH_COPY;
		else {
			lp_err("invalid --call-graph '%s' (fp, dwarf, auto or copy)", optarg);
			return -EINVAL;
		}
		break;
	case OPT_MAX_FRAMES:
		if (parse_whole(optarg, "frame count", 1, 127, &v)) /* LP_MAX_USTACK */
			return -EINVAL;
		o->max_frames = (unsigned int)v;
		break;
	case OPT_UNWIND_ROWS:
		if (parse_whole(optarg, "row count", 1024, 64 << 20, &v))
			return -EINVAL;
		o->unwind_rows = (unsigned int)v;
		break;
	case OPT_UNWIND_CHECK:
		o->unwind_check = true;
		break;
	case OPT_ANNOTATE:
		o->annotate_func = optarg;
		break;
	case OPT_SOURCE_PATH:
		o->source_path = optarg;
		break;
	case OPT_DEBUGINFOD_TIMEOUT:
		if (parse_whole(optarg, "time-out", 1, 3600, &v))
			return -EINVAL;
		o->debuginfod_tmo_s = (unsigned int)v;
		break;
	case OPT_STACK_SIZE:
		if (parse_whole(optarg, "stack size", 1, 64, &v))
			return -EINVAL;
		o->stack_kib = (unsigned int)v;
		break;
	case OPT_TOP:
		if (parse_whole(optarg, "row count", 0, 100000, &v))
			return -EINVAL;
		o->top_rows = (int)v;
		break;
	case OPT_PER_THREAD:
		o->per_thread = true;
		break;
	case OPT_RINGBUF:
		if (parse_whole(optarg, "ring buffer size", 1, 1024, &v))
			return -EINVAL;
		o->ringbuf_mb = (unsigned int)v;
		/* ring buffer sizes must be a power of two pages */
		while (o->ringbuf_mb & (o->ringbuf_mb - 1))
			o->ringbuf_mb &= o->ringbuf_mb - 1;
		break;
	case OPT_HTTP:
		o->http_addr = optarg;
		break;
	case OPT_HTTP_TOKEN:
		o->http_token = optarg;
		break;
	case OPT_ALLOC:
		o->alloc = true;
		break;
	case OPT_ALLOC_RATE:
		if (parse_whole(optarg, "allocation sampling rate", 1, 1e12, &v))
			return -EINVAL;
		o->alloc_rate_bytes = (uint64_t)v;
		o->alloc = true;
		break;
	case '?':
	default:
		if (optopt && optopt < 256)
			lp_err("unknown or incomplete option '-%c' (see --help)", optopt);
		else
			lp_err("unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
		return -EINVAL;
	}
	return 0;
}

/* The command after "--", and exactly one target. */
static int check_target(struct options *o, int argc, char **argv)
{
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--") != 0) {
			lp_err("unexpected argument '%s' (a command goes after '--')",
			       argv[optind]);
			return -EINVAL;
		}
		o->command = &argv[optind];
	}
	if (!!o->n_pids + !!o->all + !!o->command != 1) {
		lp_err("give exactly one target: -p PID, -a or -- COMMAND (see --help)");
		return -EINVAL;
	}
	return 0;
}

/* --http's address, and its token where it is not loopback. */
static int check_http(const struct options *o)
{
	struct sockaddr_storage ss;
	socklen_t len;
	bool loopback;

	if (o->http_token && !o->http_addr) {
		lp_err("--http-token needs --http");
		return -EINVAL;
	}
	if (!o->http_addr)
		return 0;
	if (query__addr(o->http_addr, &ss, &len, &loopback)) {
		lp_err("invalid --http address '%s' (expected ADDR:PORT, e.g. 127.0.0.1:6060)",
		       o->http_addr);
		return -EINVAL;
	}
	if (!loopback && !o->http_token) {
		lp_err("--http '%s' is not a loopback address: that needs --http-token FILE",
		       o->http_addr);
		return -EINVAL;
	}
	return 0;
}

/*
 * A split needs calls with a latency: a function entry, never an offset
 * into one or a source line (those are entry-only hit probes).
 */
static int check_split(const struct options *o)
{
	char func[256], err[300];
	const char *colon;
	double pct;

	if (o->when_spec && !o->split_spec) {
		lp_err("--when needs --split");
		return -EINVAL;
	}
	if (!o->split_spec)
		return 0;
	if (split_spec_parse(o->split_spec, func, sizeof(func), &pct, err, sizeof(err))) {
		lp_err("%s", err);
		return -EINVAL;
	}
	colon = strrchr(func, ':');
	if (strchr(func, '+') ||
	    (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1))) {
		lp_err("cannot split '%s': a split needs a function (calls with a latency), not "
		       "an offset or a line",
		       func);
		return -EINVAL;
	}
	return 0;
}

int options_parse(int argc, char **argv, struct options *o)
{
	int c, r;

	memset(o, 0, sizeof(*o));
	o->freq = 99;
	o->window_s = 10;
	o->top_rows = 20;
	o->stack_kib = 16;
	o->max_frames = 127; /* LP_MAX_USTACK, checked by the session */
	o->ringbuf_mb = 16;
	o->split_alpha = SPLIT_ALPHA;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:aF:d:o:vh", long_opts, NULL)) != -1) {
		r = apply_option(o, c, argv);
		if (r)
			return r;
	}
	r = check_target(o, argc, argv);
	if (!r)
		r = check_http(o);
	if (!r)
		r = check_split(o);
	return r;
}
