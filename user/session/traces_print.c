// SPDX-License-Identifier: GPL-2.0
/*
 * traces_print.c - the printed and JSON summaries of the traces, and completion.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include "dwarf/elf_symtab.h"
#include "dwarf/fetch_compile.h"
#include "dwarf/probe_resolve.h"
#include "dwarf/proc_maps.h"
#include "user/session/bpf_session.h"
#include "user/session/session_core.h"
#include "user/util/log.h"
#include "user/profile/stack_symbols.h"
#include "user/session/traces.h"
#include "user/session/traces_internal.h"
#include "user/util/util.h"

static int cmp_value_count(const void *a, const void *b)
{
	const struct value_count *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : strcmp(x->text, y->text);
}

/* Most frequent first; the index by text is rebuilt at the next hit. */
static void sort_values(struct value_stats *vs)
{
	qsort(vs->vals, vs->n, sizeof(*vs->vals), cmp_value_count);
	vs->indexed = 0;
}

static int cmp_by_group(const void *a, const void *b)
{
	const struct by_group *x = a, *y = b;

	return x->value < y->value ? -1 : x->value > y->value;
}

static void print_histogram(const uint64_t *h, FILE *f)
{
	/* Group into power-of-two rows like bpftrace's hist(). */
	uint64_t rows[64] = {0}, max = 0;
	int lo = 64, hi = -1;

	for (int b = 0; b < LP_HIST_BUCKETS; b++) {
		uint64_t v = traces__bucket_lower(b);
		int r = v ? 63 - __builtin_clzll(v) : 0;

		if (!h[b])
			continue;
		rows[r] += h[b];
		lo = r < lo ? r : lo;
		hi = r > hi ? r : hi;
	}
	for (int r = lo; r <= hi; r++)
		max = rows[r] > max ? rows[r] : max;
	for (int r = lo; r <= hi && max; r++) {
		char a[32], b[32];
		int w = (int)(rows[r] * 40 / max);

		lp_fmt_ns(1ULL << r, a, sizeof(a));
		lp_fmt_ns(2ULL << r, b, sizeof(b));
		fprintf(f, "    [%7s, %7s) %8" PRIu64 " |%-40.*s|\n", a, b, rows[r], w,
			"@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@");
	}
}

/* The --by groups of @tr, sorted by value; the caller frees each hist and *@g. */
static int read_sorted_groups(struct traces *t, struct trace *tr, struct by_group **g)
{
	int n = traces_read_by_groups(t, tr, g);

	qsort(*g, n, sizeof(**g), cmp_by_group);
	return n;
}

static void print_summary_row(FILE *f, const struct trace *tr, const struct trace_summary *s)
{
	char c[6][16] = {"-", "-", "-", "-", "-", "-"};

	/* a line has no latency; a function none of whose calls was timed
	 * (or none made yet) has none measured: its zeros would read as
	 * calls that took 0 ns */
	if (tr->info.kind != TRACE_LINE && s->calls > s->untimed) {
		lp_fmt_ns(s->p50, c[0], 16);
		lp_fmt_ns(s->p90, c[1], 16);
		lp_fmt_ns(s->p95, c[2], 16);
		lp_fmt_ns(s->p99, c[3], 16);
		lp_fmt_ns(s->p999, c[4], 16);
		lp_fmt_ns(s->max, c[5], 16);
	}
	fprintf(f, "%-28.28s %10" PRIu64 " %9.0f %9s %9s %9s %9s %9s %9s %6.2f%%%s\n",
		tr->spec_text, s->calls, s->rate, c[0], c[1], c[2], c[3], c[4], c[5],
		tr->info.est_overhead_pct, tr->info.detached ? " detached" : "");
	if (tr->info.kind != TRACE_LINE) {
		/* beside the figures it affects: the percentiles are of the
		 * timed calls only */
		if (s->untimed)
			fprintf(f,
				"%-28.28s %10" PRIu64 " untimed (deeper than %d nested traced "
				"calls or 64 pending returns, or their return skipped by "
				"longjmp, an exception or a coroutine switch): counted, not "
				"in the percentiles\n",
				tr->spec_text, s->untimed, LP_MAX_DEPTH);
	}
	if (tr->pending)
		fprintf(f, "    (waiting for '%s' to be loaded)\n",
			tr->usdt ? tr->usdt->binary : tr->spec.binary);
	else if (!tr->info.attached_ns)
		/* sampling starts first; the tracing programs are verified
		 * beside it (bpf_session_deferred.c): its zeros mean not yet */
		fprintf(f, "    (attaching: its programs are being verified)\n");
}

