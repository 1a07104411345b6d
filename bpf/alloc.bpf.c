// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * alloc.bpf.c - memory profiling from uprobes on the C allocator.
 *
 * Sampling by bytes, as Go's MemProfileRate: each thread counts down a
 * random number of bytes (exponential, mean sample_bytes) and the
 * allocation that crosses zero is sampled; user space scales a sampled
 * allocation of size s back by 1 / (1 - exp(-s / sample_bytes)), its
 * probability of being sampled. Only sampled allocations send events and
 * enter the live map, so frees of others cost one failed lookup.
 *
 * A sampled allocation carries the traced calls in flight on its thread
 * (the tracer's task storage, shared with this object) and marks them
 * sampled, so the daemon learns their latency and can class the
 * allocation as made in a slow or a fast call of a split function.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "alloc.h"
#include "calls.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define MAP_ANONYMOUS_ 0x20

const volatile __u64 sample_bytes = 512 * 1024;
/* -ln((i + 0.5) / LP_ALLOC_EXP_STEPS) scaled by 1024: quantiles of Exp(1). */
const volatile __u32 exp_q[LP_ALLOC_EXP_STEPS] = {};

/*
 * What an allocator call's probes (entry and return) and a free's probe
 * cost the calling thread, measured by alloc_cost.c in rounds through the
 * session (0 until the first). Charged to the traced calls in flight, as
 * the sampler charges its samples, so that their latencies stay net of
 * liveprof's own work. charge_switch_ns is what the probes cost more when
 * the thread has been switched out since its previous hit: on this VM a
 * malloc+free pair's probes cost 11 us back to back but 17-19 us right
 * after a sleep (a server's request after its idle gap), and charging the
 * back-to-back cost left 6-7 us of them in every such call.
 */
__u64 charge_alloc_ns = 0;
__u64 charge_free_ns = 0;
__u64 charge_switch_ns = 0;

struct thread_state {
	__s64 countdown;
	__u64 pending_size; /* sampled: size of the allocation in flight */
	__u64 memptr;	    /* posix_memalign: where the pointer goes */
	__u64 csw;	    /* the thread's context switches at its last hit */
	__u32 depth;	    /* allocator calls in flight (malloc -> mmap) */
	__u32 pending;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct thread_state);
} alloc_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LP_ALLOC_LIVE_MAX);
	__type(key, __u64);
	__type(value, __u64);
} alloc_live SEC(".maps");

/* The session's ring buffer (the loader reuses liveprof.bpf.c's map). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LP_ALLOC_CNT_NR);
	__type(key, __u32);
	__type(value, __u64);
} alloc_counters SEC(".maps");

static __always_inline void count(__u32 k)
{
	__u64 *v = bpf_map_lookup_elem(&alloc_counters, &k);

	if (v)
		(*v)++;
}

static __always_inline void charge(__u64 ns)
{
	struct lp_thread_calls *tc;

	if (!ns)
		return;
	tc = thread_calls_of(bpf_get_current_task_btf(), false);
	if (tc && tc->depth)
		tc->overhead_ns += ns;
}

/*
 * charge_switch_ns if the thread has been switched out since its previous
 * hit of these probes (or this is its first), else 0: the hit that pays
 * for the cold state, as the first pair after a sleep does in alloc_cost.c.
 */
static __always_inline __u64 switch_charge(struct thread_state *ts)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u64 csw = t->nvcsw + t->nivcsw;

	if (!ts || csw == ts->csw)
		return 0;
	ts->csw = csw;
	return charge_switch_ns;
}

static __always_inline __s64 next_countdown(void)
{
	__u32 i = bpf_get_prandom_u32() % LP_ALLOC_EXP_STEPS;

	return (__s64)(sample_bytes * exp_q[i] / 1024) + 1;
}

static __always_inline struct thread_state *thread(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct thread_state *ts = bpf_map_lookup_elem(&alloc_threads, &tid);

	if (ts)
		return ts;
	struct thread_state init = {.countdown = next_countdown()};

	bpf_map_update_elem(&alloc_threads, &tid, &init, BPF_NOEXIST);
	return bpf_map_lookup_elem(&alloc_threads, &tid);
}

/* An allocation of @size begins; @memptr for posix_memalign. */
static __always_inline int on_alloc(__u64 size, __u64 memptr)
{
	struct thread_state *ts = thread();

	if (!ts)
		return 0;
	/* An allocator called from inside another (malloc's own mmap) is
	 * part of the outer allocation: count only the outermost. */
	if (ts->depth++)
		return 0;
	count(LP_ALLOC_CNT_CALLS);
	charge(charge_alloc_ns + switch_charge(ts));
	ts->countdown -= (__s64)size;
	if (ts->countdown > 0)
		return 0;
	/* A fresh draw, as Go does: the exponential has no memory. */
	ts->countdown = next_countdown();
	ts->pending = 1;
	ts->pending_size = size;
	ts->memptr = memptr;
	return 0;
}

