/* SPDX-License-Identifier: GPL-2.0 */
/*
 * reclaim.h - memory that stays flat over days. A stack that no slot of
 * the sliding window holds any more (it was last seen longer ago than the
 * window) is folded, in every whole-run count, into a stack kept for its
 * frames: one with the same frames as the profiles show them (names,
 * modules, and lines with --lines), differing only in addresses. Then it
 * is released and its id reused. What is kept grows with the program's
 * distinct call paths, not with the run's length or with how many
 * addresses inside those paths the samples hit; and a kept stack holds
 * its frames, not its addresses.
 */
#ifndef LP_SESSION_RECLAIM_H
#define LP_SESSION_RECLAIM_H

#include <stddef.h>
#include <stdint.h>

struct daemon;
struct reclaim;

/* How often a pass runs: often enough to keep up, rare enough to be free. */
#define RECLAIM_EVERY_S 10

/*
 * A holder of stack ids outside the daemon (the HTTP server's previous
 * delta scrapes): @fn moves its counts of stack @id to @map[@id] - 1
 * wherever @map[@id] != 0 and @id < @n_map, or returns -ENOMEM having
 * changed nothing the next pass could not finish.
 */
typedef int (*reclaim_remap_fn)(void *ctx, const uint32_t *map, size_t n_map);

/** reclaim__new - the table of kept stacks; NULL without memory */
struct reclaim *reclaim__new(void);
void reclaim__free(struct reclaim *r);

/**
 * reclaim__add_holder - call @fn on every pass that releases stacks
 *
 * Return: 0, or -E2BIG past the few holders there is room for.
 */
int reclaim__add_holder(struct reclaim *r, reclaim_remap_fn fn, void *ctx);

/** reclaim__remove_holder - stop calling the holder whose context is @ctx */
void reclaim__remove_holder(struct reclaim *r, void *ctx);

/**
 * reclaim__run - fold and release the stacks idle since before @cutoff
 * @cutoff: an epoch of the stack store (stack_store__set_epoch)
 *
 * Return: the number of stacks released, or a negative errno (then none is).
 */
int64_t reclaim__run(struct daemon *d, uint32_t cutoff);

/** reclaim__kept - stacks kept to carry the counts of released ones */
size_t reclaim__kept(const struct reclaim *r);

#endif
