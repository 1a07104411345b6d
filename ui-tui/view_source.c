// SPDX-License-Identifier: GPL-2.0
/*
 * view_source.c - the Source view (key 5): the selected function's source
 * lines with their samples, structure marks and probe hits, or its
 * instructions with theirs; Enter probes a line, w splits the function on
 * the calls that ran it, d switches to the disassembly.
 *
 * The view is an annotate model (user/profile/annotate.h) of the profile
 * the other views show (the window or the whole run), rebuilt when that
 * profile is. Probes go through the daemon's commands, as :line does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curses.h>

#include "ui-tui/tui_internal.h"
#include "user/profile/annotate.h"
#include "user/session/daemon.h"
#include "user/session/traces.h"

#define BAR_W 10

struct src_view {
	char func[256]; /* the function shown, "" for the hottest */
	struct annotate *a;
	struct annotate_cache *cache; /* the binaries stay open between rebuilds */
	uint64_t built_for;	      /* t->m.built_ns of the profile @a was built from */
	bool disasm;
	int sel, scroll;
	char searched[LINE_MAX_LEN]; /* the search the selection last jumped to */
};

static struct src_view *sv_get(struct tui *t)
{
	if (!t->src)
		t->src = calloc(1, sizeof(*t->src));
	return t->src;
}

/**
 * source_free - free the Source view's state
 * @t: the UI state
 */
void source_free(struct tui *t)
{
	if (!t->src)
		return;
	annotate__free(t->src->a);
	annotate_cache__free(t->src->cache);
	free(t->src);
	t->src = NULL;
}

static const struct annot_func *shown(const struct src_view *sv)
{
	return sv && sv->a && sv->a->n ? &sv->a->funcs[0] : NULL;
}

/* The function the current view points at: Top/Tree's cursor, Latency's trace, the split. */
static const char *pointed_function(struct tui *t)
{
	const struct trace_info *ti;

	if (t->view == VIEW_LATENCY && t->d->traces &&
	    (ti = traces__info(t->d->traces, t->lat_sel)) && ti->kind == TRACE_FUNC)
		return ti->func;
	if (t->view == VIEW_SPLIT && t->m.has_split)
		return t->m.sr.function;
	return t->view == VIEW_SOURCE ? NULL : selected_function(t);
}

/**
 * source_open - show the Source view of the function selected in the current view
 * @t: the UI state
 *
 * Without a selection the view keeps its function, or shows the hottest.
 *
 * Return: H_REDRAW.
 */
int source_open(struct tui *t)
{
	struct src_view *sv = sv_get(t);
	const char *fn = pointed_function(t);

	if (!sv) {
		set_msg(t, true, "out of memory");
		return H_REDRAW;
	}
	if (fn) {
		/* the model's names may carry " (file.c:12)": the symbol is before it */
		size_t n = strcspn(fn, " ");

		snprintf(sv->func, sizeof(sv->func), "%.*s", (int)n, fn);
		sv->sel = sv->scroll = 0;
		sv->built_for = 0;
		sv->searched[0] = 0;
	}
	t->view = VIEW_SOURCE;
	return H_REDRAW;
}

/* Rebuild the annotation when the model was rebuilt; the hottest line selected first. */
static void sv_refresh(struct tui *t, struct src_view *sv)
{
	struct annotate_opts o = {.func = sv->func[0] ? sv->func : NULL, .max_funcs = 1};
	const struct annot_func *f;
	bool first = !sv->a;
	int err;

	if (!t->m.prof || sv->built_for == t->m.built_ns)
		return;
	if (!sv->cache)
		sv->cache = annotate_cache__new();
	o.cache = sv->cache;
	annotate__free(sv->a);
	sv->a = NULL;
	sv->built_for = t->m.built_ns;
	err = annotate__build(t->m.prof, &o, &sv->a);
	if (err) {
		set_msg(t, true, "cannot annotate: %s", strerror(-err));
		return;
	}
	f = shown(sv);
	if (!f)
		return;
	if (!sv->func[0])
		snprintf(sv->func, sizeof(sv->func), "%s", f->sf->name);
	if (first && sv->sel == 0) {
		uint64_t best = 0;

		for (int i = 0; i < f->n_lines; i++)
			if (f->lines[i].self > best)
				best = f->lines[i].self, sv->sel = i;
	}
}

