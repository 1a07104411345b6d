// SPDX-License-Identifier: GPL-2.0
/*
 * tui.c - the interactive terminal UI: Top, Tree, Latency and Split views
 * over the daemon's live state, a status line, a help bar and a command
 * prompt that attaches and detaches probes while the target keeps running.
 *
 * One loop owns input, data refresh and redraw (htop's ScreenManager):
 *   - it waits on stdin for at most a few milliseconds, then drains the
 *     ring buffer without blocking, so events keep flowing while the user
 *     types and a key is handled as soon as it arrives;
 *   - the view model (call tree, flat table, split) is rebuilt at most
 *     once per daemon tick (one second) or when a command changes what is
 *     shown, never per key: keys only move over the model;
 *   - a frame is drawn with erase + wnoutrefresh + doupdate, which sends
 *     only the difference to the terminal (no flicker).
 *
 * Messages that user/ code prints to stderr would scribble over the
 * screen, so stderr is redirected to a pipe for the life of the UI and
 * its lines are shown on the message line.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <curses.h>

#include "ui-tui/tui.h"
#include "user/bpf_session.h"
#include "user/daemon.h"
#include "user/profile.h"
#include "user/report.h"
#include "user/split.h"
#include "user/stack_store.h"
#include "user/traces.h"

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

#define POLL_MS		  20 /* longest wait for a key before draining events */
#define ESC_DELAY_MS	  25 /* a lone Esc is told from an escape sequence this fast */
#define DEFAULT_SPLIT_PCT 95.0
#define EXPAND_SHARE	  0.05 /* tree nodes above this share start expanded */
#define DIFF_MIN_SHARE	  0.01 /* diff tree rows below this share in both classes are hidden */
#define MSG_SHOW_NS	  (8 * 1000000000ULL)
#define HISTORY_MAX	  64
#define LINE_MAX_LEN	  512
#define MAX_COMPLETIONS	  64
#define MAX_ZOOM	  64
#define HIST_MAX_ROWS	  24
#define NS_PER_MS	  1000000ULL
#define NS_PER_SEC	  1000000000ULL
#define EARLY_BUILD_NS	  (200 * NS_PER_MS)
#define KEY_IDLE_NS	  (300 * NS_PER_MS) /* typing pauses the once-a-second rebuild... */
#define MAX_DEFER_NS	  (3 * NS_PER_SEC)  /* ...for at most this long */

enum view {
	VIEW_TOP,
	VIEW_TREE,
	VIEW_LATENCY,
	VIEW_SPLIT,
	VIEW_NR,
};

static const char *const view_names[VIEW_NR] = {"Top", "Tree", "Latency", "Split"};

enum split_mode {
	SPLIT_RANKS,
	SPLIT_DIFF,
	SPLIT_SLOW,
	SPLIT_FAST,
	SPLIT_MODE_NR,
};

static const char *const split_mode_names[SPLIT_MODE_NR] = {"ranked frames", "diff tree",
							    "slow calls", "fast calls"};

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

enum colour {
	C_NORMAL,
	C_STATUS,
	C_HEADER,
	C_SELECT,
	C_HOT,
	C_COLD,
	C_MATCH,
	C_ERROR,
	C_INFO,
	C_BAR,
	C_KEY,
	C_THRESH,
	C_ICE1, /* icicle boxes, alternating warm colours */
	C_ICE2,
	C_NR,
};

static attr_t attrs[C_NR];

/* ---- the view model ----------------------------------------------------- */

#define NO_NODE UINT32_MAX

/* One call-tree node; [0] is the profile (or slow calls), [1] fast calls. */
struct tnode {
	const char *name;
	uint64_t path; /* hash of the names from the root: survives rebuilds */
	uint64_t total[2], self[2];
	uint32_t parent, first_child, next_sibling;
	uint16_t depth;
	bool match, sub_match;
};

/*
 * A hash slot holds the path itself, so that a lookup touches one cache
 * line and not the node: with 10^5 nodes, memory is what a rebuild costs.
 * Two different paths with one 64-bit hash are not worth a string compare
 * (odds about n^2 / 2^65).
 */
struct tslot {
	uint64_t path;
	uint32_t id1; /* node index + 1; 0: empty */
};

struct tree {
	struct tnode *n;
	size_t len, cap;
	struct tslot *ht; /* path -> node, open addressing */
	size_t ht_cap;
	uint64_t grand[2];
};

struct func_row {
	const char *name;
	uint64_t self, cum;
	uint64_t last; /* sample stamp: count a function once per stack */
};

struct funcs {
	struct func_row *r;
	size_t len, cap;
	uint32_t *ht;
	size_t ht_cap;
	uint64_t total;
};

struct model {
	struct profile *prof;
	struct tree tree;
	struct funcs funcs;
	/* the split, when there is one */
	bool has_split;
	struct split_result sr;
	struct profile *slow, *fast;
	struct tree dtree;
	struct funcs sfuncs, ffuncs;
	uint64_t built_ns, build_cost_ns;
	uint64_t built_samples; /* d->samples when built */
};

/* A tiny u64 -> i8 map for the expand/collapse state of tree paths. */
struct pathset {
	uint64_t *keys;
	int8_t *vals;
	size_t cap, len;
};

struct prompt {
	bool active;
	char lead; /* ':' or '/' */
	char buf[LINE_MAX_LEN];
	int len, cur;
	char *hist[HISTORY_MAX];
	int n_hist, hist_pos;
	char saved[LINE_MAX_LEN]; /* the line being typed while browsing history */
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

	int err_pipe, saved_stderr;
	char err_buf[1024];
	size_t err_len;
};

static struct tui *g_tui; /* for the atexit and crash guards */
static SCREEN *g_screen;
static bool g_curses_on;

/* ---- small helpers ----------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	/* FNV-1a, seeded with the parent's hash so paths hash as a chain. */
	h ^= 0xcbf29ce484222325ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h ? h : 1;
}

static void set_msg(struct tui *t, bool err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_msg(struct tui *t, bool err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->msg, sizeof(t->msg), fmt, ap);
	va_end(ap);
	t->msg_err = err;
	t->msg_ns = now_ns();
}

