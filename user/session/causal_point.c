// SPDX-License-Identifier: GPL-2.0
/*
 * causal_point.c - the progress point of a causal run: which trace it is,
 * what a window of it costs, and how long a window must be.
 *
 * A throughput point costs the time per call. A latency point costs the
 * mean latency of its calls, or with `SPEC@pNN` the NN-th percentile of
 * the calls that ended in the window: the difference of two readings of
 * the trace's in-kernel histogram (log-linear buckets, at most 1.6% wide),
 * interpolated inside the bucket so that a small shift moves the estimate
 * smoothly instead of by a whole bucket. A percentile needs calls beyond
 * it in every window, so the window is lengthened to hold them.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user/session/causal.h"
#include "user/session/causal_internal.h"
#include "user/session/daemon.h"
#include "user/session/traces.h"
#include "user/util/log.h"

/* Calls beyond the percentile that a window must hold on average, so that
 * its order statistic does not jump between neighbouring calls. */
#define TAIL_CALLS	 10.0
#define MAX_PCT_WINDOW_S 2.0

int causal__point_parse(const char *text, char *spec, size_t len, double *pct, char *err,
			size_t errlen)
{
	const char *at = strrchr(text, '@');
	size_t n = strlen(text);

	*pct = 0;
	if (at && (at[1] == 'p' || at[1] == 'P')) {
		char *end;

		*pct = strtod(at + 2, &end);
		if (end == at + 2 || *end || !(*pct > 0 && *pct < 100)) {
			snprintf(err, errlen, "invalid latency percentile '%s' (e.g. FUNC@p95)",
				 at + 1);
			return -EINVAL;
		}
		n = (size_t)(at - text);
	}
	if (!n || n >= len) {
		snprintf(err, errlen, "invalid progress point '%s'", text);
		return -EINVAL;
	}
	memcpy(spec, text, n);
	spec[n] = 0;
	return 0;
}

int causal_point_init(struct causal_ctx *x, char *err, size_t errlen)
{
	const char *text = x->o->latency ? x->o->latency : x->o->progress;
	int r = causal__point_parse(text, x->point, sizeof(x->point), &x->point_pct, err, errlen);

	if (r)
		return r;
	if (!x->o->latency)
		x->point_pct = 0; /* a throughput point has no percentile */
	x->window_s = x->o->window_s;
	if (x->point_pct > 0) {
		for (int k = 0; k < 2; k++) {
			x->point_hist[k] = calloc(LP_HIST_BUCKETS, sizeof(uint64_t));
			if (!x->point_hist[k]) {
				snprintf(err, errlen, "out of memory");
				return -ENOMEM;
			}
		}
	}
	return 0;
}

void causal_point_free(struct causal_ctx *x)
{
	for (int k = 0; k < 2; k++) {
		free(x->point_hist[k]);
		x->point_hist[k] = NULL;
	}
}

int causal_point_read(struct causal_ctx *x, int slot, struct causal_reading *rd)
{
	int i = daemon__find_trace(x->d, x->point), err;

	if (i < 0)
		return -ENOENT;
	err = traces__totals(x->d->traces, i, &rd->t);
	rd->hist = NULL;
	if (!err && x->point_pct > 0) {
		rd->hist = x->point_hist[slot];
		err = traces__histogram(x->d->traces, i, false, rd->hist);
	}
	return err;
}

double causal_point_cost(struct causal_ctx *x, const struct causal_reading *a,
			 const struct causal_reading *b, double span_ns)
{
	double n = (double)(b->t.timed - a->t.timed);

	if (!x->o->latency)
		return causal_period((double)(b->t.calls - a->t.calls), span_ns);
	if (x->point_pct > 0)
		return traces__hist_quantile_between(a->hist, b->hist, x->point_pct);
	return n > 0 ? (b->t.sum_ns - a->t.sum_ns) / n : NAN;
}

int causal_point_fit_window(struct causal_ctx *x, double calls_per_s, char *err, size_t errlen)
{
	double need, w;

	if (x->point_pct <= 0)
		return 0;
	need = TAIL_CALLS / (1.0 - x->point_pct / 100.0);
	w = calls_per_s > 0 ? need / calls_per_s : INFINITY;
	if (w > MAX_PCT_WINDOW_S) {
		snprintf(err, errlen,
			 "'%s' ends %.0f calls a second: too few for its p%g in a window of %.0f "
			 "s (%.0f calls needed); use a lower percentile or the mean",
			 x->point, calls_per_s, x->point_pct, MAX_PCT_WINDOW_S, need);
		return -ENODATA;
	}
	if (w > x->window_s) {
		lp_info("causal: windows of %.2f s, to hold %.0f calls of '%s' beyond its p%g", w,
			TAIL_CALLS, x->point, x->point_pct);
		x->window_s = w;
	}
	return 0;
}
