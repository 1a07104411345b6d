// SPDX-License-Identifier: GPL-2.0
/*
 * stack_store.c - stacks interned by content. Each stack's record and its
 * addresses are allocated together in large arenas that never move (so a
 * pointer from stack_store__get() stays valid until the store is freed);
 * a growing array maps ids to records. Interning a stack already seen
 * costs a hash and a compare.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/stack_store.h"
#include "user/util/util.h"

#define ARENA_WORDS (64 * 1024)
/* words a record takes in the arena, ahead of its addresses */
#define RECORD_WORDS ((sizeof(struct raw_stack) + sizeof(uint64_t) - 1) / sizeof(uint64_t))

struct arena {
	struct arena *next;
	size_t used, cap;
	uint64_t words[];
};

struct stack_store {
	bool per_thread;
	struct raw_stack **stacks; /* by id, each in an arena */
	uint64_t *hashes;	   /* by id */
	size_t n, cap;
	/* open addressing: the hash's high half << 32 | id + 1, 0 = empty;
	 * a probe compares the high halves in the slot itself before it
	 * touches a stored stack (each of those is a cache miss) */
	uint64_t *table;
	size_t table_cap;
	struct arena *arena;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

static uint64_t stack_hash(const struct stack_store *ss, const struct raw_stack *st)
{
	uint64_t h = mix(st->pid,
			 ((uint64_t)st->flags << 32) | ((uint64_t)st->n_user << 16) | st->n_kernel);

	if (ss->per_thread)
		h = mix(h, st->tid);
	for (unsigned i = 0; i < st->n_user; i++)
		h = mix(h, st->user[i]);
	for (unsigned i = 0; i < st->n_kernel; i++)
		h = mix(h, st->kernel[i]);
	/* mix() leaves the low bits, the table's index, weakly spread */
	h = lp_mix64(h);
	return h ? h : 1;
}

static bool stack_equal(const struct stack_store *ss, const struct raw_stack *a,
			const struct raw_stack *b)
{
	return a->pid == b->pid && a->flags == b->flags && a->n_user == b->n_user &&
	       a->n_kernel == b->n_kernel && (!ss->per_thread || a->tid == b->tid) &&
	       (!a->n_user || !memcmp(a->user, b->user, a->n_user * sizeof(uint64_t))) &&
	       (!a->n_kernel || !memcmp(a->kernel, b->kernel, a->n_kernel * sizeof(uint64_t)));
}

struct stack_store *stack_store__new(bool per_thread)
{
	struct stack_store *ss = calloc(1, sizeof(*ss));

	if (!ss)
		return NULL;
	ss->per_thread = per_thread;
	ss->table_cap = 1024;
	ss->table = calloc(ss->table_cap, sizeof(*ss->table));
	if (!ss->table) {
		free(ss);
		return NULL;
	}
	return ss;
}

void stack_store__free(struct stack_store *ss)
{
	if (!ss)
		return;
	while (ss->arena) {
		struct arena *next = ss->arena->next;

		free(ss->arena);
		ss->arena = next;
	}
	free(ss->stacks);
	free(ss->hashes);
	free(ss->table);
	free(ss);
}

static uint64_t *arena_alloc(struct stack_store *ss, size_t words)
{
	struct arena *a = ss->arena;

	if (!a || a->used + words > a->cap) {
		/* a stack larger than an arena (up to 2 x 65,535 frames) gets its own */
		size_t cap = words > ARENA_WORDS ? words : ARENA_WORDS;

		a = malloc(sizeof(*a) + cap * sizeof(uint64_t));
		if (!a)
			return NULL;
		a->used = 0;
		a->cap = cap;
		/* a full-size arena goes first, so small stacks keep filling it */
		if (cap > ARENA_WORDS && ss->arena) {
			a->next = ss->arena->next;
			ss->arena->next = a;
		} else {
			a->next = ss->arena;
			ss->arena = a;
		}
	}
	a->used += words;
	return a->words + a->used - words;
}

static uint64_t table_entry(uint64_t h, size_t id)
{
	return (h & 0xffffffff00000000ULL) | (uint32_t)(id + 1);
}

static int grow_table(struct stack_store *ss)
{
	size_t cap = ss->table_cap * 2;
	uint64_t *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t id = 0; id < ss->n; id++) {
		size_t i = ss->hashes[id] & (cap - 1);

		while (t[i])
			i = (i + 1) & (cap - 1);
		t[i] = table_entry(ss->hashes[id], id);
	}
	free(ss->table);
	ss->table = t;
	ss->table_cap = cap;
	return 0;
}

