// SPDX-License-Identifier: GPL-2.0
/*
 * causal.c - the experiments of `liveprof causal` (see causal.h).
 *
 * A candidate is traced with the ordinary trace path (dwarf/ proves the
 * entry an instruction boundary), so its entry probe can delay each call
 * (bpf/causal.bpf.h) and its return probe times it. After one calibration
 * window (its mean duration and call rate, undelayed), pairs of windows
 * follow: a control window (delay 0) and a delayed one, in a random order
 * within each pair. Each pair gives one impact (causal_stats.h); a
 * candidate is done when the 95% interval of their mean is narrow enough,
 * or when its share of the time budget is spent.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user/session/bpf_session.h"
#include "user/session/causal.h"
#include "user/session/causal_internal.h"
#include "user/session/daemon.h"
#include "user/session/traces.h"
#include "user/util/log.h"
#include "user/util/util.h"

#define MIN_PAIRS     6	   /* the fewest with a 95% interval of the median */
#define MIN_CALLS     20   /* candidate calls in calibration to be measurable */
#define CALIB_WINDOWS 10   /* control windows at most, to see them */
#define MIN_FRAC      0.02 /* smaller delays drown in noise */
#define SETTLE_SHARE  0.25 /* of a window, waited after a delay change */

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: enough for a coin per pair, reproducible with --seed */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/*
 * Let the daemon run for @ns (events drained, ticks done). Return: 0,
 * -EINTR on a stop request, -ESRCH when every target is gone.
 */
int causal_wait(struct causal_ctx *x, uint64_t ns)
{
	uint64_t end = lp_now_ns() + ns;

	for (;;) {
		uint64_t now = lp_now_ns();
		int err;

		if (x->o->on_wait)
			x->o->on_wait(x->o->wait_ctx);
		if (*x->stop)
			return -EINTR;
		if (!daemon__targets_alive(x->d))
			return -ESRCH;
		if (now >= end)
			return 0;
		err = daemon__poll(
			x->d, (int)((end - now) / 1000000 > 50 ? 50 : (end - now) / 1000000 + 1));
		if (err && err != -EINTR)
			return err;
	}
}

int causal_read_totals(struct causal_ctx *x, const char *spec, struct trace_totals *t)
{
	int i = daemon__find_trace(x->d, spec);

	return i < 0 ? -ENOENT : traces__totals(x->d->traces, i, t);
}

/*
 * The candidate's running totals: a function's trace; or a line's ticks,
 * in @line (its hits also as @t's calls).
 */
static int read_cand(struct causal_ctx *x, const struct causal_cand *c, struct trace_totals *t,
		     struct causal_win *line)
{
	memset(line, 0, sizeof(*line));
	if (!c->is_line)
		return causal_read_totals(x, c->function, t);
	memset(t, 0, sizeof(*t));
	causal_line_read(x, line);
	t->calls = (uint64_t)line->cand_calls;
	return 0;
}

/* One window of @c with @delay_ns per call (a line: per tick in it). */
static int run_window(struct causal_ctx *x, const struct causal_cand *c, uint64_t delay_ns,
		      struct causal_win *w)
{
	struct trace_totals c0, c1;
	struct causal_reading p0, p1;
	uint64_t win = (uint64_t)(x->window_s * 1e9), t0, t1, w0;
	struct causal_win l0, l1;
	int i = daemon__find_trace(x->d, c->function), err;

	if (c->is_line)
		err = causal_line_set_delay(x, delay_ns);
	else
		err = i < 0 ? -ENOENT : traces__set_delay(x->d->traces, i, delay_ns);
	if (!err)
		err = causal_wait(x, (uint64_t)(win * SETTLE_SHARE));
	if (err)
		return err;
	t0 = lp_now_ns();
	w0 = bpf_session__causal_waited_ns(x->d->core.bpf);
	if (causal_point_read(x, 0, &p0) || read_cand(x, c, &c0, &l0))
		return -ENOENT;
	err = causal_wait(x, win);
	if (err)
		return err;
	t1 = lp_now_ns();
	w->waited_ns = (double)(bpf_session__causal_waited_ns(x->d->core.bpf) - w0);
	if (causal_point_read(x, 1, &p1) || read_cand(x, c, &c1, &l1))
		return -ENOENT;
	w->span_ns = (double)(t1 - t0);
	w->cost = causal_point_cost(x, &p0, &p1, w->span_ns);
	w->cand_calls = (double)(c1.calls - c0.calls);
	w->cand_timed = (double)(c1.timed - c0.timed);
	w->cand_sum_ns = c1.sum_ns - c0.sum_ns;
	w->line_cpu_ns = l1.line_cpu_ns - l0.line_cpu_ns;
	w->line_ticks = l1.line_ticks - l0.line_ticks;
	w->line_user = l1.line_user - l0.line_user;
	return 0;
}

