/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stack_store.h - interning of raw stacks. A stack is the tuple
 * (pid, off-CPU flag, user addresses, kernel addresses); equal stacks get
 * the same small id, assigned once, so that everything downstream
 * (counts, windows, split classes) handles 4-byte ids, and symbolization
 * happens once per distinct stack, lazily. A stack nobody counts any
 * more can be released (user/session/reclaim.h) and its id reused.
 */
#ifndef LP_USER_STACK_STORE_H
#define LP_USER_STACK_STORE_H

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

#include "user/profile/stack_key.h"

#define STACK_F_OFFCPU	     (1u << 0) /* blocked, not running */
#define STACK_F_TRUNCATED    (1u << 1) /* the unwind did not reach the outermost frame */
#define STACK_F_UNWIND_ERROR (1u << 2) /* cut where a caller's address was not code */
#define STACK_F_WAKER	     (1u << 3) /* a waker's stack (user/session/holders.h), never sampled */
#define STACK_F_KMODE	     (1u << 4) /* sampled in the kernel: the user frames are where it entered */

struct raw_stack {
	uint32_t pid;
	uint32_t tid;	/* kept for per-thread views; part of the key only with per_thread */
	uint32_t flags; /* STACK_F_* */
	uint16_t n_user, n_kernel;
	char comm[16];
	const uint64_t *user;	/* leaf first */
	const uint64_t *kernel; /* leaf first */
};

struct stack_store;

/**
 * stack_store__new - create an empty store
 * @per_thread: make the thread id part of a stack's identity
 *
 * Return: the store, or NULL on allocation failure.
 */
struct stack_store *stack_store__new(bool per_thread);
void stack_store__free(struct stack_store *ss);

/* addresses (user and kernel together) a stored stack may have */
#define STACK_STORE_MAX_ADDRS 1024

/**
 * stack_store__intern - id of @st, adding it if new (the addresses are copied)
 *
 * Return: the id (>= 0), -E2BIG for more than STACK_STORE_MAX_ADDRS
 * addresses, or another negative errno.
 */
int64_t stack_store__intern(struct stack_store *ss, const struct raw_stack *st);

/**
 * stack_store__hash - the key stack_store__intern_hash() takes for @st
 *
 * Return: the key; it changes with anything that is part of the stack's
 * identity (frames, pid, flags, the thread with per_thread).
 */
struct stack_key stack_store__hash(const struct stack_store *ss, const struct raw_stack *st);

/**
 * stack_store__prefetch_hash - start loading the table slot a stack whose
 * key's first half is @h is looked up in (a cache miss in a large store), so that work
 * done before stack_store__intern_hash() overlaps it
 */
void stack_store__prefetch_hash(const struct stack_store *ss, uint64_t h);

/**
 * stack_store__intern_hash - stack_store__intern() of @st, whose
 * stack_store__hash() is *@k (it must be: a wrong one makes @st another
 * stack's, or a new one)
 *
 * Return: as stack_store__intern().
 */
int64_t stack_store__intern_hash(struct stack_store *ss, const struct raw_stack *st,
				 const struct stack_key *k);

/**
 * stack_store__intern_bare - stack_store__intern_hash(), but a new stack
 * is added without its addresses, shed from the start (stack_store__shed):
 * for a caller that symbolizes it at once, and gives it its addresses
 * with stack_store__unshed() if it cannot
 * @added: set to whether @st was new
 *
 * Return: as stack_store__intern().
 */
int64_t stack_store__intern_bare(struct stack_store *ss, const struct raw_stack *st,
				 const struct stack_key *k, bool *added);

/**
 * stack_store__unshed - give shed stack @id its addresses, those of @st
 * (the stack it was interned from: its key is not checked again)
 *
 * Return: 0, -EINVAL if @id is not a shed stack, or -ENOMEM.
 */
int stack_store__unshed(struct stack_store *ss, uint32_t id, const struct raw_stack *st);

/**
 * stack_store__read - the stack with id @id, unpacked
 * @out: the stack; its address pointers point into @addrs
 * @addrs: room for STACK_STORE_MAX_ADDRS addresses
 *
 * Return: false for an unknown, released or shed id.
 */
bool stack_store__read(const struct stack_store *ss, uint32_t id, struct raw_stack *out,
		       uint64_t *addrs);

/**
 * stack_store__flags - the STACK_F_* flags of stack @id into *@flags,
 * without unpacking it
 *
 * Return: false for an unknown or released id.
 */
bool stack_store__flags(const struct stack_store *ss, uint32_t id, uint32_t *flags);

/**
 * stack_store__prefetch - start loading stack @id (its record and its
 * addresses) for a stack_store__read() to come
 */
void stack_store__prefetch(const struct stack_store *ss, uint32_t id);

/** stack_store__count - number of distinct stacks held (not released) */
size_t stack_store__count(const struct stack_store *ss);

