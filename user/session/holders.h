/* SPDX-License-Identifier: GPL-2.0 */
/*
 * holders.h - who released what a blocked thread waited for.
 *
 * An off-CPU sample of a thread that another thread of its process woke
 * from a futex wait is followed by an LP_EV_WAKER with the waker's stack
 * (bpf/offcpu.bpf.h). This pairs the two: the blocked thread's stack (the
 * waiter) and the waker's (for a mutex, the holder's release stack), and
 * gives each distinct pair an id for the daemon's counts.
 */
#ifndef LP_SESSION_HOLDERS_H
#define LP_SESSION_HOLDERS_H

#include <stdint.h>

struct holders;

/** holders__new - an empty table; NULL on allocation failure */
struct holders *holders__new(void);
void holders__free(struct holders *h);

/**
 * holders__on_block - thread @tid's off-CPU sample at @time_ns, stack
 * @waiter_id, blocked @weight_ns: what its LP_EV_WAKER will pair with
 */
void holders__on_block(struct holders *h, uint32_t tid, uint64_t time_ns, uint32_t waiter_id,
		       uint64_t weight_ns);

/**
 * holders__match - the off-CPU sample an LP_EV_WAKER of @tid at @time_ns
 * follows: its stack id and time blocked
 *
 * Return: 0, or -ENOENT if it is not the thread's last sample (lost, or
 * overwritten by another thread's in the table).
 */
int holders__match(const struct holders *h, uint32_t tid, uint64_t time_ns, uint32_t *waiter_id,
		   uint64_t *weight_ns);

/**
 * holders__pair - the id of the pair (@waiter_id, @holder_id), made on
 * first use; ids are dense from 0
 *
 * Return: the id, or a negative errno.
 */
int64_t holders__pair(struct holders *h, uint32_t waiter_id, uint32_t holder_id);

/**
 * holders__get - the stacks of pair @id
 *
 * Return: 0, or -ENOENT for an unknown id.
 */
int holders__get(const struct holders *h, uint32_t id, uint32_t *waiter_id, uint32_t *holder_id);

#endif
