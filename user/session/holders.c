// SPDX-License-Identifier: GPL-2.0
/*
 * holders.c - pairs of a blocked thread's stack and its waker's stack.
 *
 * The waker event follows its off-CPU sample in the same BPF program run,
 * but other CPUs' events may come between the two in the ring: the last
 * block of each thread is kept in a direct-mapped table by tid, and the
 * waker event must name the same time. Pairs are interned in an
 * open-addressing table keyed by both stack ids.
 */
#include <errno.h>
#include <stdlib.h>

#include "user/session/holders.h"

#define LAST_SLOTS 4096 /* threads blocked at once, per table slot */

struct last_block {
	uint32_t tid, waiter_id;
	uint64_t time_ns, weight_ns;
};

struct pair {
	uint32_t waiter_id, holder_id;
};

struct holders {
	struct last_block last[LAST_SLOTS];
	struct pair *pairs; /* by id */
	uint32_t n_pairs, cap_pairs;
	uint32_t *index; /* open addressing: pair id + 1, 0 = empty */
	uint32_t index_cap;
};

struct holders *holders__new(void)
{
	return calloc(1, sizeof(struct holders));
}

void holders__free(struct holders *h)
{
	if (!h)
		return;
	free(h->pairs);
	free(h->index);
	free(h);
}

void holders__on_block(struct holders *h, uint32_t tid, uint64_t time_ns, uint32_t waiter_id,
		       uint64_t weight_ns)
{
	h->last[tid % LAST_SLOTS] = (struct last_block){tid, waiter_id, time_ns, weight_ns};
}

int holders__match(const struct holders *h, uint32_t tid, uint64_t time_ns, uint32_t *waiter_id,
		   uint64_t *weight_ns)
{
	const struct last_block *b = &h->last[tid % LAST_SLOTS];

	if (b->tid != tid || b->time_ns != time_ns)
		return -ENOENT;
	*waiter_id = b->waiter_id;
	*weight_ns = b->weight_ns;
	return 0;
}

static uint32_t slot_of(const struct holders *h, uint32_t waiter_id, uint32_t holder_id)
{
	uint64_t k = ((uint64_t)waiter_id << 32 | holder_id) * 0x9e3779b97f4a7c15ULL;
	uint32_t i = (uint32_t)(k >> 32) & (h->index_cap - 1);

	while (h->index[i]) {
		const struct pair *p = &h->pairs[h->index[i] - 1];

		if (p->waiter_id == waiter_id && p->holder_id == holder_id)
			break;
		i = (i + 1) & (h->index_cap - 1);
	}
	return i;
}

/* Double the index and re-seat every pair: kept at most half full. */
static int grow_index(struct holders *h)
{
	uint32_t cap = h->index_cap ? h->index_cap * 2 : 1024;
	uint32_t *old = h->index;

	h->index = calloc(cap, sizeof(*h->index));
	if (!h->index) {
		h->index = old;
		return -ENOMEM;
	}
	h->index_cap = cap;
	for (uint32_t id = 0; id < h->n_pairs; id++)
		h->index[slot_of(h, h->pairs[id].waiter_id, h->pairs[id].holder_id)] = id + 1;
	free(old);
	return 0;
}

int64_t holders__pair(struct holders *h, uint32_t waiter_id, uint32_t holder_id)
{
	uint32_t i;

	if ((h->n_pairs + 1) * 2 > h->index_cap && grow_index(h))
		return -ENOMEM;
	i = slot_of(h, waiter_id, holder_id);
	if (h->index[i])
		return h->index[i] - 1;
	if (h->n_pairs == h->cap_pairs) {
		uint32_t cap = h->cap_pairs ? h->cap_pairs * 2 : 256;
		struct pair *v = realloc(h->pairs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		h->pairs = v;
		h->cap_pairs = cap;
	}
	h->pairs[h->n_pairs] = (struct pair){waiter_id, holder_id};
	h->index[i] = ++h->n_pairs;
	return h->n_pairs - 1;
}

int holders__get(const struct holders *h, uint32_t id, uint32_t *waiter_id, uint32_t *holder_id)
{
	if (id >= h->n_pairs)
		return -ENOENT;
	*waiter_id = h->pairs[id].waiter_id;
	*holder_id = h->pairs[id].holder_id;
	return 0;
}
