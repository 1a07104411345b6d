// SPDX-License-Identifier: GPL-2.0
/*
 * causal_report.c - the results of a causal run: the ranked table, the
 * JSON, and the coz-style SVG plot (one panel per measured candidate).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user/session/causal.h"
#include "user/util/atomic_file.h"

#define PANEL_W	 300
#define PANEL_H	 230
#define PANEL_M	 46 /* margin inside a panel, for the axes' labels */
#define PANELS_X 3
#define X_RANGE	 40.0 /* the x axis: candidate speedup -40%..+40% */

/*
 * The delay as a share of the candidate's time: of a function's mean
 * duration; of a line's own time, as its pairs really slowed it (a line
 * has no duration, its delay is per tick).
 */
static double delay_pct(const struct causal_cand *c)
{
	if (c->is_line)
		return c->n_pairs ? 100 * c->frac_sum / c->n_pairs : NAN;
	return c->mean_ns > 0 ? 100 * c->delay_ns / c->mean_ns : NAN;
}

static int cand_rank(const struct causal_cand *c)
{
	return c->skipped[0] ? 2 : c->n_pairs ? 0 : 1;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct causal_cand *x = a, *y = b;
	int rx = cand_rank(x), ry = cand_rank(y);

	if (rx != ry)
		return rx - ry;
	if (!rx && x->est.mean != y->est.mean)
		return x->est.mean > y->est.mean ? -1 : 1;
	return strcmp(x->function, y->function);
}

void causal__sort(struct causal_run *r)
{
	qsort(r->cand, r->n_cand, sizeof(r->cand[0]), cand_cmp);
}

static void print_share(FILE *f, double share)
{
	if (share < 0)
		fprintf(f, " %6s", "-");
	else
		fprintf(f, " %5.1f%%", share);
}

/* "throughput", "mean latency" or "p95 latency", into @buf. */
static const char *metric_name(const struct causal_run *r, char *buf, size_t len)
{
	if (!r->latency)
		return "throughput";
	if (!(r->latency_pct > 0))
		return "mean latency";
	snprintf(buf, len, "p%g latency", r->latency_pct);
	return buf;
}

void causal__print(const struct causal_run *r, FILE *f)
{
	char buf[32];
	const char *metric = metric_name(r, buf, sizeof(buf));

	fprintf(f, "causal profile: progress point '%s' (%s", r->point, metric);
	if (r->latency)
		fprintf(f, " %.1f us", r->base_latency / 1e3);
	else
		fprintf(f, " %.1f/s", r->base_rate);
	fprintf(f, "), %.1f s%s%s\n", r->elapsed_s,
		r->target_exited ? ", the target exited: partial results" : "",
		r->interrupted ? ", interrupted: partial results" : "");
	fprintf(f, "%-28s %7s %8s %20s %6s %9s  %s\n", "function", "cpu", "impact", "95% CI",
		"pairs", "delay", "verdict");
	for (int i = 0; i < r->n_cand; i++) {
		const struct causal_cand *c = &r->cand[i];

		fprintf(f, "%-28s", c->function);
		print_share(f, c->cpu_share);
		if (c->skipped[0]) {
			fprintf(f, "  skipped: %s\n", c->skipped);
			continue;
		}
		if (!isnan(c->est.lo))
			fprintf(f, " %+8.3f   [%+7.3f, %+7.3f] %6d %8.1f%%  %s\n", c->est.median,
				c->est.lo, c->est.hi, c->n_pairs, delay_pct(c),
				causal_verdict_name(c->verdict));
		else
			fprintf(f, " %8s %20s %6d %9s  inconclusive\n", "-", "-", c->n_pairs, "-");
	}
	fprintf(f,
		"impact: %% the program speeds up (%s%s) per 1%% the function speeds up\n"
		"(median of the pairs, 95%% sign-test interval; 'no effect' within +-%.2f)\n",
		r->latency ? "lower " : "", r->latency ? metric : "less time per progress point",
		r->small);
}