static int n_rows(const struct src_view *sv)
{
	const struct annot_func *f = shown(sv);

	if (!f)
		return 0;
	return sv->disasm || !f->n_lines ? (int)f->sf->n_insns : f->n_lines;
}

/* "annot.c:32", the spec of a line probe on line @line of @f's file. */
static void line_spec(const struct annot_func *f, int line, char *buf, size_t len)
{
	const char *base = strrchr(f->sf->file, '/');

	snprintf(buf, len, "%s:%d", base ? base + 1 : f->sf->file, line);
}

/* Hits of the probe on @line, and per call of the function when it is traced. */
static void probe_cols(struct tui *t, const struct annot_func *f, int line, char *buf, size_t len)
{
	struct trace_summary ls, fs;
	char spec[300];
	int i, fi;

	buf[0] = 0;
	if (!f->sf->file || !t->d->traces)
		return;
	line_spec(f, line, spec, sizeof(spec));
	i = daemon__find_trace(t->d, spec);
	if (i < 0 || traces__summary(t->d->traces, i, t->window, &ls))
		return;
	fi = daemon__find_trace(t->d, f->sf->name);
	if (fi >= 0 && !traces__summary(t->d->traces, fi, t->window, &fs) && fs.calls)
		snprintf(buf, len, "%8" PRIu64 " %7.0f/s %5.2f/call", ls.calls, ls.rate,
			 (double)ls.calls / (double)fs.calls);
	else
		snprintf(buf, len, "%8" PRIu64 " %7.0f/s", ls.calls, ls.rate);
}

static void draw_header(struct tui *t, const struct annot_func *f, int y)
{
	const struct src_func *sf = f->sf;

	putf(y, 0, COLS, attrs[C_INFO] | A_BOLD,
	     "%s in %s  self %" PRIu64 " (%.1f%%)  total %" PRIu64 " (%.1f%%)  %s%s", sf->name,
	     f->module, f->self, 100 * share(f->self, t->src->a->total), f->total,
	     100 * share(f->total, t->src->a->total), t->window ? "window" : "whole run",
	     t->src->disasm ? "  [disassembly]" : "");
	if (f->has_source)
		putf(y + 1, 0, COLS, sf->mismatch ? attrs[C_ERROR] : attrs[C_NORMAL],
		     "debug info: %s  source: %s%s", sf->debug_from ? sf->debug_from : "none",
		     sf->where, sf->mismatch ? "  MISMATCH: shorter than the code's lines" : "");
	else
		putf(y + 1, 0, COLS, attrs[C_ERROR], "debug info: %s  no source: looked at %s",
		     sf->debug_from ? sf->debug_from : "none", sf->where);
}

static bool row_matches(const struct annot_func *f, const struct src_view *sv, int r,
			const char *needle)
{
	char buf[160];

	if (!needle[0])
		return false;
	if (sv->disasm || !f->n_lines) {
		src_func__format_insn(f->sf, &f->sf->insns[r], buf, sizeof(buf));
		return strcasestr(buf, needle) != NULL;
	}
	return f->has_source && f->lines[r].line <= f->sf->n_lines &&
	       strcasestr(f->sf->lines[f->lines[r].line - 1], needle);
}

/* Tabs to spaces: curses would move to its own tab stops, past the clip. */
static void expand_tabs(const char *s, char *out, size_t len)
{
	size_t n = 0;

	for (; *s && n + 9 < len; s++) {
		if (*s == '\t') {
			do
				out[n++] = ' ';
			while (n % 8);
		} else {
			out[n++] = *s;
		}
	}
	out[n] = 0;
}

