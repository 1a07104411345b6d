// SPDX-License-Identifier: GPL-2.0
/*
 * profile.c - the profile container: interned strings, frames and samples.
 *
 * Three open-addressing hash tables (linear probing, power-of-two sizes,
 * load factor <= 1/2) live behind p->index:
 *   - strings: pointer to an arena copy; equal strings share one pointer, so
 *     frames and labels can later be compared by pointer;
 *   - frames: frame id + 1, keyed by every field (string fields by their
 *     interned pointer);
 *   - samples: sample index + 1, keyed by the frame id sequence and the
 *     labels (sorted by key, so the caller's order does not matter).
 * Strings and frame arrays live in a bump arena: nothing is freed one by one,
 * and pointers handed out stay valid while the arrays of frames and samples
 * grow.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/profile.h"
#include "user/util/util.h"

#define ARENA_CHUNK (64 * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	char data[];
};

struct htab {
	uint64_t *hashes; /* full hash, to skip most key compares */
	uint32_t *slots;  /* 0 = empty, otherwise index + 1 */
	size_t cap;	  /* power of two */
	size_t len;
};

struct profile_index {
	struct arena_chunk *arena;
	struct htab strs;
	const char **str_ptrs; /* strs slot value - 1 -> string */
	size_t n_strs, cap_strs;
	uint64_t *str_hashes;
	struct htab frames;
	struct htab samples;
};

static void *arena_alloc(struct profile_index *ix, size_t size, size_t align)
{
	struct arena_chunk *c = ix->arena;
	size_t off;

	if (c) {
		off = (c->used + align - 1) & ~(align - 1);
		if (off + size <= c->size) {
			c->used = off + size;
			return c->data + off;
		}
	}
	/* Big requests get a chunk of their own, so they waste nothing. */
	size_t chunk = size + align > ARENA_CHUNK ? size + align : ARENA_CHUNK;

	c = malloc(sizeof(*c) + chunk);
	if (!c)
		return NULL;
	c->size = chunk;
	c->next = ix->arena;
	ix->arena = c;
	off = ((uintptr_t)c->data + align - 1) & ~(uintptr_t)(align - 1);
	off -= (uintptr_t)c->data;
	c->used = off + size;
	return c->data + off;
}

static uint64_t hash_str(const char *s, size_t len)
{
	return lp_mix64(lp_fnv1a(LP_FNV_OFFSET, s, len) ^ len);
}

static inline uint64_t hash_step(uint64_t h, uint64_t v)
{
	/* Cheap per-element mixing; the final mix64 spreads the bits. */
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h;
}

static int htab_init(struct htab *t, size_t cap)
{
	t->hashes = calloc(cap, sizeof(*t->hashes));
	t->slots = calloc(cap, sizeof(*t->slots));
	if (!t->hashes || !t->slots) {
		free(t->hashes);
		free(t->slots);
		t->hashes = NULL;
		t->slots = NULL;
		return -ENOMEM;
	}
	t->cap = cap;
	t->len = 0;
	return 0;
}

static void htab_free(struct htab *t)
{
	free(t->hashes);
	free(t->slots);
}

static void htab_put(struct htab *t, uint64_t hash, uint32_t value)
{
	size_t mask = t->cap - 1;
	size_t i = hash & mask;

	while (t->slots[i])
		i = (i + 1) & mask;
	t->hashes[i] = hash;
	t->slots[i] = value;
	t->len++;
}

/* Make room for one more entry, keeping the load factor at most 1/2. */
static int htab_reserve(struct htab *t)
{
	struct htab n;

	if ((t->len + 1) * 2 <= t->cap)
		return 0;
	if (htab_init(&n, t->cap * 2))
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i])
			htab_put(&n, t->hashes[i], t->slots[i]);
	htab_free(t);
	*t = n;
	return 0;
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *n;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*arr, ncap * elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

struct profile *profile__new(const char *name)
{
	struct profile_index *ix;
	struct profile *p;

	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	ix = calloc(1, sizeof(*ix));
	if (!ix)
		goto err;
	p->index = ix;
	p->name = strdup(name ? name : "");
	if (!p->name)
		goto err;
	if (htab_init(&ix->strs, 256) || htab_init(&ix->frames, 256) ||
	    htab_init(&ix->samples, 256))
		goto err;
	return p;
err:
	profile__free(p);
	return NULL;
}

void profile__free(struct profile *p)
{
	struct profile_index *ix;

	if (!p)
		return;
	ix = p->index;
	if (ix) {
		struct arena_chunk *c = ix->arena, *next;

		for (; c; c = next) {
			next = c->next;
			free(c);
		}
		htab_free(&ix->strs);
		htab_free(&ix->frames);
		htab_free(&ix->samples);
		free(ix->str_ptrs);
		free(ix->str_hashes);
		free(ix);
	}
	free(p->frames);
	free(p->samples);
	free(p->name);
	free(p);
}