static void fmt_ns(char *buf, size_t len, uint64_t ns)
{
	if (ns < 10000)
		snprintf(buf, len, "%" PRIu64 "ns", ns);
	else if (ns < 10 * NS_PER_MS)
		snprintf(buf, len, "%.1fus", ns / 1e3);
	else if (ns < 10 * NS_PER_SEC)
		snprintf(buf, len, "%.1fms", ns / 1e6);
	else
		snprintf(buf, len, "%.1fs", ns / 1e9);
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

/* Draw @s at (@y, @x), clipped to @w columns; returns the columns used. */
static int put(int y, int x, int w, attr_t a, const char *s)
{
	int n;

	if (w <= 0 || y < 0 || y >= LINES || x >= COLS)
		return 0;
	if (x + w > COLS)
		w = COLS - x;
	n = (int)strnlen(s, (size_t)w);
	attron(a);
	mvaddnstr(y, x, s, n);
	attroff(a);
	return n;
}

static int putf(int y, int x, int w, attr_t a, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int putf(int y, int x, int w, attr_t a, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return put(y, x, w, a, buf);
}

/* Fill row @y from column @x to the edge with attribute @a. */
static void fill_row(int y, int x, attr_t a)
{
	if (y < 0 || y >= LINES || x >= COLS)
		return;
	attron(a);
	mvhline(y, x, ' ', COLS - x);
	attroff(a);
}

static bool name_matches(const char *name, const char *needle)
{
	return needle[0] && strcasestr(name, needle);
}

/* ---- path set -------------------------------------------------------------- */

static int pathset_grow(struct pathset *s)
{
	size_t cap = s->cap ? s->cap * 2 : 256;
	uint64_t *keys = calloc(cap, sizeof(*keys));
	int8_t *vals = calloc(cap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->cap; i++) {
		size_t j;

		if (!s->keys[i])
			continue;
		for (j = s->keys[i] & (cap - 1); keys[j]; j = (j + 1) & (cap - 1))
			;
		keys[j] = s->keys[i];
		vals[j] = s->vals[i];
	}
	free(s->keys);
	free(s->vals);
	s->keys = keys;
	s->vals = vals;
	s->cap = cap;
	return 0;
}

/* 0: no explicit state, 1: expanded, -1: collapsed. */
static int pathset_get(const struct pathset *s, uint64_t key)
{
	if (!s->cap)
		return 0;
	for (size_t j = key & (s->cap - 1); s->keys[j]; j = (j + 1) & (s->cap - 1))
		if (s->keys[j] == key)
			return s->vals[j];
	return 0;
}

static int pathset_set(struct pathset *s, uint64_t key, int val)
{
	size_t j;

	if ((s->len + 1) * 2 > s->cap && pathset_grow(s))
		return -ENOMEM;
	for (j = key & (s->cap - 1); s->keys[j]; j = (j + 1) & (s->cap - 1))
		if (s->keys[j] == key)
			break;
	if (!s->keys[j])
		s->len++;
	s->keys[j] = key;
	s->vals[j] = (int8_t)val;
	return 0;
}

static void pathset_free(struct pathset *s)
{
	free(s->keys);
	free(s->vals);
	memset(s, 0, sizeof(*s));
}

/* ---- call tree ------------------------------------------------------------ */

static void tree_reset(struct tree *tr)
{
	tr->len = 0;
	tr->grand[0] = tr->grand[1] = 0;
	if (tr->ht)
		memset(tr->ht, 0, tr->ht_cap * sizeof(*tr->ht));
}

static void tree_free(struct tree *tr)
{
	free(tr->n);
	free(tr->ht);
	memset(tr, 0, sizeof(*tr));
}

static void tree_slot_put(struct tslot *ht, size_t cap, uint64_t path, uint32_t id)
{
	size_t j;

	for (j = path & (cap - 1); ht[j].id1; j = (j + 1) & (cap - 1))
		;
	ht[j].path = path;
	ht[j].id1 = id + 1;
}

static int tree_rehash(struct tree *tr, size_t cap)
{
	struct tslot *ht = calloc(cap, sizeof(*ht));

	if (!ht)
		return -ENOMEM;
	for (size_t i = 0; i < tr->len; i++)
		tree_slot_put(ht, cap, tr->n[i].path, (uint32_t)i);
	free(tr->ht);
	tr->ht = ht;
	tr->ht_cap = cap;
	return 0;
}

static uint32_t tree_find(const struct tree *tr, uint64_t path)
{
	if (!tr->ht_cap)
		return NO_NODE;
	for (size_t j = path & (tr->ht_cap - 1); tr->ht[j].id1; j = (j + 1) & (tr->ht_cap - 1))
		if (tr->ht[j].path == path)
			return tr->ht[j].id1 - 1;
	return NO_NODE;
}

/* The child @name of @parent, created if needed; NO_NODE on ENOMEM. */
/* The path hash of a child: its parent's path mixed with its name's hash. */
static uint64_t path_of(uint64_t parent_path, uint64_t name_hash)
{
	uint64_t x = parent_path * 0x9e3779b97f4a7c15ULL ^ name_hash;

	/* splitmix64 finaliser: the low bits index the hash table. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x ? x : 1;
}

static uint32_t tree_child(struct tree *tr, uint32_t parent, uint64_t parent_path, const char *name,
			   uint64_t name_hash)
{
	uint64_t path = path_of(parent_path, name_hash);
	struct tnode *nd;
	uint32_t id;

	/* Paths hash names, not pointers: the slow and fast profiles of a
	 * split, with their own strings, land on the same nodes. */
	id = tree_find(tr, path);
	if (id != NO_NODE)
		return id;
	if (tr->len == tr->cap) {
		size_t cap = tr->cap ? tr->cap * 2 : 1024;
		struct tnode *n = realloc(tr->n, cap * sizeof(*n));

		if (!n)
			return NO_NODE;
		tr->n = n;
		tr->cap = cap;
	}
	if ((tr->len + 1) * 2 > tr->ht_cap && tree_rehash(tr, tr->ht_cap ? tr->ht_cap * 2 : 2048))
		return NO_NODE;
	id = (uint32_t)tr->len++;
	nd = &tr->n[id];
	memset(nd, 0, sizeof(*nd));
	nd->name = name;
	nd->path = path;
	nd->parent = parent;
	nd->first_child = nd->next_sibling = NO_NODE;
	nd->depth = parent == NO_NODE ? 0 : tr->n[parent].depth + 1;
	if (parent != NO_NODE) {
		nd->next_sibling = tr->n[parent].first_child;
		tr->n[parent].first_child = id;
	}
	tree_slot_put(tr->ht, tr->ht_cap, path, id);
	return id;
}

static uint64_t sample_value(const struct profile_sample *s, bool weight)
{
	return weight ? s->weight_ns : s->count;
}

/* Add every sample of @p into class @cls of @tr. Node 0 is a virtual root. */
static int tree_add_profile(struct tree *tr, const struct profile *p, int cls, bool weight)
{
	/* Hash each frame's name once, not once per sample and depth. */
	uint64_t *fh = malloc((p->n_frames ? p->n_frames : 1) * sizeof(*fh));

	if (!fh)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_frames; i++)
		fh[i] = hash_str(0, p->frames[i].name);
	if (!tr->len && tree_child(tr, NO_NODE, 0, "[all]", 0) == NO_NODE) {
		free(fh);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint64_t v = sample_value(s, weight);
		uint64_t path = tr->n[0].path;
		uint32_t cur = 0;

		tr->n[0].total[cls] += v;
		for (uint32_t k = 0; k < s->depth; k++) {
			uint32_t f = s->frames[k];

			cur = tree_child(tr, cur, path, p->frames[f].name, fh[f]);
			if (cur == NO_NODE) {
				free(fh);
				return -ENOMEM;
			}
			path = path_of(path, fh[f]);
			tr->n[cur].total[cls] += v;
		}
		tr->n[cur].self[cls] += v;
	}
	tr->grand[cls] += tr->n[0].total[cls];
	free(fh);
	return 0;
}

static int cmp_children(const void *a, const void *b, void *arg)
{
	const struct tree *tr = arg;
	const struct tnode *x = &tr->n[*(const uint32_t *)a];
	const struct tnode *y = &tr->n[*(const uint32_t *)b];
	/* By the larger share of either class: the slow profile of a split
	 * has far fewer samples than the fast one, and must not sink. */
	double vx = fmax(share(x->total[0], tr->grand[0]), share(x->total[1], tr->grand[1]));
	double vy = fmax(share(y->total[0], tr->grand[0]), share(y->total[1], tr->grand[1]));

	if (vx != vy)
		return vx < vy ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Relink every child list hottest first, so that drawing is a plain walk. */
static int tree_sort(struct tree *tr)
{
	uint32_t *tmp = NULL;
	size_t cap = 0;

	for (size_t i = 0; i < tr->len; i++) {
		size_t n = 0;

		for (uint32_t c = tr->n[i].first_child; c != NO_NODE; c = tr->n[c].next_sibling)
			n++;
		if (n < 2)
			continue;
		if (n > cap) {
			uint32_t *t2 = realloc(tmp, n * sizeof(*tmp));

			if (!t2) {
				free(tmp);
				return -ENOMEM;
			}
			tmp = t2;
			cap = n;
		}
		n = 0;
		for (uint32_t c = tr->n[i].first_child; c != NO_NODE; c = tr->n[c].next_sibling)
			tmp[n++] = c;
		qsort_r(tmp, n, sizeof(*tmp), cmp_children, tr);
		tr->n[i].first_child = tmp[0];
		for (size_t k = 0; k + 1 < n; k++)
			tr->n[tmp[k]].next_sibling = tmp[k + 1];
		tr->n[tmp[n - 1]].next_sibling = NO_NODE;
	}
	free(tmp);
	return 0;
}

/* ---- flat functions (Top) ------------------------------------------------- */

static void funcs_reset(struct funcs *f)
{
	f->len = 0;
	f->total = 0;
	if (f->ht)
		memset(f->ht, 0, f->ht_cap * sizeof(*f->ht));
}

static void funcs_free(struct funcs *f)
{
	free(f->r);
	free(f->ht);
	memset(f, 0, sizeof(*f));
}

static int funcs_rehash(struct funcs *f, size_t cap)
{
	uint32_t *ht = calloc(cap, sizeof(*ht));

	if (!ht)
		return -ENOMEM;
	for (size_t i = 0; i < f->len; i++) {
		size_t j;

		for (j = hash_str(0, f->r[i].name) & (cap - 1); ht[j]; j = (j + 1) & (cap - 1))
			;
		ht[j] = (uint32_t)i + 1;
	}
	free(f->ht);
	f->ht = ht;
	f->ht_cap = cap;
	return 0;
}

static struct func_row *funcs_get(struct funcs *f, const char *name)
{
	uint64_t h = hash_str(0, name);
	size_t j;

	if (f->ht_cap)
		for (j = h & (f->ht_cap - 1); f->ht[j]; j = (j + 1) & (f->ht_cap - 1))
			if (!strcmp(f->r[f->ht[j] - 1].name, name))
				return &f->r[f->ht[j] - 1];
	if (f->len == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 512;
		struct func_row *r = realloc(f->r, cap * sizeof(*r));

		if (!r)
			return NULL;
		f->r = r;
		f->cap = cap;
	}
	if ((f->len + 1) * 2 > f->ht_cap && funcs_rehash(f, f->ht_cap ? f->ht_cap * 2 : 1024))
		return NULL;
	for (j = h & (f->ht_cap - 1); f->ht[j]; j = (j + 1) & (f->ht_cap - 1))
		;
	f->ht[j] = (uint32_t)f->len + 1;
	f->r[f->len] = (struct func_row){.name = name, .last = UINT64_MAX};
	return &f->r[f->len++];
}

static int funcs_add_profile(struct funcs *f, const struct profile *p, bool weight)
{
	/* Row of each frame, looked up once: frames differing only by line
	 * or module share the function's row. */
	uint32_t *row = malloc((p->n_frames ? p->n_frames : 1) * sizeof(*row));

	if (!row)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_frames; i++) {
		struct func_row *r;

		/* The process root is not a function. */
		if (p->frames[i].kind == FRAME_ROOT) {
			row[i] = NO_NODE;
			continue;
		}
		r = funcs_get(f, p->frames[i].name);
		if (!r) {
			free(row);
			return -ENOMEM;
		}
		row[i] = (uint32_t)(r - f->r);
	}
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint64_t v = sample_value(s, weight);

		f->total += v;
		for (uint32_t k = 0; k < s->depth; k++) {
			struct func_row *r;

			if (row[s->frames[k]] == NO_NODE)
				continue;
			r = &f->r[row[s->frames[k]]];
			/* Recursion must not count a stack twice in cum. */
			if (r->last != i) {
				r->cum += v;
				r->last = i;
			}
			if (k + 1 == s->depth)
				r->self += v;
		}
	}
	free(row);
	return 0;
}

