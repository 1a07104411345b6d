// SPDX-License-Identifier: GPL-2.0
/*
 * view_latency.c - the Latency view: the list of traces with their
 * percentiles and the log-scaled histogram of the selected one.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <curses.h>

#include "ui-tui/tui_internal.h"
#include "user/session/daemon.h"
#include "user/session/split.h"
#include "user/session/traces.h"

#define VALUES_SHOWN 8 /* most frequent values per expression in the Latency view */

#define HIST_MAX_ROWS 24

static void draw_hist(struct tui *t, int idx, int y0, int h, uint64_t thresh)
{
	uint64_t *hist = calloc(LP_HIST_BUCKETS, sizeof(*hist));
	uint64_t rows[HIST_MAX_ROWS] = {0}, peak = 0;
	double lo, hi, span;
	int first = -1, last = -1, n_rows, thresh_row = -1, label_w = 24, bar_w;

	if (!hist || traces__histogram(t->d->traces, idx, t->window, hist)) {
		free(hist);
		return;
	}
	for (int b = 0; b < LP_HIST_BUCKETS; b++) {
		if (!hist[b])
			continue;
		if (first < 0)
			first = b;
		last = b;
	}
	if (first < 0 || h < 3) {
		put(y0, 2, COLS - 2, attrs[C_INFO], "no calls in this span");
		free(hist);
		return;
	}
	n_rows = h < HIST_MAX_ROWS ? h : HIST_MAX_ROWS;
	lo = fmax(1.0, (double)traces__bucket_lower((uint32_t)first));
	hi = last + 1 < LP_HIST_BUCKETS ? (double)traces__bucket_lower((uint32_t)last + 1)
					: (double)traces__bucket_value((uint32_t)last) * 1.1;
	if (hi <= lo)
		hi = lo * 2;
	if (last - first + 1 < n_rows)
		n_rows = last - first + 1;
	span = log(hi / lo);
	/* Log-spaced rows: latencies span orders of magnitude. */
	for (int b = first; b <= last; b++) {
		double v = fmax(lo, (double)traces__bucket_lower((uint32_t)b));
		int r = (int)(log(v / lo) / span * n_rows);

		if (r >= n_rows)
			r = n_rows - 1;
		rows[r] += hist[b];
	}
	for (int r = 0; r < n_rows; r++)
		if (rows[r] > peak)
			peak = rows[r];
	if (thresh) {
		double v = fmax(lo, (double)thresh);

		thresh_row = (int)(log(v / lo) / span * n_rows);
		if (thresh_row >= n_rows)
			thresh_row = n_rows - 1;
	}
	bar_w = COLS - label_w - 12 - 22;
	if (bar_w < 5)
		bar_w = 5;
	for (int r = 0; r < n_rows; r++) {
		char a[16], b[16];
		double ea = lo * exp(span * r / n_rows), eb = lo * exp(span * (r + 1) / n_rows);
		bool slow = thresh_row >= 0 && r >= thresh_row;
		int y = y0 + r, x;

		fmt_ns(a, sizeof(a), (uint64_t)ea);
		fmt_ns(b, sizeof(b), (uint64_t)eb);
		x = putf(y, 0, COLS, attrs[C_NORMAL], "  %9s - %-9s ", a, b);
		/* Log-scaled bars: the tail is a few calls next to millions. */
		draw_bar(y, x, bar_w, rows[r] ? log1p((double)rows[r]) / log1p((double)peak) : 0,
			 slow ? attrs[C_HOT] : attrs[C_COLD]);
		x += bar_w;
		x += putf(y, x, COLS - x, attrs[C_NORMAL], " %10" PRIu64, rows[r]);
		if (r == thresh_row) {
			char th[16];

			fmt_ns(th, sizeof(th), thresh);
			putf(y, x, COLS - x, attrs[C_THRESH], " <- p%g %s", t->m.sr.percentile, th);
		}
	}
	free(hist);
}

/*
 * The captured values of trace @i, one row per expression with its most
 * frequent values, from row @y, at most @rows rows. Returns the rows used.
 */
static int draw_values(struct traces *tr, int i, int y, int rows)
{
	struct trace_value_row v[VALUES_SHOWN];
	const char *expr;
	int used = 0, n;

	for (int k = 0; used < rows && (n = traces__values(tr, i, k, &expr, v, VALUES_SHOWN)) >= 0;
	     k++) {
		char line[512];
		int len = snprintf(line, sizeof(line), " %-12s", expr);

		for (int j = 0; j < n && len < (int)sizeof(line); j++)
			len += snprintf(line + len, sizeof(line) - (size_t)len, " %s x%" PRIu64 "",
					v[j].text, v[j].count);
		putf(y + used++, 0, COLS, attrs[C_NORMAL], "%s%s", line,
		     n ? "" : " (nothing captured yet)");
	}
	return used;
}

