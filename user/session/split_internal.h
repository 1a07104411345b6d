/* SPDX-License-Identifier: GPL-2.0 */
/*
 * split_internal.h - the state shared by split.c, split_compute.c and
 * split_frames.c; not an API.
 */
#ifndef LP_SESSION_SPLIT_INTERNAL_H
#define LP_SESSION_SPLIT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "user/session/split.h"

#define HELD_MAX_ENTRIES (1u << 20) /* bound on samples waiting for their call */
#define ORPHAN_AFTER_NS	 (60ULL * 1000000000ULL)
#define MIN_WINDOW_CALLS 20 /* fewer sampled calls in the window: use the whole run */

struct entry {
	uint32_t stack_id;
	uint32_t count;
	uint64_t weight;
	uint64_t time_ns; /* when the sample was taken: windows of HTTP scrapes */
};

struct held_call {
	uint64_t call_id; /* 0 = empty slot */
	uint64_t first_ns;
	struct entry *e;
	uint32_t n, cap;
};

struct done_call {
	uint64_t latency_ns; /* net of liveprof's cost, unless --raw-latency */
	uint64_t overhead_ns;
	uint64_t start_ns; /* CLOCK_MONOTONIC, the target's clock too */
	uint64_t end_ns;
	uint64_t first; /* into the entry pool */
	uint32_t n;
	uint32_t flags;
};

struct split {
	struct traces *traces;	       /* the split function's trace; not owned */
	struct stack_symbols *symbols; /* frames of interned stacks; not owned */
	int window_s;
	int probe_id;
	double pct;
	int when_line;
	struct held_call *held; /* open addressing on call_id */
	size_t held_cap, held_n;
	uint64_t held_entries;
	struct done_call *done;
	size_t n_done, cap_done;
	struct entry *pool;
	uint64_t n_pool, cap_pool;
	uint64_t orphans, dropped, filtered;
};

/* split_frames.c: each frame's shares of the classes and its exact test */
int split_rank_frames(struct split *s, bool use_weight, struct split_result *r);
/* split_frames.c: withdraw the stars the calls near the threshold could fake */
int split_recheck_ambiguous(struct split *s, uint64_t since, struct split_result *r);
/* split_frames.c: the ranks, most more in the slow class first */
void split_sort_ranks(struct split_result *r);

#endif
