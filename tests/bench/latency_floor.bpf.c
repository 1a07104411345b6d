/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * latency_floor.bpf.c - the least a latency tracer can do per call, for the
 * per-call table of BENCHMARKS.md (loaded by multi_floor.c).
 *
 * Two clock reads and liveprof's own histogram bucket are what any latency
 * histogram needs; what differs is where the start time waits between the
 * entry and the return:
 *   - lat_entry/lat_return: in the thread's task-local storage (one slot,
 *     not recursion-safe), as liveprof keeps its calls in flight;
 *   - lat_session: in the kernel's own per-call session cookie (a
 *     uprobe_multi session link, Linux 6.13+), which needs no per-thread
 *     state at all.
 * Neither nets out sampling cost, pairs nested or recursive calls, or
 * drops frames that longjmp skipped: these are bounds, not tracers.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/liveprof.h"

char LICENSE[] SEC("license") = "GPL";

/* Weak: an object that names them still loads where they are missing. */
extern bool bpf_session_is_return(void) __ksym __weak;
extern __u64 *bpf_session_cookie(void) __ksym __weak;

struct call_start {
	__u64 start_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct call_start);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LP_HIST_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} latencies SEC(".maps");

static __always_inline void count_latency(__u64 ns)
{
	__u32 bucket = lp_hist_bucket(ns);
	__u64 *slot = bpf_map_lookup_elem(&latencies, &bucket);

	if (slot)
		__sync_fetch_and_add(slot, 1);
}

SEC("uprobe")
int lat_entry(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct call_start *c = bpf_task_storage_get(&starts, bpf_get_current_task_btf(), NULL,
						    BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (c)
		c->start_ns = now;
	return 0;
}

SEC("uretprobe")
int lat_return(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct call_start *c = bpf_task_storage_get(&starts, bpf_get_current_task_btf(), NULL, 0);

	if (c && c->start_ns)
		count_latency(now - c->start_ns);
	return 0;
}

/* One program at both ends of the call: the cookie holds the start. */
SEC("uprobe")
int lat_session(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 *cookie = bpf_session_cookie();

	if (!bpf_session_is_return())
		*cookie = now;
	else
		count_latency(now - *cookie);
	return 0;
}
