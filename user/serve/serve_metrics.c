// SPDX-License-Identifier: GPL-2.0
/*
 * serve_metrics.c - /metrics in Prometheus' text exposition format 0.0.4.
 *
 * The latency histogram of each traced function is the in-kernel
 * log-linear histogram (64 buckets per power of two) re-bucketed to
 * METRICS_PER_OCTAVE buckets per power of two: every Prometheus bucket
 * edge is an in-kernel edge, so the counts are exact and
 * histogram_quantile() is off by at most one bucket's width (2^(1/8):
 * 9%). Latencies are integer nanoseconds, so a bucket whose next edge is
 * E ns holds exactly the calls <= (E - 1) ns, which is what "le" says.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/liveprof.h"
#include "user/serve/serve_internal.h"
#include "user/session/alloc.h"
#include "user/session/split.h"
#include "user/profile/stack_store.h"
#include "user/session/traces.h"

#define METRICS_PER_OCTAVE 8
#define METRICS_MIN_SHIFT  4  /* first edge: 64 << 4 ns = 1.024 us */
#define METRICS_MAX_SHIFT  30 /* last edge: 127 << 30 ns ~ 136 s */

/* A label value with \, " and newlines escaped, as the format asks. */
static void put_label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void labels(FILE *f, const char *func, const char *cls)
{
	fputs("function=\"", f);
	put_label(f, func);
	fputc('"', f);
	if (cls)
		fprintf(f, ",class=\"%s\"", cls);
}

/*
 * One histogram series from the in-kernel buckets @h: all of them
 * (@want -1), or those of one class of a split function against
 * @threshold (@want 1: slow, 0: fast).
 */
/* Add buckets [*b, end) of @h that are of class @want (-1: all) to the sums. */
static void add_buckets(const uint64_t *h, uint32_t *b, uint32_t end, uint64_t threshold, int want,
			uint64_t *cum, uint64_t *sum)
{
	for (; *b < end && *b < LP_HIST_BUCKETS; (*b)++) {
		bool slow = traces__bucket_value(*b) >= threshold;

		if (want < 0 || want == slow) {
			*cum += h[*b];
			*sum += h[*b] * traces__bucket_value(*b);
		}
	}
}

static void histogram(FILE *f, const char *func, const char *cls, const uint64_t *h,
		      uint64_t threshold, int want)
{
	uint64_t cum = 0, sum = 0;
	uint32_t b = 0;

	for (uint32_t shift = METRICS_MIN_SHIFT; shift <= METRICS_MAX_SHIFT; shift++) {
		for (uint32_t sub = 0; sub < 64; sub += 64 / METRICS_PER_OCTAVE) {
			uint32_t edge_b = ((shift + 1) << LP_HIST_SUB_BITS) + sub;
			uint64_t edge = traces__bucket_lower(edge_b);

			add_buckets(h, &b, edge_b, threshold, want, &cum, &sum);
			fputs("liveprof_call_duration_seconds_bucket{", f);
			labels(f, func, cls);
			fprintf(f, ",le=\"%.9f\"} %" PRIu64 "\n", (edge - 1) / 1e9, cum);
		}
	}
	add_buckets(h, &b, LP_HIST_BUCKETS, threshold, want, &cum, &sum);
	fputs("liveprof_call_duration_seconds_bucket{", f);
	labels(f, func, cls);
	fprintf(f, ",le=\"+Inf\"} %" PRIu64 "\n", cum);
	fputs("liveprof_call_duration_seconds_sum{", f);
	labels(f, func, cls);
	fprintf(f, "} %.9f\n", sum / 1e9);
	fputs("liveprof_call_duration_seconds_count{", f);
	labels(f, func, cls);
	fprintf(f, "} %" PRIu64 "\n", cum);
}

static int trace_metrics(struct daemon *d, FILE *f)
{
	int n = traces__count(d->traces);
	uint64_t *h = calloc(LP_HIST_BUCKETS, sizeof(uint64_t));
	int split_idx = d->split ? traces__find(d->traces, split__probe_id(d->split)) : -1;

	if (!h)
		return -ENOMEM;
	fputs("# HELP liveprof_call_duration_seconds Latency of the calls of a traced function "
	      "(split functions: by class against the live threshold).\n"
	      "# TYPE liveprof_call_duration_seconds histogram\n",
	      f);
	for (int i = 0; i < n; i++) {
		const struct trace_info *ti = traces__info(d->traces, i);

		if (ti->kind != TRACE_FUNC || traces__histogram(d->traces, i, false, h))
			continue;
		if (i == split_idx) {
			/* The same rule as split__compute: bucket value >= threshold is slow. */
			uint64_t thr =
				traces__slow_from(d->traces, i, split__percentile(d->split), false);

			histogram(f, ti->func, "slow", h, thr, 1);
			histogram(f, ti->func, "fast", h, thr, 0);
		} else {
			histogram(f, ti->func, NULL, h, 0, -1);
		}
	}
	fputs("# HELP liveprof_probe_cost_seconds Measured cost of one probe hit.\n"
	      "# TYPE liveprof_probe_cost_seconds gauge\n",
	      f);
	for (int i = 0; i < n; i++) {
		const struct trace_info *ti = traces__info(d->traces, i);

		fputs("liveprof_probe_cost_seconds{", f);
		labels(f, ti->func, NULL);
		fprintf(f, "} %.9f\n", ti->probe_cost_ns / 1e9);
	}
	fputs("# HELP liveprof_probe_overhead_ratio Estimated CPU the probes of a trace take, "
	      "in CPUs.\n# TYPE liveprof_probe_overhead_ratio gauge\n",
	      f);
	for (int i = 0; i < n; i++) {
		const struct trace_info *ti = traces__info(d->traces, i);

		fputs("liveprof_probe_overhead_ratio{", f);
		labels(f, ti->func, NULL);
		fprintf(f, "} %.6f\n", ti->est_overhead_pct / 100);
	}
	free(h);
	return 0;
}