static void print_latency_histogram(struct traces *t, int i, FILE *f)
{
	uint64_t *h = calloc(LP_HIST_BUCKETS, sizeof(uint64_t));

	if (h && !traces__histogram(t, i, false, h)) {
		uint64_t timed = 0;

		for (int b = 0; b < LP_HIST_BUCKETS; b++)
			timed += h[b];
		fprintf(f, "\n  %s latency:\n", t->v[i]->spec_text);
		if (timed)
			print_histogram(h, f);
		else
			fprintf(f, "    (no call timed)\n");
	}
	free(h);
}

int traces__values(struct traces *t, int i, int k, const char **expr, struct trace_value_row *rows,
		   int max)
{
	struct value_stats *vs;
	int n = 0;

	if (!t || i < 0 || i >= t->n || k < 0)
		return -1;
	if (k >= t->v[i]->n_values)
		return -1;
	vs = &t->v[i]->values[k];
	*expr = vs->expr;
	sort_values(vs);
	for (size_t j = 0; j < vs->n && n < max; j++, n++) {
		rows[n].text = vs->vals[j].text;
		rows[n].count = vs->vals[j].count;
	}
	return n;
}

/* The most frequent values of each value expression of @tr. */
static void print_values(struct trace *tr, FILE *f)
{
	for (int k = 0; k < tr->n_values; k++) {
		struct value_stats *vs = &tr->values[k];

		if (!vs->n)
			continue;
		sort_values(vs);
		fprintf(f, "\n  %s: %s%s (%s)\n", tr->spec_text, vs->expr,
			vs->at_return ? " at return" : "", vs->type.name);
		for (size_t j = 0; j < vs->n && j < VALUE_TOP; j++)
			fprintf(f, "    %-32s %10" PRIu64 "\n", vs->vals[j].text,
				vs->vals[j].count);
		if (vs->n > VALUE_TOP)
			fprintf(f, "    ... %zu more values\n", vs->n - VALUE_TOP);
	}
}

/* Latency percentiles per value of the --by expression. */
static void print_by_groups(struct traces *t, struct trace *tr, FILE *f)
{
	struct value_stats *vs = &tr->values[tr->by_index];
	struct by_group *g = NULL;
	int n = read_sorted_groups(t, tr, &g);
	char c[3][16];

	fprintf(f, "\n  %s latency by %s:\n  %-20s %10s %9s %9s %9s\n", tr->spec_text, vs->expr,
		vs->expr, "calls", "p50", "p95", "p99");
	for (int j = 0; j < n; j++) {
		struct lp_value v = {.u64 = g[j].value};
		char val[64];

		traces_format_value(&vs->type, &v, val, sizeof(val));
		lp_fmt_ns(traces_hist_percentile(g[j].hist, g[j].calls, 50), c[0], 16);
		lp_fmt_ns(traces_hist_percentile(g[j].hist, g[j].calls, 95), c[1], 16);
		lp_fmt_ns(traces_hist_percentile(g[j].hist, g[j].calls, 99), c[2], 16);
		fprintf(f, "  %-20s %10" PRIu64 " %9s %9s %9s\n", val, g[j].calls, c[0], c[1],
			c[2]);
		free(g[j].hist);
	}
	free(g);
}

void traces__print(struct traces *t, FILE *f, bool histograms)
{
	if (!t || !t->n)
		return;
	fprintf(f, "\n%-28s %10s %9s %9s %9s %9s %9s %9s %9s %7s\n", "trace", "calls", "rate/s",
		"p50", "p90", "p95", "p99", "p99.9", "max", "cost%");
	for (int i = 0; i < t->n; i++) {
		struct trace_summary s;

		traces__summary(t, i, false, &s);
		print_summary_row(f, t->v[i], &s);
	}
	for (int i = 0; i < t->n; i++) {
		struct trace *tr = t->v[i];

		if (histograms && tr->info.kind == TRACE_FUNC)
			print_latency_histogram(t, i, f);
		print_values(tr, f);
		if (tr->by_index >= 0)
			print_by_groups(t, tr, f);
	}
}