/* A number, or null when it is not one (a candidate measured too little). */
static json_t *num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *cand_json(const struct causal_cand *c)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "function", json_string(c->function));
	json_object_set_new(o, "impact", num(c->n_pairs ? c->est.median : NAN));
	json_object_set_new(o, "ci_low", num(c->est.lo));
	json_object_set_new(o, "ci_high", num(c->est.hi));
	json_object_set_new(o, "mean_impact", num(c->n_pairs ? c->est.mean : NAN));
	json_object_set_new(o, "experiments", json_integer(c->n_pairs));
	json_object_set_new(o, "cpu_share", num(c->cpu_share >= 0 ? c->cpu_share : NAN));
	json_object_set_new(
		o, "verdict",
		json_string(c->skipped[0] ? "skipped" : causal_verdict_name(c->verdict)));
	if (c->skipped[0])
		json_object_set_new(o, "skipped", json_string(c->skipped));
	json_object_set_new(o, "mean_us", num(c->mean_ns > 0 ? c->mean_ns / 1e3 : NAN));
	json_object_set_new(o, "calls_per_s", num(c->calls_per_s));
	json_object_set_new(o, "delay_pct", num(delay_pct(c)));
	json_object_set_new(o, "kind", json_string(c->is_line ? "line" : "function"));
	if (c->is_line) {
		json_t *wins = json_array();

		for (int i = 0; i < c->n_win; i++)
			json_array_append_new(wins, json_pack("[I,I]", (json_int_t)c->win_hits[i],
							      (json_int_t)c->win_user[i]));
		json_object_set_new(o, "share_ticks", json_integer((json_int_t)c->share_ticks));
		/* [ticks in the line, ticks in the target's user code] per
		 * control window: the share's spread from window to window */
		json_object_set_new(o, "share_windows", wins);
	}
	json_object_set_new(o, "seconds", json_real(c->seconds));
	return o;
}

json_t *causal__json(const struct causal_run *r)
{
	json_t *root = json_object(), *arr = json_array();

	if (!root || !arr) {
		json_decref(root);
		json_decref(arr);
		return NULL;
	}
	for (int i = 0; i < r->n_cand; i++) {
		json_t *o = cand_json(&r->cand[i]);

		if (!o || json_array_append_new(arr, o)) {
			json_decref(root);
			json_decref(arr);
			return NULL;
		}
	}
	json_object_set_new(root, "causal", arr);
	json_object_set_new(root, "progress_point", json_string(r->point));
	json_object_set_new(root, "metric", json_string(r->latency ? "latency" : "throughput"));
	json_object_set_new(root, "baseline_rate", json_real(r->base_rate));
	if (r->latency) {
		json_object_set_new(root, "baseline_latency_us", json_real(r->base_latency / 1e3));
		/* the statistic of the latency point: its mean, or a percentile */
		json_object_set_new(root, "latency_percentile",
				    r->latency_pct > 0 ? json_real(r->latency_pct) : json_null());
	}
	json_object_set_new(root, "small_impact", json_real(r->small));
	json_object_set_new(root, "elapsed_s", json_real(r->elapsed_s));
	json_object_set_new(root, "target_exited", json_boolean(r->target_exited));
	json_object_set_new(root, "interrupted", json_boolean(r->interrupted));
	json_object_set_new(root, "delayed_hits", json_integer((json_int_t)r->delayed_hits));
	json_object_set_new(root, "yielded_hits", json_integer((json_int_t)r->yielded_hits));
	return root;
}

/* Text for SVG: the five XML specials escaped, control bytes dropped. */
static void svg_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, f);
		}
	}
}

struct panel {
	double x0, y0;	   /* top-left corner of the plot area */
	double w, h, ymax; /* y axis: -ymax..+ymax % program speedup */
};

static double px(const struct panel *p, double x)
{
	return p->x0 + (x + X_RANGE) / (2 * X_RANGE) * p->w;
}

static double py(const struct panel *p, double y)
{
	return p->y0 + (p->ymax - y) / (2 * p->ymax) * p->h;
}

static void panel_axes(FILE *f, const struct panel *p, const struct causal_cand *c)
{
	fprintf(f,
		"<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='#fafafa' "
		"stroke='#999'/>\n",
		p->x0, p->y0, p->w, p->h);
	fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#bbb'/>\n",
		px(p, -X_RANGE), py(p, 0), px(p, X_RANGE), py(p, 0));
	fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#bbb'/>\n", px(p, 0),
		p->y0, px(p, 0), p->y0 + p->h);
	fprintf(f, "<text x='%.1f' y='%.1f' font-size='13' font-weight='bold'>", p->x0, p->y0 - 8);
	svg_text(f, c->function);
	fprintf(f, " (cpu %.1f%%)</text>\n", c->cpu_share);
	for (int t = -40; t <= 40; t += 20)
		fprintf(f,
			"<text x='%.1f' y='%.1f' font-size='10' text-anchor='middle'>%d%%"
			"</text>\n",
			px(p, t), p->y0 + p->h + 13, t);
	fprintf(f,
		"<text x='%.1f' y='%.1f' font-size='10' text-anchor='end'>%+.0f%%</text>\n"
		"<text x='%.1f' y='%.1f' font-size='10' text-anchor='end'>%+.0f%%</text>\n",
		p->x0 - 3, p->y0 + 9, p->ymax, p->x0 - 3, p->y0 + p->h, -p->ymax);
	fprintf(f,
		"<text x='%.1f' y='%.1f' font-size='10' text-anchor='middle'>function "
		"speedup (negative: the injected delay)</text>\n",
		p->x0 + p->w / 2, p->y0 + p->h + 27);
}