const char *profile__intern_str(struct profile *p, const char *s)
{
	struct profile_index *ix = p->index;
	size_t len, mask, i;
	uint64_t h;
	char *copy;

	if (!s)
		return NULL;
	len = strlen(s);
	h = hash_str(s, len);
	mask = ix->strs.cap - 1;
	for (i = h & mask; ix->strs.slots[i]; i = (i + 1) & mask) {
		const char *c = ix->str_ptrs[ix->strs.slots[i] - 1];

		if (ix->strs.hashes[i] == h && strcmp(c, s) == 0)
			return c;
	}
	if (htab_reserve(&ix->strs))
		return NULL;
	if (grow((void **)&ix->str_ptrs, &ix->cap_strs, ix->n_strs + 1, sizeof(*ix->str_ptrs)))
		return NULL;
	copy = arena_alloc(ix, len + 1, 1);
	if (!copy)
		return NULL;
	memcpy(copy, s, len + 1);
	ix->str_ptrs[ix->n_strs++] = copy;
	htab_put(&ix->strs, h, ix->n_strs);
	return copy;
}

/* Both frames must hold interned strings: pointer equality is string equality. */
static bool frame_eq(const struct frame *a, const struct frame *b)
{
	return a->name == b->name && a->module == b->module && a->path == b->path &&
	       a->build_id == b->build_id && a->file == b->file && a->line == b->line &&
	       a->addr == b->addr && a->kind == b->kind && a->inlined == b->inlined;
}

static uint64_t frame_hash(const struct frame *f)
{
	uint64_t h = 0;

	h = hash_step(h, (uintptr_t)f->name);
	h = hash_step(h, (uintptr_t)f->module);
	h = hash_step(h, (uintptr_t)f->path);
	h = hash_step(h, (uintptr_t)f->build_id);
	h = hash_step(h, (uintptr_t)f->file);
	h = hash_step(h, (uint64_t)(uint32_t)f->line);
	h = hash_step(h, f->addr);
	h = hash_step(h, ((uint64_t)f->kind << 1) | f->inlined);
	return lp_mix64(h);
}

int64_t profile__intern_frame(struct profile *p, const struct frame *f)
{
	struct profile_index *ix = p->index;
	struct frame k = *f;
	size_t mask, i;
	uint64_t h;

	if (!f->name)
		return -EINVAL;
	if (p->n_frames >= UINT32_MAX - 1)
		return -E2BIG;
	k.name = profile__intern_str(p, f->name);
	k.module = profile__intern_str(p, f->module);
	k.path = profile__intern_str(p, f->path);
	k.build_id = profile__intern_str(p, f->build_id);
	k.file = profile__intern_str(p, f->file);
	if (!k.name || (f->module && !k.module) || (f->path && !k.path) ||
	    (f->build_id && !k.build_id) || (f->file && !k.file))
		return -ENOMEM;

	h = frame_hash(&k);
	mask = ix->frames.cap - 1;
	for (i = h & mask; ix->frames.slots[i]; i = (i + 1) & mask) {
		uint32_t id = ix->frames.slots[i] - 1;

		if (ix->frames.hashes[i] == h && frame_eq(&p->frames[id], &k))
			return id;
	}
	if (htab_reserve(&ix->frames))
		return -ENOMEM;
	if (grow((void **)&p->frames, &p->cap_frames, p->n_frames + 1, sizeof(*p->frames)))
		return -ENOMEM;
	p->frames[p->n_frames++] = k;
	htab_put(&ix->frames, h, p->n_frames);
	return p->n_frames - 1;
}

static int label_cmp(const void *a, const void *b)
{
	const struct label *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : strcmp(x->value, y->value);
}

static uint64_t sample_hash(const uint32_t *frames, uint32_t depth, const struct label *labels,
			    uint32_t n_labels)
{
	uint64_t h = depth;
	uint32_t i = 0;

	/* Two ids per step: stacks are the hot path of profile__add. */
	for (; i + 1 < depth; i += 2)
		h = hash_step(h, ((uint64_t)frames[i] << 32) | frames[i + 1]);
	if (i < depth)
		h = hash_step(h, frames[i]);
	for (i = 0; i < n_labels; i++) {
		h = hash_step(h, (uintptr_t)labels[i].key);
		h = hash_step(h, (uintptr_t)labels[i].value);
	}
	return lp_mix64(h);
}

