// SPDX-License-Identifier: GPL-2.0
/*
 * counts.c - stack id -> (count, weight), in one of two layouts.
 *
 * Hashed (counts__init): open addressing on the id, at most half full;
 * for tables that hold a subset of the ids (a window slot, a split class).
 * Dense (counts__init_dense): the slot of id i is slots[i]; for the whole
 * run's counts, which hold nearly every id. Ids are handed out in order,
 * so every new stack lands next to the one before: no cache miss, no
 * rehash, and half the memory of a table at most half full. Both keep
 * id + 1 in .id, so counts_for_each() reads either.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/stack_store.h"
#include "user/util/util.h"

/*
 * Consecutive ids that share neighbouring slots of a hashed table. The
 * stacks new within one second have consecutive ids: with each id's slot
 * hashed on its own, counting one was a cache miss per table; runs of
 * ID_RUN keep them on the lines the ids before them used, while the runs
 * themselves are spread over the table as single ids were.
 */
#define ID_RUN 8

void counts__init(struct counts *c)
{
	memset(c, 0, sizeof(*c));
}

void counts__init_dense(struct counts *c)
{
	memset(c, 0, sizeof(*c));
	c->dense = true;
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
	bool dense = c->dense;

	free(c->slots);
	counts__init(c);
	c->dense = dense;
}

static size_t id_slot(uint32_t key, size_t cap)
{
	uint64_t run = (uint64_t)(key / ID_RUN) * 0x9e3779b97f4a7c15ULL >> 20;

	return (run * ID_RUN + key % ID_RUN) & (cap - 1);
}