/* The fitted line and its 95% band, solid where measured (x < 0). */
static void panel_data(FILE *f, const struct panel *p, const struct causal_cand *c)
{
	double lo = !isnan(c->est.lo) ? c->est.lo : c->est.median;
	double hi = !isnan(c->est.hi) ? c->est.hi : c->est.median, fx, fy;

	fprintf(f,
		"<polygon fill='#4a90d9' fill-opacity='0.25' points='%.1f,%.1f %.1f,%.1f "
		"%.1f,%.1f %.1f,%.1f %.1f,%.1f'/>\n",
		px(p, -X_RANGE), py(p, -X_RANGE * lo), px(p, 0), py(p, 0), px(p, X_RANGE),
		py(p, X_RANGE * hi), px(p, X_RANGE), py(p, X_RANGE * lo), px(p, -X_RANGE),
		py(p, -X_RANGE * hi));
	fprintf(f,
		"<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#1f5fa8' "
		"stroke-width='2'/>\n",
		px(p, -X_RANGE), py(p, -X_RANGE * c->est.median), px(p, 0), py(p, 0));
	fprintf(f,
		"<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#1f5fa8' "
		"stroke-width='2' stroke-dasharray='5,4'/>\n",
		px(p, 0), py(p, 0), px(p, X_RANGE), py(p, X_RANGE * c->est.median));
	/* The measured mean point: the delay as a negative speedup. */
	fx = -100 * c->frac_sum / c->n_pairs;
	fy = -100 * c->rel_sum / c->n_pairs;
	if (fabs(fy) <= p->ymax && fabs(fx) <= X_RANGE)
		fprintf(f,
			"<circle cx='%.1f' cy='%.1f' r='4' fill='#c0392b'><title>measured: "
			"%.1f%% delay, %.2f%% program slowdown over %d pairs</title></circle>\n",
			px(p, fx), py(p, fy), -fx, -fy, c->n_pairs);
	fprintf(f, "<text x='%.1f' y='%.1f' font-size='11'>impact %+.2f [%+.2f, %+.2f]</text>\n",
		p->x0 + 4, p->y0 + 14, c->est.median, lo, hi);
}

static void write_panels(FILE *f, const struct causal_run *r, int n, double ymax)
{
	int k = 0;

	for (int i = 0; i < r->n_cand; i++) {
		const struct causal_cand *c = &r->cand[i];
		struct panel p = {
			.w = PANEL_W - 2 * PANEL_M, .h = PANEL_H - 2 * PANEL_M, .ymax = ymax};

		if (c->skipped[0] || !c->n_pairs)
			continue;
		p.x0 = (k % PANELS_X) * PANEL_W + PANEL_M + 10;
		p.y0 = (k / PANELS_X) * PANEL_H + PANEL_M + 40;
		panel_axes(f, &p, c);
		panel_data(f, &p, c);
		k++;
	}
	if (!n)
		fprintf(f, "<text x='20' y='80' font-size='13'>no candidate was measured</text>\n");
}

static void write_svg(FILE *f, const struct causal_run *r)
{
	char metric[32];
	double ymax = 5;
	int n = 0, cols, rows;

	for (int i = 0; i < r->n_cand; i++) {
		const struct causal_cand *c = &r->cand[i];
		double m = !isnan(c->est.lo) ? fmax(fabs(c->est.lo), fabs(c->est.hi))
					     : fabs(c->est.median);

		if (c->skipped[0] || !c->n_pairs)
			continue;
		n++;
		if (isfinite(m) && m * X_RANGE * 1.1 > ymax)
			ymax = fmin(m * X_RANGE * 1.1, 100);
	}
	cols = n < PANELS_X ? (n ? n : 1) : PANELS_X;
	rows = n ? (n + PANELS_X - 1) / PANELS_X : 1;
	fprintf(f,
		"<?xml version='1.0' encoding='UTF-8'?>\n<svg xmlns='http://www.w3.org/2000/"
		"svg' width='%d' height='%d' font-family='sans-serif'>\n",
		cols * PANEL_W + 20, rows * PANEL_H + 50);
	fprintf(f, "<text x='10' y='20' font-size='14'>causal profile: progress point '");
	svg_text(f, r->point);
	fprintf(f,
		"' (%s)</text>\n<text x='10' y='38' font-size='11'>predicted program "
		"speedup (%%) against function speedup; band: 95%% interval</text>\n",
		metric_name(r, metric, sizeof(metric)));
	write_panels(f, r, n, ymax);
	fputs("</svg>\n", f);
}

int causal__write_svg(const struct causal_run *r, const char *path)
{
	struct atomic_file af;
	int err = atomic_file__open(&af, path);

	if (err)
		return err;
	write_svg(af.fp, r);
	if (ferror(af.fp)) {
		atomic_file__abort(&af);
		return -EIO;
	}
	return atomic_file__commit(&af);
}
