// SPDX-License-Identifier: GPL-2.0
/*
 * svg_tree.c - the tree of frame paths a flamegraph draws: samples merged
 * by (parent, name, kind), one node per distinct path, and for a diff the
 * second profile's values overlaid on the paths the first one took.
 * Layout and SVG output are write_svg.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/svg_internal.h"
#include "user/util/util.h"

#define ROOT_NAME "all"

static uint64_t name_hash(const char *s)
{
	return lp_fnv1a(LP_FNV_OFFSET, s, strlen(s));
}

static uint64_t node_key(uint32_t parent, uint64_t nh, enum frame_kind kind)
{
	uint64_t h = nh ^ ((uint64_t)parent * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)kind << 61);

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return h;
}

void svg_tree_free(struct tree *t)
{
	free(t->nodes);
	free(t->slots);
}

static int tree_rehash(struct tree *t)
{
	size_t n_slots = t->n_slots ? t->n_slots * 2 : 1024;
	uint32_t *slots = calloc(n_slots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		const struct node *nd = &t->nodes[i];
		size_t j = node_key(nd->parent, nd->name_hash, nd->kind) & (n_slots - 1);

		while (slots[j])
			j = (j + 1) & (n_slots - 1);
		slots[j] = i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->n_slots = n_slots;
	return 0;
}

/*
 * Return: the child of @parent called @name, created when @create, NO_NODE
 * when absent, or NO_NODE - 1 when out of memory.
 */
static uint32_t tree_child(struct tree *t, uint32_t parent, const struct frame *f, uint64_t nh,
			   bool create)
{
	size_t mask, i;
	struct node *nd;

	if (create && (t->n + 1) * 2 > t->n_slots && tree_rehash(t))
		return NO_NODE - 1;
	mask = t->n_slots - 1;
	for (i = node_key(parent, nh, f->kind) & mask; t->slots[i]; i = (i + 1) & mask) {
		nd = &t->nodes[t->slots[i] - 1];
		if (nd->parent == parent && nd->kind == f->kind && nd->inlined == f->inlined &&
		    nd->name_hash == nh && strcmp(nd->name, f->name) == 0)
			return t->slots[i] - 1;
	}
	if (!create)
		return NO_NODE;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct node *n = realloc(t->nodes, cap * sizeof(*n));

		if (!n)
			return NO_NODE - 1;
		t->nodes = n;
		t->cap = cap;
	}
	nd = &t->nodes[t->n];
	memset(nd, 0, sizeof(*nd));
	nd->name = f->name;
	nd->name_hash = nh;
	nd->parent = parent;
	nd->depth = parent == NO_NODE ? 0 : t->nodes[parent].depth + 1;
	nd->kind = f->kind;
	nd->inlined = f->inlined;
	t->slots[i] = ++t->n;
	return t->n - 1;
}

static uint64_t sample_value(const struct profile_sample *s, bool weight)
{
	return weight ? s->weight_ns : s->count;
}

/* Per-frame name hashes of @p, so building the tree hashes each name once. */
static uint64_t *frame_hashes(const struct profile *p)
{
	uint64_t *h = malloc((p->n_frames ? p->n_frames : 1) * sizeof(*h));

	if (h)
		for (size_t i = 0; i < p->n_frames; i++)
			h[i] = name_hash(p->frames[i].name);
	return h;
}

static const struct frame root_frame = {.name = ROOT_NAME, .kind = FRAME_ROOT};

int svg_tree_build(struct tree *t, const struct profile *p, bool weight)
{
	uint64_t *fh = frame_hashes(p);
	uint32_t root;
	int err = 0;

	memset(t, 0, sizeof(*t));
	if (!fh)
		return -ENOMEM;
	root = tree_child(t, NO_NODE, &root_frame, 0, true);
	if (root != 0) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint64_t v = sample_value(s, weight);
		bool off = writer__sample_offcpu(p, s);
		uint32_t n = root;

		if (!v)
			continue;
		t->nodes[root].value += v;
		if (off)
			t->nodes[root].offcpu += v;
		for (uint32_t d = 0; d < s->depth; d++) {
			const struct frame *f = &p->frames[s->frames[d]];

			n = tree_child(t, n, f, fh[s->frames[d]], true);
			if (n >= NO_NODE - 1) {
				err = -ENOMEM;
				goto out;
			}
			t->nodes[n].value += v;
			if (off)
				t->nodes[n].offcpu += v;
		}
	}
out:
	free(fh);
	if (err)
		svg_tree_free(t);
	return err;
}

int svg_tree_overlay(struct tree *t, const struct profile *p, bool weight, uint64_t *total)
{
	uint64_t *fh = frame_hashes(p);

	*total = 0;
	if (!fh)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint64_t v = sample_value(s, weight);
		uint32_t n = 0;

		*total += v;
		t->nodes[0].other += v;
		for (uint32_t d = 0; d < s->depth; d++) {
			const struct frame *f = &p->frames[s->frames[d]];

			/* Paths the slow profile never took have no frame to colour. */
			n = tree_child(t, n, f, fh[s->frames[d]], false);
			if (n == NO_NODE)
				break;
			t->nodes[n].other += v;
		}
	}
	free(fh);
	return 0;
}
