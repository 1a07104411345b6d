// SPDX-License-Identifier: GPL-2.0
/*
 * causal_line.c - a FILE:LINE as a causal candidate.
 *
 * A line has no entry to delay, and a uprobe per execution of a loop body
 * would cost more than the experiment measures. So its delays are
 * triggered by samples, as coz triggers its own: during its experiments a
 * cpu-clock event ticks every CAUSAL_LINE_TICK_NS on every CPU (the
 * sampler is stopped by then), and a tick that lands in the line's
 * instructions in the target waits d in BPF (bpf/causal.bpf.h). No tick
 * lands inside a wait, so a line that runs for T gets T / P hits, and a
 * window's slow-down of the line is W / (hits * P), from what BPF counted,
 * with no duration to calibrate (a line has none); d = P * r asks for a
 * slow-down r. P is the ticks' real period in the target, measured per
 * window: its CPU time outside the waits per tick (tick_period()). Taking
 * the asked period was wrong both ways: a 50% delay measured 0.30 for a
 * line whose truth is 0.6 (VM ticks are late), and counting every CPU's
 * ticks measured 1.6 (an idle CPU ticks less).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "user/session/bpf_session.h"
#include "user/session/causal.h"
#include "user/session/causal_internal.h"
#include "user/session/daemon.h"
#include "user/session/traces.h"
#include "user/util/log.h"

#define MIN_LINE_HITS 50 /* ticks in the line over the calibration */
#define MIN_LINE_FRAC 0.02

int causal_line_begin(struct causal_ctx *x, struct causal_cand *c)
{
	struct bpf_session *bpf = x->d->core.bpf;
	char msg[512];
	int n, err, pid = -1;

	for (int i = 0; i < x->d->core.n_procs && pid < 0; i++)
		if (x->d->core.procs[i].alive)
			pid = x->d->core.procs[i].pid;
	if (pid < 0)
		return -ESRCH;
	n = traces__line_ranges(x->d->traces, c->function, pid, x->line_lo, x->line_hi,
				LP_CAUSAL_MAX_RANGES, msg, sizeof(msg));
	if (n <= 0) {
		snprintf(c->skipped, sizeof(c->skipped), "%.255s",
			 n ? msg : "the line has no instruction");
		return 0;
	}
	err = bpf_session__start_causal_ticks(bpf, CAUSAL_LINE_TICK_NS);
	if (err) {
		snprintf(c->skipped, sizeof(c->skipped), "cannot open the cpu-clock ticks: %s",
			 strerror(-err));
		return 0;
	}
	for (int i = 0; i < n; i++)
		lp_debug("causal: %s: [0x%" PRIx64 ", 0x%" PRIx64 ") in pid %d", c->function,
			 x->line_lo[i], x->line_hi[i], pid);
	x->line_n = n;
	x->line_pid = (uint32_t)pid;
	return causal_line_set_delay(x, 0);
}

void causal_line_end(struct causal_ctx *x)
{
	bpf_session__set_causal_line(x->d->core.bpf, 0, NULL, NULL, 0, 0);
	bpf_session__stop_sampling(x->d->core.bpf);
	x->line_n = 0;
}

int causal_line_set_delay(struct causal_ctx *x, uint64_t delay_ns)
{
	return bpf_session__set_causal_line(x->d->core.bpf, x->line_pid, x->line_lo, x->line_hi,
					    x->line_n, delay_ns);
}

/* CPU time of every thread of @pid (schedstat), in ns; 0 if unreadable. */
static double process_cpu_ns(uint32_t pid)
{
	char path[64];
	struct dirent *e;
	double sum = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((e = readdir(dir))) {
		unsigned long long ns;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%u/task/%.16s/schedstat", pid, e->d_name);
		f = fopen(path, "r");
		if (f && fscanf(f, "%llu", &ns) == 1)
			sum += (double)ns;
		if (f)
			fclose(f);
	}
	closedir(dir);
	return sum;
}

void causal_line_read(struct causal_ctx *x, struct causal_win *at)
{
	uint64_t ticks, user, hits;

	bpf_session__causal_line_counts(x->d->core.bpf, &ticks, &user, &hits);
	at->line_ticks = (double)ticks;
	at->line_user = (double)user;
	at->cand_calls = (double)hits;
	at->line_cpu_ns = process_cpu_ns(x->line_pid);
}

/*
 * A tick's worth of the target's time outside the waits in @w: its CPU
 * time (which, hardirq time not being accounted apart on this kernel,
 * holds the waits) less them, per tick. Not the asked period: a VM
 * delivers fewer ticks than asked (16,400 a second for 20,000 here).
 */
static double tick_period(const struct causal_win *w)
{
	double own = w->line_cpu_ns - w->waited_ns;

	return w->line_ticks > 0 && own > 0 ? own / w->line_ticks : NAN;
}

uint64_t causal_line_delay(struct causal_ctx *x, struct causal_cand *c,
			   const struct causal_win *calib)
{
	double r = x->o->delay_pct / 100.0, hits = calib->cand_calls, period, cpu;

	c->mean_ns = 0; /* a line has no duration of its own */
	c->calls_per_s = calib->span_ns > 0 ? hits / calib->span_ns * 1e9 : 0;
	period = tick_period(calib);
	if (hits < MIN_LINE_HITS || !(period > 0)) {
		snprintf(c->skipped, sizeof(c->skipped),
			 "%.0f ticks of %.0f us in it in %.2f s: too little of the program's time "
			 "for a delay to show",
			 hits, (double)CAUSAL_LINE_TICK_NS / 1e3, calib->span_ns / 1e9);
		return 0;
	}
	/* the line's CPU time per second, and the delay the bound allows */
	cpu = hits * period / calib->span_ns;
	if (r * cpu > x->o->max_overhead_pct / 100.0)
		r = x->o->max_overhead_pct / 100.0 / cpu;
	if (r < MIN_LINE_FRAC) {
		snprintf(c->skipped, sizeof(c->skipped),
			 "its delay would be %.1f%% of its time (--max-overhead %.0f%% of one CPU, "
			 "the line uses %.0f%%)",
			 100 * r, x->o->max_overhead_pct, 100 * cpu);
		return 0;
	}
	/* each hit stands for one period of the line's own time */
	return (uint64_t)(period * (r < 0.5 ? r : 0.5));
}

double causal_line_frac(const struct causal_win *w)
{
	double own = w->cand_calls * tick_period(w);

	return own > 0 && w->waited_ns > 0 ? w->waited_ns / own : NAN;
}

void causal_line_add_control(struct causal_cand *c, const struct causal_win *w)
{
	double hits = 0, user = 0;

	if (c->n_win >= (int)(sizeof(c->win_hits) / sizeof(c->win_hits[0])))
		return;
	c->win_hits[c->n_win] = (uint32_t)w->cand_calls;
	c->win_user[c->n_win] = (uint32_t)w->line_user;
	c->n_win++;
	/* its share of the target's user-mode time, from the same ticks */
	for (int i = 0; i < c->n_win; i++) {
		hits += c->win_hits[i];
		user += c->win_user[i];
	}
	if (user > 0)
		c->cpu_share = 100.0 * hits / user;
	c->share_ticks = user;
}
