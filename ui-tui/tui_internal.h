/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tui_internal.h - what the files of the terminal UI share: the UI state
 * (struct tui), views, key names, handler flags, and the functions one
 * file calls in another. Private to ui-tui/; the public API is tui.h.
 */
#ifndef LP_UI_TUI_INTERNAL_H
#define LP_UI_TUI_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "ui-tui/draw.h"
#include "ui-tui/model.h"
#include "ui-tui/prompt.h"
#include "user/util/util.h"

struct daemon;
struct traces;

/* Keys without a curses name. */
enum tui_key {
	TK_CTRL_A = 'A' & 0x1f,
	TK_CTRL_E = 'E' & 0x1f,
	TK_CTRL_L = 'L' & 0x1f,
	TK_CTRL_U = 'U' & 0x1f,
	TK_CTRL_W = 'W' & 0x1f,
	TK_TAB = '\t',
	TK_LF = '\n',
	TK_CR = '\r',
	TK_ESC = 27,
	TK_DEL = 127,
	TK_BS = 8,
};

#define MAX_ZOOM 64
/* appended to the name of a function inlined into its caller, in every view */
#define TUI_INLINED_MARK "[inlined]"
#define NS_PER_MS	 1000000ULL
#define NS_PER_SEC	 1000000000ULL

enum view {
	VIEW_TOP,
	VIEW_TREE,
	VIEW_LATENCY,
	VIEW_SPLIT,
	VIEW_SOURCE,
	VIEW_CAUSAL,
	VIEW_NR,
};

enum split_mode {
	SPLIT_RANKS,
	SPLIT_DIFF,
	SPLIT_SLOW,
	SPLIT_FAST,
	SPLIT_MODE_NR,
};

enum sort_key {
	SORT_SELF,
	SORT_CUM,
	SORT_NAME,
	SORT_NR,
};

/* What a key handler asks of the loop (htop's HandlerResult). */
enum {
	H_HANDLED = 1 << 0,
	H_REDRAW = 1 << 1,
	H_REBUILD = 1 << 2,  /* the model must be rebuilt from the daemon */
	H_RELAYOUT = 1 << 3, /* visible rows changed (expand, search, sort) */
	H_QUIT = 1 << 4,
};

struct tui {
	struct daemon *d;
	volatile sig_atomic_t *stop;
	struct model m;
	enum view view;
	bool window; /* window counts (true) or the whole run */
	bool show_offcpu;
	bool help;
	bool quit;

	/* Top */
	enum sort_key sort;
	uint32_t *top_rows; /* indices into m.funcs, filtered and sorted */
	size_t n_top_rows;
	int top_sel, top_scroll;

	/* Tree */
	struct pathset expand;
	uint64_t zoom[MAX_ZOOM];
	int n_zoom;
	uint32_t *tree_rows;
	size_t n_tree_rows, cap_tree_rows;
	int tree_sel, tree_scroll;
	uint64_t tree_sel_path;
	bool icicle;	   /* Tree drawn as an icicle graph instead of a list */
	uint64_t ice_path; /* the icicle's selected frame */

	/* Latency and Split */
	int lat_sel;
	enum split_mode split_mode;
	int split_scroll;
	uint32_t *diff_rows;
	size_t n_diff_rows, cap_diff_rows;

	char search[LINE_MAX_LEN];
	struct prompt cmd, find;

	char msg[512];
	bool msg_err;
	uint64_t msg_ns;

	/* status figures */
	uint64_t last_tick_seen, prev_samples, prev_rate_ns;
	double samples_per_s;

	/* self-measurement, shown in the help screen */
	uint64_t key_ns, key_cost_ns, max_key_cost_ns, draw_cost_ns;
	uint64_t last_key_ns;
	bool rebuild_due; /* a tick passed while the user was typing */

	struct src_view *src;	    /* Source view state (view_source.c), made on first use */
	struct causal_view *causal; /* Causal view state (view_causal.c), made on first use */

	int err_pipe, saved_stderr;
	char err_buf[1024];
	size_t err_len;
};

static inline double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

static inline bool name_matches(const char *name, const char *needle)
{
	return needle[0] && strcasestr(name, needle);
}

/* tui.c */
void set_msg(struct tui *t, bool err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int relayout(struct tui *t);
void rebuild(struct tui *t);
bool move_key(int ch, int *sel, int n);
int offer(struct tui *t, const char *cmd, const char *suffix);
const char *selected_function(struct tui *t);

/* screen.c */
void draw(struct tui *t);

/* commands.c */
int set_paused(struct tui *t, bool paused);
int run_command(struct tui *t, char *line);

/* view_top.c */
int top_rows(const struct funcs *f, const char *filter, enum sort_key key, uint32_t **rows,
	     size_t *n);
void draw_top_table(struct tui *t, const struct funcs *f, const uint32_t *rows, size_t n, int y0,
		    int h, int *sel, int *scroll, bool cursor, attr_t hot);
void draw_top(struct tui *t, int y0, int h);
int top_key(struct tui *t, int ch);

/* view_tree.c */
int tree_layout(struct tui *t);
uint32_t tree_cursor(struct tui *t);
void tree_select_match(struct tui *t, bool next);
void draw_tree(struct tui *t, int y0, int h);
void draw_icicle(struct tui *t, int y0, int h);
int tree_key(struct tui *t, int ch);

/* view_latency.c */
void draw_latency(struct tui *t, int y0, int h);
int latency_key(struct tui *t, int ch);

/* view_source.c */
int source_open(struct tui *t);
void source_free(struct tui *t);
void source_find(struct tui *t, bool next);
void draw_source(struct tui *t, int y0, int h);
int source_key(struct tui *t, int ch);

/* view_causal.c */
int tui_causal_command(struct tui *t, char *arg);
void causal_free(struct tui *t);
void draw_causal(struct tui *t, int y0, int h);
int causal_key(struct tui *t, int ch);

/* view_split.c */
int diff_layout(struct tui *t);
void draw_split(struct tui *t, int y0, int h);
int split_key(struct tui *t, int ch);

/* model_tree.c, for model.c */
uint64_t model_hash_str(uint64_t h, const char *s);
uint64_t model_path_of(uint64_t parent_path, uint64_t name_hash);
uint64_t model_sample_value(const struct profile_sample *s, bool weight);
int tree_add_profile(struct tree *tr, struct profile *p, int cls, bool weight);
const char *model_frame_label(struct profile *p, size_t i);
void tree_free(struct tree *tr);
void tree_reset(struct tree *tr);
int tree_sort(struct tree *tr);

/* tui_term.c: curses on, stderr to the message line (0 or -ENOTTY) */
int tui_term_start(struct tui *t);
/* tui_term.c: show what was printed to stderr; true if anything was */
bool tui_term_drain_stderr(struct tui *t);
/* tui_term.c: the terminal as it was */
void tui_term_end(void);

#endif
