// SPDX-License-Identifier: GPL-2.0
/*
 * view_split.c - the Split view: slow against fast calls of a function as
 * ranked frames, a diff tree, or the flat tables of either class.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <curses.h>

#include "ui-tui/tui_internal.h"
#include "user/session/daemon.h"
#include "user/session/split.h"
#include "user/session/split_rank.h"

#define DIFF_MIN_SHARE 0.01 /* diff tree rows below this share in both classes are hidden */

static const char *const split_mode_names[SPLIT_MODE_NR] = {"ranked frames", "diff tree",
							    "slow calls", "fast calls"};

/**
 * diff_layout - the visible rows of the diff tree: the nodes above
DIFF_MIN_SHARE in either class
 * @t: the UI state
 *
 * Return: 0, or -ENOMEM (the rows are then cut short).
 */
int diff_layout(struct tui *t)
{
	struct tree *tr = &t->m.dtree;
	int err = 0;

	t->n_diff_rows = 0;
	if (!tr->len)
		return 0;
	for (uint32_t id = tr->n[0].first_child; id != NO_NODE && !err;) {
		const struct tnode *nd = &tr->n[id];
		bool deeper = nd->first_child != NO_NODE;

		err = push_row(&t->diff_rows, &t->n_diff_rows, &t->cap_diff_rows, id);
		/* Children are sorted, so the first cold child ends the useful part. */
		if (deeper) {
			const struct tnode *c = &tr->n[nd->first_child];

			deeper = share(c->total[0], tr->grand[0]) >= DIFF_MIN_SHARE ||
				 share(c->total[1], tr->grand[1]) >= DIFF_MIN_SHARE;
		}
		if (deeper) {
			id = nd->first_child;
			continue;
		}
		for (;;) {
			uint32_t sib = tr->n[id].next_sibling;

			if (sib != NO_NODE &&
			    (share(tr->n[sib].total[0], tr->grand[0]) >= DIFF_MIN_SHARE ||
			     share(tr->n[sib].total[1], tr->grand[1]) >= DIFF_MIN_SHARE)) {
				id = sib;
				break;
			}
			id = tr->n[id].parent;
			if (id == 0 || id == NO_NODE) {
				id = NO_NODE;
				break;
			}
		}
	}
	return err;
}

static void draw_split_ranks(struct tui *t, int y0, int h)
{
	const struct split_result *r = &t->m.sr;
	uint64_t need = r->n_ranks ? split_rank__needed_total(r) : 0;

	fill_row(y0, 0, attrs[C_HEADER]);
	/* the verdict, as the CLI prints it: a frame starred, none, or too few samples */
	if (need)
		putf(y0, 0, COLS, attrs[C_HEADER],
		     "   SLOW%%   FAST%%   DELTA       Z  FRAME (red: more in slow calls)  "
		     "inconclusive: needs about %llu samples",
		     (unsigned long long)need);
	else
		putf(y0, 0, COLS, attrs[C_HEADER],
		     "   SLOW%%   FAST%%   DELTA       Z  FRAME (red: more in slow calls)  %s",
		     r->n_ranks ? split_rank__verdict(r) : "");
	h--;
	clamp_scroll(&t->split_scroll, &t->split_scroll, r->n_ranks, h);
	if (!r->n_ranks)
		put(y0 + 1, 2, COLS - 2, attrs[C_INFO],
		    "no classified calls yet: a sampled call must end, slow and fast");
	for (int i = 0; i < h && t->split_scroll + i < r->n_ranks; i++) {
		const struct split_frame_rank *fr = &r->ranks[t->split_scroll + i];
		attr_t a = fr->delta > 0   ? attrs[C_HOT]
			   : fr->delta < 0 ? attrs[C_COLD]
					   : attrs[C_NORMAL];

		if (fr->significant)
			a |= A_BOLD;
		putf(y0 + 1 + i, 0, COLS, a, "%7.1f%% %6.1f%% %+6.1f%% %7.1f%s %s",
		     100 * fr->slow_share, 100 * fr->fast_share, 100 * fr->delta, fr->z,
		     fr->significant ? "*" : " ", fr->frame);
	}
}