int64_t stack_store__intern(struct stack_store *ss, const struct raw_stack *st)
{
	uint64_t h = stack_hash(ss, st);
	size_t i = h & (ss->table_cap - 1);
	struct raw_stack *copy;
	uint64_t *words;

	while (ss->table[i]) {
		uint32_t id = (uint32_t)ss->table[i] - 1;

		if ((ss->table[i] >> 32) == (h >> 32) && ss->hashes[id] == h &&
		    stack_equal(ss, ss->stacks[id], st))
			return id;
		i = (i + 1) & (ss->table_cap - 1);
	}
	if (ss->n >= UINT32_MAX - 1)
		return -E2BIG;
	if (ss->n == ss->cap) {
		size_t cap = ss->cap ? ss->cap * 2 : 1024;
		struct raw_stack **s = realloc(ss->stacks, cap * sizeof(*s));
		uint64_t *hs;

		if (!s)
			return -ENOMEM;
		ss->stacks = s;
		hs = realloc(ss->hashes, cap * sizeof(*hs));
		if (!hs)
			return -ENOMEM;
		ss->hashes = hs;
		ss->cap = cap;
	}
	words = arena_alloc(ss, RECORD_WORDS + st->n_user + st->n_kernel);
	if (!words)
		return -ENOMEM;
	copy = (struct raw_stack *)words;
	words += RECORD_WORDS;
	*copy = *st;
	copy->user = words;
	copy->kernel = words + st->n_user;
	if (st->n_user)
		memcpy(words, st->user, st->n_user * sizeof(uint64_t));
	if (st->n_kernel)
		memcpy(words + st->n_user, st->kernel, st->n_kernel * sizeof(uint64_t));
	ss->stacks[ss->n] = copy;
	ss->hashes[ss->n] = h;
	ss->table[i] = table_entry(h, ss->n);
	ss->n++;
	/* Keep the load factor under one half. */
	if (ss->n * 2 > ss->table_cap && grow_table(ss))
		return -ENOMEM;
	return ss->n - 1;
}

const struct raw_stack *stack_store__get(const struct stack_store *ss, uint32_t id)
{
	return id < ss->n ? ss->stacks[id] : NULL;
}

size_t stack_store__count(const struct stack_store *ss)
{
	return ss->n;
}

void counts__init(struct counts *c)
{
	memset(c, 0, sizeof(*c));
}

void counts__clear(struct counts *c)
{
	if (c->slots)
		memset(c->slots, 0, c->cap * sizeof(*c->slots));
	c->n = 0;
	c->total_count = 0;
	c->total_weight = 0;
}

void counts__free(struct counts *c)
{
	free(c->slots);
	counts__init(c);
}

static size_t id_slot(uint32_t id, size_t cap)
{
	return ((uint64_t)id * 0x9e3779b97f4a7c15ULL >> 20) & (cap - 1);
}

static int counts_grow(struct counts *c)
{
	size_t cap = c->cap ? c->cap * 2 : 256;
	struct stack_count *s = calloc(cap, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < c->cap; i++) {
		size_t j;

		if (!c->slots[i].id)
			continue;
		j = id_slot(c->slots[i].id, cap);
		while (s[j].id)
			j = (j + 1) & (cap - 1);
		s[j] = c->slots[i];
	}
	free(c->slots);
	c->slots = s;
	c->cap = cap;
	return 0;
}

int counts__add(struct counts *c, uint32_t id, uint64_t count, uint64_t weight_ns)
{
	uint32_t key = id + 1;
	size_t i;

	if (!key) /* UINT32_MAX: its key would be the empty-slot marker */
		return -EINVAL;
	if ((c->n + 1) * 2 > c->cap && counts_grow(c))
		return -ENOMEM;
	i = id_slot(key, c->cap);
	while (c->slots[i].id && c->slots[i].id != key)
		i = (i + 1) & (c->cap - 1);
	if (!c->slots[i].id) {
		c->slots[i].id = key;
		c->n++;
	}
	c->slots[i].count += count;
	c->slots[i].weight_ns += weight_ns;
	c->total_count += count;
	c->total_weight += weight_ns;
	return 0;
}

int counts__merge(struct counts *dst, const struct counts *src)
{
	for (size_t i = 0; i < src->cap; i++) {
		const struct stack_count *sc = &src->slots[i];

		if (sc->id && counts__add(dst, sc->id - 1, sc->count, sc->weight_ns))
			return -ENOMEM;
	}
	return 0;
}

void counts__get(const struct counts *c, uint32_t id, uint64_t *count, uint64_t *weight_ns)
{
	uint32_t key = id + 1;
	size_t i;

	*count = *weight_ns = 0;
	if (!c->cap)
		return;
	i = id_slot(key, c->cap);
	while (c->slots[i].id) {
		if (c->slots[i].id == key) {
			*count = c->slots[i].count;
			*weight_ns = c->slots[i].weight_ns;
			return;
		}
		i = (i + 1) & (c->cap - 1);
	}
}
