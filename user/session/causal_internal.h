/* SPDX-License-Identifier: GPL-2.0 */
/*
 * causal_internal.h - the state shared by causal.c and causal_run.c; not an API.
 */
#ifndef LP_SESSION_CAUSAL_INTERNAL_H
#define LP_SESSION_CAUSAL_INTERNAL_H

#include <signal.h>
#include <stdint.h>

#include "bpf/liveprof.h"
#include "user/session/causal.h"
#include "user/session/traces.h"

#define CAUSAL_SMALL_IMPACT 0.1 /* impacts within +-this count as no effect */

struct causal_ctx {
	struct daemon *d;
	const struct causal_opts *o;
	struct causal_run *r;
	volatile sig_atomic_t *stop;
	uint64_t deadline;
	uint64_t rng;
	/* the line candidate under experiment: its ranges in the target */
	uint64_t line_lo[LP_CAUSAL_MAX_RANGES], line_hi[LP_CAUSAL_MAX_RANGES];
	int line_n;
	uint32_t line_pid;
	/* the progress point (causal_point.c): its trace spec, the percentile
	 * of a latency point (0: the mean), histogram buffers for readings */
	char point[256];
	double point_pct;
	uint64_t *point_hist[2];
	double window_s; /* one window: --window, or longer for a percentile */
};

/* One reading of the progress point: its totals, and with a percentile its
 * cumulative histogram (one of the context's buffers). */
struct causal_reading {
	struct trace_totals t;
	uint64_t *hist;
};

/* A window's readings, as differences of running totals. */
struct causal_win {
	double cost;	   /* progress cost: ns per point, or mean latency */
	double cand_calls; /* calls of the candidate (a line: ticks in it) */
	double cand_timed, cand_sum_ns;
	double span_ns;
	double waited_ns;   /* delay really waited in the window (BPF's count) */
	double line_ticks;  /* a line: ticks in the target */
	double line_user;   /* a line: of those, in its user code */
	double line_cpu_ns; /* a line: the target's CPU time (its waits included) */
};

/* causal_point.c: parse the point (SPEC or SPEC@pNN), read it into buffer
 * @slot (0 or 1), its cost between two readings (ns per point, or its mean
 * or percentile latency), and lengthen the windows for a percentile at
 * @calls_per_s (-ENODATA with @err when even the longest is too short). */
int causal_point_init(struct causal_ctx *x, char *err, size_t errlen);
void causal_point_free(struct causal_ctx *x);
int causal_point_read(struct causal_ctx *x, int slot, struct causal_reading *rd);
double causal_point_cost(struct causal_ctx *x, const struct causal_reading *a,
			 const struct causal_reading *b, double span_ns);
int causal_point_fit_window(struct causal_ctx *x, double calls_per_s, char *err, size_t errlen);

/* The period of the ticks that delay a line candidate (causal_line.c). */
#define CAUSAL_LINE_TICK_NS 200000ull

/* causal_line.c: set up / tear down a line candidate's ticks and ranges;
 * a line's setting for a window; its delay from the calibration windows,
 * and the slow-down a delayed window really made. */
int causal_line_begin(struct causal_ctx *x, struct causal_cand *c);
void causal_line_end(struct causal_ctx *x);
int causal_line_set_delay(struct causal_ctx *x, uint64_t delay_ns);
/* The line's running totals now: hits (as cand_calls), ticks, CPU time. */
void causal_line_read(struct causal_ctx *x, struct causal_win *at);
uint64_t causal_line_delay(struct causal_ctx *x, struct causal_cand *c,
			   const struct causal_win *calib);
double causal_line_frac(const struct causal_win *w);
/* A control window of line candidate @c: its ticks into c's share. */
void causal_line_add_control(struct causal_cand *c, const struct causal_win *w);

/* Let the daemon run @ns; 0, -EINTR (stop), -ESRCH (targets gone). */
int causal_wait(struct causal_ctx *x, uint64_t ns);
/* The running totals of the trace of @spec; 0 or -ENOENT. */
int causal_read_totals(struct causal_ctx *x, const char *spec, struct trace_totals *t);
/* Every candidate's experiments; 0 (also when the target exited) or -errno. */
int causal_run_candidates(struct causal_ctx *x);

#endif