/* Latency figures of a function trace, overall and over the window. */
static void latency_json(json_t *o, const struct trace *tr, bool raw_latency,
			 const struct trace_summary *s, const struct trace_summary *w)
{
	json_object_set_new(o, "untimed_calls", json_integer(s->untimed));
	json_object_set_new(o, "first_insn",
			    json_string(tr->info.insn_class ? tr->info.insn_class : ""));
	json_object_set_new(o, "returns_on_ret", json_boolean(tr->info.returns_on_ret));
	json_object_set_new(o, "raw_latency", json_boolean(raw_latency));
	json_object_set_new(o, "p50_ns", json_integer(s->p50));
	json_object_set_new(o, "p90_ns", json_integer(s->p90));
	json_object_set_new(o, "p95_ns", json_integer(s->p95));
	json_object_set_new(o, "p99_ns", json_integer(s->p99));
	json_object_set_new(o, "p999_ns", json_integer(s->p999));
	json_object_set_new(o, "max_ns", json_integer(s->max));
	json_object_set_new(o, "mean_ns", json_real(s->mean));
	json_object_set_new(o, "window",
			    json_pack("{s:I,s:I,s:I,s:I,s:I}", "calls", (json_int_t)w->calls,
				      "untimed_calls", (json_int_t)w->untimed, "p50_ns",
				      (json_int_t)w->p50, "p95_ns", (json_int_t)w->p95, "p99_ns",
				      (json_int_t)w->p99));
}

static json_t *values_json(struct trace *tr)
{
	json_t *vals = json_array();

	for (int k = 0; k < tr->n_values; k++) {
		struct value_stats *vs = &tr->values[k];
		json_t *v, *top;

		if (!vs->n && k == tr->by_index)
			continue;
		v = json_object();
		top = json_array();
		sort_values(vs);
		for (size_t j = 0; j < vs->n && j < 64; j++)
			json_array_append_new(top,
					      json_pack("{s:s,s:I}", "value", vs->vals[j].text,
							"count", (json_int_t)vs->vals[j].count));
		json_object_set_new(v, "expr", json_string(vs->expr));
		json_object_set_new(v, "type", json_string(vs->type.name));
		json_object_set_new(v, "at_return", json_boolean(vs->at_return));
		json_object_set_new(v, "faults", json_integer(vs->faults));
		json_object_set_new(v, "top", top);
		json_array_append_new(vals, v);
	}
	return vals;
}

static json_t *by_groups_json(struct traces *t, struct trace *tr)
{
	struct by_group *g = NULL;
	int n = read_sorted_groups(t, tr, &g);
	json_t *by = json_array();

	for (int j = 0; j < n; j++) {
		struct lp_value v = {.u64 = g[j].value};
		char val[64];

		traces_format_value(&tr->values[tr->by_index].type, &v, val, sizeof(val));
		json_array_append_new(
			by,
			json_pack("{s:s,s:I,s:I,s:I,s:I}", "value", val, "calls",
				  (json_int_t)g[j].calls, "p50_ns",
				  (json_int_t)traces_hist_percentile(g[j].hist, g[j].calls, 50),
				  "p95_ns",
				  (json_int_t)traces_hist_percentile(g[j].hist, g[j].calls, 95),
				  "p99_ns",
				  (json_int_t)traces_hist_percentile(g[j].hist, g[j].calls, 99)));
		free(g[j].hist);
	}
	free(g);
	return by;
}

static json_t *trace_json(struct traces *t, int i)
{
	struct trace *tr = t->v[i];
	struct trace_summary s, w;
	json_t *o = json_object();

	traces__summary(t, i, false, &s);
	traces__summary(t, i, true, &w);
	json_object_set_new(o, "spec", json_string(tr->spec_text));
	json_object_set_new(o, "function", json_string(tr->info.func));
	json_object_set_new(o, "kind",
			    json_string(tr->info.kind == TRACE_LINE ? "line" : "function"));
	json_object_set_new(o, "binary", json_string(tr->info.binary ? tr->info.binary : ""));
	json_object_set_new(o, "sites", json_integer(tr->info.n_sites));
	json_object_set_new(o, "calls", json_integer(s.calls));
	json_object_set_new(o, "rate", json_real(s.rate));
	if (tr->info.kind == TRACE_FUNC)
		latency_json(o, tr, t->c->opts->raw_latency, &s, &w);
	json_object_set_new(o, "probe_cost_ns", json_integer(tr->info.probe_cost_ns));
	/* on the targets' CLOCK_MONOTONIC, for comparing with their own clocks */
	json_object_set_new(o, "attached_monotonic_ns",
			    json_integer((json_int_t)tr->info.attached_ns));
	json_object_set_new(o, "overhead_pct", json_real(tr->info.est_overhead_pct));
	json_object_set_new(o, "detached", json_boolean(tr->info.detached));
	json_object_set_new(o, "values", values_json(tr));
	if (tr->by_index >= 0)
		json_object_set_new(o, "by", by_groups_json(t, tr));
	return o;
}

