// SPDX-License-Identifier: GPL-2.0
/*
 * view_tree.c - the Tree view: the call tree as an indented list or an
 * icicle graph, with zoom, fold and search; its rows, drawing and keys.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <curses.h>

#include "ui-tui/tui_internal.h"

#define EXPAND_SHARE 0.05 /* tree nodes above this share start expanded */

static uint32_t tree_view_root(struct tui *t)
{
	if (!t->m.tree.len)
		return NO_NODE;
	if (!t->n_zoom)
		return 0;
	return tree_find(&t->m.tree, t->zoom[t->n_zoom - 1]);
}

static bool tree_expanded(struct tui *t, uint32_t id, uint64_t root_total)
{
	const struct tnode *nd = &t->m.tree.n[id];
	int st = pathset_get(&t->expand, nd->path);

	if (st)
		return st > 0;
	if (t->search[0] && nd->sub_match)
		return true;
	return share(nd->total[0], root_total) >= EXPAND_SHARE;
}

/**
 * tree_layout - the visible rows: a depth-first walk of the expanded nodes
under the view root
 * @t: the UI state
 *
 * Keeps the cursor on the same frame across rebuilds.
 *
 * Return: 0, or -ENOMEM (the rows are then cut short).
 */
int tree_layout(struct tui *t)
{
	struct tree *tr = &t->m.tree;
	uint32_t root = tree_view_root(t), id;
	uint64_t root_total;
	int err = 0;

	t->n_tree_rows = 0;
	if (root == NO_NODE)
		return 0;
	tree_mark_search(tr, t->search);
	root_total = tr->n[root].total[0];
	/* Iterative walk: deep recursive programs make deep trees. */
	id = root;
	while (id != NO_NODE && !err) {
		const struct tnode *nd = &tr->n[id];

		/* The virtual "[all]" root is not a frame: show its children. */
		if (!(id == 0 && root == 0))
			err = push_row(&t->tree_rows, &t->n_tree_rows, &t->cap_tree_rows, id);
		if (nd->first_child != NO_NODE &&
		    ((id == 0 && root == 0) || tree_expanded(t, id, root_total))) {
			id = nd->first_child;
			continue;
		}
		while (id != root && tr->n[id].next_sibling == NO_NODE)
			id = tr->n[id].parent;
		id = id == root ? NO_NODE : tr->n[id].next_sibling;
	}
	/* Keep the cursor on the same frame across rebuilds. */
	for (size_t i = 0; i < t->n_tree_rows; i++) {
		if (tr->n[t->tree_rows[i]].path == t->tree_sel_path) {
			t->tree_sel = (int)i;
			return err;
		}
	}
	if (t->tree_sel >= (int)t->n_tree_rows)
		t->tree_sel = t->n_tree_rows ? (int)t->n_tree_rows - 1 : 0;
	if (t->n_tree_rows)
		t->tree_sel_path = tr->n[t->tree_rows[t->tree_sel]].path;
	return err;
}

/**
 * tree_cursor - the frame under the cursor in the Tree view, either drawing
 * @t: the UI state
 *
 * Return: a node of t->m.tree, or NO_NODE if none.
 */
uint32_t tree_cursor(struct tui *t)
{
	uint32_t root = tree_view_root(t), id;

	if (root == NO_NODE)
		return NO_NODE;
	if (t->icicle) {
		id = tree_find(&t->m.tree, t->ice_path);
		/* The virtual root is no frame: start on the first real one. */
		if (id == NO_NODE || id == 0)
			id = root == 0 ? t->m.tree.n[0].first_child : root;
		return id;
	}
	return t->n_tree_rows ? t->tree_rows[t->tree_sel] : NO_NODE;
}