/* ---- model build ---------------------------------------------------------- */

static bool use_weight(const struct tui *t)
{
	return t->d->opts->offcpu;
}

/* The counts the views show: window or whole run, off-CPU filtered out. */
static int view_counts(struct tui *t, const struct counts *src, struct counts *out)
{
	counts__clear(out);
	counts_for_each(src, sc)
	{
		uint32_t id = stack_count__id(sc);

		if (!t->show_offcpu) {
			const struct raw_stack *rs = stack_store__get(t->d->stacks, id);

			if (rs && (rs->flags & STACK_F_OFFCPU))
				continue;
		}
		if (counts__add(out, id, sc->count, sc->weight_ns))
			return -ENOMEM;
	}
	return 0;
}

static void model_drop_split(struct model *m)
{
	if (m->has_split)
		split_result__fini(&m->sr);
	m->has_split = false;
	profile__free(m->slow);
	profile__free(m->fast);
	m->slow = m->fast = NULL;
	tree_reset(&m->dtree);
	funcs_reset(&m->sfuncs);
	funcs_reset(&m->ffuncs);
}

static int model_build_split(struct tui *t)
{
	struct model *m = &t->m;
	struct daemon *d = t->d;
	struct counts c;
	int err;

	model_drop_split(m);
	if (!d->split)
		return 0;
	memset(&m->sr, 0, sizeof(m->sr));
	err = split__compute(d->split, t->window, use_weight(t), &m->sr);
	if (err)
		return err;
	m->has_split = true;
	counts__init(&c);
	err = view_counts(t, &m->sr.slow, &c);
	if (!err)
		m->slow = report__build_profile(d, &c);
	if (!err && !(err = view_counts(t, &m->sr.fast, &c)))
		m->fast = report__build_profile(d, &c);
	counts__free(&c);
	if (err)
		return err;
	if (!m->slow || !m->fast)
		return -ENOMEM;
	err = tree_add_profile(&m->dtree, m->slow, 0, use_weight(t));
	if (!err)
		err = tree_add_profile(&m->dtree, m->fast, 1, use_weight(t));
	if (!err)
		err = tree_sort(&m->dtree);
	if (!err)
		err = funcs_add_profile(&m->sfuncs, m->slow, use_weight(t));
	if (!err)
		err = funcs_add_profile(&m->ffuncs, m->fast, use_weight(t));
	return err;
}

static int model_build(struct tui *t)
{
	struct model *m = &t->m;
	struct daemon *d = t->d;
	struct counts win, c;
	uint64_t t0 = now_ns();
	int err;

	/* New stacks arrive between ticks; name them before building. */
	daemon__symbolize_new(d);
	counts__init(&win);
	counts__init(&c);
	err = t->window ? daemon__window_counts(d, &win) : 0;
	if (!err)
		err = view_counts(t, t->window ? &win : &d->total, &c);
	profile__free(m->prof);
	m->prof = NULL;
	tree_reset(&m->tree);
	funcs_reset(&m->funcs);
	if (!err) {
		m->prof = report__build_profile(d, &c);
		if (!m->prof)
			err = -ENOMEM;
	}
	counts__free(&win);
	counts__free(&c);
	if (!err)
		err = tree_add_profile(&m->tree, m->prof, 0, use_weight(t));
	if (!err)
		err = tree_sort(&m->tree);
	if (!err)
		err = funcs_add_profile(&m->funcs, m->prof, use_weight(t));
	if (!err)
		err = model_build_split(t);
	t->rebuild_due = false;
	m->built_samples = d->samples + d->offcpu_events;
	m->built_ns = now_ns();
	m->build_cost_ns = m->built_ns - t0;
	return err;
}

static void model_free(struct model *m)
{
	model_drop_split(m);
	profile__free(m->prof);
	tree_free(&m->tree);
	tree_free(&m->dtree);
	funcs_free(&m->funcs);
	funcs_free(&m->sfuncs);
	funcs_free(&m->ffuncs);
	memset(m, 0, sizeof(*m));
}

/* ---- rows of the Top view ------------------------------------------------- */

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

/* Fill @rows with the functions of @f matching @filter, sorted by @key. */
static int top_rows(const struct funcs *f, const char *filter, enum sort_key key, uint32_t **rows,
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

/* ---- rows of the Tree view ------------------------------------------------ */

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

/* Mark matches and subtrees holding one, bottom-up (children follow parents). */
static void tree_mark_search(struct tree *tr, const char *needle)
{
	for (size_t i = 0; i < tr->len; i++) {
		tr->n[i].match = name_matches(tr->n[i].name, needle);
		tr->n[i].sub_match = false;
	}
	for (size_t i = tr->len; i-- > 0;) {
		struct tnode *nd = &tr->n[i];

		if (nd->match && nd->parent != NO_NODE)
			tr->n[nd->parent].sub_match = true;
		if (nd->sub_match && nd->parent != NO_NODE)
			tr->n[nd->parent].sub_match = true;
	}
}

static int push_row(uint32_t **rows, size_t *n, size_t *cap, uint32_t id)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		uint32_t *r = realloc(*rows, c * sizeof(*r));

		if (!r)
			return -ENOMEM;
		*rows = r;
		*cap = c;
	}
	(*rows)[(*n)++] = id;
	return 0;
}

/* The visible rows: a depth-first walk of the expanded nodes under the view root. */
static int tree_layout(struct tui *t)
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

static int diff_layout(struct tui *t)
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

