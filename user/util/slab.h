/* SPDX-License-Identifier: GPL-2.0 */
/*
 * slab.h - small blocks that live as long as a stack does (an interned
 * stack's addresses, its symbolized frame ids), carved from large chunks
 * that are mapped with their pages already in, and recycled by size.
 *
 * Why not malloc(): a profile of distinct stacks makes the daemon's heap
 * grow by a few hundred bytes per sample, and in these VMs every fresh
 * page costs about 2 us to fault in: malloc() takes one fault per page it
 * reaches, about a quarter of what interning a new stack cost. A chunk
 * mapped with MAP_POPULATE is faulted in by one system call, a fifth
 * cheaper per page (1.6 us), and malloc()'s own work goes too.
 */
#ifndef LP_USER_UTIL_SLAB_H
#define LP_USER_UTIL_SLAB_H

#include <stddef.h>

struct lp_slab;

/**
 * lp_slab__new - an empty slab; chunks are mapped as blocks are asked for
 *
 * Return: the slab (free it with lp_slab__delete()), or NULL.
 */
struct lp_slab *lp_slab__new(void);

/**
 * lp_slab__delete - unmap every chunk, and with it every block carved
 * from one; blocks that came from malloc() (the large ones, and every one
 * under AddressSanitizer) must have been given back with lp_slab__free()
 */
void lp_slab__delete(struct lp_slab *s);

/**
 * lp_slab__alloc - a block of @size bytes, 16-byte aligned, not zeroed
 *
 * Blocks larger than a few kilobytes come from malloc().
 * Return: the block (give it back with lp_slab__free() and the same
 * @size), or NULL.
 */
void *lp_slab__alloc(struct lp_slab *s, size_t size);

/**
 * lp_slab__free - give back block @p of @size bytes (as allocated) for
 * the next block of that size; NULL is ignored
 */
void lp_slab__free(struct lp_slab *s, void *p, size_t size);

#endif