/* The delay for @c from its calibration, within the bounds; 0 to skip it. */
static uint64_t choose_delay(struct causal_ctx *x, struct causal_cand *c)
{
	double d = c->mean_ns * x->o->delay_pct / 100.0;
	double cap = x->o->max_overhead_pct / 100.0 * 1e9 / c->calls_per_s;

	if (d > cap)
		d = cap;
	if (d > (double)LP_CAUSAL_MAX_DELAY_NS)
		d = (double)LP_CAUSAL_MAX_DELAY_NS;
	if (d < MIN_FRAC * c->mean_ns) {
		snprintf(c->skipped, sizeof(c->skipped),
			 "its delay would be %.1f%% of its %.0f us calls (--max-overhead %.0f%% at "
			 "%.0f calls/s, at most %.0f us per call)",
			 100 * d / c->mean_ns, c->mean_ns / 1e3, x->o->max_overhead_pct,
			 c->calls_per_s, (double)LP_CAUSAL_MAX_DELAY_NS / 1e3);
		return 0;
	}
	return (uint64_t)d;
}

/* Fold a control window into the candidate's duration and rate. */
static void add_control(struct causal_cand *c, const struct causal_win *w, double *timed,
			double *sum, double *calls, double *span)
{
	*timed += w->cand_timed;
	*sum += w->cand_sum_ns;
	*calls += w->cand_calls;
	*span += w->span_ns;
	if (*timed > 0)
		c->mean_ns = *sum / *timed;
	if (*span > 0)
		c->calls_per_s = *calls / *span * 1e9;
}

struct cand_acc {
	double timed, sum, calls, span;
};

/* The first (control) window: can the candidate be measured at all? */
static int calibrate(struct causal_ctx *x, struct causal_cand *c, struct cand_acc *a)
{
	struct causal_win w;
	int err;

	/* Up to CALIB_WINDOWS control windows, until MIN_CALLS calls: a rare
	 * candidate still gets a duration, and its pairs an honest interval. */
	struct causal_win sum = {0};

	for (int k = 0; k < CALIB_WINDOWS && a->calls < MIN_CALLS; k++) {
		err = run_window(x, c, 0, &w);
		if (err)
			return err;
		add_control(c, &w, &a->timed, &a->sum, &a->calls, &a->span);
		if (c->is_line)
			causal_line_add_control(c, &w);
		sum.cand_calls += w.cand_calls;
		sum.line_ticks += w.line_ticks;
		sum.line_user += w.line_user;
		sum.line_cpu_ns += w.line_cpu_ns;
		sum.span_ns += w.span_ns;
	}
	if (c->is_line) {
		c->delay_ns = (double)causal_line_delay(x, c, &sum);
		return 0;
	}
	if (a->calls < MIN_CALLS || !(c->mean_ns > 0)) {
		snprintf(c->skipped, sizeof(c->skipped),
			 "called %.0f times in %.2f s: too rarely for a delay to show", a->calls,
			 a->span / 1e9);
		return 0;
	}
	c->delay_ns = (double)choose_delay(x, c);
	return 0;
}

/* One pair: control and delayed windows in a random order. */
static int run_pair(struct causal_ctx *x, struct causal_cand *c, struct cand_acc *a)
{
	struct causal_win ctl, del;
	bool delayed_first = rng_next(&x->rng) & 1;
	double frac, imp;
	int err;

	err = run_window(x, c, delayed_first ? (uint64_t)c->delay_ns : 0,
			 delayed_first ? &del : &ctl);
	if (!err)
		err = run_window(x, c, delayed_first ? 0 : (uint64_t)c->delay_ns,
				 delayed_first ? &ctl : &del);
	if (err)
		return err;
	add_control(c, &ctl, &a->timed, &a->sum, &a->calls, &a->span);
	if (c->is_line)
		causal_line_add_control(c, &ctl);
	/* The delay asked for, not the wall time waited: a thread preempted
	 * inside its wait overshoots the deadline (on a loaded CPU, 108-134%
	 * of the asked delay was waited in the lock scenario), and that time
	 * off the CPU is no slower code. The pair's own control duration:
	 * under a load that changes with time, the candidate's calls and the
	 * progress point stretch together. */
	if (c->is_line) /* what the ticks really waited, of the line's own time */
		frac = causal_line_frac(&del);
	else
		frac = c->delay_ns / (ctl.cand_timed >= MIN_CALLS ? ctl.cand_sum_ns / ctl.cand_timed
								  : c->mean_ns);
	imp = causal_pair_impact(ctl.cost, del.cost, frac);
	if (isnan(imp))
		return 0; /* no progress in a window: nothing to compare */
	c->impacts[c->n_pairs++] = imp;
	c->frac_sum += frac;
	c->rel_sum += del.cost / ctl.cost - 1;
	if (x->o->verbose)
		lp_info("causal: %s pair %d: cost %.0f -> %.0f ns, delay %.1f%% (waited %.0f%% of "
			"it), impact %+.3f",
			c->function, c->n_pairs, ctl.cost, del.cost, 100 * frac,
			del.cand_calls > 0 ? 100 * del.waited_ns / del.cand_calls / c->delay_ns : 0,
			imp);
	return 0;
}

