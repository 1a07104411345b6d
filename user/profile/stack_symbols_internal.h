/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stack_symbols_internal.h - the state of struct stack_symbols, shared by
 * stack_symbols.c (symbolizing stacks) and stack_symbols_read.c (reading
 * them back: paths, frames, profiles); not an API.
 */
#ifndef LP_PROFILE_STACK_SYMBOLS_INTERNAL_H
#define LP_PROFILE_STACK_SYMBOLS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "user/profile/stack_symbols.h"

#define MAX_FRAMES 512 /* frames of one symbolized stack */

/*
 * The frame ids one user address of one process interned to (its inline
 * chain, outermost first). A new stack is mostly addresses seen before in
 * other stacks; looking them up here instead of symbolizing and interning
 * each frame again is what keeps the daemon's cost per new stack low.
 * Valid while the symbolizer's generation stays the same.
 */
struct addr_frames {
	uint64_t addr; /* as looked up (a return address already minus 1) */
	uint32_t pid;  /* 0: empty slot */
	uint32_t n;
	uint32_t ids[SYM_MAX_INLINE];
};

/*
 * A symbolized stack: its ids in the frame table, root first, as varints
 * (most ids are below 16,384: one or two bytes instead of four; a new
 * stack's bytes are most of what it costs, see stack_store.c).
 */
struct sym_stack {
	uint8_t *packed;    /* NULL: not symbolized yet */
	uint64_t path_hash; /* stack_symbols__path_hash(), taken while the ids are at hand */
	uint16_t depth;	    /* frames, at most MAX_FRAMES */
	uint16_t len;	    /* bytes of packed[] */
};

/* @depth ids as varints into @out (5 * @depth bytes); the bytes written. */
static inline uint16_t sym_ids_pack(const uint32_t *ids, uint32_t depth, uint8_t *out)
{
	uint8_t *p = out;

	for (uint32_t i = 0; i < depth; i++) {
		uint32_t v = ids[i];

		while (v >= 0x80) {
			*p++ = (uint8_t)(v | 0x80);
			v >>= 7;
		}
		*p++ = (uint8_t)v;
	}
	return (uint16_t)(p - out);
}

/* The ids of @st into @ids (MAX_FRAMES); its depth. */
static inline uint32_t sym_ids_unpack(const struct sym_stack *st, uint32_t *ids)
{
	const uint8_t *p = st->packed;

	for (uint32_t i = 0; i < st->depth; i++) {
		uint32_t v = 0;
		unsigned int shift = 0;

		do
			v |= (uint32_t)(*p & 0x7f) << shift;
		while ((*p++ & 0x80) && (shift += 7) < 32);
		ids[i] = v;
	}
	return st->depth;
}

struct stack_symbols {
	struct stack_symbols_opts opts;
	struct profile *table; /* frame table */
	struct sym_stack *stacks;
	size_t n, cap;	      /* stacks below n were symbolized once */
	struct lp_slab *slab; /* the stacks' ids */
	uint32_t *redo;	      /* ids below n released since: symbolize again when reused */
	size_t n_redo, cap_redo;
	struct frame *frame_buf;
	struct addr_frames *addr_cache; /* open addressing by (pid, addr) */
	size_t addr_cap, addr_n;
	uint64_t addr_gen; /* the symbolizer's generation the cache is of */
	/* The frame every new stack starts with, its process's root, by
	 * name: interning it hashed and compared its strings once per stack
	 * (frame ids never change) */
	struct {
		uint32_t pid, id;
		char name[72]; /* "": empty */
	} root;
	/* frame table id -> its frame_path_hash(), for the frames below
	 * n_path_hashes: a stack's path hash (reclaim hashes every stack it
	 * folds) took three mixes per frame, a sixth of the daemon's CPU */
	uint64_t *path_hashes;
	size_t n_path_hashes, cap_path_hashes;
	/* frame table id -> id in the profile being built, +1 (0 = unmapped) */
	uint32_t *remap;
	size_t remap_cap;
	struct profile *remap_for;
};

/**
 * stack_symbols_path_hash_of - the path hash of a stack of frame ids
 * @ss:    the stack symbols whose frame table the ids are of
 * @ids:   the frame ids, root first
 * @depth: how many
 * @hash:  set to the hash stack_symbols__path_hash() gives such a stack
 *
 * Return: 0, or -ENOMEM (the frames' own hashes could not be kept).
 */
int stack_symbols_path_hash_of(struct stack_symbols *ss, const uint32_t *ids, uint32_t depth,
			       uint64_t *hash);

#endif /* LP_PROFILE_STACK_SYMBOLS_INTERNAL_H */