/* Move every entry of @c into a zeroed hashed table of @cap slots. */
static int rehash(struct counts *c, size_t cap)
{
	struct stack_count *s = lp_zalloc_written(cap * sizeof(*s));

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

/* Dense: room for ids below @bound. realloc() keeps what is there and
 * moves a large block by remapping it, so only the new part is written. */
static int dense_grow(struct counts *c, size_t bound)
{
	size_t cap = c->cap ? c->cap : 256;
	struct stack_count *s;

	while (cap < bound)
		cap *= 2;
	if (cap == c->cap)
		return 0;
	s = realloc(c->slots, cap * sizeof(*s));
	if (!s)
		return -ENOMEM;
	memset(s + c->cap, 0, (cap - c->cap) * sizeof(*s));
	c->slots = s;
	c->cap = cap;
	return 0;
}

int counts__reserve(struct counts *c, size_t n)
{
	size_t cap = c->cap ? c->cap : 256;

	if (c->dense)
		return 0; /* room follows the ids, not their number */
	while ((n + 1) * 2 > cap)
		cap *= 2;
	return cap > c->cap ? rehash(c, cap) : 0;
}

void counts__prefetch(const struct counts *c, uint32_t id)
{
	if (c->dense) {
		if (id < c->cap)
			__builtin_prefetch(&c->slots[id], 1);
	} else if (c->cap) {
		__builtin_prefetch(&c->slots[id_slot(id + 1, c->cap)], 1);
	}
}

/* The slot of @key in @c, found or empty; @c has room (hashed: below half full). */
static struct stack_count *slot_of(struct counts *c, uint32_t key)
{
	size_t i;

	if (c->dense)
		return &c->slots[key - 1];
	i = id_slot(key, c->cap);
	while (c->slots[i].id && c->slots[i].id != key)
		i = (i + 1) & (c->cap - 1);
	return &c->slots[i];
}

int counts__add(struct counts *c, uint32_t id, uint64_t count, uint64_t weight_ns)
{
	uint32_t key = id + 1;
	struct stack_count *sc;

	if (!key) /* UINT32_MAX: its key would be the empty-slot marker */
		return -EINVAL;
	if (c->dense ? id >= c->cap && dense_grow(c, (size_t)id + 1)
		     : (c->n + 1) * 2 > c->cap && rehash(c, c->cap ? c->cap * 2 : 256))
		return -ENOMEM;
	sc = slot_of(c, key);
	if (!sc->id) {
		sc->id = key;
		c->n++;
	}
	sc->count += count;
	sc->weight_ns += weight_ns;
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

int counts__merge_unflagged(struct counts *dst, const struct counts *src,
			    const struct stack_store *ss, uint32_t flags)
{
	counts_for_each(src, sc)
	{
		uint32_t f;

		if (stack_store__flags(ss, stack_count__id(sc), &f) && !(f & flags) &&
		    counts__add(dst, stack_count__id(sc), sc->count, sc->weight_ns))
			return -ENOMEM;
	}
	return 0;
}

void counts__get(const struct counts *c, uint32_t id, uint64_t *count, uint64_t *weight_ns)
{
	uint32_t key = id + 1;
	size_t i;

	*count = *weight_ns = 0;
	if (c->dense) {
		if (id < c->cap && c->slots[id].id) {
			*count = c->slots[id].count;
			*weight_ns = c->slots[id].weight_ns;
		}
		return;
	}
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

/* Where stack @id goes under @map. */
static uint32_t remapped(uint32_t id, const uint32_t *map, size_t n_map)
{
	return id < n_map && map[id] ? map[id] - 1 : id;
}

/* Does @map send what it moves from @i on again (a chain)? */
static bool moves_twice(const uint32_t *map, size_t n_map, size_t i)
{
	size_t to = map[i] - 1;

	return to < n_map && map[to] && map[to] - 1 != to;
}

/*
 * Dense counts are remapped where they are: a folded id's slot moves into
 * its kept id's. Building a new table instead wrote every page of one as
 * large as the whole run's ids, at each reclaim pass, and faulted them in
 * again: most of what a pass cost on a run of distinct stacks.
 * Return: 0, 1 if @map moves some counts twice (rebuild), or -ENOMEM.
 */
static int remap_dense(struct counts *c, const uint32_t *map, size_t n_map)
{
	size_t need = 0;

	/* room first, so that a failure changes nothing; a target that moves
	 * on itself would take what was moved into it along */
	for (size_t i = 0; i < c->cap && i < n_map; i++) {
		if (!c->slots[i].id || !map[i])
			continue;
		if (moves_twice(map, n_map, i))
			return 1;
		if (map[i] > need)
			need = map[i];
	}
	if (need > c->cap && dense_grow(c, need))
		return -ENOMEM;
	for (size_t i = 0; i < c->cap && i < n_map; i++) {
		struct stack_count *from = &c->slots[i], *to;

		if (!from->id || !map[i] || map[i] - 1 == i)
			continue;
		to = &c->slots[map[i] - 1];
		if (!to->id) {
			to->id = map[i];
			c->n++;
		}
		to->count += from->count;
		to->weight_ns += from->weight_ns;
		*from = (struct stack_count){0};
		c->n--;
	}
	return 0;
}

int counts__remap(struct counts *c, const uint32_t *map, size_t n_map)
{
	struct counts old = *c;
	size_t cap = old.cap;
	int err;

	if (!old.cap)
		return 0;
	if (old.dense && (err = remap_dense(c, map, n_map)) <= 0)
		return err;
	/* dense: as many slots as the highest id that will be counted needs */
	for (size_t i = 0; old.dense && i < old.cap; i++)
		while (old.slots[i].id && remapped(old.slots[i].id - 1, map, n_map) >= cap)
			cap *= 2;
	c->slots = lp_zalloc_written(cap * sizeof(*c->slots));
	if (!c->slots) {
		*c = old;
		return -ENOMEM;
	}
	c->cap = cap;
	c->n = 0;
	c->total_count = c->total_weight = 0;
	for (size_t i = 0; i < old.cap; i++) {
		const struct stack_count *sc = &old.slots[i];

		/* no growth: at most as many entries as before, same room */
		if (sc->id)
			counts__add(c, remapped(sc->id - 1, map, n_map), sc->count, sc->weight_ns);
	}
	free(old.slots);
	return 0;
}