static void counter(FILE *f, const char *name, const char *help, uint64_t v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", name, help, name, name, v);
}

static void gauge(FILE *f, const char *name, const char *help, double v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n%s %g\n", name, help, name, name, v);
}

/* What the allocator probes cost: per call as measured, and in the last second. */
static void alloc_cost_metrics(FILE *f, const struct alloc_cost *k)
{
	fputs("# HELP liveprof_alloc_probe_cost_seconds What --alloc's probes add to one call "
	      "(measured in rounds on liveprof's own libc; after_switch: more at a thread's "
	      "first call after it was switched out).\n"
	      "# TYPE liveprof_alloc_probe_cost_seconds gauge\n",
	      f);
	fprintf(f, "liveprof_alloc_probe_cost_seconds{call=\"alloc\"} %g\n", k->alloc_ns / 1e9);
	fprintf(f, "liveprof_alloc_probe_cost_seconds{call=\"free\"} %g\n", k->free_ns / 1e9);
	fprintf(f, "liveprof_alloc_probe_cost_seconds{call=\"after_switch\"} %g\n",
		k->switch_ns / 1e9);
	gauge(f, "liveprof_alloc_overhead_ratio",
	      "Share of one CPU the targets spent in --alloc's probes in the last second.",
	      k->est_pct / 100);
	gauge(f, "liveprof_alloc_detached", "1 once --max-overhead detached --alloc's probes.",
	      k->detached);
}

enum MHD_Result serve_metrics__get(struct request *r)
{
	struct daemon *d = r->sv->d;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err = 0;

	if (!f)
		return serve__error(r, 500, "out of memory");
	counter(f, "liveprof_samples_total", "On-CPU samples taken.", d->samples);
	counter(f, "liveprof_offcpu_events_total", "Off-CPU (blocked) events.", d->offcpu_events);
	counter(f, "liveprof_lost_events_total", "Events dropped because the ring buffer was full.",
		d->counters[LP_CNT_LOST]);
	counter(f, "liveprof_calls_dropped_total",
		"Calls not tracked because a thread's call stack was full.",
		d->counters[LP_CNT_CALLS_DROPPED]);
	gauge(f, "liveprof_stacks", "Distinct stacks held.", (double)stack_store__count(d->stacks));
	counter(f, "liveprof_stacks_released_total",
		"Stacks idle for longer than the window, folded into kept ones and freed.",
		stack_store__released(d->stacks));
	counter(f, "liveprof_stacks_shed_total",
		"Kept stacks that gave up their addresses, holding only their frames.",
		stack_store__shed_count(d->stacks));
	fprintf(f,
		"# HELP liveprof_reclaim_seconds_total Time spent folding and freeing idle "
		"stacks.\n# TYPE liveprof_reclaim_seconds_total counter\n"
		"liveprof_reclaim_seconds_total %.6f\n",
		d->reclaim_ns / 1e9);
	gauge(f, "liveprof_profile_windows", "Profile scrapes waiting for their window.",
	      r->sv->n_windows);
	counter(f, "liveprof_http_requests_total", "HTTP requests received.", r->sv->requests);
	counter(f, "liveprof_http_rejected_total", "HTTP requests answered with an error.",
		r->sv->rejected);
	if (d->alloc) {
		uint64_t ac[LP_ALLOC_CNT_NR];

		alloc__counters(d->alloc, ac);
		counter(f, "liveprof_alloc_calls_total", "Allocator calls seen by --alloc.",
			ac[LP_ALLOC_CNT_CALLS]);
		counter(f, "liveprof_free_calls_total", "free and munmap calls seen by --alloc.",
			ac[LP_ALLOC_CNT_FREES]);
		counter(f, "liveprof_alloc_sampled_total", "Allocations sampled by --alloc.",
			ac[LP_ALLOC_CNT_SAMPLED]);
		counter(f, "liveprof_alloc_lost_total",
			"Allocator events dropped (ring buffer or live table full).",
			ac[LP_ALLOC_CNT_LOST] + ac[LP_ALLOC_CNT_LIVE_FULL]);
		alloc_cost_metrics(f, alloc__cost(d->alloc));
	}
	if (d->traces) {
		fputs("# HELP liveprof_calls_total Calls of a traced function.\n"
		      "# TYPE liveprof_calls_total counter\n",
		      f);
		for (int i = 0; i < traces__count(d->traces); i++) {
			const struct trace_info *ti = traces__info(d->traces, i);
			struct trace_summary s;

			if (traces__summary(d->traces, i, false, &s))
				continue;
			fputs("liveprof_calls_total{", f);
			labels(f, ti->func, NULL);
			fprintf(f, "} %" PRIu64 "\n", s.calls);
		}
		err = trace_metrics(d, f);
	}
	if (fclose(f) || err) {
		free(buf);
		return serve__error(r, 500, "out of memory");
	}
	return serve__reply(r, 200, "text/plain; version=0.0.4; charset=utf-8", buf, len);
}