static int relayout(struct tui *t)
{
	int err = top_rows(&t->m.funcs, t->search, t->sort, &t->top_rows, &t->n_top_rows);

	if (!err)
		err = tree_layout(t);
	if (!err)
		err = diff_layout(t);
	return err;
}

static void rebuild(struct tui *t)
{
	int err = model_build(t);

	if (!err)
		err = relayout(t);
	if (err)
		set_msg(t, true, "cannot build the view: %s", strerror(-err));
}

/* ---- drawing ----------------------------------------------------------------- */

static int content_top(void)
{
	return 2;
}

static int content_rows(void)
{
	int n = LINES - 4; /* status, header, message, help bar */

	return n > 0 ? n : 0;
}

/* Keep @sel on screen by moving @scroll. */
static void clamp_scroll(int *sel, int *scroll, int n, int rows)
{
	if (*sel >= n)
		*sel = n - 1;
	if (*sel < 0)
		*sel = 0;
	if (*scroll > *sel)
		*scroll = *sel;
	if (rows > 0 && *sel >= *scroll + rows)
		*scroll = *sel - rows + 1;
	if (*scroll > n - rows)
		*scroll = n - rows;
	if (*scroll < 0)
		*scroll = 0;
}

static void draw_status(struct tui *t)
{
	struct daemon *d = t->d;
	char target[128], buf[512];
	const char *state = d->paused ? " PAUSED " : " LIVE ";
	int w = (int)strlen(state);

	if (d->opts->all)
		snprintf(target, sizeof(target), "all processes");
	else if (d->n_procs)
		snprintf(target, sizeof(target), "%s (pid %d)%s", d->procs[0].name, d->procs[0].pid,
			 d->n_procs > 1 ? " +more" : "");
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

static void draw_top_table(struct tui *t, const struct funcs *f, const uint32_t *rows, size_t n,
			   int y0, int h, int *sel, int *scroll, bool cursor, attr_t hot)
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

static void draw_top(struct tui *t, int y0, int h)
{
	draw_top_table(t, &t->m.funcs, t->top_rows, t->n_top_rows, y0, h, &t->top_sel,
		       &t->top_scroll, true, attrs[C_HOT]);
}

/* A bar of @w cells for @frac, as text so that it survives a monochrome terminal. */
static void draw_bar(int y, int x, int w, double frac, attr_t a)
{
	int n = (int)(frac * w + 0.5);

	/* A rare bucket still deserves a mark: tails are what we look for. */
	if (n == 0 && frac > 0)
		n = 1;
	if (n > w)
		n = w;
	for (int i = 0; i < w; i++)
		put(y, x + i, 1, i < n ? a : attrs[C_NORMAL], i < n ? "#" : " ");
}

/* The frame under the cursor in the Tree view, either drawing; NO_NODE if none. */
static uint32_t tree_cursor(struct tui *t)
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

static void draw_icicle(struct tui *t, int y0, int h)
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

static void draw_tree(struct tui *t, int y0, int h)
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

static void draw_latency(struct tui *t, int y0, int h)
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
		/* A line probe counts hits; it has no duration. */
		if (ti->kind == TRACE_LINE)
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
		fill_row(y, 0, attrs[C_HEADER]);
		if (ti->kind == TRACE_LINE) {
			putf(y, 0, COLS, attrs[C_HEADER], " %s is a line probe: hits only",
			     ti->spec);
			return;
		}
		putf(y, 0, COLS, attrs[C_HEADER],
		     " latency of %s (%s, log bars)  probe cost ~%.1fus/call%s", ti->spec,
		     t->window ? "window" : "whole run", ti->probe_cost_ns / 1e3,
		     thresh ? "  red: slow calls of the split" : "");
		draw_hist(t, t->lat_sel, y + 1, h - list_h - 2, thresh);
	}
}

static void draw_split_ranks(struct tui *t, int y0, int h)
{
	const struct split_result *r = &t->m.sr;

	fill_row(y0, 0, attrs[C_HEADER]);
	put(y0, 0, COLS, attrs[C_HEADER],
	    "   SLOW%   FAST%   DELTA       Z  FRAME (red: more in slow calls)");
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

static void draw_split(struct tui *t, int y0, int h)
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
	default:
		return "";
	}
}

static void draw_prompt(const struct prompt *p)
{
	int y = LINES - 1, start = 0;

	fill_row(y, 0, attrs[C_NORMAL]);
	/* Scroll long lines so the cursor stays visible. */
	if (p->cur + 2 > COLS)
		start = p->cur + 2 - COLS;
	mvaddch(y, 0, (chtype)p->lead);
	put(y, 1, COLS - 1, attrs[C_NORMAL], p->buf + start);
	move(y, 1 + p->cur - start);
}

