/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * alloc.h - the contract between bpf/alloc.bpf.c (uprobes on the C
 * allocator, sampled by bytes) and user/session/alloc.c.
 */
#ifndef LP_BPF_ALLOC_H
#define LP_BPF_ALLOC_H

#include "liveprof.h"

#define LP_ALLOC_MAX_STACK 64	      /* user frames of an allocation */
#define LP_ALLOC_EXP_STEPS 1024	      /* quantiles of the exponential in the sampler */
#define LP_ALLOC_LIVE_MAX  (1u << 20) /* sampled allocations not freed yet */
#define LP_ALLOC_MAX_CALLS 4	      /* innermost traced calls an allocation is tagged with */

enum lp_alloc_ev {
	LP_ALLOC_EV_ALLOC = 1, /* a sampled allocation */
	LP_ALLOC_EV_FREE = 2,  /* a sampled allocation was freed */
};

/* A traced call in flight at a sampled allocation (calls.bpf.h). */
struct lp_alloc_call {
	__u32 probe_id;
	__u32 pad;
	__u64 call_id;
};

/*
 * Sent on the session's one ring buffer (hdr.type LP_EV_ALLOC), so an
 * allocation always reaches the daemon before the LP_EV_CALL_END of the
 * traced calls around it: one ring keeps the order of reservations.
 */
struct lp_alloc_event {
	struct lp_event_hdr hdr;
	__u32 kind; /* LP_ALLOC_EV_* */
	__u32 pid;
	__u32 tid;
	__u32 n_ustack;
	__u64 ptr;
	__u64 size; /* bytes asked for */
	__u64 time_ns;
	__u32 n_calls; /* valid entries of calls[], innermost first */
	__u32 pad;
	struct lp_alloc_call calls[LP_ALLOC_MAX_CALLS];
	__u64 ustack[LP_ALLOC_MAX_STACK]; /* leaf first; only for ALLOC */
};

/* Sampler counters, one array entry each. */
enum lp_alloc_cnt {
	LP_ALLOC_CNT_CALLS = 0, /* allocation calls seen */
	LP_ALLOC_CNT_SAMPLED,	/* allocations sampled */
	LP_ALLOC_CNT_LOST,	/* events dropped: ring buffer full */
	LP_ALLOC_CNT_LIVE_FULL, /* sampled allocations not tracked: live map full */
	LP_ALLOC_CNT_FREES,	/* free/munmap calls seen */
	LP_ALLOC_CNT_NR,
};

#endif
