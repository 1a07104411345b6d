// SPDX-License-Identifier: GPL-2.0
/*
 * reclaim.c - folding idle stacks into kept ones, and releasing them.
 *
 * Every whole-run holder of stack ids is remapped before any id is
 * released, so no count can ever point at a reused id: the daemon's
 * whole-run counts, the window subscriptions of HTTP scrapes, the split's
 * samples, and the holders added from outside (reclaim__add_holder).
 * Stacks that other state refers to without a remap are pinned by their
 * owners and never come here (allocation rows, lock pairs).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "user/session/reclaim.h"
#include "user/session/daemon.h"
#include "user/session/split.h"

#define MAX_HOLDERS 4

/* A kept stack, by the hash of its frames. */
struct kept {
	uint64_t hash;
	uint32_t id1; /* stack id + 1; 0 = empty */
};

struct reclaim {
	struct kept *kept; /* open addressing on hash */
	size_t cap, n;
	struct {
		reclaim_remap_fn fn;
		void *ctx;
	} holders[MAX_HOLDERS];
	int n_holders;
};

struct reclaim *reclaim__new(void)
{
	return calloc(1, sizeof(struct reclaim));
}

void reclaim__free(struct reclaim *r)
{
	if (!r)
		return;
	free(r->kept);
	free(r);
}

int reclaim__add_holder(struct reclaim *r, reclaim_remap_fn fn, void *ctx)
{
	if (r->n_holders == MAX_HOLDERS)
		return -E2BIG;
	r->holders[r->n_holders].fn = fn;
	r->holders[r->n_holders++].ctx = ctx;
	return 0;
}

void reclaim__remove_holder(struct reclaim *r, void *ctx)
{
	int n = 0;

	for (int i = 0; i < r->n_holders; i++)
		if (r->holders[i].ctx != ctx)
			r->holders[n++] = r->holders[i];
	r->n_holders = n;
}

size_t reclaim__kept(const struct reclaim *r)
{
	return r->n;
}

static int kept_grow(struct reclaim *r)
{
	size_t cap = r->cap ? r->cap * 2 : 1024;
	struct kept *k = calloc(cap, sizeof(*k));

	if (!k)
		return -ENOMEM;
	for (size_t i = 0; i < r->cap; i++) {
		size_t j;

		if (!r->kept[i].id1)
			continue;
		for (j = r->kept[i].hash & (cap - 1); k[j].id1; j = (j + 1) & (cap - 1))
			;
		k[j] = r->kept[i];
	}
	free(r->kept);
	r->kept = k;
	r->cap = cap;
	return 0;
}

/*
 * The kept stack with the frames of stack @id, making @id the kept one
 * if there is none yet (it is pinned then, and shed: kept stacks carry
 * whole-run counts for good). Return: its id, or a negative errno.
 */
static int64_t kept_for(struct reclaim *r, struct daemon *d, uint32_t id, uint64_t hash)
{
	size_t i;

	if ((r->n + 1) * 2 > r->cap && kept_grow(r))
		return -ENOMEM;
	for (i = hash & (r->cap - 1); r->kept[i].id1; i = (i + 1) & (r->cap - 1))
		if (r->kept[i].hash == hash &&
		    stack_symbols__same_path(d->core.symbols, r->kept[i].id1 - 1, id))
			return r->kept[i].id1 - 1;
	r->kept[i] = (struct kept){hash, id + 1};
	r->n++;
	stack_store__pin(d->stacks, id);
	/*
	 * Its frames are all it is kept for: its addresses go to the stacks
	 * sampled next (on_sample() sheds most stacks already; these may have
	 * been symbolized at a tick). Without memory for the shared record,
	 * it keeps its addresses, which changes nothing else.
	 */
	if (!d->keep_addresses)
		stack_store__shed(d->stacks, id);
	return id;
}

/* Every holder of ids moves the folded stacks' counts; 0 or -ENOMEM. */
static int remap_all(struct reclaim *r, struct daemon *d, const uint32_t *map, size_t n)
{
	int err = counts__remap(&d->total, map, n);

	for (struct daemon_window *w = d->windows; w && !err; w = w->next)
		err = counts__remap(&w->counts, map, n);
	if (!err && d->split)
		split__remap_stacks(d->split, map, n);
	for (int i = 0; i < r->n_holders && !err; i++)
		err = r->holders[i].fn(r->holders[i].ctx, map, n);
	return err;
}

int64_t reclaim__run(struct daemon *d, uint32_t cutoff)
{
	struct reclaim *r = d->reclaim;
	size_t bound = stack_store__id_bound(d->stacks), n_folded = 0;
	uint32_t *map = NULL;
	int64_t err = 0;

	for (uint32_t id = 0; id < bound && !err; id++) {
		uint64_t hash;
		int64_t keep;

		if (!stack_store__idle_since(d->stacks, id, cutoff) ||
		    stack_symbols__path_hash(d->core.symbols, id, &hash))
			continue; /* in use, pinned, or frames not known yet */
		keep = kept_for(r, d, id, hash);
		if (keep < 0 || keep == id) {
			err = keep < 0 ? keep : 0;
			continue;
		}
		if (!map && !(map = calloc(bound, sizeof(*map))))
			err = -ENOMEM;
		else
			map[id] = (uint32_t)keep + 1, n_folded++;
	}
	if (!err && n_folded)
		err = remap_all(r, d, map, bound);
	/* Only once nothing refers to them: a failed remap leaves them all. */
	for (uint32_t id = 0; !err && map && id < bound; id++)
		if (map[id] && (stack_symbols__forget(d->core.symbols, id) ||
				stack_store__release(d->stacks, id)))
			err = -ENOMEM;
	free(map);
	return err ? err : (int64_t)n_folded;
}