static void draw_help(struct tui *t)
{
	static const char *const lines[] = {
		"liveprof keys",
		"",
		"1 2 3 4 / Tab   Top, Tree, Latency, Split views",
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

static void draw(struct tui *t)
{
	int y0 = content_top(), h = content_rows();
	uint64_t t0 = now_ns(), now;

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
	default:
		break;
	}
	if (t->msg[0] && now_ns() - t->msg_ns < MSG_SHOW_NS)
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
	now = now_ns();
	t->draw_cost_ns = now - t0;
	/* What the user feels: from reading the key to the screen updated. */
	if (t->key_ns) {
		t->key_cost_ns = now - t->key_ns;
		if (t->key_cost_ns > t->max_key_cost_ns)
			t->max_key_cost_ns = t->key_cost_ns;
		t->key_ns = 0;
	}
}

/* ---- commands ----------------------------------------------------------------- */

static struct traces *ensure_traces(struct tui *t)
{
	if (!t->d->traces)
		t->d->traces = traces__new(t->d);
	if (!t->d->traces)
		set_msg(t, true, "out of memory");
	return t->d->traces;
}

static int find_trace(struct traces *tr, const char *spec)
{
	for (int i = 0; tr && i < traces__count(tr); i++) {
		const struct trace_info *ti = traces__info(tr, i);

		if (!strcmp(ti->spec, spec) || (ti->func && !strcmp(ti->func, spec)))
			return i;
	}
	return -1;
}

static int cmd_trace(struct tui *t, const char *arg, bool line)
{
	struct traces *tr;
	char err[256] = "";
	int id, i;

	if (!arg[0]) {
		set_msg(t, true, line ? "usage: :line FILE:LINE" : "usage: :trace SPEC");
		return 0;
	}
	if (line && !strchr(arg, ':')) {
		set_msg(t, true, "'%s' is not FILE:LINE", arg);
		return 0;
	}
	tr = ensure_traces(t);
	if (!tr)
		return 0;
	if (find_trace(tr, arg) >= 0) {
		set_msg(t, true, "'%s' is already traced", arg);
		return 0;
	}
	id = traces__add(tr, arg, err, sizeof(err));
	if (id < 0) {
		set_msg(t, true, "%s", err[0] ? err : strerror(-id));
		return 0;
	}
	i = traces__find(tr, id);
	t->lat_sel = i >= 0 ? i : 0;
	t->view = VIEW_LATENCY;
	set_msg(t, false, "tracing '%s' (probe %d)", arg, id);
	return H_REBUILD;
}

static void drop_split(struct tui *t)
{
	model_drop_split(&t->m);
	split__free(t->d->split);
	t->d->split = NULL;
}

static int cmd_untrace(struct tui *t, const char *arg)
{
	struct traces *tr = t->d->traces;
	int i = find_trace(tr, arg), err;

	if (!arg[0]) {
		set_msg(t, true, "usage: :untrace SPEC");
		return 0;
	}
	if (i < 0) {
		set_msg(t, true, "'%s' is not traced", arg);
		return 0;
	}
	/* The split holds the probe id: it cannot outlive its trace. */
	if (t->d->split && split__probe_id(t->d->split) == traces__info(tr, i)->id)
		drop_split(t);
	err = traces__remove(tr, traces__info(tr, i)->spec);
	if (err) {
		set_msg(t, true, "cannot untrace '%s': %s", arg, strerror(-err));
		return 0;
	}
	set_msg(t, false, "untraced '%s'", arg);
	return H_REBUILD;
}

static int parse_pct(const char *s, double *pct)
{
	char *end;

	if (*s == '@')
		s++;
	if (*s == 'p' || *s == 'P')
		s++;
	*pct = strtod(s, &end);
	if (end == s || *end || *pct <= 0 || *pct >= 100)
		return -EINVAL;
	return 0;
}

static int cmd_split(struct tui *t, char *arg)
{
	char *func = strtok(arg, " \t@"), *p = strtok(NULL, " \t");
	struct traces *tr;
	struct split *s;
	double pct = DEFAULT_SPLIT_PCT;
	char err[256] = "";
	int i, id;

	if (!func) {
		set_msg(t, true, "usage: :split FUNC [pNN]");
		return 0;
	}
	if (p && parse_pct(p, &pct)) {
		set_msg(t, true, "invalid percentile '%s' (e.g. p95)", p);
		return 0;
	}
	tr = ensure_traces(t);
	if (!tr)
		return 0;
	/* Reuse a trace of the function rather than probing it twice. */
	i = find_trace(tr, func);
	if (i >= 0) {
		id = traces__info(tr, i)->id;
	} else {
		id = traces__add(tr, func, err, sizeof(err));
		if (id < 0) {
			set_msg(t, true, "%s", err[0] ? err : strerror(-id));
			return 0;
		}
	}
	if (t->d->split && split__probe_id(t->d->split) == id) {
		split__set_percentile(t->d->split, pct);
	} else {
		s = split__new(t->d, id, pct, -1);
		if (!s) {
			set_msg(t, true, "cannot split '%s': out of memory", func);
			return 0;
		}
		drop_split(t);
		t->d->split = s;
	}
	t->view = VIEW_SPLIT;
	t->split_mode = SPLIT_RANKS;
	t->split_scroll = 0;
	set_msg(t, false, "splitting '%s' at p%g: ranks fill in as sampled calls end", func, pct);
	return H_REBUILD;
}

static int cmd_freq(struct tui *t, const char *arg)
{
	char *end;
	long hz = strtol(arg, &end, 10);
	int err;

	if (!arg[0] || *end || hz < 1 || hz > 100000) {
		set_msg(t, true, "usage: :freq HZ (1 to 100000)");
		return 0;
	}
	err = bpf_session__start_sampling(t->d->bpf, (unsigned int)hz);
	if (err) {
		set_msg(t, true, "cannot sample at %ld Hz: %s", hz, strerror(-err));
		return 0;
	}
	t->d->freq = (unsigned int)hz;
	t->d->opts->freq = (unsigned int)hz;
	set_msg(t, false, "sampling at %ld Hz", hz);
	return H_REDRAW;
}

static int cmd_window(struct tui *t, const char *arg)
{
	char *end;
	long sec = strtol(arg, &end, 10);
	int err;

	if (!arg[0] || *end || sec < 1 || sec > MAX_WINDOW_SLOTS) {
		set_msg(t, true, "usage: :window SEC (1 to %d)", MAX_WINDOW_SLOTS);
		return 0;
	}
	err = daemon__set_window(t->d, (int)sec);
	if (err) {
		set_msg(t, true, "cannot set the window: %s", strerror(-err));
		return 0;
	}
	t->window = true;
	set_msg(t, false, "window is now %lds (it refills from now)", sec);
	return H_REBUILD;
}

static int cmd_offcpu(struct tui *t, const char *arg)
{
	bool on;

	if (!strcmp(arg, "on"))
		on = true;
	else if (!strcmp(arg, "off"))
		on = false;
	else {
		set_msg(t, true, "usage: :offcpu on|off");
		return 0;
	}
	/* The off-CPU program is loaded at start or not at all. */
	if (!t->d->opts->offcpu) {
		set_msg(t, true,
			on ? "off-CPU was not loaded: restart liveprof with --offcpu"
			   : "off-CPU is already off (not loaded)");
		return 0;
	}
	t->show_offcpu = on;
	set_msg(t, false, "off-CPU samples %s", on ? "shown" : "hidden");
	return H_REBUILD;
}

static int set_paused(struct tui *t, bool paused)
{
	int err;

	if (t->d->paused == paused) {
		set_msg(t, false, "already %s", paused ? "paused" : "live");
		return H_REDRAW;
	}
	err = bpf_session__set_paused(t->d->bpf, paused, false);
	if (err) {
		set_msg(t, true, "cannot %s: %s", paused ? "pause" : "resume", strerror(-err));
		return 0;
	}
	t->d->paused = paused;
	set_msg(t, false, paused ? "paused: the view is frozen" : "live");
	return paused ? H_REDRAW : H_REBUILD;
}

/*
 * The samples under the zoomed frame, whole stacks kept so that the file
 * still says where the frame was called from.
 *
 * Return: a new profile the caller frees, or NULL on allocation failure.
 */
static struct profile *zoomed_profile(struct tui *t)
{
	const struct profile *src = t->m.prof;
	uint64_t want = t->zoom[t->n_zoom - 1];
	size_t nf = src->n_frames ? src->n_frames : 1;
	uint64_t *fh = malloc(nf * sizeof(*fh));
	int64_t *map = malloc(nf * sizeof(*map));
	uint32_t *buf = NULL;
	uint32_t cap = 0;
	struct profile *p = profile__new(src->name);
	int err = p && fh && map ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < src->n_frames; i++) {
		fh[i] = hash_str(0, src->frames[i].name);
		map[i] = -1;
	}
	for (size_t i = 0; !err && i < src->n_samples; i++) {
		const struct profile_sample *s = &src->samples[i];
		uint64_t path = t->m.tree.n[0].path;
		bool under = false;

		/* The same path hashes as the tree's: a sample is under the
		 * zoomed frame when one of its prefixes hashes to its path. */
		for (uint32_t k = 0; k < s->depth && !under; k++) {
			path = path_of(path, fh[s->frames[k]]);
			under = path == want;
		}
		if (!under)
			continue;
		if (s->depth > cap) {
			uint32_t *b = realloc(buf, s->depth * sizeof(*b));

			if (!b) {
				err = -ENOMEM;
				break;
			}
			buf = b;
			cap = s->depth;
		}
		for (uint32_t k = 0; k < s->depth && !err; k++) {
			uint32_t f = s->frames[k];

			if (map[f] < 0)
				map[f] = profile__intern_frame(p, &src->frames[f]);
			if (map[f] < 0)
				err = (int)map[f];
			buf[k] = (uint32_t)map[f];
		}
		if (!err)
			err = profile__add(p, buf, s->depth, s->count, s->weight_ns, s->labels,
					   s->n_labels);
	}
	free(fh);
	free(map);
	free(buf);
	if (err) {
		profile__free(p);
		return NULL;
	}
	p->period_ns = src->period_ns;
	p->duration_ns = src->duration_ns;
	return p;
}

static int cmd_save(struct tui *t, const char *path)
{
	struct profile *p, *zoomed = NULL;
	uint64_t samples;
	const char *what;
	int err;

	if (!path[0]) {
		set_msg(t, true, "usage: :save FILE (.folded, .svg or .pb.gz)");
		return 0;
	}
	if (report__format_of(path) < 0) {
		set_msg(t, true, "unknown format of '%s': use .folded, .svg or .pb.gz", path);
		return 0;
	}
	/* The current view: slow or fast calls in Split, else what is shown. */
	p = t->m.prof;
	if (t->view == VIEW_SPLIT && t->m.has_split)
		p = t->split_mode == SPLIT_FAST ? t->m.fast : t->m.slow;
	if (!p) {
		set_msg(t, true, "nothing to save yet");
		return 0;
	}
	if (t->view == VIEW_TREE && t->n_zoom) {
		p = zoomed = zoomed_profile(t);
		if (!p) {
			set_msg(t, true, "cannot save: out of memory");
			return 0;
		}
	}
	samples = p->total_count;
	what = p == t->m.slow	? ", slow calls"
	       : p == t->m.fast ? ", fast calls"
	       : zoomed		? ", zoomed frame"
				: "";
	err = report__write_file(t->d, p, path);
	profile__free(zoomed);
	if (err) {
		set_msg(t, true, "cannot write '%s': %s", path, strerror(-err));
		return 0;
	}
	set_msg(t, false, "wrote '%s' (%" PRIu64 " samples%s)", path, samples, what);
	return H_REDRAW;
}

