// SPDX-License-Identifier: GPL-2.0
/*
 * screen.c - one frame of the UI: the status line, the view tabs, the
 * current view, the message line, the help bar or prompt, and the help
 * screen, sent to the terminal in one update.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <curses.h>

#include "ui-tui/tui_internal.h"
#include "user/session/daemon.h"
#include "user/profile/stack_store.h"

#define MSG_SHOW_NS (8 * 1000000000ULL)

static const char *const view_names[VIEW_NR] = {"Top",   "Tree",   "Latency",
							  "Split", "Source", "Causal"};

static void draw_status(struct tui *t)
{
	struct daemon *d = t->d;
	char target[128], buf[512];
	const char *state = d->paused ? " PAUSED " : " LIVE ";
	int w = (int)strlen(state);

	if (d->core.opts->all)
		snprintf(target, sizeof(target), "all processes");
	else if (d->core.n_procs)
		snprintf(target, sizeof(target), "%s (pid %d)%s", d->core.procs[0].name, d->core.procs[0].pid,
			 d->core.n_procs > 1 ? " +more" : "");
	else
		snprintf(target, sizeof(target), "-");
	snprintf(buf, sizeof(buf),
		 " liveprof  %s  %u Hz  %.0f samples/s  lost %" PRIu64 "  %s %ds%s", target,
		 d->freq, t->samples_per_s, d->counters[LP_CNT_LOST],
		 t->window ? "window" : "whole run, window", d->n_slots,
		 use_weight(t) && !t->show_offcpu ? "  off-cpu hidden" : "");
	fill_row(0, 0, attrs[C_STATUS]);
	/* Live or paused is what one glances at: keep it on screen, right. */
	put(0, 0, COLS - w - 1, attrs[C_STATUS], buf);
	put(0, COLS - w, w, (d->paused ? attrs[C_ERROR] : attrs[C_STATUS]) | A_BOLD, state);
}

static void draw_tabs(struct tui *t, int y)
{
	int x = 0;

	fill_row(y, 0, attrs[C_NORMAL]);
	for (int v = 0; v < VIEW_NR && x < COLS; v++) {
		char buf[32];

		snprintf(buf, sizeof(buf), " %d %s ", v + 1, view_names[v]);
		x += put(y, x, COLS - x, v == (int)t->view ? attrs[C_SELECT] : attrs[C_HEADER],
			 buf);
		x += put(y, x, COLS - x, attrs[C_NORMAL], " ");
	}
}

static const char *help_bar(const struct tui *t)
{
	/* At most 80 columns: the bar must fit the smallest terminal. */
	switch (t->view) {
	case VIEW_TOP:
		return "?:help 1-4:views s:sort /:filter Enter:tree t:trace S:split p:pause :cmd "
		       "q:quit";
	case VIEW_TREE:
		return "?:help Enter:zoom Bksp:back Space:fold /:search n:next t:trace S:split "
		       ":cmd";
	case VIEW_LATENCY:
		return "?:help Up/Down:select S:split u:untrace w:window :trace FUNC :cmd q:quit";
	case VIEW_SPLIT:
		return "?:help v:ranks/diff/slow/fast Up/Down:scroll w:window :split FUNC pNN "
		       "q:quit";
	case VIEW_SOURCE:
		return "?:help Enter:probe line w:split on line d:disasm /:search n:next q:quit";
	case VIEW_CAUSAL:
		return "?:help :causal SPEC [F1,F2] runs experiments Esc:stop them Up/Down:scroll";
	default:
		return "";
	}
}