/* One box of the icicle and, below it, its children, left to right hottest first. */
static void ice_node(struct tui *t, uint32_t id, double x, double w, int y, int y_end,
		     uint32_t cursor)
{
	const struct tnode *nd = &t->m.tree.n[id];
	int x0 = (int)(x + 0.5), x1 = (int)(x + w + 0.5);
	double cx = x;
	attr_t a;

	if (y >= y_end || x1 - x0 < 1)
		return;
	if (id == cursor)
		a = attrs[C_SELECT] | A_BOLD;
	else if (nd->match)
		a = attrs[C_MATCH];
	else
		a = attrs[(nd->depth & 1) ? C_ICE1 : C_ICE2];
	attron(a);
	mvhline(y, x0, ' ', x1 - x0);
	attroff(a);
	/* The last cell stays blank so that neighbours never merge, in any colour. */
	put(y, x0, x1 - x0 > 1 ? x1 - x0 - 1 : 1, a, nd->name);
	for (uint32_t c = nd->first_child; c != NO_NODE; c = t->m.tree.n[c].next_sibling) {
		double cw = nd->total[0]
				    ? w * (double)t->m.tree.n[c].total[0] / (double)nd->total[0]
				    : 0;

		/* Children are sorted: once one is too narrow, so are the rest. */
		if (cw < 1.0)
			break;
		ice_node(t, c, cx, cw, y + 1, y_end, cursor);
		cx += cw;
	}
}

/**
 * draw_icicle - draw the Tree view as an icicle graph
 * @t: the UI state
 * @y0: first screen row
 * @h: screen rows
 */
void draw_icicle(struct tui *t, int y0, int h)
{
	struct tree *tr = &t->m.tree;
	uint32_t root = tree_view_root(t), cur = tree_cursor(t);
	const struct tnode *c;

	fill_row(y0, 0, attrs[C_HEADER]);
	if (root == NO_NODE || cur == NO_NODE) {
		put(y0 + 1, 2, COLS - 2, attrs[C_INFO], "no samples yet");
		return;
	}
	c = &tr->n[cur];
	putf(y0, 0, COLS, attrs[C_HEADER],
	     " ICICLE %s%s | %s: total %.2f%% self %.2f%% | arrows move, i: list",
	     t->n_zoom ? "zoomed: " : "", t->n_zoom ? tr->n[root].name : "", c->name,
	     100 * share(c->total[0], tr->n[root].total[0]),
	     100 * share(c->self[0], tr->n[root].total[0]));
	if (root == 0) {
		double x = 0;

		for (uint32_t k = tr->n[0].first_child; k != NO_NODE; k = tr->n[k].next_sibling) {
			double w = COLS * share(tr->n[k].total[0], tr->n[0].total[0]);

			ice_node(t, k, x, w, y0 + 1, y0 + h, cur);
			x += w;
		}
	} else {
		ice_node(t, root, 0, COLS, y0 + 1, y0 + h, cur);
	}
}

/**
 * draw_tree - draw the Tree view as an indented list
 * @t: the UI state
 * @y0: first screen row
 * @h: screen rows
 */