static int run_command(struct tui *t, char *line)
{
	char *cmd, *arg;

	while (isspace((unsigned char)*line))
		line++;
	cmd = line;
	while (*line && !isspace((unsigned char)*line))
		line++;
	if (*line)
		*line++ = 0;
	while (isspace((unsigned char)*line))
		line++;
	arg = line;
	for (char *e = arg + strlen(arg); e > arg && isspace((unsigned char)e[-1]);)
		*--e = 0;
	if (!cmd[0])
		return 0;
	if (!strcmp(cmd, "trace"))
		return cmd_trace(t, arg, false);
	if (!strcmp(cmd, "line"))
		return cmd_trace(t, arg, true);
	if (!strcmp(cmd, "untrace"))
		return cmd_untrace(t, arg);
	if (!strcmp(cmd, "split"))
		return cmd_split(t, arg);
	if (!strcmp(cmd, "freq"))
		return cmd_freq(t, arg);
	if (!strcmp(cmd, "window"))
		return cmd_window(t, arg);
	if (!strcmp(cmd, "offcpu"))
		return cmd_offcpu(t, arg);
	if (!strcmp(cmd, "pause"))
		return set_paused(t, true);
	if (!strcmp(cmd, "resume"))
		return set_paused(t, false);
	if (!strcmp(cmd, "save"))
		return cmd_save(t, arg);
	if (!strcmp(cmd, "quit") || !strcmp(cmd, "q"))
		return H_QUIT;
	set_msg(t, true, "unknown command '%s' (? lists them)", cmd);
	return 0;
}

/* ---- prompt ------------------------------------------------------------------- */

static void prompt_open(struct prompt *p, char lead, const char *text)
{
	p->active = true;
	p->lead = lead;
	snprintf(p->buf, sizeof(p->buf), "%s", text);
	p->len = p->cur = (int)strlen(p->buf);
	p->hist_pos = p->n_hist;
}

static void prompt_set(struct prompt *p, const char *text)
{
	snprintf(p->buf, sizeof(p->buf), "%s", text);
	p->len = p->cur = (int)strlen(p->buf);
}

static void prompt_insert(struct prompt *p, const char *s)
{
	size_t n = strlen(s);

	if (p->len + (int)n >= (int)sizeof(p->buf))
		return;
	memmove(p->buf + p->cur + n, p->buf + p->cur, (size_t)(p->len - p->cur) + 1);
	memcpy(p->buf + p->cur, s, n);
	p->len += (int)n;
	p->cur += (int)n;
}

static void history_add(struct prompt *p, const char *line)
{
	char *copy;

	if (!line[0] || (p->n_hist && !strcmp(p->hist[p->n_hist - 1], line)))
		return;
	copy = strdup(line);
	if (!copy)
		return; /* history is a convenience: losing an entry is fine */
	if (p->n_hist == HISTORY_MAX) {
		free(p->hist[0]);
		memmove(p->hist, p->hist + 1, (HISTORY_MAX - 1) * sizeof(p->hist[0]));
		p->n_hist--;
	}
	p->hist[p->n_hist++] = copy;
}

static void history_move(struct prompt *p, int dir)
{
	int pos = p->hist_pos + dir;

	if (pos < 0 || pos > p->n_hist)
		return;
	if (p->hist_pos == p->n_hist)
		snprintf(p->saved, sizeof(p->saved), "%s", p->buf);
	p->hist_pos = pos;
	prompt_set(p, pos == p->n_hist ? p->saved : p->hist[pos]);
}

static const char *const commands[] = {"trace",	 "untrace", "split",  "line", "freq", "window",
				       "offcpu", "pause",   "resume", "save", "quit"};

static void complete(struct tui *t, struct prompt *p)
{
	const char *cands[MAX_COMPLETIONS];
	char word[LINE_MAX_LEN], first[32] = "";
	int n = 0, start, common;

	/* Complete only at the end of the line: mid-line edits are rare. */
	if (p->cur != p->len)
		return;
	for (start = p->cur; start > 0 && !isspace((unsigned char)p->buf[start - 1]); start--)
		;
	snprintf(word, sizeof(word), "%.*s", p->cur - start, p->buf + start);
	sscanf(p->buf, "%31s", first);
	if (start == 0) {
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (!strncmp(commands[i], word, strlen(word)))
				cands[n++] = commands[i];
	} else if (!strcmp(first, "offcpu")) {
		static const char *const onoff[] = {"on", "off"};

		for (int i = 0; i < 2; i++)
			if (!strncmp(onoff[i], word, strlen(word)))
				cands[n++] = onoff[i];
	} else if (!strcmp(first, "untrace")) {
		struct traces *tr = t->d->traces;

		for (int i = 0; tr && i < traces__count(tr) && n < MAX_COMPLETIONS; i++)
			if (!strncmp(traces__info(tr, i)->spec, word, strlen(word)))
				cands[n++] = traces__info(tr, i)->spec;
	} else if (!strcmp(first, "trace") || !strcmp(first, "split")) {
		struct traces *tr = ensure_traces(t);

		if (tr)
			n = traces__complete(tr, word, cands, MAX_COMPLETIONS);
	}
	if (!n) {
		set_msg(t, true, "no completion for '%s'", word);
		return;
	}
	common = (int)strlen(cands[0]);
	for (int i = 1; i < n; i++) {
		int k = 0;

		while (k < common && cands[i][k] == cands[0][k])
			k++;
		common = k;
	}
	if (common > p->cur - start) {
		char add[LINE_MAX_LEN];

		snprintf(add, sizeof(add), "%.*s", common - (p->cur - start),
			 cands[0] + (p->cur - start));
		prompt_insert(p, add);
	}
	if (n == 1) {
		prompt_insert(p, " ");
		t->msg[0] = 0;
	} else {
		char list[512] = "";
		size_t used = 0;

		for (int i = 0; i < n && used + 2 < sizeof(list); i++)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s ", cands[i]);
		set_msg(t, false, "%d%s: %s", n, n == MAX_COMPLETIONS ? "+" : "", list);
	}
}

/* Edit keys shared by both prompts; returns true when @ch was one. */
static bool prompt_edit(struct prompt *p, int ch)
{
	switch (ch) {
	case KEY_LEFT:
		if (p->cur > 0)
			p->cur--;
		return true;
	case KEY_RIGHT:
		if (p->cur < p->len)
			p->cur++;
		return true;
	case KEY_HOME:
	case TK_CTRL_A:
		p->cur = 0;
		return true;
	case KEY_END:
	case TK_CTRL_E:
		p->cur = p->len;
		return true;
	case TK_CTRL_U:
		memmove(p->buf, p->buf + p->cur, (size_t)(p->len - p->cur) + 1);
		p->len -= p->cur;
		p->cur = 0;
		return true;
	case TK_CTRL_W: {
		int s = p->cur;

		while (s > 0 && p->buf[s - 1] == ' ')
			s--;
		while (s > 0 && p->buf[s - 1] != ' ')
			s--;
		memmove(p->buf + s, p->buf + p->cur, (size_t)(p->len - p->cur) + 1);
		p->len -= p->cur - s;
		p->cur = s;
		return true;
	}
	case KEY_BACKSPACE:
	case TK_DEL:
	case TK_BS:
		if (p->cur > 0) {
			memmove(p->buf + p->cur - 1, p->buf + p->cur,
				(size_t)(p->len - p->cur) + 1);
			p->cur--;
			p->len--;
		}
		return true;
	case KEY_DC:
		if (p->cur < p->len) {
			memmove(p->buf + p->cur, p->buf + p->cur + 1, (size_t)(p->len - p->cur));
			p->len--;
		}
		return true;
	default:
		if (ch >= ' ' && ch < TK_DEL) {
			char s[2] = {(char)ch, 0};

			prompt_insert(p, s);
			return true;
		}
		return false;
	}
}

