// SPDX-License-Identifier: GPL-2.0
/*
 * model_tree.c - the call tree the Tree view walks, and the path set that keeps
 * folds and marks across rebuilds (keyed by the hash of a frame path).
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ui-tui/tui_internal.h"
#include "user/session/daemon.h"
#include "user/profile/profile.h"
#include "user/session/report.h"
#include "user/session/split.h"
#include "user/profile/stack_store.h"
#include "user/util/util.h"
#include "ui-tui/tui_internal.h"

uint64_t model_hash_str(uint64_t h, const char *s)
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

void tree_reset(struct tree *tr)
{
	tr->len = 0;
	tr->grand[0] = tr->grand[1] = 0;
	if (tr->ht)
		memset(tr->ht, 0, tr->ht_cap * sizeof(*tr->ht));
}

void tree_free(struct tree *tr)
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
uint64_t model_path_of(uint64_t parent_path, uint64_t name_hash)
{
	uint64_t x = lp_mix64(parent_path * 0x9e3779b97f4a7c15ULL ^ name_hash);

	return x ? x : 1;
}

/* The child @name of @parent, created if needed; NO_NODE on ENOMEM. */
static uint32_t tree_child(struct tree *tr, uint32_t parent, uint64_t parent_path, const char *name,
			   uint64_t name_hash)
{
	uint64_t path = model_path_of(parent_path, name_hash);
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

uint64_t model_sample_value(const struct profile_sample *s, bool weight)
{
	return weight ? s->weight_ns : s->count;
}

/**
 * model_frame_label - what the views call frame @i of @p
 * @p: the profile; a label for an inlined frame is interned in it
 * @i: the frame id
 *
 * The frame's name, and for a function inlined into its caller
 * "name [inlined]": interned in @p, so it lives as long as the tree built
 * from it, and a real copy of the same function is a node apart.
 *
 * Return: the label, or NULL when out of memory.
 */
const char *model_frame_label(struct profile *p, size_t i)
{
	const struct frame *f = &p->frames[i];
	char buf[512];

	if (!f->inlined)
		return f->name;
	snprintf(buf, sizeof(buf), "%s " TUI_INLINED_MARK, f->name);
	return profile__intern_str(p, buf);
}

/* Add every sample of @p into class @cls of @tr. Node 0 is a virtual root. */
int tree_add_profile(struct tree *tr, struct profile *p, int cls, bool weight)
{
	/* Hash each frame's name once, not once per sample and depth. */
	uint64_t *fh = malloc((p->n_frames ? p->n_frames : 1) * sizeof(*fh));
	const char **names = malloc((p->n_frames ? p->n_frames : 1) * sizeof(*names));
	int err = fh && names ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < p->n_frames; i++) {
		names[i] = model_frame_label(p, i);
		if (!names[i])
			err = -ENOMEM;
		else
			fh[i] = model_hash_str(0, names[i]);
	}
	if (!err && !tr->len && tree_child(tr, NO_NODE, 0, "[all]", 0) == NO_NODE)
		err = -ENOMEM;
	if (err) {
		free(fh);
		free(names);
		return err;
	}
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint64_t v = model_sample_value(s, weight);
		uint64_t path = tr->n[0].path;
		uint32_t cur = 0;

		tr->n[0].total[cls] += v;
		for (uint32_t k = 0; k < s->depth; k++) {
			uint32_t f = s->frames[k];

			cur = tree_child(tr, cur, path, names[f], fh[f]);
			if (cur == NO_NODE) {
				free(fh);
				free(names);
				return -ENOMEM;
			}
			path = model_path_of(path, fh[f]);
			tr->n[cur].total[cls] += v;
		}
		tr->n[cur].self[cls] += v;
	}
	tr->grand[cls] += tr->n[0].total[cls];
	free(fh);
	free(names);
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
int tree_sort(struct tree *tr)
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
