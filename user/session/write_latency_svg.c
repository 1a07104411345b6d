// SPDX-License-Identifier: GPL-2.0
/*
 * write_latency_svg.c - a latency histogram as a small self-contained
 * SVG: log-scaled time axis (one column per histogram octave quarter),
 * bars by call count on a log axis (height ~ log10(1 + calls), so a tail of
 * a few calls stays visible beside a mode of millions), ticks labelled in
 * calls at each decade, the split threshold as a red line.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user/session/report.h"
#include "user/session/traces.h"
#include "user/profile/writers.h"
#include "user/util/util.h"

#define W	  900
#define H	  360
#define MARGIN_L  60
#define MARGIN_B  50
#define MARGIN_T  40
#define N_COLUMNS 120

/* The histogram in N_COLUMNS columns on a log axis from lo to hi. */
struct lat_columns {
	double lo, hi, span; /* ns, and log(hi) - log(lo) */
	double cols[N_COLUMNS], max;
	uint64_t total;
};

static void bin_columns(const uint64_t *hist, uint64_t threshold_ns, struct lat_columns *lc)
{
	int first = -1, last = -1;

	memset(lc, 0, sizeof(*lc));
	for (int i = 0; i < LP_HIST_BUCKETS; i++) {
		if (!hist[i])
			continue;
		if (first < 0)
			first = i;
		last = i;
		lc->total += hist[i];
	}
	if (first < 0) {
		lc->lo = 1e3;
		lc->hi = 1e6;
	} else {
		lc->lo = fmax(1, (double)traces__bucket_lower(first));
		lc->hi = fmax(lc->lo * 2, (double)traces__bucket_lower(last + 1));
	}
	if (threshold_ns && threshold_ns * 1.2 > lc->hi)
		lc->hi = threshold_ns * 1.2;
	lc->span = log(lc->hi) - log(lc->lo);
	for (int i = first < 0 ? LP_HIST_BUCKETS : first; i <= last; i++) {
		double v = fmax(1, (double)traces__bucket_value(i));
		int c = (int)((log(v) - log(lc->lo)) / lc->span * N_COLUMNS);

		if (c < 0)
			c = 0;
		if (c >= N_COLUMNS)
			c = N_COLUMNS - 1;
		lc->cols[c] += hist[i];
	}
	for (int c = 0; c < N_COLUMNS; c++)
		lc->max = fmax(lc->max, lc->cols[c]);
}

/* Both axes: a grid line at each decade of calls, a label at each decade of time. */
static void write_axes(FILE *out, const struct lat_columns *lc, double ph)
{
	char a[32];

	fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%.0f\" stroke=\"#333\"/>\n",
		MARGIN_L, MARGIN_T, MARGIN_L, MARGIN_T + ph);
	for (double t = 1; lc->max >= 1 && t <= lc->max; t *= 10) {
		double y = MARGIN_T + ph - log10(1 + t) / log10(1 + lc->max) * ph;

		fprintf(out,
			"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
			"<text class=\"ytick\" x=\"%d\" y=\"%.1f\" "
			"text-anchor=\"end\">%.0f</text>\n",
			MARGIN_L, y, W - 20, y, MARGIN_L - 4, y + 4, t);
	}
	fprintf(out,
		"<text x=\"14\" y=\"%.0f\" text-anchor=\"middle\" "
		"transform=\"rotate(-90 14 %.0f)\">calls (log scale)</text>\n",
		MARGIN_T + ph / 2, MARGIN_T + ph / 2);
	fprintf(out, "<line x1=\"%d\" y1=\"%.0f\" x2=\"%d\" y2=\"%.0f\" stroke=\"#333\"/>\n",
		MARGIN_L, MARGIN_T + ph, W - 20, MARGIN_T + ph);
	for (double t = pow(10, floor(log10(lc->lo))); t <= lc->hi; t *= 10) {
		double x = MARGIN_L + (log(t) - log(lc->lo)) / lc->span * (W - MARGIN_L - 20);

		if (t < lc->lo)
			continue;
		lp_fmt_ns(t, a, sizeof(a));
		fprintf(out, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", x,
			MARGIN_T + ph + 18, a);
	}
}

int write_latency_svg(const uint64_t *hist, const char *title, uint64_t threshold_ns, double pct,
		      FILE *out)
{
	struct lat_columns lc;
	double pw = (double)(W - MARGIN_L - 20) / N_COLUMNS, ph = H - MARGIN_T - MARGIN_B;
	char a[32], b[32];

	bin_columns(hist, threshold_ns, &lc);
	fprintf(out,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"Verdana,sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#fafafa\"/>\n"
		"<text x=\"%d\" y=\"22\" font-size=\"16\" text-anchor=\"middle\">",
		W, H, W, H, W / 2);
	writer__xml_text(out, title);
	fprintf(out, " (%llu calls)</text>\n", (unsigned long long)lc.total);
	for (int c = 0; c < N_COLUMNS; c++) {
		double h;
		double x0 = exp(log(lc.lo) + lc.span * c / N_COLUMNS);
		double x1 = exp(log(lc.lo) + lc.span * (c + 1) / N_COLUMNS);

		if (!lc.cols[c])
			continue;
		h = fmax(1, log10(1 + lc.cols[c]) / log10(1 + lc.max) * ph);
		lp_fmt_ns(x0, a, sizeof(a));
		lp_fmt_ns(x1, b, sizeof(b));
		fprintf(out,
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
			"<title>%s - %s: %.0f calls</title></rect>\n",
			MARGIN_L + c * pw, MARGIN_T + ph - h, pw * 0.9, h,
			threshold_ns && x0 >= threshold_ns ? "#d9534f" : "#5b8fd9", a, b, lc.cols[c]);
	}
	write_axes(out, &lc, ph);
	if (threshold_ns) {
		double x = MARGIN_L +
			   (log((double)threshold_ns) - log(lc.lo)) / lc.span * (W - MARGIN_L - 20);

		lp_fmt_ns((double)threshold_ns, a, sizeof(a));
		fprintf(out,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#c00\" "
			"stroke-width=\"2\" stroke-dasharray=\"6,3\"/>\n"
			"<text x=\"%.1f\" y=\"%d\" fill=\"#c00\">p%g = %s</text>\n",
			x, MARGIN_T, x, MARGIN_T + ph, x + 4, MARGIN_T + 12, pct, a);
	}
	fprintf(out,
		"<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">latency (log scale)</text>\n"
		"</svg>\n",
		W / 2, H - 10);
	return ferror(out) ? -EIO : 0;
}