json_t *traces__json(struct traces *t)
{
	json_t *arr = json_array();

	for (int i = 0; t && i < t->n; i++)
		json_array_append_new(arr, trace_json(t, i));
	return arr;
}

static char *names[256]; /* what traces__complete() returned last */

static void forget_names(void)
{
	for (int i = 0; i < 256; i++) {
		free(names[i]);
		names[i] = NULL;
	}
}

/* Offer @spec as the completion after the @n in @out, unless it is there
 * already (kept in names[]); the new count. */
static int add_name(const char *spec, const char **out, int n)
{
	for (int j = 0; j < n; j++)
		if (!strcmp(names[j], spec))
			return n;
	if (!(names[n] = strdup(spec)))
		return n;
	out[n] = names[n];
	return n + 1;
}

/* "py:QUALNAME" of the Python functions seen in samples (frames named
 * "QUALNAME (file.py:N)"), each once. */
static int complete_py(struct traces *t, const char *prefix, const char **out, int max)
{
	const char *seen[256];
	int n = 0, k;

	forget_names();
	k = stack_symbols__interp_names(t->c->symbols, "python", prefix + 3, seen, 256);
	for (int i = 0; i < k && n < max && n < 256; i++) {
		const char *sp = strstr(seen[i], " (");
		int len = sp ? (int)(sp - seen[i]) : (int)strlen(seen[i]);
		char buf[300];

		snprintf(buf, sizeof(buf), "py:%.*s", len, seen[i]);
		n = add_name(buf, out, n);
	}
	return n;
}

/* Room for the Ruby frames looked at: with --lines a method has a frame
 * per line it was seen at. */
#define RB_SEEN_MAX 4096

/*
 * The spec "rb:Class#method" of a Ruby frame named "Class#method (f.rb:N)"
 * or "Class.method (...)" (a singleton method: Ruby's probes name it with
 * the same class and method) into @buf; false for the frames no rb: spec
 * times: blocks ("block in Class#m"), "<main>", "<class:X>", and methods
 * whose class could not be read (no separator).
 */
static bool rb_spec_of(const char *frame, char *buf, size_t cap)
{
	const char *sp = strstr(frame, " (");
	size_t len = sp ? (size_t)(sp - frame) : strlen(frame);
	const char *sep = NULL;

	if (!len || frame[0] == '<' || memchr(frame, ' ', len))
		return false;
	for (size_t i = len; i-- > 0 && !sep;)
		if (frame[i] == '#' || frame[i] == '.')
			sep = frame + i;
	if (!sep || sep == frame || sep == frame + len - 1 ||
	    (size_t)snprintf(buf, cap, "rb:%.*s", (int)len, frame) >= cap)
		return false;
	buf[3 + (sep - frame)] = '#';
	return true;
}

/* "rb:Class#method" of the Ruby methods seen in samples, each once. */
static int complete_rb(struct traces *t, const char *prefix, const char **out, int max)
{
	const char **seen = malloc(RB_SEEN_MAX * sizeof(*seen));
	size_t np = strlen(prefix);
	int n = 0, k;

	forget_names();
	if (!seen)
		return 0;
	k = stack_symbols__interp_names(t->c->symbols, "ruby", "", seen, RB_SEEN_MAX);
	for (int i = 0; i < k && n < max && n < 256; i++) {
		char buf[300];

		if (rb_spec_of(seen[i], buf, sizeof(buf)) && !strncmp(buf, prefix, np))
			n = add_name(buf, out, n);
	}
	free(seen);
	return n;
}

int traces__complete(struct traces *t, const char *prefix, const char **out, int max)
{
	struct elf_symtab *st;
	char exe[64];
	int n = 0;

	if (t && !strncmp(prefix, "py:", 3))
		return complete_py(t, prefix, out, max);
	if (t && !strncmp(prefix, "rb:", 3))
		return complete_rb(t, prefix, out, max);
	if (!t || !t->c->n_procs)
		return 0;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", t->c->procs[0].pid);
	if (elf_symtab__open_path(exe, &st))
		return 0;
	forget_names();
	/* elf_symtab loads symbols on the first lookup */
	elf_symtab__lookup(st, 0);
	for (size_t i = 0; i < st->nsyms && n < max && n < 256; i++) {
		if (strncmp(st->syms[i].name, prefix, strlen(prefix)))
			continue;
		names[n] = strdup(st->syms[i].name);
		if (names[n])
			out[n] = names[n], n++;
	}
	elf_symtab__free(st);
	return n;
}