void draw_tree(struct tui *t, int y0, int h)
{
	struct tree *tr = &t->m.tree;
	uint32_t root = tree_view_root(t);
	uint64_t root_total;
	int bar_w = COLS >= 100 ? 20 : 10, top_depth;

	fill_row(y0, 0, attrs[C_HEADER]);
	if (t->n_zoom && root != NO_NODE)
		putf(y0, 0, COLS, attrs[C_HEADER],
		     "  TOTAL%%  SELF%% %-*s zoomed: %s (%d level%s, Backspace: back)", bar_w, "",
		     tr->n[root].name, t->n_zoom, t->n_zoom > 1 ? "s" : "");
	else
		putf(y0, 0, COLS, attrs[C_HEADER], "  TOTAL%%  SELF%% %-*s CALL TREE", bar_w, "");
	h--;
	if (root == NO_NODE) {
		put(y0 + 1, 2, COLS - 2, attrs[C_INFO],
		    t->n_zoom ? "the zoomed frame has no samples now (Backspace: back)"
			      : "no samples yet");
		return;
	}
	root_total = tr->n[root].total[0];
	/* Process roots sit at depth 1 under the virtual root. */
	top_depth = root == 0 ? 1 : tr->n[root].depth;
	clamp_scroll(&t->tree_sel, &t->tree_scroll, (int)t->n_tree_rows, h);
	for (int r = 0; r < h && t->tree_scroll + r < (int)t->n_tree_rows; r++) {
		uint32_t id = t->tree_rows[t->tree_scroll + r];
		const struct tnode *nd = &tr->n[id];
		bool is_sel = t->tree_scroll + r == t->tree_sel;
		attr_t a = is_sel ? attrs[C_SELECT] : attrs[C_NORMAL];
		int y = y0 + 1 + r, x, indent;
		const char *mark;

		if (is_sel)
			fill_row(y, 0, a);
		x = putf(y, 0, COLS, a, "%7.2f%% %6.2f%% ", 100 * share(nd->total[0], root_total),
			 100 * share(nd->self[0], root_total));
		draw_bar(y, x, bar_w, share(nd->total[0], root_total), attrs[C_BAR]);
		x += bar_w + 1;
		/* Deep stacks would push names off screen: cap the indent. */
		indent = 2 * (nd->depth - top_depth);
		if (indent > COLS / 3)
			indent = COLS / 3;
		if (nd->first_child == NO_NODE)
			mark = "  ";
		else
			mark = tree_expanded(t, id, root_total) ? "- " : "+ ";
		x += putf(y, x, COLS - x, a, "%*s%s", indent, "", mark);
		/* Two colour pairs do not mix: a selected match is underlined. */
		put(y, x, COLS - x,
		    nd->match ? (is_sel ? a | A_UNDERLINE | A_BOLD : attrs[C_MATCH]) : a, nd->name);
	}
}

/**
 * tree_select_match - move the Tree cursor to a frame matching the search
 * @t: the UI state
 * @next: false: a fresh search, which prefers an exact name; true: the next match
 *
 * Says so on the message line when nothing matches.
 */
void tree_select_match(struct tui *t, bool next)
{
	int n = (int)t->n_tree_rows;

	/* A fresh search lands on the frame named exactly so, if shown. */
	for (int i = 0; !next && i < n; i++) {
		if (!strcmp(t->m.tree.n[t->tree_rows[i]].name, t->search)) {
			t->tree_sel = i;
			t->tree_sel_path = t->m.tree.n[t->tree_rows[i]].path;
			t->ice_path = t->tree_sel_path;
			return;
		}
	}
	for (int k = next ? 1 : 0; k <= n; k++) {
		int i = (t->tree_sel + k) % (n ? n : 1);

		if (n && t->m.tree.n[t->tree_rows[i]].match) {
			t->tree_sel = i;
			t->tree_sel_path = t->m.tree.n[t->tree_rows[i]].path;
			t->ice_path = t->tree_sel_path;
			return;
		}
	}
	if (t->search[0])
		set_msg(t, true, "'%s' not found in the tree", t->search);
}

static void tree_set_expand(struct tui *t, uint32_t id, bool on)
{
	if (pathset_set(&t->expand, t->m.tree.n[id].path, on ? 1 : -1))
		set_msg(t, true, "out of memory");
}

