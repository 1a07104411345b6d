/* SPDX-License-Identifier: GPL-2.0 */
/*
 * causal_internal.h - the state shared by causal.c and causal_run.c; not an API.
 */
#ifndef LP_SESSION_CAUSAL_INTERNAL_H
#define LP_SESSION_CAUSAL_INTERNAL_H

#include <signal.h>
#include <stdint.h>

#include "user/session/causal.h"
#include "user/session/traces.h"

#define CAUSAL_SMALL_IMPACT 0.1 /* impacts within +-this count as no effect */

struct causal_ctx {
	struct daemon *d;
	const struct causal_opts *o;
	struct causal_run *r;
	volatile sig_atomic_t *stop;
	uint64_t deadline;
	uint64_t rng;
};

/* Let the daemon run @ns; 0, -EINTR (stop), -ESRCH (targets gone). */
int causal_wait(struct causal_ctx *x, uint64_t ns);
/* The running totals of the trace of @spec; 0 or -ENOENT. */
int causal_read_totals(struct causal_ctx *x, const char *spec, struct trace_totals *t);
/* Every candidate's experiments; 0 (also when the target exited) or -errno. */
int causal_run_candidates(struct causal_ctx *x);

#endif
