/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stack_key.h - the 128-bit keyed hash a stack is known by in its store
 * (stack_store.c).
 */
#ifndef LP_STACK_KEY_H
#define LP_STACK_KEY_H

#include <stdbool.h>
#include <stdint.h>

/*
 * What a stack is known by in its store: a 128-bit hash, keyed by a seed
 * of the store's own, of everything that is part of the stack's identity
 * (addresses, pid, flags, the thread with per_thread). Stacks whose keys
 * are equal are one stack: their addresses are never compared.
 */
struct stack_key {
	uint64_t h;  /* its first half, never 0: it places the stack in the table */
	uint64_t h2; /* its second half */
};

#define STACK_KEY_ROUND_KEYS 8

/* A key function, seeded: the same stack has another key in another store. */
struct stack_keyer {
	uint64_t seed[2];			      /* the portable function's */
	uint64_t round_keys[STACK_KEY_ROUND_KEYS][2]; /* the AES function's */
	bool aes;
};

/**
 * stack_keyer__init - draw @k's seed (getrandom(), else the clock)
 * @k: the keyer
 * @portable: use the multiply chains even where the CPU has AES rounds
 *	(the unit tests check both functions)
 *
 * A fixed key would let a target that writes its own stack (frame pointers
 * are its memory) make two of its stacks one on purpose.
 */
void stack_keyer__init(struct stack_keyer *k, bool portable);

/**
 * stack_keyer__key - the key of a stack
 * @k: the keyer
 * @head: the stack's words other than its addresses (pid, lengths and
 *	flags, thread); the lengths must be among them, so that where one
 *	array ends is part of the key
 * @n_head: words in @head (at most 4)
 * @user: user addresses, @n_user of them
 * @n_user: how many
 * @kernel: kernel addresses, @n_kernel of them
 * @n_kernel: how many
 *
 * Each step takes in a word one to one for the state before it, so two
 * stacks that differ in a single word always have different keys.
 * Return: the key, whose h is never 0.
 */
struct stack_key stack_keyer__key(const struct stack_keyer *k, const uint64_t *head,
				  unsigned int n_head, const uint64_t *user, unsigned int n_user,
				  const uint64_t *kernel, unsigned int n_kernel);

#endif /* LP_STACK_KEY_H */