/**
 * draw_latency - draw the Latency view
 * @t: the UI state
 * @y0: first screen row
 * @h: screen rows
 */
void draw_latency(struct tui *t, int y0, int h)
{
	struct traces *tr = t->d->traces;
	int n = tr ? traces__count(tr) : 0, list_h, name_w;

	/* The numbers take 64 columns; the name gets what is left (80x24). */
	name_w = COLS - 66 < 10 ? 10 : COLS - 66 > 32 ? 32 : COLS - 66;
	fill_row(y0, 0, attrs[C_HEADER]);
	putf(y0, 0, COLS, attrs[C_HEADER], " %-*s %8s %9s %8s %8s %8s %8s %8s", name_w, "TRACE",
	     "CALLS", "RATE/s", "P50", "P90", "P95", "P99", "MAX");
	if (!n) {
		put(y0 + 1, 2, COLS - 2, attrs[C_INFO],
		    "nothing traced: type :trace FUNC (Tab completes), or :split FUNC");
		return;
	}
	if (t->lat_sel >= n)
		t->lat_sel = n - 1;
	list_h = n < h / 3 ? n : h / 3;
	if (list_h < 1)
		list_h = 1;
	for (int i = 0; i < n && i < list_h; i++) {
		/* Scroll the list so that the selected trace stays visible. */
		int idx = t->lat_sel >= list_h ? t->lat_sel - list_h + 1 + i : i;
		const struct trace_info *ti = traces__info(tr, idx);
		struct trace_summary s = {0};
		char p[6][16];
		attr_t a = idx == t->lat_sel ? attrs[C_SELECT] : attrs[C_NORMAL];
		int y = y0 + 1 + i;

		if (!ti)
			break;
		traces__summary(tr, idx, t->window, &s);
		fmt_ns(p[0], 16, s.p50);
		fmt_ns(p[1], 16, s.p90);
		fmt_ns(p[2], 16, s.p95);
		fmt_ns(p[3], 16, s.p99);
		fmt_ns(p[4], 16, s.max);
		/* A line probe counts hits; it has no duration. A function
		 * none of whose calls was timed (or none made in the window)
		 * has none measured. */
		if (ti->kind == TRACE_LINE || s.calls <= s.untimed)
			for (int k = 0; k < 5; k++)
				snprintf(p[k], 16, "-");
		if (idx == t->lat_sel)
			fill_row(y, 0, a);
		putf(y, 0, COLS, a, " %-*.*s %8" PRIu64 " %9.1f %8s %8s %8s %8s %8s%s", name_w,
		     name_w, ti->spec, s.calls, s.rate, p[0], p[1], p[2], p[3], p[4],
		     ti->detached ? "  detached" : "");
	}
	{
		const struct trace_info *ti = traces__info(tr, t->lat_sel);
		uint64_t thresh = 0;
		int y = y0 + 1 + list_h;

		if (!ti)
			return;
		if (t->m.has_split && split__probe_id(t->d->split) == ti->id)
			thresh = t->m.sr.threshold_ns;
		if (ti->kind == TRACE_LINE) {
			fill_row(y, 0, attrs[C_HEADER]);
			putf(y, 0, COLS, attrs[C_HEADER], " %s is a line probe: hits only",
			     ti->spec);
			draw_values(tr, t->lat_sel, y + 1, h - list_h - 2);
			return;
		}
		/* a function's captured values go above its histogram */
		list_h += draw_values(tr, t->lat_sel, y, h - list_h - 4);
		y = y0 + 1 + list_h;
		fill_row(y, 0, attrs[C_HEADER]);
		putf(y, 0, COLS, attrs[C_HEADER],
		     " latency of %s (%s, log bars)  probe cost ~%.1fus/call%s", ti->spec,
		     t->window ? "window" : "whole run", ti->probe_cost_ns / 1e3,
		     thresh ? "  red: slow calls of the split" : "");
		draw_hist(t, t->lat_sel, y + 1, h - list_h - 2, thresh);
	}
}

/**
 * latency_key - handle a key of the Latency view
 * @t: the UI state
 * @ch: the key
 *
 * Return: H_* flags, or 0 if the key is not the view's.
 */
int latency_key(struct tui *t, int ch)
{
	struct traces *tr = t->d->traces;
	int n = tr ? traces__count(tr) : 0;
	char buf[LINE_MAX_LEN];

	if (move_key(ch, &t->lat_sel, n))
		return H_REDRAW;
	if (!n || t->lat_sel >= n)
		return 0;
	switch (ch) {
	case 'S':
		snprintf(buf, sizeof(buf), "split %s p95", traces__info(tr, t->lat_sel)->spec);
		prompt_open(&t->cmd, ':', buf);
		return H_REDRAW;
	case 'u':
		snprintf(buf, sizeof(buf), "untrace %s", traces__info(tr, t->lat_sel)->spec);
		prompt_open(&t->cmd, ':', buf);
		return H_REDRAW;
	default:
		return 0;
	}
}