static void draw_help(struct tui *t)
{
	static const char *const lines[] = {
		"liveprof keys",
		"",
		"1 2 3 4 / Tab   Top, Tree, Latency, Split views",
		"5               Source of the selected function: Enter probes a line, w splits",
		"                on the calls that ran it, d disassembly (L loop B branch I inline)",
		"6               Causal: :causal [-l] SPEC[@pNN] [F1,..] [-d SEC] runs experiments",
		"                on the live process (Esc stops them), ranked by impact",
		"Up Down PgUp PgDn Home End   move",
		"/ n Esc         search (Top filters, Tree highlights), next, clear",
		"s               Top: sort by self, cum, name",
		"Enter           Top: show in Tree;  Tree: zoom in, then offer to trace",
		"Backspace       Tree: zoom out",
		"Space Right Left  Tree: expand/collapse (+/- too);  i: icicle graph",
		"t / S           trace / split the selected function (asks first)",
		"u               Latency: untrace the selected trace",
		"v               Split: ranked frames, diff tree, slow, fast",
		"w               window / whole run      p  pause / resume",
		"Ctrl-L          redraw                   q  quit",
		"",
		":trace SPEC   :untrace SPEC   :split FUNC [pNN]   :line FILE:LINE",
		":freq HZ   :window SEC   :offcpu on|off   :pause   :resume",
		":save FILE (.folded/.svg/.pb.gz)  :quit   Tab completes, Up/Down history",
		"",
		"",
		"any key closes this help",
	};
	int n = (int)(sizeof(lines) / sizeof(lines[0]));
	int w = 82 < COLS - 2 ? 82 : COLS - 2, h = n + 2 < LINES - 2 ? n + 2 : LINES - 2;
	int y0 = (LINES - h) / 2, x0 = (COLS - w) / 2;
	char stats[128];

	if (w < 10 || h < 3)
		return;
	snprintf(stats, sizeof(stats),
		 "key to screen %.1f ms (max %.1f), draw %.1f ms, build %.0f ms, %zu stacks",
		 t->key_cost_ns / 1e6, t->max_key_cost_ns / 1e6, t->draw_cost_ns / 1e6,
		 t->m.build_cost_ns / 1e6, stack_store__count(t->d->stacks));
	for (int y = y0; y < y0 + h; y++)
		mvhline(y, x0, ' ', w);
	attron(attrs[C_HEADER]);
	mvhline(y0, x0, ACS_HLINE, w);
	mvhline(y0 + h - 1, x0, ACS_HLINE, w);
	mvvline(y0, x0, ACS_VLINE, h);
	mvvline(y0, x0 + w - 1, ACS_VLINE, h);
	mvaddch(y0, x0, ACS_ULCORNER);
	mvaddch(y0, x0 + w - 1, ACS_URCORNER);
	mvaddch(y0 + h - 1, x0, ACS_LLCORNER);
	mvaddch(y0 + h - 1, x0 + w - 1, ACS_LRCORNER);
	attroff(attrs[C_HEADER]);
	for (int i = 0; i < n && i < h - 2; i++)
		put(y0 + 1 + i, x0 + 2, w - 4, i == 0 ? attrs[C_KEY] : attrs[C_NORMAL],
		    i == n - 2 ? stats : lines[i]);
}

/**
 * draw - draw the whole screen and send the difference to the terminal
 * @t: the UI state
 *
 * Also measures the draw and, after a key, the time from the key to
 * the screen updated.
 */
void draw(struct tui *t)
{
	int y0 = content_top(), h = content_rows();
	uint64_t t0 = lp_now_ns(), now;

	/* Another front end (the web page) may have dropped or replaced the
	 * split since the model was built: its results point into it. */
	if (t->m.has_split && t->m.split_gen != t->d->split_gen)
		model_drop_split(&t->m);
	erase();
	if (LINES < 5 || COLS < 20) {
		put(0, 0, COLS, attrs[C_NORMAL], "terminal too small");
		goto out;
	}
	draw_status(t);
	draw_tabs(t, 1);
	switch (t->view) {
	case VIEW_TOP:
		draw_top(t, y0, h);
		break;
	case VIEW_TREE:
		if (t->icicle)
			draw_icicle(t, y0, h);
		else
			draw_tree(t, y0, h);
		break;
	case VIEW_LATENCY:
		draw_latency(t, y0, h);
		break;
	case VIEW_SPLIT:
		draw_split(t, y0, h);
		break;
	case VIEW_SOURCE:
		draw_source(t, y0, h);
		break;
	case VIEW_CAUSAL:
		draw_causal(t, y0, h);
		break;
	default:
		break;
	}
	if (t->msg[0] && lp_now_ns() - t->msg_ns < MSG_SHOW_NS)
		put(LINES - 2, 0, COLS, t->msg_err ? attrs[C_ERROR] : attrs[C_INFO], t->msg);
	if (t->help)
		draw_help(t);
	if (t->cmd.active) {
		draw_prompt(&t->cmd);
	} else if (t->find.active) {
		draw_prompt(&t->find);
	} else {
		fill_row(LINES - 1, 0, attrs[C_KEY]);
		put(LINES - 1, 0, COLS, attrs[C_KEY], help_bar(t));
	}
out:
	curs_set(t->cmd.active || t->find.active ? 1 : 0);
	wnoutrefresh(stdscr);
	doupdate();
	now = lp_now_ns();
	t->draw_cost_ns = now - t0;
	/* What the user feels: from reading the key to the screen updated. */
	if (t->key_ns) {
		t->key_cost_ns = now - t->key_ns;
		if (t->key_cost_ns > t->max_key_cost_ns)
			t->max_key_cost_ns = t->key_cost_ns;
		t->key_ns = 0;
	}
}
