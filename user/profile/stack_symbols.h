/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stack_symbols.h - symbolized stacks, computed once per interned stack
 * while the target is still alive, then turned into profiles on demand
 * (the whole run, a window, the slow or the fast calls of a split).
 */
#ifndef LP_USER_STACK_SYMBOLS_H
#define LP_USER_STACK_SYMBOLS_H

#include <stdbool.h>
#include "user/profile/profile.h"
#include "user/profile/stack_store.h"
#include "dwarf/symbolize.h"

struct stack_symbols;

struct stack_symbols_opts {
	bool per_thread;    /* add "comm-tid" under the process root */
	bool lines;	    /* name frames "func (file.c:12)" */
	bool inline_frames; /* inlined functions as frames of their own (frame.inlined) */
};

/** stack_symbols__new - empty cache; NULL on allocation failure */
struct stack_symbols *stack_symbols__new(const struct stack_symbols_opts *o);
void stack_symbols__free(struct stack_symbols *ss);

/**
 * stack_symbols__update - symbolize every stack of @store not yet done
 * @root_name: callback giving the root frame name for a pid (process
 *             name), or NULL to use the sample's comm
 *
 * Return: 0, or a negative errno.
 */
int stack_symbols__update(struct stack_symbols *ss, const struct stack_store *store,
			  struct symbolizer *sym, const char *(*root_name)(void *, uint32_t),
			  void *ctx);

/**
 * stack_symbols__add_new - symbolize stack @id, just interned from @rs,
 * now rather than at the next stack_symbols__update(), while its
 * addresses are at hand; only when it is the stack an update would take
 * next, or a released id handed out again (else, and on an error, the
 * update takes it)
 * @root_name: as for stack_symbols__update()
 *
 * Return: 1 when it was symbolized now, 0 when it is left to the update,
 * or a negative errno.
 */
int stack_symbols__add_new(struct stack_symbols *ss, uint32_t id, const struct raw_stack *rs,
			   struct symbolizer *sym, const char *(*root_name)(void *, uint32_t),
			   void *ctx);

/**
 * stack_symbols__new_profile - a new empty profile to fill with add_counts
 *
 * Profiles filled by stack_symbols__add_counts must come from here.
 * Return: the profile (caller frees with profile__free), or NULL.
 */
struct profile *stack_symbols__new_profile(struct stack_symbols *ss, const char *name);

/**
 * stack_symbols__add_counts - add the stacks of @c to profile @out
 * @labels, @n_labels: attached to every sample added
 *
 * Return: 0, or a negative errno.
 */
int stack_symbols__add_counts(struct stack_symbols *ss, struct profile *out, const struct counts *c,
			      const struct label *labels, uint32_t n_labels);

/*
 * A user-stack entry that is no address but an interpreter frame (a
 * Python function) interned here beforehand: the tag plus its id in the
 * frame table. User addresses stay below 2^47, kernel ones above 2^63.
 */
#define STACK_INTERP_TAG  0x4c50000000000000ull
#define STACK_INTERP_MASK 0xffff000000000000ull

/**
 * stack_symbols__intern_interp - intern an interpreter frame
 * @f: the frame; its strings are copied
 *
 * Return: the stack entry that stands for it (STACK_INTERP_TAG | id), or
 * 0 without memory.
 */
uint64_t stack_symbols__intern_interp(struct stack_symbols *ss, const struct frame *f);

/**
 * stack_symbols__forget - drop the frames of stack @id, which the store
 * released; they are computed again when the id is reused
 *
 * Return: 0 or -ENOMEM.
 */
int stack_symbols__forget(struct stack_symbols *ss, uint32_t id);

/**
 * stack_symbols__path_hash - hash of stack @id's frames as name-level
 * views show them: everything but the frames' addresses
 *
 * It is computed when the stack is symbolized, and kept beside its frames.
 * Return: 0, or -ENOENT if @id is not symbolized.
 */
int stack_symbols__path_hash(struct stack_symbols *ss, uint32_t id, uint64_t *hash);

/**
 * stack_symbols__same_path - whether stacks @a and @b show as the same
 * frames (they may differ in addresses within those frames)
 */
bool stack_symbols__same_path(const struct stack_symbols *ss, uint32_t a, uint32_t b);

/**
 * stack_symbols__interp_names - interpreter frames seen so far whose
 * module is @module ("python", "ruby") and whose name starts with @prefix
 * @out: receives up to @max frame names ("qualname (file.py:N)"), owned
 *       by @ss and valid while it lives
 *
 * Return: how many were written.
 */
int stack_symbols__interp_names(const struct stack_symbols *ss, const char *module,
				const char *prefix, const char **out, int max);

/** stack_symbols__frames - the symbolized frames of stack @id (root first) */
int stack_symbols__frames(struct stack_symbols *ss, uint32_t id, const struct frame **frames,
			  uint32_t *depth);

#endif
