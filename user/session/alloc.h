/* SPDX-License-Identifier: GPL-2.0 */
/*
 * alloc.h - memory profiles (--alloc): uprobes on the C allocator
 * (bpf/alloc.bpf.c), sampled by bytes like Go's MemProfileRate, and the
 * allocations still live, by allocation stack.
 */
#ifndef LP_SESSION_ALLOC_H
#define LP_SESSION_ALLOC_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <jansson.h>
#include "bpf/alloc.h"

struct daemon;
struct alloc_prof;
struct lp_call_end;

/*
 * Where an allocation was made, relative to the split function (--split):
 * outside its calls, inside a call that has not returned yet, or inside a
 * call classed slow or fast by its latency when it returned (against the
 * whole run's threshold at that moment).
 */
enum alloc_class {
	ALLOC_OUTSIDE = 0,
	ALLOC_IN_CALL,
	ALLOC_SLOW,
	ALLOC_FAST,
	ALLOC_NCLASS,
};

/* Scaled totals of one allocation stack and class. */
struct alloc_stack {
	double alloc_objects, alloc_space; /* every allocation so far */
	double inuse_objects, inuse_space; /* allocated and not yet freed */
};

/*
 * What the allocator probes cost the target, measured in rounds on
 * liveprof's own libc (alloc_cost.c), and the share of a CPU it came to
 * in the last second.
 */
struct alloc_cost {
	bool measured;
	double alloc_ns;	      /* an allocation's entry and return probes */
	double free_ns;		      /* a free's entry probe */
	double switch_ns;	      /* more, at a thread's first hit after a switch */
	uint32_t rounds;	      /* rounds the costs are the median of */
	double alloc_rate, free_rate; /* calls per second, in the last second */
	double est_pct;		      /* (rates x costs) as a % of one CPU */
	bool detached;		      /* --max-overhead removed the probes */
};

/**
 * alloc__open - load the allocator probes and join their events to the
 * daemon's ring buffer; probes attach with alloc__attach()
 * @sample_bytes: mean bytes between samples (Go's MemProfileRate)
 *
 * Return: 0 or a negative errno.
 */
int alloc__open(struct alloc_prof **out, struct daemon *d, uint64_t sample_bytes);

/**
 * alloc__attach - probe malloc, calloc, realloc, free, posix_memalign,
 * aligned_alloc, mmap and munmap in the libc of @pid (-1: every process)
 * @err: a one-line message on failure
 *
 * Return: the number of probes attached, or a negative errno.
 */
int alloc__attach(struct alloc_prof *a, int pid, char *err, size_t errlen);

void alloc__close(struct alloc_prof *a);

/**
 * alloc__tick - once a second: the probes' cost over the last second;
 * above @max_pct of a CPU (if > 0) they are detached, with a warning, and
 * the profiles keep what they had
 */
void alloc__tick(struct alloc_prof *a, uint64_t now_ns, double max_pct);

/**
 * alloc__json - {"calls", "frees", "sampled", "lost", "probe_cost_ns":
 * {"alloc", "free", "after_switch", "rounds"}, "overhead_pct", "detached"};
 * NULL on allocation failure
 */
json_t *alloc__json(const struct alloc_prof *a);

/** alloc__cost - the probes' measured costs and their last estimate */
const struct alloc_cost *alloc__cost(const struct alloc_prof *a);

/**
 * alloc__rows - the totals by row: row i holds stack id i / ALLOC_NCLASS
 * (of the daemon's store) in class i % ALLOC_NCLASS; rows past the last
 * one with an allocation are absent
 * @n: number of rows
 */
const struct alloc_stack *alloc__rows(const struct alloc_prof *a, size_t *n);

/**
 * alloc__on_event - an LP_EV_ALLOC event of the session's ring buffer
 *
 * Return: 0, or a negative errno (the daemon's ring callback convention).
 */
int alloc__on_event(struct alloc_prof *a, const void *data, size_t size);

/**
 * alloc__on_call_end - a traced call returned: the allocations sampled in
 * it, if it is a call of the split function, take its latency's class
 */
void alloc__on_call_end(struct alloc_prof *a, const struct lp_call_end *e);

/** alloc__sample_bytes - the sampling rate in bytes */
uint64_t alloc__sample_bytes(const struct alloc_prof *a);

/**
 * alloc__counters - the sampler's counters, indexed by enum lp_alloc_cnt:
 * allocator calls seen, allocations sampled, events lost, sampled
 * allocations not tracked (the live map was full), frees seen
 */
void alloc__counters(const struct alloc_prof *a, uint64_t out[LP_ALLOC_CNT_NR]);

/**
 * daemon__alloc_start - memory profiling (--alloc) in every target, and in
 * targets added later; sampled every @sample_bytes on average
 * @err: a one-line message on failure
 *
 * Return: 0 or a negative errno.
 */
int daemon__alloc_start(struct daemon *d, uint64_t sample_bytes, char *err, size_t errlen);

#endif