/** stack_store__id_bound - every id handed out so far is below this */
size_t stack_store__id_bound(const struct stack_store *ss);

/** stack_store__released - stacks released since the store was made */
uint64_t stack_store__released(const struct stack_store *ss);

/**
 * stack_store__shed - drop the addresses of stack @id, keeping its id,
 * flags and key: for a stack whose frames are symbolized already, so that
 * nobody reads its addresses again (stack_store__read() says false). Its
 * bytes go to the next new stacks. Sampled again, it is found as before.
 *
 * Return: 0, also for a stack shed already; -EINVAL for an unknown or
 * released id, or flags outside STACK_F_*; -ENOMEM (it keeps them).
 */
int stack_store__shed(struct stack_store *ss, uint32_t id);

/** stack_store__shed_count - stacks shed since the store was made */
uint64_t stack_store__shed_count(const struct stack_store *ss);

/**
 * stack_store__set_epoch - the epoch (the daemon's tick count) recorded
 * as "last seen" by every intern from now on
 */
void stack_store__set_epoch(struct stack_store *ss, uint32_t epoch);

/**
 * stack_store__idle_since - whether stack @id was last interned before
 * @epoch, and is neither pinned nor released
 */
bool stack_store__idle_since(const struct stack_store *ss, uint32_t id, uint32_t epoch);

/**
 * stack_store__pin - never release stack @id: for stacks that state kept
 * outside any remapping refers to (allocation rows, lock pairs)
 */
void stack_store__pin(struct stack_store *ss, uint32_t id);

/**
 * stack_store__release - free stack @id; its id is reused by a later intern
 *
 * Every reference to @id must be gone (remapped) first.
 * Return: 0, -EINVAL for a pinned, released or unknown id, or -ENOMEM.
 */
int stack_store__release(struct stack_store *ss, uint32_t id);

/*
 * counts: stack id -> (count, weight). Used for the whole run, for each
 * one-second slot of the sliding window and for each split class
 * (user/profile/counts.c).
 */
struct stack_count {
	uint32_t id;
	uint64_t count;
	uint64_t weight_ns;
};

struct counts {
	/* open addressing, id + 1 in .id; 0 = empty; dense: indexed by id */
	struct stack_count *slots;
	size_t cap, n;
	uint64_t total_count, total_weight;
	bool dense;
};

void counts__init(struct counts *c);
/**
 * counts__init_dense - an empty table indexed by id: for counts that
 * hold nearly every id the store hands out (the whole run's), where a
 * hash table's room and rehashes cost more than the ids it leaves out
 * @c: the table, reset
 */
void counts__init_dense(struct counts *c);
/**
 * counts__reserve - make room for @n stacks, so that as many adds to
 * come need no rehash (a sliding-window slot sized like the one before)
 *
 * Return: 0, or -ENOMEM with @c unchanged.
 */
int counts__reserve(struct counts *c, size_t n);
void counts__clear(struct counts *c);
void counts__free(struct counts *c);
/** counts__add - add to stack @id (< UINT32_MAX); returns 0, -EINVAL or -ENOMEM */
int counts__add(struct counts *c, uint32_t id, uint64_t count, uint64_t weight_ns);
/**
 * counts__prefetch - start loading the slot of stack @id in @c, so that
 * the misses of several counts__add() calls to come overlap
 */
void counts__prefetch(const struct counts *c, uint32_t id);
/** counts__merge - add everything of @src into @dst; returns 0 or -ENOMEM */
int counts__merge(struct counts *dst, const struct counts *src);

/**
 * counts__merge_unflagged - add to @dst the stacks of @src that have none
 * of @flags (STACK_F_*), e.g. only the samples taken in user code
 * @ss: the store @src's ids belong to; an id it does not know is left out
 *
 * Return: 0, or -ENOMEM (@dst then holds part of them).
 */
int counts__merge_unflagged(struct counts *dst, const struct counts *src,
			    const struct stack_store *ss, uint32_t flags);

/* Iterate: for (i = 0; i < c->cap; i++) if (c->slots[i].id) ...id - 1... */
#define counts_for_each(c, sc)                                                                     \
	for (struct stack_count *sc = (c)->slots; sc && sc < (c)->slots + (c)->cap; sc++)          \
		if (sc->id)

static inline uint32_t stack_count__id(const struct stack_count *sc)
{
	return sc->id - 1;
}

/**
 * counts__remap - move the counts of every stack @id with @map[@id] != 0
 * (and @id < @n_map) to stack @map[@id] - 1, adding to what it has
 *
 * Return: 0, or -ENOMEM with @c unchanged.
 */
int counts__remap(struct counts *c, const uint32_t *map, size_t n_map);

/** counts__get - count and weight of stack @id in @c (0 if absent) */
void counts__get(const struct counts *c, uint32_t id, uint64_t *count, uint64_t *weight_ns);
#endif
