// SPDX-License-Identifier: GPL-2.0
/*
 * model.c - the view model built from the daemon's counts: the call tree
 * and the flat function table of the profile, and those of the slow and
 * fast calls of a split. Rebuilt at most once per tick; keys only move
 * over it.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ui-tui/tui_internal.h"
#include "user/session/daemon.h"
#include "user/profile/profile.h"
#include "user/session/report.h"
#include "user/session/split.h"
#include "user/profile/stack_store.h"
#include "user/util/util.h"

static uint64_t hash_str(uint64_t h, const char *s)
{
	/* FNV-1a, seeded with the parent's hash so paths hash as a chain. */
	h = lp_fnv1a(h ^ LP_FNV_OFFSET, s, strlen(s));
	return h ? h : 1;
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

/**
 * pathset_get - the expand state of the tree path @key
 * @s: the set
 * @key: a tree path
 *
 * Return: 0: no explicit state, 1: expanded, -1: collapsed.
 */
int pathset_get(const struct pathset *s, uint64_t key)
{
	if (!s->cap)
		return 0;
	for (size_t j = key & (s->cap - 1); s->keys[j]; j = (j + 1) & (s->cap - 1))
		if (s->keys[j] == key)
			return s->vals[j];
	return 0;
}

/**
 * pathset_set - set the expand state of the tree path @key
 * @s: the set
 * @key: a tree path
 * @val: 1: expanded, -1: collapsed
 *
 * Return: 0, or -ENOMEM (the set is unchanged).
 */
int pathset_set(struct pathset *s, uint64_t key, int val)
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

/**
 * pathset_free - free the memory of @s and empty it
 * @s: the set
 */
void pathset_free(struct pathset *s)
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

/**
 * tree_find - the node of @tr with the path hash @path
 * @tr: the tree
 * @path: a path hash, as in struct tnode
 *
 * Return: the node index, or NO_NODE if the tree has no such path.
 */
uint32_t tree_find(const struct tree *tr, uint64_t path)
{
	if (!tr->ht_cap)
		return NO_NODE;
	for (size_t j = path & (tr->ht_cap - 1); tr->ht[j].id1; j = (j + 1) & (tr->ht_cap - 1))
		if (tr->ht[j].path == path)
			return tr->ht[j].id1 - 1;
	return NO_NODE;
}

/* The path hash of a child: its parent's path mixed with its name's hash. */
static uint64_t path_of(uint64_t parent_path, uint64_t name_hash)
{
	uint64_t x = lp_mix64(parent_path * 0x9e3779b97f4a7c15ULL ^ name_hash);

	return x ? x : 1;
}

/* The child @name of @parent, created if needed; NO_NODE on ENOMEM. */
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

/**
 * tree_mark_search - mark matches and subtrees holding one, bottom-up
(children follow parents)
 * @tr: the tree
 * @needle: the search, case-insensitive; empty matches nothing
 */
void tree_mark_search(struct tree *tr, const char *needle)
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

/**
 * push_row - append @id to a growing array of rows
 * @rows: the array, reallocated as needed; the caller frees it
 * @n: rows in use
 * @cap: rows allocated
 * @id: the row to append
 *
 * Return: 0, or -ENOMEM (the array is unchanged).
 */
int push_row(uint32_t **rows, size_t *n, size_t *cap, uint32_t id)
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

/**
 * use_weight - whether the views count time (off-CPU) or samples
 * @t: the UI state
 *
 * Return: true when values are weights in ns.
 */
bool use_weight(const struct tui *t)
{
	return t->d->core.opts->offcpu;
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

/**
 * model_drop_split - free the split part of the model
 * @m: the model
 */
void model_drop_split(struct model *m)
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
	err = daemon__split_compute(d, t->window, use_weight(t), &m->sr);
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

/**
 * model_build - rebuild the model of @t from the daemon
 * @t: the UI state
 *
 * Names new stacks first. Builds the window or the whole run, with or
 * without off-CPU samples, as @t says.
 *
 * Return: 0, or a negative errno; the model is then partial but consistent.
 */
int model_build(struct tui *t)
{
	struct model *m = &t->m;
	struct daemon *d = t->d;
	struct counts win, c;
	uint64_t t0 = lp_now_ns();
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
	m->built_ns = lp_now_ns();
	m->build_cost_ns = m->built_ns - t0;
	return err;
}

/**
 * model_free - free everything the model holds and zero it
 * @m: the model
 */
void model_free(struct model *m)
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

/**
 * zoomed_profile - the samples under the zoomed frame, whole stacks kept so
that the file still says where the frame was called from
 * @t: the UI state; the Tree view must be zoomed
 *
 * Return: a new profile the caller frees, or NULL on allocation failure.
 */
struct profile *zoomed_profile(struct tui *t)
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
