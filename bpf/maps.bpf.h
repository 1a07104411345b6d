/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * maps.bpf.h - maps and configuration shared by every liveprof program.
 * Only the BPF side includes this; user space sees the maps through the
 * skeleton and the layouts through liveprof.h.
 */
#ifndef LP_MAPS_BPF_H
#define LP_MAPS_BPF_H

/* Set by the loader before load (skeleton rodata). */
const volatile bool filter_all = false;	    /* -a: every process */
const volatile bool capture_kernel = false; /* --kernel */
const volatile bool offcpu_enabled = false; /* --offcpu */
const volatile __u64 offcpu_min_ns = 0;	    /* shorter blocks are not reported */
const volatile __u32 self_tgid = 0;	    /* never profile liveprof itself */
/*
 * Test hook (LIVEPROF_TEST_REFUSE): bit (1 << LP_CAP_x) makes capability
 * x's programs reach lp_refused_for_test(), which no verifier accepts.
 * Zero, the branch is dead and the verifier never looks at it.
 */
const volatile __u32 refuse_caps = 0;
/* Histogram and classify raw latencies, not net of measured overhead. */
const volatile bool raw_latency = false;
/* User stack bytes copied after each on-CPU sample for user-space unwinding
 * (0: frame-pointer stacks only). At most LP_MAX_STACK_COPY. */
const volatile __u32 stack_copy_bytes = 0;
/* With the BPF unwinder: user stack bytes copied after a sample whose walk
 * was cut at a pc no table covers yet (a command that just exec'd, a
 * library just dlopen'ed), so that user space unwinds it with libdw. */
const volatile __u32 rescue_copy_bytes = 0;
/* read interpreter frames at each sample of a process in py_procs or rb_procs
 * (python.bpf.h, ruby.bpf.h) */
const volatile bool interp_frames = false;

/* Runtime switches, written by the daemon while running. */
struct lp_runtime {
	__u32 paused;
	__u32 offcpu_only_in_calls; /* only report blocks inside traced calls */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lp_runtime);
} runtime SEC(".maps");

/* tgid -> 1 for the processes being profiled. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by the loader */
} events SEC(".maps");

/*
 * Where a sample with a stack copy is built before bpf_ringbuf_output():
 * a ring buffer reservation must have a constant size, and the copy does
 * not. Per-CPU array values are limited to 32 KiB, so this is a plain
 * array with one entry per CPU (the loader sets max_entries), indexed by
 * the current CPU: the sampler runs from the cpu-clock interrupt and
 * cannot nest with itself on a CPU.
 */
struct lp_sample_buf {
	struct lp_sample s;
	__u8 redzone[LP_REDZONE];
	__u8 stack[LP_MAX_STACK_COPY];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lp_sample_buf);
} sample_buf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LP_CNT_NR);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

#include "calls.bpf.h"

/* Latency histogram: index probe_id * LP_HIST_BUCKETS + lp_hist_bucket(ns). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, LP_MAX_PROBES *LP_HIST_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, LP_MAX_PROBES);
	__type(key, __u32);
	__type(value, struct lp_probe_stats);
} probe_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LP_MAX_PROBES);
	__type(key, __u32);
	__type(value, struct lp_probe_cfg);
} probes SEC(".maps");

/* Fetch programs: index probe_id * LP_MAX_VALUES + value index. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LP_MAX_PROBES *LP_MAX_VALUES);
	__type(key, __u32);
	__type(value, struct lp_fetch_prog);
} fetch SEC(".maps");

/* --by: (probe, value, bucket) -> calls; key layout in liveprof.h. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct lp_by_key);
	__type(value, __u64);
} by_hist SEC(".maps");

/* USDT pairs filtered by strings (rb:Class#method): liveprof.h. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LP_MAX_PROBES);
	__type(key, struct lp_str_key);
	__type(value, __u8);
} str_match SEC(".maps");

/*
 * Wake the daemon only once this many bytes are waiting (set by the
 * loader to a fraction of the ring; 0 wakes it for every event). The
 * daemon also drains the ring on each poll timeout, so nothing waits
 * longer than one poll interval; without this, every sample cost the
 * daemon a wake-up.
 */
const volatile __u64 wakeup_bytes = 0;

static __always_inline __u64 rb_flags(void)
{
	if (!wakeup_bytes)
		return 0;
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
									     : BPF_RB_NO_WAKEUP;
}

static __always_inline void count_event(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += 1;
}

static __always_inline bool is_target(__u32 tgid)
{
	if (tgid == 0 || tgid == self_tgid)
		return false;
	if (filter_all)
		return true;
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

/* The calling thread's id, read only where a record needs it. */
static __always_inline __u32 current_tid(void)
{
	return (__u32)bpf_get_current_pid_tgid();
}

/*
 * True in liveprof itself under -a, where probes fire in every process.
 * Otherwise uprobes are attached per target pid and the (read-only) flag
 * lets the verifier drop the check, helper call and all.
 */
static __always_inline bool in_self(void)
{
	return filter_all && (bpf_get_current_pid_tgid() >> 32) == self_tgid;
}

static __always_inline bool is_paused(void)
{
	__u32 zero = 0;
	struct lp_runtime *rt = bpf_map_lookup_elem(&runtime, &zero);

	return rt && rt->paused;
}

/* An unbounded read from the stack: refused by every verifier (refuse_caps). */
static __always_inline int lp_refused_for_test(void)
{
	volatile char b[8];

	b[0] = 0;
	return b[bpf_ktime_get_ns() & 0xffff];
}

#define LP_REFUSED_FOR_TEST(cap)                                                                   \
	do {                                                                                       \
		if (refuse_caps & (1u << (cap)))                                                   \
			return lp_refused_for_test();                                              \
	} while (0)

#endif /* LP_MAPS_BPF_H */
