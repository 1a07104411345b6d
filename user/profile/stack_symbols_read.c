// SPDX-License-Identifier: GPL-2.0
/*
 * stack_symbols_read.c - reading symbolized stacks back: a stack's path
 * hash and equality (split's grouping), its frames, and profiles built by
 * copying frame ids through a remap table.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/stack_symbols.h"
#include "user/profile/stack_symbols_internal.h"
#include "user/util/util.h"

/* The frame as it shows in a profile's name-level views: all but its address. */
static uint64_t frame_path_hash(uint64_t h, const struct frame *f)
{
	h = lp_mix64(h ^ (uintptr_t)f->name);
	h = lp_mix64(h ^ (uintptr_t)f->module ^ ((uint64_t)(uintptr_t)f->file << 1));
	h = lp_mix64(h ^ ((uint64_t)(uint32_t)f->line << 8) ^ ((uint64_t)f->kind << 1) ^
		     f->inlined);
	/* the root's address is the pid: processes stay apart */
	return f->kind == FRAME_ROOT ? lp_mix64(h ^ f->addr) : h;
}

static bool frame_same_path(const struct frame *a, const struct frame *b)
{
	return a->name == b->name && a->module == b->module && a->path == b->path &&
	       a->build_id == b->build_id && a->file == b->file && a->line == b->line &&
	       a->kind == b->kind && a->inlined == b->inlined &&
	       (a->kind != FRAME_ROOT || a->addr == b->addr);
}

/* ss->path_hashes for every frame of the table so far; 0 or -ENOMEM. */
static int path_hashes_update(struct stack_symbols *ss)
{
	size_t n = ss->table->n_frames;

	if (n > ss->cap_path_hashes) {
		size_t cap = n + n / 2 + 256;
		uint64_t *h = realloc(ss->path_hashes, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		ss->path_hashes = h;
		ss->cap_path_hashes = cap;
	}
	for (; ss->n_path_hashes < n; ss->n_path_hashes++)
		ss->path_hashes[ss->n_path_hashes] =
			frame_path_hash(0, &ss->table->frames[ss->n_path_hashes]);
	return 0;
}

int stack_symbols_path_hash_of(struct stack_symbols *ss, const uint32_t *ids, uint32_t depth,
			       uint64_t *hash)
{
	const uint64_t *fh;
	const uint64_t k = 0x9e3779b97f4a7c15ULL;
	uint64_t a = depth, b = a ^ 0x94d049bb133111ebULL, c = a ^ 0xbf58476d1ce4e5b9ULL,
		 e = a ^ 0x2545f4914f6cdd1dULL;
	uint32_t i = 0;

	if (ss->n_path_hashes < ss->table->n_frames && path_hashes_update(ss))
		return -ENOMEM;
	fh = ss->path_hashes; /* moved by the update */
	/*
	 * One multiply per frame (the frames' own hashes are mixed already),
	 * in four lanes of every fourth frame: one chain through a deep
	 * stack waited on a multiply per frame, and every new stack pays it.
	 */
	for (; i + 4 <= depth; i += 4) {
		a = (a ^ fh[ids[i]]) * k;
		b = (b ^ fh[ids[i + 1]]) * k;
		c = (c ^ fh[ids[i + 2]]) * k;
		e = (e ^ fh[ids[i + 3]]) * k;
	}
	for (; i < depth; i++)
		a = (a ^ fh[ids[i]]) * k;
	*hash = lp_mix64(lp_mix64(lp_mix64(lp_mix64(a) ^ b) ^ c) ^ e);
	return 0;
}

int stack_symbols__path_hash(struct stack_symbols *ss, uint32_t id, uint64_t *hash)
{
	if (id >= ss->n || !ss->stacks[id].packed)
		return -ENOENT;
	*hash = ss->stacks[id].path_hash;
	return 0;
}

bool stack_symbols__same_path(const struct stack_symbols *ss, uint32_t a, uint32_t b)
{
	uint32_t x[MAX_FRAMES], y[MAX_FRAMES], depth;

	if (a >= ss->n || b >= ss->n || !ss->stacks[a].packed || !ss->stacks[b].packed)
		return false;
	if (ss->stacks[a].depth != ss->stacks[b].depth)
		return false;
	depth = sym_ids_unpack(&ss->stacks[a], x);
	sym_ids_unpack(&ss->stacks[b], y);
	for (uint32_t i = 0; i < depth; i++)
		if (x[i] != y[i] &&
		    !frame_same_path(&ss->table->frames[x[i]], &ss->table->frames[y[i]]))
			return false;
	return true;
}

int stack_symbols__frames(struct stack_symbols *ss, uint32_t id, const struct frame **frames,
			  uint32_t *depth)
{
	static __thread struct frame buf[MAX_FRAMES];
	uint32_t ids[MAX_FRAMES], n;

	if (id >= ss->n || !ss->stacks[id].packed)
		return -ENOENT;
	n = sym_ids_unpack(&ss->stacks[id], ids);
	for (uint32_t i = 0; i < n; i++)
		buf[i] = ss->table->frames[ids[i]];
	*frames = buf;
	*depth = n;
	return 0;
}

struct profile *stack_symbols__new_profile(struct stack_symbols *ss, const char *name)
{
	struct profile *p = profile__new(name);

	ss->remap_for = NULL; /* a new profile may reuse a freed one's address */
	return p;
}

int stack_symbols__add_counts(struct stack_symbols *ss, struct profile *out, const struct counts *c,
			      const struct label *labels, uint32_t n_labels)
{
	uint32_t ids[MAX_FRAMES], fids[MAX_FRAMES];

	if (ss->remap_for != out || ss->remap_cap < ss->table->n_frames) {
		size_t cap = ss->table->n_frames + 1024;
		uint32_t *r = calloc(cap, sizeof(*r));

		if (!r)
			return -ENOMEM;
		/* Keep the ids already mapped for this profile. */
		if (ss->remap_for == out && ss->remap)
			memcpy(r, ss->remap, ss->remap_cap * sizeof(*r));
		free(ss->remap);
		ss->remap = r;
		ss->remap_cap = cap;
		ss->remap_for = out;
	}
	counts_for_each(c, sc)
	{
		uint32_t id = stack_count__id(sc);
		uint32_t depth;
		int err;

		if (id >= ss->n || !ss->stacks[id].packed)
			continue; /* not symbolized yet: next build has it */
		depth = sym_ids_unpack(&ss->stacks[id], fids);
		for (uint32_t i = 0; i < depth; i++) {
			uint32_t fid = fids[i];

			if (!ss->remap[fid]) {
				int64_t nid = profile__intern_frame(out, &ss->table->frames[fid]);

				if (nid < 0)
					return (int)nid;
				ss->remap[fid] = (uint32_t)nid + 1;
			}
			ids[i] = ss->remap[fid] - 1;
		}
		err = profile__add(out, ids, depth, sc->count, sc->weight_ns, labels, n_labels);
		if (err)
			return err;
	}
	return 0;
}