static void draw_split_diff(struct tui *t, int y0, int h)
{
	struct tree *tr = &t->m.dtree;

	fill_row(y0, 0, attrs[C_HEADER]);
	put(y0, 0, COLS, attrs[C_HEADER],
	    "   SLOW%   FAST%   DELTA  CALL TREE (red: more in slow calls)");
	h--;
	clamp_scroll(&t->split_scroll, &t->split_scroll, (int)t->n_diff_rows, h);
	for (int i = 0; i < h && t->split_scroll + i < (int)t->n_diff_rows; i++) {
		const struct tnode *nd = &tr->n[t->diff_rows[t->split_scroll + i]];
		double s = share(nd->total[0], tr->grand[0]), f = share(nd->total[1], tr->grand[1]);
		double delta = s - f;
		/* One point either way is noise at these sample counts. */
		attr_t a = delta > 0.01	   ? attrs[C_HOT]
			   : delta < -0.01 ? attrs[C_COLD]
					   : attrs[C_NORMAL];
		int indent = 2 * (nd->depth - 1);

		if (indent > COLS / 3)
			indent = COLS / 3;
		putf(y0 + 1 + i, 0, COLS, a, "%7.1f%% %6.1f%% %+6.1f%%  %*s%s", 100 * s, 100 * f,
		     100 * delta, indent, "", nd->name);
	}
}

/**
 * draw_split - draw the Split view in its current mode
 * @t: the UI state
 * @y0: first screen row
 * @h: screen rows
 */
void draw_split(struct tui *t, int y0, int h)
{
	const struct split_result *r = &t->m.sr;
	char th[16];

	if (!t->d->split || !t->m.has_split) {
		fill_row(y0, 0, attrs[C_HEADER]);
		put(y0 + 1, 2, COLS - 2, attrs[C_INFO],
		    t->d->split ? "computing the split..." : "no split: type :split FUNC [p95]");
		return;
	}
	fmt_ns(th, sizeof(th), r->threshold_ns);
	fill_row(y0, 0, attrs[C_INFO]);
	putf(y0, 0, COLS, attrs[C_INFO],
	     " [%s] %s at p%g: slow >= %s | calls %" PRIu64 " slow, %" PRIu64
	     " fast | sampled %" PRIu64 "/%" PRIu64 " | samples %" PRIu64 "/%" PRIu64,
	     split_mode_names[t->split_mode], r->function, r->percentile, th, r->all_slow_calls,
	     r->all_fast_calls, r->slow_calls, r->fast_calls, r->slow_samples, r->fast_samples);
	y0++;
	h--;
	switch (t->split_mode) {
	case SPLIT_RANKS:
		draw_split_ranks(t, y0, h);
		break;
	case SPLIT_DIFF:
		draw_split_diff(t, y0, h);
		break;
	case SPLIT_SLOW:
	case SPLIT_FAST: {
		const struct funcs *f = t->split_mode == SPLIT_SLOW ? &t->m.sfuncs : &t->m.ffuncs;
		uint32_t *rows = NULL;
		size_t n = 0;

		if (top_rows(f, t->search, t->sort, &rows, &n))
			return;
		draw_top_table(t, f, rows, n, y0, h, &t->split_scroll, &t->split_scroll, false,
			       t->split_mode == SPLIT_SLOW ? attrs[C_HOT] : attrs[C_COLD]);
		free(rows);
		break;
	}
	default:
		break;
	}
}

/**
 * split_key - handle a key of the Split view
 * @t: the UI state
 * @ch: the key
 *
 * Return: H_* flags, or 0 if the key is not the view's.
 */
int split_key(struct tui *t, int ch)
{
	if (move_key(ch, &t->split_scroll, 1 << 20))
		return H_REDRAW;
	if (ch == 'v') {
		t->split_mode = (t->split_mode + 1) % SPLIT_MODE_NR;
		t->split_scroll = 0;
		return H_REDRAW;
	}
	return 0;
}