static void draw_line_row(struct tui *t, const struct annot_func *f, int r, int y, attr_t a)
{
	const struct annot_line *l = &f->lines[r];
	const struct src_func *sf = f->sf;
	char probe[64], text[512], mark[8];
	int x, d = l->depth < 3 ? l->depth : 3;

	probe_cols(t, f, l->line, probe, sizeof(probe));
	snprintf(mark, sizeof(mark), "%*s%c%c%c", d, "", l->loop ? 'L' : ' ', l->branch ? 'B' : ' ',
		 l->inlined ? 'I' : ' ');
	if (l->self || l->total)
		x = putf(y, 0, COLS, a, "%7" PRIu64 " %6.2f%% ", l->self,
			 100 * share(l->self, f->self));
	else
		x = putf(y, 0, COLS, a, "%7s %7s ", "", "");
	draw_bar(y, x, BAR_W, share(l->self, f->self), a == attrs[C_SELECT] ? a : attrs[C_BAR]);
	x += BAR_W + 1;
	if (l->total)
		x += putf(y, x, COLS - x, a, "%6.2f%% ", 100 * share(l->total, f->total));
	else
		x += putf(y, x, COLS - x, a, "%7s ", "");
	x += putf(y, x, COLS - x, a, "%5d %-6s %-32s ", l->line, mark, probe);
	expand_tabs(f->has_source && !sf->mismatch && l->line <= sf->n_lines
			    ? sf->lines[l->line - 1]
			    : "",
		    text, sizeof(text));
	x += put(y, x, COLS - x, row_matches(f, t->src, r, t->search) ? attrs[C_MATCH] : a, text);
	if (l->inlined)
		putf(y, x, COLS - x, attrs[C_INFO], "  [inlined: %s]", l->inlined);
}

static void draw_insn_row(struct tui *t, const struct annot_func *f, int r, int y, attr_t a)
{
	const struct src_insn *in = &f->sf->insns[r];
	uint64_t s = f->insn_self[r], tot = f->insn_total[r];
	char buf[160];
	int x;

	src_func__format_insn(f->sf, in, buf, sizeof(buf));
	if (s || tot)
		x = putf(y, 0, COLS, a, "%7" PRIu64 " %6.2f%% ", s, 100 * share(s, f->self));
	else
		x = putf(y, 0, COLS, a, "%7s %7s ", "", "");
	draw_bar(y, x, BAR_W, share(s, f->self), a == attrs[C_SELECT] ? a : attrs[C_BAR]);
	x += BAR_W + 1;
	x += putf(y, x, COLS - x, a, "%8" PRIx64 " %5d  ", in->vaddr, in->line);
	x += put(y, x, COLS - x, row_matches(f, t->src, r, t->search) ? attrs[C_MATCH] : a, buf);
	if (in->inl_func)
		putf(y, x, COLS - x, attrs[C_INFO], "  [%s]", in->inl_func);
}

/**
 * draw_source - draw the Source view
 * @t: the UI state
 * @y0: first screen row
 * @h: screen rows
 */
void draw_source(struct tui *t, int y0, int h)
{
	struct src_view *sv = sv_get(t);
	const struct annot_func *f;
	int n;

	if (!sv)
		return;
	sv_refresh(t, sv);
	f = shown(sv);
	if (!f) {
		putf(y0, 0, COLS, attrs[C_NORMAL],
		     sv->func[0] ? "no samples in '%s' to annotate (yet)"
				 : "no function to show: select one in Top or Tree, then press 5",
		     sv->func);
		return;
	}
	draw_header(t, f, y0);
	n = n_rows(sv);
	fill_row(y0 + 2, 0, attrs[C_HEADER]);
	put(y0 + 2, 0, COLS, attrs[C_HEADER],
	    sv->disasm || !f->n_lines
		    ? "   SELF  SELF%            TOTAL%  ADDRESS  LINE  BYTES / FLOW"
		    : "   SELF  SELF%            TOTAL%  LINE MARKS  HITS     RATE     PER-CALL  "
		      "SOURCE");
	h -= 3;
	clamp_scroll(&sv->sel, &sv->scroll, n, h);
	for (int r = 0; r < h && sv->scroll + r < n; r++) {
		int row = sv->scroll + r, y = y0 + 3 + r;
		attr_t a = row == sv->sel ? attrs[C_SELECT] : attrs[C_NORMAL];

		if (row == sv->sel)
			fill_row(y, 0, a);
		if (sv->disasm || !f->n_lines)
			draw_insn_row(t, f, row, y, a);
		else
			draw_line_row(t, f, row, y, a);
	}
}