/* Arrows walk the icicle: up to the caller, down to the hottest callee, sideways. */
static bool icicle_move(struct tui *t, int ch)
{
	struct tree *tr = &t->m.tree;
	uint32_t root = tree_view_root(t), id = tree_cursor(t), to = NO_NODE;

	if (id == NO_NODE)
		return false;
	switch (ch) {
	case KEY_UP:
	case 'k':
		if (id != root && tr->n[id].parent != 0)
			to = tr->n[id].parent;
		break;
	case KEY_DOWN:
	case 'j':
		to = tr->n[id].first_child;
		break;
	case KEY_RIGHT:
	case 'l':
		to = tr->n[id].next_sibling;
		if (id == root)
			to = NO_NODE;
		break;
	case KEY_LEFT:
	case 'h':
		if (id == root || tr->n[id].parent == NO_NODE)
			break;
		for (uint32_t c = tr->n[tr->n[id].parent].first_child; c != id;
		     c = tr->n[c].next_sibling)
			to = c;
		break;
	default:
		return false;
	}
	if (to != NO_NODE)
		t->ice_path = tr->n[to].path;
	return true;
}

/**
 * tree_key - handle a key of the Tree view
 * @t: the UI state
 * @ch: the key
 *
 * Return: H_* flags, or 0 if the key is not the view's.
 */
int tree_key(struct tui *t, int ch)
{
	struct tree *tr = &t->m.tree;
	uint32_t id, root = tree_view_root(t);

	if (ch == 'i') {
		/* Carry the cursor across, so the frame one looked at stays selected. */
		if (t->icicle)
			t->tree_sel_path = t->ice_path;
		else if (tree_cursor(t) != NO_NODE)
			t->ice_path = tr->n[tree_cursor(t)].path;
		t->icicle = !t->icicle;
		return H_RELAYOUT | H_REDRAW;
	}
	if (t->icicle && icicle_move(t, ch))
		return H_REDRAW;
	if (move_key(ch, &t->tree_sel, (int)t->n_tree_rows)) {
		if (t->n_tree_rows)
			t->tree_sel_path = tr->n[t->tree_rows[t->tree_sel]].path;
		return H_REDRAW;
	}
	if (ch == KEY_BACKSPACE || ch == TK_DEL || ch == TK_BS) {
		if (!t->n_zoom) {
			set_msg(t, false, "already at the root");
			return H_REDRAW;
		}
		t->n_zoom--;
		return H_RELAYOUT | H_REDRAW;
	}
	if (ch == 'n') {
		tree_select_match(t, true);
		if (t->icicle && t->n_tree_rows)
			t->ice_path = t->tree_sel_path;
		return H_REDRAW;
	}
	id = tree_cursor(t);
	if (id == NO_NODE || root == NO_NODE)
		return 0;
	switch (ch) {
	case TK_LF:
	case TK_CR:
	case KEY_ENTER:
		/* Enter zooms; on the frame zoomed into, it offers to trace it. */
		if (id == root)
			return offer(t, "trace", "");
		if (t->n_zoom == MAX_ZOOM) {
			set_msg(t, true, "zoomed too deep");
			return H_REDRAW;
		}
		t->zoom[t->n_zoom++] = tr->n[id].path;
		set_msg(t, false,
			"zoomed into '%s': Enter again traces it, S splits it, Backspace goes back",
			tr->n[id].name);
		return H_RELAYOUT | H_REDRAW;
	case ' ':
		tree_set_expand(t, id, !tree_expanded(t, id, tr->n[root].total[0]));
		return H_RELAYOUT | H_REDRAW;
	case KEY_RIGHT:
	case '+':
	case 'l':
		tree_set_expand(t, id, true);
		return H_RELAYOUT | H_REDRAW;
	case KEY_LEFT:
	case '-':
	case 'h':
		/* On a collapsed node, Left goes to the parent (like a file manager). */
		if (tr->n[id].first_child != NO_NODE &&
		    tree_expanded(t, id, tr->n[root].total[0])) {
			tree_set_expand(t, id, false);
			return H_RELAYOUT | H_REDRAW;
		}
		if (id != root && tr->n[id].parent != NO_NODE && tr->n[id].parent != 0) {
			t->tree_sel_path = tr->n[tr->n[id].parent].path;
			return H_RELAYOUT | H_REDRAW;
		}
		return H_REDRAW;
	default:
		return 0;
	}
}
