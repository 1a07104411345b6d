/* SPDX-License-Identifier: GPL-2.0 */
/*
 * alloc.h - memory profiles (--alloc): uprobes on the C allocator
 * (bpf/alloc.bpf.c), sampled by bytes like Go's MemProfileRate, and the
 * allocations still live, by allocation stack.
 */
#ifndef LP_SESSION_ALLOC_H
#define LP_SESSION_ALLOC_H

#include <stdint.h>
#include <stddef.h>

struct daemon;
struct alloc_prof;

/* Scaled totals of one allocation stack (stack id of the daemon's store). */
struct alloc_stack {
	double alloc_objects, alloc_space; /* every allocation so far */
	double inuse_objects, inuse_space; /* allocated and not yet freed */
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
 * alloc__stacks - the totals by stack id; entries past the last stack
 * with an allocation are absent
 * @n: number of entries (stack ids 0..n-1)
 */
const struct alloc_stack *alloc__stacks(const struct alloc_prof *a, size_t *n);

/** alloc__sample_bytes - the sampling rate in bytes */
uint64_t alloc__sample_bytes(const struct alloc_prof *a);

/**
 * alloc__counters - allocator calls seen, allocations sampled, events lost
 * and sampled allocations not tracked (the live map was full)
 */
void alloc__counters(const struct alloc_prof *a, uint64_t out[4]);

/**
 * daemon__alloc_start - memory profiling (--alloc) in every target, and in
 * targets added later; sampled every @sample_bytes on average
 * @err: a one-line message on failure
 *
 * Return: 0 or a negative errno.
 */
int daemon__alloc_start(struct daemon *d, uint64_t sample_bytes, char *err, size_t errlen);

#endif