static bool cand_done(struct causal_ctx *x, struct causal_cand *c, uint64_t until)
{
	if (c->n_pairs >= CAUSAL_MAX_PAIRS)
		return true;
	/* A pair is two windows and their settling: start one only if it fits. */
	if (lp_now_ns() + (uint64_t)(2 * (1 + SETTLE_SHARE) * x->window_s * 1e9) > until)
		return true;
	if (c->n_pairs < MIN_PAIRS)
		return false;
	causal_estimate(c->impacts, c->n_pairs, &c->est);
	return (c->est.hi - c->est.lo) / 2 <= x->o->target_half;
}

/* Trace @c (unless it is the point itself), run its pairs, untrace it. */
static int experiment(struct causal_ctx *x, struct causal_cand *c, int left)
{
	struct cand_acc a = {0};
	bool added = false;
	char msg[512];
	uint64_t t0 = lp_now_ns(), until, now;
	int err = 0, i;

	if (c->is_line) {
		err = causal_line_begin(x, c);
		if (err || c->skipped[0])
			return err;
	} else if (daemon__find_trace(x->d, c->function) < 0) {
		if (daemon__trace(x->d, c->function, NULL, msg, sizeof(msg)) < 0) {
			snprintf(c->skipped, sizeof(c->skipped), "%.255s", msg);
			return 0;
		}
		added = true;
	}
	lp_info("causal: experiments on '%s'", c->function);
	/* Its share of the time left, counted once it is attached: resolving
	 * and attaching can take a while on a loaded machine. */
	now = lp_now_ns();
	until = now + (x->deadline > now ? x->deadline - now : 0) / (uint64_t)left;
	i = c->is_line ? -1 : daemon__find_trace(x->d, c->function);
	if (i >= 0 && traces__info(x->d->traces, i)->kind != TRACE_FUNC)
		snprintf(c->skipped, sizeof(c->skipped), "not a function: no entry to delay");
	else
		err = calibrate(x, c, &a);
	while (!err && !c->skipped[0] && !cand_done(x, c, until))
		err = run_pair(x, c, &a);
	if (c->is_line)
		causal_line_end(x);
	i = c->is_line ? -1 : daemon__find_trace(x->d, c->function);
	if (i >= 0)
		traces__set_delay(x->d->traces, i, 0);
	if (added && daemon__targets_alive(x->d))
		daemon__untrace(x->d, c->function, msg, sizeof(msg));
	causal_estimate(c->impacts, c->n_pairs, &c->est);
	c->verdict = causal_verdict(&c->est, x->r->small);
	c->seconds = (double)(lp_now_ns() - t0) / 1e9;
	if (!c->skipped[0] && !c->n_pairs && !err)
		snprintf(c->skipped, sizeof(c->skipped), "no time left for an experiment");
	return err;
}

/* Run every candidate in turn, each with its share of the time left. */
int causal_run_candidates(struct causal_ctx *x)
{
	struct causal_run *r = x->r;

	for (int k = 0; k < r->n_cand; k++) {
		int err;

		if (r->cand[k].skipped[0])
			continue;
		err = experiment(x, &r->cand[k], r->n_cand - k);
		if (err == -ESRCH)
			r->target_exited = true;
		if (err == -EINTR)
			r->interrupted = true;
		if (err == -ESRCH || err == -EINTR) {
			for (int j = k + 1; j < r->n_cand; j++)
				if (!r->cand[j].skipped[0])
					snprintf(r->cand[j].skipped, sizeof(r->cand[j].skipped),
						 "not measured: %s first",
						 err == -ESRCH ? "the target exited"
							       : "interrupted");
			return 0;
		}
		if (err)
			return err;
	}
	return 0;
}
