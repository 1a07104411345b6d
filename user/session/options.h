/* SPDX-License-Identifier: GPL-2.0 */
/*
 * options.h - the profiling command line, parsed into struct options.
 */
#ifndef LP_USER_OPTIONS_H
#define LP_USER_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define MAX_PIDS    64
#define MAX_OUTPUTS 16
#define MAX_TRACES  64

enum call_graph_mode {
	CALL_GRAPH_AUTO = 0,
	CALL_GRAPH_FP,
	CALL_GRAPH_DWARF, /* CFI tables walked in BPF */
	CALL_GRAPH_COPY,  /* stack copied per sample, unwound with libdw in the daemon */
};

struct options {
	int pids[MAX_PIDS];
	int n_pids;
	bool all;
	char **command; /* argv after "--", NULL-terminated, or NULL */
	unsigned int freq;
	double duration_s; /* 0: until Ctrl-C or target exit */
	const char *outputs[MAX_OUTPUTS];
	int n_outputs;
	const char *json_path;
	bool kernel;
	bool lines;
	bool no_inline; /* --no-inline: only the function that holds each address */
	bool no_interp; /* --no-interp: native frames only for CPython and CRuby */
	bool verbose;
	bool no_tui;
	bool per_thread;
	int top_rows;
	/* tracing */
	const char *traces[MAX_TRACES];
	int n_traces;
	const char *by_expr;
	double window_s;
	double interval_s;
	double max_overhead_pct;
	bool raw_latency; /* --raw-latency: do not subtract sampling/probe cost */
	bool no_sample_calib; /* causal: skip the sample-cost calibration (no sampling then) */
	/* split */
	const char *split_spec; /* FUNC[@pNN] */
	const char *when_spec;
	double split_alpha; /* --split-alpha: family-wise error rate of the stars */
	bool offcpu;
	bool per_call;
	/* unwinding */
	enum call_graph_mode call_graph;
	unsigned int stack_kib;
	unsigned int max_frames;  /* user frames per stack (default LP_MAX_USTACK) */
	unsigned int unwind_rows; /* capacity of the BPF unwind tables, rows */
	bool unwind_check;	  /* also copy stacks; compare the BPF walk with libdw's */
	unsigned int ringbuf_mb;
	/* HTTP (user/serve) */
	const char *http_addr;	/* --http ADDR:PORT, NULL: no server */
	const char *http_token; /* --http-token FILE */
	bool serve;		/* `liveprof serve`: long-running, no TUI */
	/* memory */
	bool alloc;		   /* --alloc: allocator probes */
	uint64_t alloc_rate_bytes; /* --alloc-rate: mean bytes between samples */
	/* sources and debug info (issue 18) */
	const char *annotate_func;     /* --annotate FUNC: print its per-line samples at exit */
	const char *source_path;       /* --source-path DIR */
	unsigned int debuginfod_tmo_s; /* --debuginfod-timeout SEC, 0: default */
};

/**
 * options_parse - parse argv into @o (after the subcommand dispatch)
 *
 * Prints a one-line error for bad input.
 * Return: 0 to run, 1 when --help was printed, or -EINVAL on bad usage.
 */
int options_parse(int argc, char **argv, struct options *o);

/** options_usage - print the full help to @f */
void options_usage(FILE *f);

#endif
