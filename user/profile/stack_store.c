// SPDX-License-Identifier: GPL-2.0
/*
 * stack_store.c - stacks interned by content. Each stack's record and its
 * addresses are one allocation (a pointer from stack_store__get() stays
 * valid until the stack is released); a growing array maps ids to
 * records. Interning a stack already seen costs a hash and a compare.
 * Released ids are reused, so the arrays stay as large as the most stacks
 * alive at once, not as all the stacks a long run has seen.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/stack_store.h"
#include "user/util/slab.h"
#include "user/util/util.h"

/* words a record takes ahead of its addresses */
#define RECORD_WORDS ((sizeof(struct raw_stack) + sizeof(uint64_t) - 1) / sizeof(uint64_t))
#define PINNED	     (1u << 31) /* in seen[]: never released */

struct stack_store {
	bool per_thread;
	struct raw_stack **stacks; /* by id; NULL: released, the id is free */
	uint64_t *hashes;	   /* by id */
	uint32_t *seen;		   /* by id: the epoch last interned, | PINNED */
	size_t n, cap;		   /* ids handed out so far (the bound), room */
	size_t live;		   /* stacks not released */
	uint32_t *free_ids;	   /* released ids, reused first */
	size_t n_free, cap_free;
	uint32_t epoch;
	uint64_t released;
	/* open addressing: the hash's high half << 32 | id + 1, 0 = empty;
	 * a probe compares the high halves in the slot itself before it
	 * touches a stored stack (each of those is a cache miss) */
	uint64_t *table;
	size_t table_cap;
	struct lp_slab *slab; /* the records */
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

/*
 * @h mixed with the @n words of @v. Four lanes, each taking every fourth
 * word: one chain of mix() through a deep stack (a multiply per frame)
 * was a tenth of what interning a new stack cost; four chains overlap.
 */
static uint64_t mix_words(uint64_t h, const uint64_t *v, unsigned int n)
{
	uint64_t a = h, b = h ^ 0x94d049bb133111ebULL, c = h ^ 0xbf58476d1ce4e5b9ULL,
		 e = h ^ 0x2545f4914f6cdd1dULL;
	unsigned int i = 0;

	for (; i + 4 <= n; i += 4) {
		a = mix(a, v[i]);
		b = mix(b, v[i + 1]);
		c = mix(c, v[i + 2]);
		e = mix(e, v[i + 3]);
	}
	for (; i < n; i++)
		a = mix(a, v[i]);
	return n < 4 ? a : mix(mix(mix(a, b), c), e);
}

uint64_t stack_store__hash(const struct stack_store *ss, const struct raw_stack *st)
{
	uint64_t h = mix(st->pid,
			 ((uint64_t)st->flags << 32) | ((uint64_t)st->n_user << 16) | st->n_kernel);

	if (ss->per_thread)
		h = mix(h, st->tid);
	h = mix_words(h, st->user, st->n_user);
	if (st->n_kernel)
		h = mix_words(h, st->kernel, st->n_kernel);
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

/* Bytes of the record of @st: the struct, then its addresses (copy_stack()). */
static size_t record_bytes(const struct raw_stack *st)
{
	return (RECORD_WORDS + st->n_user + st->n_kernel) * sizeof(uint64_t);
}

static void free_stack(struct stack_store *ss, struct raw_stack *st)
{
	if (st)
		lp_slab__free(ss->slab, st, record_bytes(st));
}

struct stack_store *stack_store__new(bool per_thread)
{
	struct stack_store *ss = calloc(1, sizeof(*ss));

	if (!ss)
		return NULL;
	ss->per_thread = per_thread;
	ss->table_cap = 1024;
	ss->table = calloc(ss->table_cap, sizeof(*ss->table));
	ss->slab = lp_slab__new();
	if (!ss->table || !ss->slab) {
		free(ss->table);
		lp_slab__delete(ss->slab);
		free(ss);
		return NULL;
	}
	return ss;
}

void stack_store__free(struct stack_store *ss)
{
	if (!ss)
		return;
	for (size_t id = 0; id < ss->n; id++)
		free_stack(ss, ss->stacks[id]);
	lp_slab__delete(ss->slab);
	free(ss->stacks);
	free(ss->hashes);
	free(ss->seen);
	free(ss->free_ids);
	free(ss->table);
	free(ss);
}

static uint64_t table_entry(uint64_t h, size_t id)
{
	return (h & 0xffffffff00000000ULL) | (uint32_t)(id + 1);
}

static int grow_table(struct stack_store *ss)
{
	size_t cap = ss->table_cap * 2;
	uint64_t *t = lp_zalloc_written(cap * sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t id = 0; id < ss->n; id++) {
		size_t i = ss->hashes[id] & (cap - 1);

		if (!ss->stacks[id])
			continue;
		while (t[i])
			i = (i + 1) & (cap - 1);
		t[i] = table_entry(ss->hashes[id], id);
	}
	free(ss->table);
	ss->table = t;
	ss->table_cap = cap;
	return 0;
}

/* Room for one more id at the end of the per-id arrays. */
static int grow_ids(struct stack_store *ss)
{
	size_t cap = ss->cap ? ss->cap * 2 : 1024;
	struct raw_stack **s = realloc(ss->stacks, cap * sizeof(*s));
	uint64_t *hs;
	uint32_t *seen;

	if (!s)
		return -ENOMEM;
	ss->stacks = s;
	hs = realloc(ss->hashes, cap * sizeof(*hs));
	if (!hs)
		return -ENOMEM;
	ss->hashes = hs;
	seen = realloc(ss->seen, cap * sizeof(*seen));
	if (!seen)
		return -ENOMEM;
	ss->seen = seen;
	ss->cap = cap;
	return 0;
}

static struct raw_stack *copy_stack(struct stack_store *ss, const struct raw_stack *st)
{
	uint64_t *words = lp_slab__alloc(ss->slab, record_bytes(st));
	struct raw_stack *copy = (struct raw_stack *)words;

	if (!words)
		return NULL;
	words += RECORD_WORDS;
	*copy = *st;
	copy->user = words;
	copy->kernel = words + st->n_user;
	if (st->n_user)
		memcpy(words, st->user, st->n_user * sizeof(uint64_t));
	if (st->n_kernel)
		memcpy(words + st->n_user, st->kernel, st->n_kernel * sizeof(uint64_t));
	return copy;
}

void stack_store__prefetch_hash(const struct stack_store *ss, uint64_t h)
{
	__builtin_prefetch(&ss->table[h & (ss->table_cap - 1)]);
}

int64_t stack_store__intern(struct stack_store *ss, const struct raw_stack *st)
{
	return stack_store__intern_hash(ss, st, stack_store__hash(ss, st));
}

int64_t stack_store__intern_hash(struct stack_store *ss, const struct raw_stack *st, uint64_t h)
{
	size_t i = h & (ss->table_cap - 1);
	struct raw_stack *copy;
	uint32_t id;

	while (ss->table[i]) {
		id = (uint32_t)ss->table[i] - 1;
		if ((ss->table[i] >> 32) == (h >> 32) && ss->hashes[id] == h &&
		    stack_equal(ss, ss->stacks[id], st)) {
			ss->seen[id] = (ss->seen[id] & PINNED) | ss->epoch;
			return id;
		}
		i = (i + 1) & (ss->table_cap - 1);
	}
	if (!ss->n_free && ss->n >= UINT32_MAX - 1)
		return -E2BIG;
	if (!ss->n_free && ss->n == ss->cap && grow_ids(ss))
		return -ENOMEM;
	copy = copy_stack(ss, st);
	if (!copy)
		return -ENOMEM;
	id = ss->n_free ? ss->free_ids[--ss->n_free] : (uint32_t)ss->n++;
	ss->stacks[id] = copy;
	ss->hashes[id] = h;
	ss->seen[id] = ss->epoch;
	ss->table[i] = table_entry(h, id);
	ss->live++;
	/* Keep the load factor under one half. */
	if (ss->live * 2 > ss->table_cap && grow_table(ss))
		return -ENOMEM;
	return id;
}

/* Take the entry of @id out of the table, moving later entries of its
 * probe run back so that no lookup stops at the hole. */
static void table_remove(struct stack_store *ss, uint32_t id)
{
	size_t mask = ss->table_cap - 1, i = ss->hashes[id] & mask, j;

	while ((uint32_t)ss->table[i] != id + 1)
		i = (i + 1) & mask;
	for (j = (i + 1) & mask; ss->table[j]; j = (j + 1) & mask) {
		size_t home = ss->hashes[(uint32_t)ss->table[j] - 1] & mask;

		/* the entry at j may fill the hole at i unless its home lies
		 * cyclically in (i, j] */
		if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
			ss->table[i] = ss->table[j];
			i = j;
		}
	}
	ss->table[i] = 0;
}

int stack_store__release(struct stack_store *ss, uint32_t id)
{
	if (id >= ss->n || !ss->stacks[id] || (ss->seen[id] & PINNED))
		return -EINVAL;
	if (ss->n_free == ss->cap_free) {
		size_t cap = ss->cap_free ? ss->cap_free * 2 : 1024;
		uint32_t *f = realloc(ss->free_ids, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		ss->free_ids = f;
		ss->cap_free = cap;
	}
	table_remove(ss, id);
	free_stack(ss, ss->stacks[id]);
	ss->stacks[id] = NULL;
	ss->free_ids[ss->n_free++] = id;
	ss->live--;
	ss->released++;
	return 0;
}

void stack_store__pin(struct stack_store *ss, uint32_t id)
{
	if (id < ss->n && ss->stacks[id])
		ss->seen[id] |= PINNED;
}

void stack_store__set_epoch(struct stack_store *ss, uint32_t epoch)
{
	ss->epoch = epoch & ~PINNED;
}

bool stack_store__idle_since(const struct stack_store *ss, uint32_t id, uint32_t epoch)
{
	return id < ss->n && ss->stacks[id] && !(ss->seen[id] & PINNED) && ss->seen[id] < epoch;
}

void stack_store__prefetch(const struct stack_store *ss, uint32_t id)
{
	const char *rec;
	size_t len;

	if (id >= ss->n || !ss->stacks[id])
		return;
	/* the record and its addresses are one block (copy_stack()) */
	rec = (const char *)ss->stacks[id];
	len = record_bytes(ss->stacks[id]);
	for (size_t off = 0; off < len; off += 64)
		__builtin_prefetch(rec + off);
}

const struct raw_stack *stack_store__get(const struct stack_store *ss, uint32_t id)
{
	return id < ss->n ? ss->stacks[id] : NULL;
}

size_t stack_store__count(const struct stack_store *ss)
{
	return ss->live;
}

size_t stack_store__id_bound(const struct stack_store *ss)
{
	return ss->n;
}

uint64_t stack_store__released(const struct stack_store *ss)
{
	return ss->released;
}
