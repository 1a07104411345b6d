/* SPDX-License-Identifier: GPL-2.0 */
/*
 * alloc_internal.h - the memory profiler's state, shared by alloc.c (the
 * probes and their events) and alloc_cost.c (what the probes cost, and
 * --max-overhead); not an API.
 */
#ifndef LP_SESSION_ALLOC_INTERNAL_H
#define LP_SESSION_ALLOC_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "user/session/alloc.h"

struct bpf_link;
struct bpf_program;

#define MAX_LINKS	  256
#define ALLOC_SITES	  8  /* files x functions whose probe site is remembered */
#define ALLOC_COST_ROUNDS 32 /* the charge is the median of the latest rounds */

struct live {
	uint64_t key; /* ptr ^ pid << 48; 0 = empty */
	uint32_t pid, row;
	double objects, bytes;
};

/*
 * A sampled allocation made inside a call of the split function that has
 * not returned yet: its row is ALLOC_IN_CALL until the call's latency
 * (LP_EV_CALL_END) decides between ALLOC_SLOW and ALLOC_FAST.
 */
struct pending {
	uint64_t call_id, key, time_ns;
	uint32_t row;
	double objects, bytes;
};

#define PENDING_MAX 65536 /* beyond: the oldest half keeps ALLOC_IN_CALL */

struct alloc_prof {
	struct daemon *d;
	struct alloc_bpf *skel;
	uint64_t sample_bytes;
	double mean_bytes; /* the sampler's actual mean distance, from its table */
	struct bpf_link *links[MAX_LINKS];
	int n_links;
	struct alloc_stack *rows; /* by stack id * ALLOC_NCLASS + class */
	size_t n_rows, cap_rows;
	struct live *live;
	size_t live_cap, live_n;
	struct pending *pending;
	size_t n_pending;
	uint64_t bad_events;
	/* alloc_cost.c: per-call costs measured on liveprof's own libc, the
	 * latest rounds (a ring), and the thread that measures them; cost and
	 * rounds change under cal_lock, and the daemon's thread reads the
	 * costs without it (aligned doubles: at worst one round late) */
	struct alloc_cost cost;
	/* alloc_site_at(): where an entry-only probe goes, by file and
	 * function, for the daemon's thread (every target of one libc asks
	 * the same; finding it reads the file's FDEs, about 1 ms) */
	struct alloc_site {
		uint64_t dev, ino, at;
		const char *func; /* a string constant */
	} sites[ALLOC_SITES];
	int n_sites, next_site;
	/* the calibration's free() site on liveprof's own libc: found by the
	 * first round, before the rounds' thread starts, and only read since */
	uint64_t cal_free_at;
	bool cal_site_known;
	struct alloc_cost_round {
		double alloc_ns, free_ns, switch_ns;
	} rounds[ALLOC_COST_ROUNDS];
	uint32_t n_rounds, next_round;
	struct bpf_link *cal_links[3];
	int n_cal_links;
	pthread_t cal_tid;
	pthread_mutex_t cal_lock;
	pthread_cond_t cal_cond;
	bool cal_init, cal_running, cal_stop;
	uint64_t prev_calls, prev_frees, prev_tick_ns;
	double warned_pct;
};

/**
 * alloc_attach_one - one allocator probe in @pid's @libc, kept in a->links
 * @offset: from @func's entry (alloc_entry_offset()); 0 for a return probe
 *
 * Return: 0 or a negative errno.
 */
int alloc_attach_one(struct alloc_prof *a, struct bpf_program *prog, int pid, const char *libc,
		     const char *func, uint64_t offset, bool ret);

/**
 * alloc_entry_offset - alloc_site.c: where in @libc's @func an entry-only
 * probe whose program reads only argument registers goes: past a leading
 * "test r,r" onto the conditional jump after it (which the kernel
 * emulates, where it single-steps the test), when that is proven an
 * instruction boundary; else 0, the entry
 */
uint64_t alloc_entry_offset(const char *libc, const char *func);

/**
 * alloc_site_at - alloc_entry_offset(), remembered in @a by the file's
 * device and inode (the path differs per target: /proc/PID/root/...)
 */
uint64_t alloc_site_at(struct alloc_prof *a, const char *libc, const char *func);

/**
 * alloc_find_libc - the libc mapped by @pid, as a path the kernel can open
 * from here (through the process's root)
 *
 * Return: 0 or a negative errno.
 */
int alloc_find_libc(int pid, char *buf, size_t len);

/**
 * alloc_cost_measure - alloc_cost.c: the probes' costs on liveprof's own
 * libc, one round now (the charge applies from then on) and more on a
 * thread of their own through the session, until alloc_cost_stop()
 *
 * Return: 0, or a negative errno (the costs are then unknown, 0).
 */
int alloc_cost_measure(struct alloc_prof *a);

/**
 * alloc_cost_stop - end the rounds alloc_cost_measure() started and wait
 * for the one under way; nothing if none started
 */
void alloc_cost_stop(struct alloc_prof *a);

#endif
