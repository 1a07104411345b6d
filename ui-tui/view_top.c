// SPDX-License-Identifier: GPL-2.0
/*
 * view_top.c - the Top view: the flat table of functions by self or
 * cumulative share, its rows, drawing and keys.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curses.h>

#include "ui-tui/tui_internal.h"

struct top_sort {
	const struct funcs *f;
	enum sort_key key;
};

static int cmp_top(const void *a, const void *b, void *arg)
{
	const struct top_sort *ts = arg;
	const struct func_row *x = &ts->f->r[*(const uint32_t *)a];
	const struct func_row *y = &ts->f->r[*(const uint32_t *)b];

	switch (ts->key) {
	case SORT_SELF:
		if (x->self != y->self)
			return x->self < y->self ? 1 : -1;
		break;
	case SORT_CUM:
		if (x->cum != y->cum)
			return x->cum < y->cum ? 1 : -1;
		break;
	default:
		break;
	}
	return strcmp(x->name, y->name);
}

/**
 * top_rows - fill @rows with the functions of @f matching @filter, sorted by @key
 * @f: the function table
 * @filter: a search, or "" for all
 * @key: the sort order
 * @rows: indices into @f, reallocated; the caller frees it
 * @n: set to the rows filled
 *
 * Return: 0, or -ENOMEM (*@rows and *@n unchanged).
 */
int top_rows(const struct funcs *f, const char *filter, enum sort_key key, uint32_t **rows,
	     size_t *n)
{
	uint32_t *r = realloc(*rows, (f->len ? f->len : 1) * sizeof(*r));
	struct top_sort ts = {.f = f, .key = key};
	size_t k = 0;

	if (!r)
		return -ENOMEM;
	*rows = r;
	for (size_t i = 0; i < f->len; i++)
		if (!filter[0] || name_matches(f->r[i].name, filter))
			r[k++] = (uint32_t)i;
	qsort_r(r, k, sizeof(*r), cmp_top, &ts);
	*n = k;
	return 0;
}

/**
 * draw_top_table - draw a table of functions with its header
 * @t: the UI state
 * @f: the function table
 * @rows: the rows to show, indices into @f
 * @n: rows in @rows
 * @y0: first screen row
 * @h: screen rows
 * @sel: the selected row
 * @scroll: the first row shown
 * @cursor: whether to highlight *@sel
 * @hot: attribute of functions with a high self share
 *
 * Shared by Top and the slow and fast calls of Split.
 */
void draw_top_table(struct tui *t, const struct funcs *f, const uint32_t *rows, size_t n, int y0,
		    int h, int *sel, int *scroll, bool cursor, attr_t hot)
{
	static const char *const cols[] = {"  SELF%", "  CUM%", "FUNCTION"};
	int x = 0;

	fill_row(y0, 0, attrs[C_HEADER]);
	for (int c = 0; c < 3; c++) {
		attr_t a = attrs[C_HEADER] | (c == (int)t->sort ? A_BOLD | A_UNDERLINE : 0);

		x += putf(y0, x, COLS - x, a, c < 2 ? "%7s %9s " : "%s", cols[c],
			  c < 2 ? (use_weight(t) ? "TIME" : "SAMPLES") : "");
	}
	h--;
	clamp_scroll(sel, scroll, (int)n, h);
	for (int r = 0; r < h && *scroll + r < (int)n; r++) {
		const struct func_row *fr = &f->r[rows[*scroll + r]];
		bool is_sel = cursor && *scroll + r == *sel;
		attr_t a = is_sel ? attrs[C_SELECT] : attrs[C_NORMAL];
		char self[16], cum[16];
		int y = y0 + 1 + r;

		if (use_weight(t)) {
			fmt_ns(self, sizeof(self), fr->self);
			fmt_ns(cum, sizeof(cum), fr->cum);
		} else {
			snprintf(self, sizeof(self), "%" PRIu64, fr->self);
			snprintf(cum, sizeof(cum), "%" PRIu64, fr->cum);
		}
		if (is_sel)
			fill_row(y, 0, a);
		x = putf(y, 0, COLS, a | (!is_sel && share(fr->self, f->total) >= 0.1 ? hot : 0),
			 "%6.2f%% %9s ", 100 * share(fr->self, f->total), self);
		x += putf(y, x, COLS - x, a, "%6.2f%% %9s ", 100 * share(fr->cum, f->total), cum);
		put(y, x, COLS - x, t->search[0] && !is_sel ? attrs[C_MATCH] : a, fr->name);
	}
	if (!n)
		put(y0 + 1, 2, COLS - 2, attrs[C_INFO],
		    t->search[0] ? "no function matches the search" : "no samples yet");
}

/**
 * draw_top - draw the Top view
 * @t: the UI state
 * @y0: first screen row
 * @h: screen rows
 */
void draw_top(struct tui *t, int y0, int h)
{
	draw_top_table(t, &t->m.funcs, t->top_rows, t->n_top_rows, y0, h, &t->top_sel,
		       &t->top_scroll, true, attrs[C_HOT]);
}

/**
 * top_key - handle a key of the Top view
 * @t: the UI state
 * @ch: the key
 *
 * Return: H_* flags, or 0 if the key is not the view's.
 */
int top_key(struct tui *t, int ch)
{
	if (move_key(ch, &t->top_sel, (int)t->n_top_rows))
		return H_REDRAW;
	switch (ch) {
	case 's':
		t->sort = (t->sort + 1) % SORT_NR;
		return H_RELAYOUT | H_REDRAW;
	case TK_LF:
	case TK_CR:
	case KEY_ENTER: {
		const char *fn;

		if (!t->n_top_rows)
			return H_REDRAW;
		fn = t->m.funcs.r[t->top_rows[t->top_sel]].name;
		snprintf(t->search, sizeof(t->search), "%s", fn);
		prompt_set(&t->find, fn);
		t->view = VIEW_TREE;
		tree_layout(t);
		tree_select_match(t, false);
		return H_RELAYOUT | H_REDRAW;
	}
	default:
		return 0;
	}
}
