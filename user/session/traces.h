/* SPDX-License-Identifier: GPL-2.0 */
/*
 * traces.h - traced functions and lines: resolution (dwarf/), attachment
 * (bpf_session), and the latency figures read from the in-kernel
 * histograms as per-second deltas (whole run and sliding window).
 */
#ifndef LP_USER_TRACES_H
#define LP_USER_TRACES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include <linux/types.h>
#include "bpf/liveprof.h"

struct session_core;
struct traces;

enum trace_kind {
	TRACE_FUNC,
	TRACE_LINE,
};

/* Latency summary of one trace over some span. */
struct trace_summary {
	uint64_t calls;				/* timed + untimed */
	uint64_t untimed;			/* counted, not timed: deeper than the limits */
	double rate;				/* calls per second over the span */
	uint64_t p50, p90, p95, p99, p999, max; /* ns */
	double mean;
};

struct trace_info {
	int id;		   /* probe id */
	const char *spec;  /* as the user wrote it */
	const char *func;  /* resolved function (or file:line) */
	const char *frame; /* the stack frame its calls stand in, when not func (USDT pairs) */
	const char *binary;
	enum trace_kind kind;
	int n_sites;
	bool detached;		 /* probes off: --max-overhead, stacks moved, attach failed */
	double est_overhead_pct; /* of one CPU */
	uint64_t probe_cost_ns;	 /* measured per call (entry + return) */
	const char *insn_class;	 /* class of the first instruction it was measured for */
	/* its returns are probed on `ret` instructions (Go, or a process that
	 * may move its stack: traces_stacks.c), not with uretprobes */
	bool returns_on_ret;
	uint64_t attached_ns; /* CLOCK_MONOTONIC when its probes went in (0: not yet) */
};

/**
 * traces__new - an empty set of traces
 * @c: the session's shared state (targets, BPF, options); must outlive the set
 * @window_s: length of the sliding window in seconds (10 when <= 0)
 *
 * Return: the set, or NULL on allocation failure.
 */
struct traces *traces__new(struct session_core *c, int window_s);

/**
 * traces__measure_costs - measure the probe cost of the classes of first
 * instruction the traces asked for and no trace has measured yet, and
 * charge it from now on (each trace's calls are timed net of it)
 * @t: the traces (NULL: nothing)
 */
void traces__measure_costs(struct traces *t);

/** traces__any_pending - whether a trace still waits for its library */
bool traces__any_pending(const struct traces *t);

/**
 * traces__retry_pending - attach the traces whose library was not loaded
 * yet, if it is now (also done at every tick)
 */
void traces__retry_pending(struct traces *t);

/** traces__core - the session @t belongs to (not owned) */
const struct session_core *traces__core(const struct traces *t);
void traces__free(struct traces *t);

/**
 * traces__add - resolve @spec in every target and attach its probes
 * @err: a one-line message for the user on failure
 *
 * Return: the probe id (>= 0), or a negative errno (-ENOENT: not resolvable).
 */
int traces__add(struct traces *t, const char *spec, char *err, size_t errlen);

/**
 * traces__remove - detach the trace whose spec (or function) is @spec
 *
 * Return: 0, or -ENOENT.
 */
int traces__remove(struct traces *t, const char *spec);

/**
 * traces__add_by - traces__add, grouping the latency by the value of
 * expression @by at entry (--by), or plain when @by is NULL
 */
int traces__add_by(struct traces *t, const char *spec, const char *by, char *err, size_t errlen);

/** traces__set_when - mark calls of @func_id in which line probe @line_id ran */
int traces__set_when(struct traces *t, int func_id, int line_id);

void traces__tick(struct traces *t, uint64_t now_ns);

/**
 * traces__maps_changed - @pid mapped or unmapped files: if it may now
 * unwind or switch its stack (it loaded a C++ runtime, a coroutine
 * library) while functions traced in it have return probes, detach those
 * traces, with a warning, before that meets their trampoline
 * (traces_stacks.c)
 */
void traces__maps_changed(struct traces *t, int pid);

/**
 * traces__programs_ready - the session's programs, loaded in the
 * background, are attached with the probes that waited for them: their
 * traces' attached_ns is that moment (bpf_session__ready_ns)
 */
void traces__programs_ready(struct traces *t);
void traces__on_hit(struct traces *t, const struct lp_hit *h);
void traces__set_window(struct traces *t, int seconds);

/** traces__count - number of traces (including detached ones) */
int traces__count(struct traces *t);
/**
 * traces__line_ranges - the address ranges of a FILE:LINE spec's
 * instructions in process @pid, resolved as --trace would, probing nothing
 * @lo: @max start addresses out
 * @hi: @max end addresses (exclusive) out
 *
 * Return: the number of ranges, or a negative errno with @err set
 * (-E2BIG: more than @max).
 */