static bool sample_eq(const struct profile_sample *s, const uint32_t *frames, uint32_t depth,
		      const struct label *labels, uint32_t n_labels)
{
	if (s->depth != depth || s->n_labels != n_labels)
		return false;
	for (uint32_t i = 0; i < n_labels; i++)
		if (s->labels[i].key != labels[i].key || s->labels[i].value != labels[i].value)
			return false;
	return memcmp(s->frames, frames, depth * sizeof(*frames)) == 0;
}

int profile__add(struct profile *p, const uint32_t *frames, uint32_t depth, uint64_t count,
		 uint64_t weight_ns, const struct label *labels, uint32_t n_labels)
{
	struct label lab[PROFILE_MAX_LABELS];
	struct profile_index *ix = p->index;
	struct profile_sample *s;
	size_t mask, i;
	uint64_t h;

	if (!frames || depth == 0 || n_labels > PROFILE_MAX_LABELS || (n_labels && !labels))
		return -EINVAL;
	for (i = 0; i < depth; i++)
		if (frames[i] >= p->n_frames)
			return -EINVAL;
	for (i = 0; i < n_labels; i++) {
		if (!labels[i].key || !labels[i].value)
			return -EINVAL;
		lab[i].key = profile__intern_str(p, labels[i].key);
		lab[i].value = profile__intern_str(p, labels[i].value);
		if (!lab[i].key || !lab[i].value)
			return -ENOMEM;
	}
	/* A canonical order, so {a,b} and {b,a} land in the same sample. */
	if (n_labels > 1)
		qsort(lab, n_labels, sizeof(lab[0]), label_cmp);

	h = sample_hash(frames, depth, lab, n_labels);
	mask = ix->samples.cap - 1;
	for (i = h & mask; ix->samples.slots[i]; i = (i + 1) & mask) {
		s = &p->samples[ix->samples.slots[i] - 1];
		if (ix->samples.hashes[i] == h && sample_eq(s, frames, depth, lab, n_labels)) {
			s->count += count;
			s->weight_ns += weight_ns;
			p->total_count += count;
			return 0;
		}
	}

	if (p->n_samples >= UINT32_MAX - 1)
		return -E2BIG;
	if (htab_reserve(&ix->samples))
		return -ENOMEM;
	if (grow((void **)&p->samples, &p->cap_samples, p->n_samples + 1, sizeof(*p->samples)))
		return -ENOMEM;
	s = &p->samples[p->n_samples];
	memset(s, 0, sizeof(*s));
	s->frames = arena_alloc(ix, depth * sizeof(*frames), sizeof(*frames));
	if (!s->frames)
		return -ENOMEM;
	memcpy(s->frames, frames, depth * sizeof(*frames));
	s->depth = depth;
	s->count = count;
	s->weight_ns = weight_ns;
	s->n_labels = n_labels;
	memcpy(s->labels, lab, n_labels * sizeof(lab[0]));
	p->n_samples++;
	htab_put(&ix->samples, h, p->n_samples);
	p->total_count += count;
	return 0;
}

const char *profile__label(const struct profile_sample *s, const char *key)
{
	for (uint32_t i = 0; i < s->n_labels; i++)
		if (strcmp(s->labels[i].key, key) == 0)
			return s->labels[i].value;
	return NULL;
}

int profile__merge(struct profile *dst, const struct profile *src)
{
	uint32_t *map, stack_buf[256], *stack = stack_buf;
	size_t stack_cap = 256;
	int err = 0;

	if (!src->n_samples)
		return 0;
	map = malloc((src->n_frames ? src->n_frames : 1) * sizeof(*map));
	if (!map)
		return -ENOMEM;
	for (size_t i = 0; i < src->n_frames; i++) {
		int64_t id = profile__intern_frame(dst, &src->frames[i]);

		if (id < 0) {
			err = (int)id;
			goto out;
		}
		map[i] = (uint32_t)id;
	}
	for (size_t i = 0; i < src->n_samples; i++) {
		const struct profile_sample *s = &src->samples[i];

		if (s->depth > stack_cap) {
			uint32_t *n = stack == stack_buf ? NULL : stack;

			n = realloc(n, s->depth * sizeof(*n));
			if (!n) {
				err = -ENOMEM;
				goto out;
			}
			stack = n;
			stack_cap = s->depth;
		}
		for (uint32_t d = 0; d < s->depth; d++)
			stack[d] = map[s->frames[d]];
		err = profile__add(dst, stack, s->depth, s->count, s->weight_ns, s->labels,
				   s->n_labels);
		if (err)
			goto out;
	}
out:
	if (stack != stack_buf)
		free(stack);
	free(map);
	return err;
}
