// SPDX-License-Identifier: GPL-2.0
/*
 * slab.c - blocks carved from pre-faulted chunks, recycled by size (see
 * slab.h for why). Sizes are rounded up to SLAB_UNIT; a freed block heads
 * the free list of its size, and the next block of that size is taken
 * from there before any new room is carved. Nothing goes back to the
 * system before lp_slab__delete(): the stacks a reclaim releases are
 * followed by as many new ones.
 *
 * Under AddressSanitizer every block comes from malloc(), so that the
 * sanitizer still sees each one's bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "user/util/slab.h"

#define SLAB_UNIT  16
#define SLAB_MAX   4096	      /* larger blocks: malloc() */
#define SLAB_CHUNK (1u << 20) /* 256 pages faulted in per mmap() */

#if defined(__SANITIZE_ADDRESS__)
#define SLAB_MALLOC_ONLY 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLAB_MALLOC_ONLY 1
#endif
#endif

struct lp_slab {
	void *free[SLAB_MAX / SLAB_UNIT + 1]; /* by size in units: freed blocks, linked */
	char *next, *end;		      /* room left in the newest chunk */
	void **chunks;			      /* every chunk mapped, for lp_slab__delete */
	size_t n_chunks, cap_chunks;
};

struct lp_slab *lp_slab__new(void)
{
	return calloc(1, sizeof(struct lp_slab));
}

void lp_slab__delete(struct lp_slab *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_chunks; i++)
		munmap(s->chunks[i], SLAB_CHUNK);
	free(s->chunks);
	free(s);
}

/* A new chunk to carve from; what was left of the last one is dropped
 * (less than one block of the size asked for). */
static int new_chunk(struct lp_slab *s)
{
	void *c;

	if (s->n_chunks == s->cap_chunks) {
		size_t cap = s->cap_chunks ? s->cap_chunks * 2 : 16;
		void **a = realloc(s->chunks, cap * sizeof(*a));

		if (!a)
			return -1;
		s->chunks = a;
		s->cap_chunks = cap;
	}
	c = mmap(NULL, SLAB_CHUNK, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (c == MAP_FAILED)
		return -1;
	s->chunks[s->n_chunks++] = c;
	s->next = c;
	s->end = (char *)c + SLAB_CHUNK;
	return 0;
}

void *lp_slab__alloc(struct lp_slab *s, size_t size)
{
	size_t units = (size + SLAB_UNIT - 1) / SLAB_UNIT;
	void *p;

#ifdef SLAB_MALLOC_ONLY
	return malloc(size ? size : 1);
#endif
	if (!units)
		units = 1;
	if (units * SLAB_UNIT > SLAB_MAX)
		return malloc(size);
	p = s->free[units];
	if (p) {
		s->free[units] = *(void **)p;
		/* Freed blocks are cold by the time they are reused: the next
		 * one's link is a cache miss that the next allocation, which
		 * comes later, need not wait for. */
		if (s->free[units])
			__builtin_prefetch(s->free[units], 1);
		return p;
	}
	if ((size_t)(s->end - s->next) < units * SLAB_UNIT && new_chunk(s))
		return NULL;
	p = s->next;
	s->next += units * SLAB_UNIT;
	return p;
}

void lp_slab__free(struct lp_slab *s, void *p, size_t size)
{
	size_t units = (size + SLAB_UNIT - 1) / SLAB_UNIT;

	if (!p)
		return;
#ifdef SLAB_MALLOC_ONLY
	free(p);
	return;
#endif
	if (!units)
		units = 1;
	if (units * SLAB_UNIT > SLAB_MAX) {
		free(p);
		return;
	}
	*(void **)p = s->free[units];
	s->free[units] = p;
}