static int cmd_key(struct tui *t, int ch)
{
	struct prompt *p = &t->cmd;
	char line[LINE_MAX_LEN];

	switch (ch) {
	case TK_ESC:
		p->active = false;
		return H_REDRAW;
	case TK_LF:
	case TK_CR:
	case KEY_ENTER:
		p->active = false;
		snprintf(line, sizeof(line), "%s", p->buf);
		history_add(p, line);
		return run_command(t, line) | H_REDRAW;
	case KEY_UP:
		history_move(p, -1);
		return H_REDRAW;
	case KEY_DOWN:
		history_move(p, 1);
		return H_REDRAW;
	case TK_TAB:
		complete(t, p);
		return H_REDRAW;
	case KEY_BACKSPACE:
	case TK_DEL:
	case TK_BS:
		/* Backspace on an empty line leaves the prompt, like vi. */
		if (!p->len) {
			p->active = false;
			return H_REDRAW;
		}
		prompt_edit(p, ch);
		return H_REDRAW;
	default:
		prompt_edit(p, ch);
		return H_REDRAW;
	}
}

static void tree_select_match(struct tui *t, bool next)
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

static int find_key(struct tui *t, int ch)
{
	struct prompt *p = &t->find;

	switch (ch) {
	case TK_ESC:
		p->active = false;
		t->search[0] = 0;
		return H_RELAYOUT | H_REDRAW;
	case TK_LF:
	case TK_CR:
	case KEY_ENTER:
		p->active = false;
		history_add(p, p->buf);
		if (t->view == VIEW_TREE) {
			tree_layout(t);
			tree_select_match(t, false);
		}
		return H_RELAYOUT | H_REDRAW;
	case KEY_UP:
		history_move(p, -1);
		break;
	case KEY_DOWN:
		history_move(p, 1);
		break;
	default:
		prompt_edit(p, ch);
		break;
	}
	/* Incremental: the filter follows every key, the model does not move. */
	snprintf(t->search, sizeof(t->search), "%s", p->buf);
	t->top_sel = t->top_scroll = 0;
	return H_RELAYOUT | H_REDRAW;
}

/* ---- view keys ------------------------------------------------------------------ */

/* Up/Down/PgUp/PgDn/Home/End on a list; returns true when @ch moved @sel. */
static bool move_key(int ch, int *sel, int n)
{
	int page = content_rows() > 2 ? content_rows() - 2 : 1;

	switch (ch) {
	case KEY_UP:
	case 'k':
		(*sel)--;
		break;
	case KEY_DOWN:
	case 'j':
		(*sel)++;
		break;
	case KEY_PPAGE:
		*sel -= page;
		break;
	case KEY_NPAGE:
		*sel += page;
		break;
	case KEY_HOME:
	case 'g':
		*sel = 0;
		break;
	case KEY_END:
	case 'G':
		*sel = n - 1;
		break;
	default:
		return false;
	}
	if (*sel >= n)
		*sel = n - 1;
	if (*sel < 0)
		*sel = 0;
	return true;
}

static const char *selected_function(struct tui *t)
{
	if (t->view == VIEW_TOP && t->n_top_rows) {
		const char *name = t->m.funcs.r[t->top_rows[t->top_sel]].name;

		/* Markers such as "[off-cpu]" are not functions to probe. */
		return name[0] == '[' ? NULL : name;
	}
	if (t->view == VIEW_TREE && tree_cursor(t) != NO_NODE) {
		const struct tnode *nd = &t->m.tree.n[tree_cursor(t)];

		/* The process root and markers are not functions to probe. */
		if (nd->depth <= 1 || nd->name[0] == '[')
			return NULL;
		return nd->name;
	}
	return NULL;
}

static int offer(struct tui *t, const char *cmd, const char *suffix)
{
	const char *fn = selected_function(t);
	char buf[LINE_MAX_LEN];

	if (!fn) {
		set_msg(t, true, "select a function first");
		return H_REDRAW;
	}
	/* Pre-fill the prompt rather than act: probing is an intrusion. */
	snprintf(buf, sizeof(buf), "%s %s%s", cmd, fn, suffix);
	prompt_open(&t->cmd, ':', buf);
	return H_REDRAW;
}

static int top_key(struct tui *t, int ch)
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

static int tree_key(struct tui *t, int ch)
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

static int latency_key(struct tui *t, int ch)
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

static int split_key(struct tui *t, int ch)
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

static int handle_key(struct tui *t, int ch)
{
	int r = 0;

	if (ch == KEY_RESIZE)
		return H_REDRAW;
	if (t->cmd.active)
		return cmd_key(t, ch);
	if (t->find.active)
		return find_key(t, ch);
	if (t->help) {
		t->help = false;
		return H_REDRAW;
	}
	switch (t->view) {
	case VIEW_TOP:
		r = top_key(t, ch);
		break;
	case VIEW_TREE:
		r = tree_key(t, ch);
		break;
	case VIEW_LATENCY:
		r = latency_key(t, ch);
		break;
	case VIEW_SPLIT:
		r = split_key(t, ch);
		break;
	default:
		break;
	}
	if (r)
		return r;
	switch (ch) {
	case 'q':
	case 'Q':
		return H_QUIT;
	case '?':
	case KEY_F(1):
		t->help = true;
		return H_REDRAW;
	case ':':
		prompt_open(&t->cmd, ':', "");
		return H_REDRAW;
	case '/':
		prompt_open(&t->find, '/', t->search);
		return H_REDRAW;
	case TK_ESC:
		t->search[0] = 0;
		return H_RELAYOUT | H_REDRAW;
	case '1':
	case '2':
	case '3':
	case '4':
		t->view = (enum view)(ch - '1');
		return H_REDRAW;
	case TK_TAB:
		t->view = (t->view + 1) % VIEW_NR;
		return H_REDRAW;
	case KEY_BTAB:
		t->view = (t->view + VIEW_NR - 1) % VIEW_NR;
		return H_REDRAW;
	case 't':
		return offer(t, "trace", "");
	case 'S':
		return offer(t, "split", " p95");
	case 'w':
		t->window = !t->window;
		set_msg(t, false, "showing %s", t->window ? "the window" : "the whole run");
		return H_REBUILD;
	case 'p':
		return set_paused(t, !t->d->paused);
	case TK_CTRL_L:
		clearok(curscr, TRUE);
		return H_REDRAW;
	default:
		return 0;
	}
}

/* ---- terminal setup and teardown ---------------------------------------------- */

/* Send stderr to a pipe we read, so that messages land on the message line. */
static void capture_stderr(struct tui *t)
{
	int fds[2];

	t->err_pipe = t->saved_stderr = -1;
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK))
		return;
	fflush(stderr);
	t->saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (t->saved_stderr < 0 || dup2(fds[1], STDERR_FILENO) < 0) {
		close(fds[0]);
		close(fds[1]);
		if (t->saved_stderr >= 0)
			close(t->saved_stderr);
		t->saved_stderr = -1;
		return;
	}
	/* A full pipe must drop messages, never block the event loop. */
	close(fds[1]);
	t->err_pipe = fds[0];
}

static void restore_stderr(struct tui *t)
{
	if (t->saved_stderr < 0)
		return;
	fflush(stderr);
	dup2(t->saved_stderr, STDERR_FILENO);
	close(t->saved_stderr);
	t->saved_stderr = -1;
	if (t->err_pipe >= 0)
		close(t->err_pipe);
	t->err_pipe = -1;
}

static bool drain_stderr(struct tui *t)
{
	bool got = false;
	ssize_t n;

	if (t->err_pipe < 0)
		return false;
	fflush(stderr);
	while ((n = read(t->err_pipe, t->err_buf + t->err_len,
			 sizeof(t->err_buf) - 1 - t->err_len)) > 0) {
		char *nl;

		t->err_len += (size_t)n;
		t->err_buf[t->err_len] = 0;
		while ((nl = strchr(t->err_buf, '\n')) || t->err_len == sizeof(t->err_buf) - 1) {
			const char *s = t->err_buf;
			size_t used;

			if (nl)
				*nl = 0;
			used = nl ? (size_t)(nl - t->err_buf) + 1 : t->err_len;
			if (!strncmp(s, "liveprof: ", 10))
				s += 10;
			if (*s)
				set_msg(t, !strstr(s, "warning"), "%s", s);
			memmove(t->err_buf, t->err_buf + used, t->err_len - used + 1);
			t->err_len -= used;
			got = true;
		}
	}
	return got;
}

