/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * calls.bpf.h - a thread's traced calls in flight, in task-local storage.
 * Shared by the tracer (writes them), the sampler and the allocator probes
 * (alloc.bpf.c, which reads them through the same map: the loader reuses
 * this object's map fd), so each can tag what it sees with the calls
 * around it.
 */
#ifndef LP_CALLS_BPF_H
#define LP_CALLS_BPF_H

/*
 * One traced call in flight on a thread. Kept small: the entry probe
 * writes all of it on every call.
 */
struct lp_frame_state {
	__u32 probe_id;
	__u32 flags; /* LP_FS_* */
	__u32 seq;   /* call id: (tid << 32) | seq */
	__u32 ip_lo; /* low half of the probed address (tracer.bpf.h, siblings) */
	__u64 start_ns;
	__u64 ovh0; /* the thread's overhead_ns at entry */
	__u64 sp;   /* user sp at entry: the address of the return-address slot */
	__u64 by_value;
};

/* a sample was taken, or an allocation sampled, inside this call: its
 * return sends LP_EV_CALL_END */
#define LP_FS_SAMPLED  (1u << 0)
#define LP_FS_LINE_HIT (1u << 1) /* the --when line was hit inside this call */
#define LP_FS_HAS_BY   (1u << 2)
/* A USDT entry/return pair (usdt.bpf.h): no stack slot, so sp is 0 and
 * the stack-pointer rules that drop stale frames do not apply to it. */
#define LP_FS_USDT (1u << 3)

/* A function entry's address, and the probe whose entry program ran
 * there, while no uprobe was attached or detached (probe_gen). */
struct lp_site_memo {
	__u64 ip;
	__u32 probe_id;
	__u32 gen;
};

#define LP_SITE_MEMO 8 /* a power of 2 */

/*
 * A thread's traced calls in flight, in its task-local storage: no hash
 * lookup per call, freed with the task, and room for LP_MAX_DEPTH calls.
 * overhead_ns only grows: what samples and the probes of returned traced
 * calls cost this thread. A call's latency net of that cost is its raw
 * latency minus (overhead_ns at return - overhead_ns at entry).
 */
struct lp_thread_calls {
	__u32 depth;
	__u32 seq;
	__u64 overhead_ns;
	__u64 py_end_ns; /* when the last timed py: program run ended (pytrace.bpf.h) */
	/* generator calls that began on this thread and have not ended
	 * (pygen.bpf.h): while there are any, a return probe looks further */
	__u32 py_gens;
	__u32 pad;
	/* The last return through the uretprobe trampoline, written by the
	 * return program (tracer.bpf.h): the call's return-address slot,
	 * where it returned to, and %rax as the trampoline pushed it into
	 * that slot. The call's frame is gone by then, yet the kernel has
	 * not written the return address back: unwind.bpf.h takes it from
	 * here, and checks the slot holds one of the two. */
	__u64 tramp_slot, tramp_ret, tramp_ax;
	/* The probe ids of the function entries this thread hit last, by
	 * address, for the exec it was hit in (tracer.bpf.h, entry_probe_id) */
	__u64 memo_exec_id;
	struct lp_site_memo memo[LP_SITE_MEMO];
	struct lp_frame_state f[LP_MAX_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lp_thread_calls);
} thread_calls SEC(".maps");

/* The calls in flight on @task (NULL: none yet, or storage busy). */
static __always_inline struct lp_thread_calls *thread_calls_of(struct task_struct *task,
							       bool create)
{
	return bpf_task_storage_get(&thread_calls, task, NULL,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

#endif