static __always_inline void on_free(__u64 ptr)
{
	struct lp_alloc_event *e;
	__u64 pid_tgid;

	if (!ptr || !bpf_map_lookup_elem(&alloc_live, &ptr))
		return;
	bpf_map_delete_elem(&alloc_live, &ptr);
	e = bpf_ringbuf_reserve(&events, sizeof(*e) - sizeof(e->ustack), 0);
	if (!e) {
		count(LP_ALLOC_CNT_LOST);
		return;
	}
	pid_tgid = bpf_get_current_pid_tgid();
	e->hdr.type = LP_EV_ALLOC;
	e->hdr.size = sizeof(*e) - sizeof(e->ustack);
	e->kind = LP_ALLOC_EV_FREE;
	e->n_calls = 0;
	e->pid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->n_ustack = 0;
	e->ptr = ptr;
	e->size = 0;
	e->time_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(e, 0);
}

SEC("uprobe")
int BPF_KPROBE(malloc_enter, __u64 size)
{
	return on_alloc(size, 0);
}

SEC("uprobe")
int BPF_KPROBE(calloc_enter, __u64 n, __u64 size)
{
	return on_alloc(n * size, 0);
}

SEC("uprobe")
int BPF_KPROBE(realloc_enter, __u64 ptr, __u64 size)
{
	on_free(ptr);
	return on_alloc(size, 0);
}

SEC("uprobe")
int BPF_KPROBE(aligned_alloc_enter, __u64 align, __u64 size)
{
	return on_alloc(size, 0);
}

SEC("uprobe")
int BPF_KPROBE(posix_memalign_enter, __u64 memptr, __u64 align, __u64 size)
{
	return on_alloc(size, memptr);
}

SEC("uprobe")
int BPF_KPROBE(mmap_enter, __u64 addr, __u64 len, __u64 prot, __u64 flags)
{
	struct thread_state *ts;

	if (flags & MAP_ANONYMOUS_)
		return on_alloc(len, 0);
	/* A file mapping: not memory the program allocated, but the return
	 * probe still runs: keep the depth balanced. */
	ts = thread();
	if (ts)
		ts->depth++;
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(free_enter, __u64 ptr)
{
	count(LP_ALLOC_CNT_FREES);
	charge(charge_free_ns + switch_charge(thread()));
	on_free(ptr);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(munmap_enter, __u64 addr)
{
	count(LP_ALLOC_CNT_FREES);
	charge(charge_free_ns + switch_charge(thread()));
	on_free(addr);
	return 0;
}

/*
 * The innermost traced calls in flight, into @e, each marked sampled so
 * its return tells the daemon its latency.
 */
static __always_inline void tag_calls(struct lp_alloc_event *e, __u32 tid)
{
	struct lp_thread_calls *tc = thread_calls_of(bpf_get_current_task_btf(), false);
	__u32 depth, i;

	e->n_calls = 0;
	e->pad = 0;
	if (!tc)
		return;
	depth = tc->depth;
	if (depth > LP_MAX_DEPTH)
		depth = LP_MAX_DEPTH;
	for (i = 0; i < LP_ALLOC_MAX_CALLS && i < depth; i++) {
		__u32 k = depth - 1 - i;
		struct lp_frame_state *f;

		/* hide k's range from clang so the mask reaches the verifier */
		asm volatile("" : "+r"(k));
		f = &tc->f[k & (LP_MAX_DEPTH - 1)];
		f->flags |= LP_FS_SAMPLED;
		e->calls[i].probe_id = f->probe_id;
		e->calls[i].pad = 0;
		e->calls[i].call_id = ((__u64)tid << 32) | f->seq;
	}
	e->n_calls = i;
}

/* Shared by every allocator's return: the pointer is the return value. */
SEC("uretprobe")
int BPF_KRETPROBE(alloc_exit, __u64 ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct thread_state *ts = bpf_map_lookup_elem(&alloc_threads, &tid);
	struct lp_alloc_event *e;
	__u64 ptr = ret, one = 1;
	long n;

	if (!ts || !ts->depth)
		return 0;
	if (--ts->depth || !ts->pending)
		return 0;
	ts->pending = 0;
	if (ts->memptr) { /* posix_memalign returns 0 and stores the pointer */
		if (ret || bpf_probe_read_user(&ptr, sizeof(ptr), (void *)ts->memptr))
			return 0;
	}
	if (!ptr || ptr == (__u64)-1) /* NULL, or MAP_FAILED */
		return 0;
	count(LP_ALLOC_CNT_SAMPLED);
	if (bpf_map_update_elem(&alloc_live, &ptr, &one, BPF_ANY)) {
		count(LP_ALLOC_CNT_LIVE_FULL);
		return 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		bpf_map_delete_elem(&alloc_live, &ptr);
		count(LP_ALLOC_CNT_LOST);
		return 0;
	}
	e->hdr.type = LP_EV_ALLOC;
	e->hdr.size = sizeof(*e);
	e->kind = LP_ALLOC_EV_ALLOC;
	e->pid = bpf_get_current_pid_tgid() >> 32;
	e->tid = tid;
	e->ptr = ptr;
	e->size = ts->pending_size;
	e->time_ns = bpf_ktime_get_ns();
	tag_calls(e, tid);
	n = bpf_get_stack(ctx, e->ustack, sizeof(e->ustack), BPF_F_USER_STACK);
	e->n_ustack = n > 0 ? (__u32)((__u64)n >> 3) : 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}