/* The source line of row @r, 0 if none. */
static int row_line(const struct annot_func *f, const struct src_view *sv, int r)
{
	if (r < 0 || r >= n_rows(sv))
		return 0;
	return sv->disasm || !f->n_lines ? f->sf->insns[r].line : f->lines[r].line;
}

/**
 * source_find - select the next row matching the search
 * @t: the UI state
 * @next: start after the selected row (n), else at it (a new search)
 */
void source_find(struct tui *t, bool next)
{
	struct src_view *sv = t->src;
	const struct annot_func *f = shown(sv);
	int n = n_rows(sv);

	if (!f || !t->search[0] || !n)
		return;
	for (int k = next ? 1 : 0; k <= n; k++) {
		int r = (sv->sel + k) % n;

		if (row_matches(f, sv, r, t->search)) {
			sv->sel = r;
			return;
		}
	}
	set_msg(t, true, "'%s' not found in %s", t->search, f->sf->name);
}

/* Enter: a line probe on the selected line, or off again. */
static int toggle_probe(struct tui *t, const struct annot_func *f, int line)
{
	char spec[300], err[256] = "";
	int id;

	if (!f->sf->file || line <= 0) {
		set_msg(t, true, "no source line here to probe");
		return H_REDRAW;
	}
	line_spec(f, line, spec, sizeof(spec));
	if (daemon__find_trace(t->d, spec) >= 0) {
		model_drop_split(&t->m);
		if (daemon__untrace(t->d, spec, err, sizeof(err)))
			set_msg(t, true, "%s", err);
		else
			set_msg(t, false, "removed the probe on %s", spec);
		return H_REBUILD;
	}
	id = daemon__trace(t->d, spec, NULL, err, sizeof(err));
	if (id < 0)
		set_msg(t, true, "%s", err);
	else
		set_msg(t, false, "probing %s (probe %d): hits show in this view", spec, id);
	return H_REBUILD;
}

/* w: split the function on the calls that ran the selected line (--when). */
static int split_when(struct tui *t, const struct annot_func *f, int line)
{
	char spec[300], err[256] = "";

	if (!f->sf->file || line <= 0) {
		set_msg(t, true, "no source line here to split on");
		return H_REDRAW;
	}
	line_spec(f, line, spec, sizeof(spec));
	model_drop_split(&t->m);
	if (daemon__split(t->d, f->sf->name, spec, NULL, err, sizeof(err))) {
		set_msg(t, true, "%s", err);
		return H_REDRAW;
	}
	t->view = VIEW_SPLIT;
	t->split_mode = SPLIT_RANKS;
	t->split_scroll = 0;
	set_msg(t, false, "splitting '%s' on the calls that ran %s", f->sf->name, spec);
	return H_REBUILD;
}

/* d: the same place in the other listing. */
static void toggle_disasm(struct src_view *sv, const struct annot_func *f)
{
	int line = row_line(f, sv, sv->sel);

	sv->disasm = !sv->disasm;
	if (!f->n_lines)
		return;
	for (int r = 0; r < n_rows(sv); r++) {
		if (row_line(f, sv, r) == line) {
			sv->sel = r;
			return;
		}
	}
}

/**
 * source_key - handle a key in the Source view
 * @t: the UI state
 * @ch: the key
 *
 * Return: H_* flags, 0 when the key is not the view's.
 */
int source_key(struct tui *t, int ch)
{
	struct src_view *sv = t->src;
	const struct annot_func *f = shown(sv);

	if (!f)
		return 0;
	if (move_key(ch, &sv->sel, n_rows(sv)))
		return H_REDRAW;
	switch (ch) {
	case TK_LF:
	case TK_CR:
	case KEY_ENTER:
		return toggle_probe(t, f, row_line(f, sv, sv->sel));
	case 'w':
		return split_when(t, f, row_line(f, sv, sv->sel));
	case 'd':
		toggle_disasm(sv, f);
		return H_REDRAW;
	case 'n':
		source_find(t, true);
		return H_REDRAW;
	default:
		return 0;
	}
}