int traces__line_ranges(struct traces *t, const char *spec, int pid, uint64_t *lo, uint64_t *hi,
			int max, char *err, size_t errlen);

/** traces__info - description of the @i-th trace (0-based), NULL if out of range */
const struct trace_info *traces__info(struct traces *t, int i);
/** traces__find - index of the trace with probe id @id, or -1 */
int traces__find(struct traces *t, int id);

/**
 * traces__summary - latency of trace index @i over the whole run
 * (@window false) or the sliding window
 */
int traces__summary(struct traces *t, int i, bool window, struct trace_summary *out);

/** traces__percentile - the @pct percentile (0..100) of trace index @i, in ns */
uint64_t traces__percentile(struct traces *t, int i, double pct, bool window);

/**
 * traces__hist_slow_from - where the calls above the @pct percentile begin,
 * in histogram @h (LP_HIST_BUCKETS counts): an edge of the bucket that
 * holds the percentile
 *
 * Calls at or beyond it are a split's slow calls. The bucket's calls are
 * all slow or all fast, whichever makes the slow share nearer 100 - @pct %,
 * unless that leaves no slow or no fast call and the other does not: when
 * most calls take the same time, the percentile's bucket holds most of
 * them (counting it slow made every call slow), and when a few calls take
 * the same long time, it holds all of those. Being an edge, it classes a
 * call the same by its latency as by its bucket.
 *
 * Return: the latency in ns (at least 1), or 0 for an empty histogram.
 */
uint64_t traces__hist_slow_from(const uint64_t *h, double pct);
/** traces__slow_from - traces__hist_slow_from() of trace index @i's histogram */
uint64_t traces__slow_from(struct traces *t, int i, double pct, bool window);

/**
 * traces__histogram - the merged bucket counts of trace index @i
 * @out: LP_HIST_BUCKETS counters
 */
int traces__histogram(struct traces *t, int i, bool window, uint64_t *out);

/** traces__bucket_value - representative value (ns) of histogram bucket @b */
uint64_t traces__bucket_value(uint32_t b);
/** traces__bucket_lower - lower bound (ns) of histogram bucket @b */
uint64_t traces__bucket_lower(uint32_t b);
/**
 * traces__hist_quantile_between - the @pct percentile (0 < @pct < 100) of the
 * calls counted between two readings of a histogram (@h0 then @h1, each
 * LP_HIST_BUCKETS cumulative counts), interpolated within its bucket
 *
 * Return: the latency in ns, or NAN when no call ended in between.
 */
double traces__hist_quantile_between(const uint64_t *h0, const uint64_t *h1, double pct);

/** traces__print - percentile tables, histograms, values, to @f */
void traces__print(struct traces *t, FILE *f, bool histograms);
/** traces__json - the "traces" array of the --json summary */
json_t *traces__json(struct traces *t);

/* Running totals of a trace since it was attached (causal windows). */
struct trace_totals {
	uint64_t calls; /* timed + untimed (line hits for a line) */
	uint64_t timed; /* calls in the histogram */
	double sum_ns;	/* their latency, from bucket middles */
};

/**
 * traces__totals - read trace index @i's totals from the BPF maps, now
 *
 * Return: 0, or -ENOENT for an index out of range.
 */
int traces__totals(struct traces *t, int i, struct trace_totals *out);

/**
 * traces__set_delay - make every entry probe of function trace @i
 * busy-wait @ns per call (causal experiments; 0 stops it)
 *
 * Return: 0, -ENOENT, or -EINVAL for a line trace (no entry to delay).
 */
int traces__set_delay(struct traces *t, int i, uint64_t ns);

/* One captured value and how many hits had it (traces__values). */
struct trace_value_row {
	const char *text; /* owned by the set, valid until the next event is read */
	uint64_t count;
};

/**
 * traces__values - the values trace index @i captured for its @k-th
 * expression (0-based), most frequent first
 * @expr: set to the expression as written ("arg0", "req->kind"), owned by the set
 * @rows: filled with at most @max rows
 *
 * Return: the number of rows; 0 when nothing was captured or @i or @k is
 * out of range; -1 when @k is past the last expression.
 */
int traces__values(struct traces *t, int i, int k, const char **expr, struct trace_value_row *rows,
		   int max);

/**
 * traces__complete - function names starting with @prefix (for the TUI):
 * symbols of the first target, or with "py:", the Python functions seen in
 * samples (as py:QUALNAME specs), or with "rb:", the Ruby methods seen in
 * samples (as rb:Class#method specs, a singleton's Class.method too)
 */
int traces__complete(struct traces *t, const char *prefix, const char **out, int max);

#endif