static void curses_end(void)
{
	if (!g_curses_on)
		return;
	g_curses_on = false;
	endwin();
	if (g_screen)
		delscreen(g_screen);
	g_screen = NULL;
	if (g_tui)
		restore_stderr(g_tui);
}

static void atexit_guard(void)
{
	curses_end();
}

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
static struct sigaction old_crash[sizeof(crash_signals) / sizeof(crash_signals[0])];

/* A crash must not leave the terminal raw; then die the way we were going to. */
static void on_crash(int sig)
{
	if (g_curses_on) {
		g_curses_on = false;
		endwin();
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void crash_guard(bool on)
{
	for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++) {
		if (on) {
			struct sigaction sa = {.sa_handler = on_crash, .sa_flags = SA_RESETHAND};

			sigemptyset(&sa.sa_mask);
			sigaction(crash_signals[i], &sa, &old_crash[i]);
		} else {
			sigaction(crash_signals[i], &old_crash[i], NULL);
		}
	}
}

static void init_colours(void)
{
	static const struct {
		short fg, bg;
		attr_t extra, mono;
	} spec[C_NR] = {
		[C_NORMAL] = {-1, -1, 0, 0},
		[C_STATUS] = {COLOR_BLACK, COLOR_CYAN, 0, A_REVERSE},
		[C_HEADER] = {COLOR_BLACK, COLOR_GREEN, 0, A_REVERSE},
		[C_SELECT] = {COLOR_BLACK, COLOR_CYAN, 0, A_REVERSE | A_BOLD},
		[C_HOT] = {COLOR_RED, -1, A_BOLD, A_BOLD},
		[C_COLD] = {COLOR_BLUE, -1, A_BOLD, A_DIM},
		[C_MATCH] = {COLOR_BLACK, COLOR_YELLOW, 0, A_UNDERLINE | A_BOLD},
		[C_ERROR] = {COLOR_RED, -1, A_BOLD, A_BOLD | A_REVERSE},
		[C_INFO] = {COLOR_CYAN, -1, 0, 0},
		[C_BAR] = {COLOR_GREEN, -1, 0, 0},
		[C_KEY] = {COLOR_BLACK, COLOR_WHITE, 0, A_REVERSE},
		[C_THRESH] = {COLOR_YELLOW, -1, A_BOLD, A_BOLD | A_UNDERLINE},
		[C_ICE1] = {COLOR_BLACK, COLOR_RED, 0, A_REVERSE},
		[C_ICE2] = {COLOR_BLACK, COLOR_YELLOW, 0, 0},
	};
	bool colour = has_colors() && start_color() == OK;

	if (colour && use_default_colors() != OK) {
		/* Without -1 as "the terminal's own", pick black on white. */
		assume_default_colors(COLOR_WHITE, COLOR_BLACK);
	}
	for (int i = 0; i < C_NR; i++) {
		if (colour && i && i < COLOR_PAIRS) {
			init_pair((short)i, spec[i].fg, spec[i].bg);
			attrs[i] = COLOR_PAIR(i) | spec[i].extra;
		} else {
			attrs[i] = colour ? spec[i].extra : spec[i].mono;
		}
	}
}

static int curses_start(struct tui *t)
{
	static bool registered;

	/* Wide-char curses needs the character set; numbers stay in "C". */
	setlocale(LC_CTYPE, "");
	g_screen = newterm(NULL, stdout, stdin);
	if (!g_screen)
		return -ENOTTY;
	set_term(g_screen);
	g_curses_on = true;
	g_tui = t;
	if (!registered && !atexit(atexit_guard))
		registered = true;
	crash_guard(true);
	cbreak(); /* not raw(): Ctrl-C must still raise SIGINT and set *stop */
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(ESC_DELAY_MS);
	curs_set(0);
	init_colours();
	capture_stderr(t);
	return 0;
}

static void tui_free(struct tui *t)
{
	model_free(&t->m);
	pathset_free(&t->expand);
	free(t->top_rows);
	free(t->tree_rows);
	free(t->diff_rows);
	for (int i = 0; i < t->cmd.n_hist; i++)
		free(t->cmd.hist[i]);
	for (int i = 0; i < t->find.n_hist; i++)
		free(t->find.hist[i]);
}

/* Samples per second, from the daemon's own count at each tick. */
static bool on_tick(struct tui *t)
{
	struct daemon *d = t->d;
	uint64_t now;

	if (d->last_tick_ns == t->last_tick_seen)
		return false;
	now = daemon__now_ns();
	if (t->prev_rate_ns && now > t->prev_rate_ns)
		t->samples_per_s = (double)(d->samples - t->prev_samples) * 1e9 /
				   (double)(now - t->prev_rate_ns);
	t->prev_samples = d->samples;
	t->prev_rate_ns = now;
	t->last_tick_seen = d->last_tick_ns;
	return true;
}

/**
 * tui_run - run the interactive UI over daemon @d until the user quits,
 * *@stop is set (SIGINT/SIGTERM) or every target has exited
 * @d: a running daemon; the UI polls it, adds and removes traces and the
 *     split, and leaves it running for the caller's final report
 * @stop: set asynchronously by the caller's signal handler
 *
 * The terminal is restored on every path out (return, exit(), crash).
 *
 * Return: 0, or -ENOTTY if the terminal cannot be driven by curses (the
 * caller falls back to batch mode), or -ENOMEM.
 */
int tui_run(struct daemon *d, volatile sig_atomic_t *stop)
{
	struct tui *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	t->d = d;
	t->stop = stop;
	t->window = true;
	t->show_offcpu = true;
	t->last_tick_seen = d->last_tick_ns;
	t->prev_samples = d->samples;
	t->prev_rate_ns = daemon__now_ns();
	t->err_pipe = t->saved_stderr = -1;
	err = curses_start(t);
	if (err) {
		free(t);
		return err;
	}
	rebuild(t);
	draw(t);
	while (!*stop && !t->quit) {
		struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
		int flags = 0, ch;

		/* Wait for a key, not for the ring buffer: input must feel instant. */
		poll(&pfd, 1, POLL_MS);
		err = daemon__poll(d, 0);
		if (err && err != -EINTR && !t->msg_err)
			set_msg(t, true, "reading events: %s", strerror(-err));
		if (on_tick(t)) {
			if (!daemon__targets_alive(d)) {
				t->quit = true;
				break;
			}
			flags |= H_REDRAW;
			/* Paused means frozen: the window still slides underneath. */
			if (!d->paused)
				t->rebuild_due = true;
		}
		/*
		 * A rebuild with tens of thousands of stacks takes tens of ms:
		 * while keys are coming, let them have the CPU, but never show
		 * data older than MAX_DEFER_NS.
		 */
		if (t->rebuild_due && (now_ns() - t->last_key_ns >= KEY_IDLE_NS ||
				       now_ns() - t->m.built_ns >= MAX_DEFER_NS))
			flags |= H_REBUILD | H_REDRAW;
		/* Until the first samples show, do not make the user wait a tick. */
		if (!t->m.funcs.total && !d->paused &&
		    d->samples + d->offcpu_events != t->m.built_samples &&
		    now_ns() - t->m.built_ns >= EARLY_BUILD_NS)
			flags |= H_REBUILD | H_REDRAW;
		while ((ch = getch()) != ERR) {
			int r;

			if (!t->key_ns)
				t->key_ns = now_ns();
			t->last_key_ns = t->key_ns;
			r = handle_key(t, ch);
			flags |= H_REDRAW;
			if (r & H_QUIT) {
				t->quit = true;
				break;
			}
			/* The next key of a burst (Space then Down) must see
			 * the rows this one changed. */
			if (r & H_REBUILD)
				rebuild(t);
			else if (r & H_RELAYOUT && relayout(t))
				set_msg(t, true, "out of memory");
		}
		if (t->quit)
			break;
		if (drain_stderr(t))
			flags |= H_REDRAW;
		if (flags & H_REBUILD)
			rebuild(t);
		if (flags & H_REDRAW)
			draw(t);
	}
	crash_guard(false);
	curses_end();
	g_tui = NULL;
	tui_free(t);
	free(t);
	return 0;
}
