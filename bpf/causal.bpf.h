/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * causal.bpf.h - delay injection for causal profiling (liveprof causal).
 *
 * The entry probe of a traced function busy-waits for causal_delay_ns[id]
 * nanoseconds before it stamps the call's start, so the delay lengthens the
 * thread's time in the candidate (and in every call around it) but not the
 * candidate's own measured latency: the daemon converts the delay into a
 * share of the candidate's duration with an unbiased mean. 0 (the control
 * windows, and every probe outside an experiment) costs one load.
 *
 * Busy-waiting (rather than sleeping) keeps the thread on its CPU, as
 * slower code would. But code in a uprobe handler cannot be preempted (the
 * kernels here are PREEMPT_NONE by default), where slower user code can:
 * a thread woken on this CPU would wait for the whole delay, and every
 * function would seem to gate every other thread. So the wait stops as soon
 * as the scheduler wants the CPU (TIF_NEED_RESCHED); the rest becomes the
 * thread's debt, paid at its next delayed calls of the same window (the
 * epoch). The thread's total delay is kept; only its place moves.
 *
 * The wait is a bounded bpf_loop over bpf_ktime_get_ns(), and one hit waits
 * at most LP_CAUSAL_MAX_DELAY_NS, whatever the map holds.
 */
#ifndef LP_CAUSAL_BPF_H
#define LP_CAUSAL_BPF_H

#define CAUSAL_TIF_RESCHED ((1ul << 3) | (1ul << 4)) /* x86 TIF_NEED_RESCHED(_LAZY) */

/* Written by user space (bpf_session__set_causal_delay), read per hit. */
__u64 causal_delay_ns[LP_MAX_PROBES];
__u64 causal_epoch = 0;	       /* bumped with every delay change: old debts lapse */
__u64 causal_delayed_hits = 0; /* hits that waited, to check delays happen */
__u64 causal_yielded_hits = 0; /* of those, cut short for the scheduler */
/* Nanoseconds actually waited: debts that lapse at a window's end and the
 * per-hit clamp make it differ from the delay asked for. */
__u64 causal_waited_ns = 0;

struct causal_debt {
	__u64 epoch;
	__u64 ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct causal_debt);
} causal_debts SEC(".maps");

struct causal_wait {
	__u64 end;
	struct task_struct *task;
	bool yielded;
};

static long causal_spin_cb(__u32 i, void *ctx)
{
	struct causal_wait *w = ctx;

	if (bpf_ktime_get_ns() >= w->end)
		return 1;
	if (w->task->thread_info.flags & CAUSAL_TIF_RESCHED) {
		w->yielded = true;
		return 1;
	}
	return 0;
}

/* Wait @d (> 0) plus the thread's debt of this epoch, as described above. */
static __always_inline void causal_wait_ns(__u64 d)
{
	struct causal_wait w = {};
	struct causal_debt *debt;
	__u64 epoch, now;

	w.task = bpf_get_current_task_btf();
	epoch = causal_epoch;
	debt = bpf_task_storage_get(&causal_debts, w.task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (debt) {
		if (debt->epoch == epoch)
			d += debt->ns;
		debt->epoch = epoch;
		debt->ns = 0;
	}
	if (d > LP_CAUSAL_MAX_DELAY_NS)
		d = LP_CAUSAL_MAX_DELAY_NS;
	now = bpf_ktime_get_ns();
	w.end = now + d;
	/* Each iteration reads the clock (tens of ns): the count only bounds
	 * the loop for the verifier, the clock or the scheduler ends it. */
	bpf_loop(LP_CAUSAL_MAX_LOOPS, causal_spin_cb, &w, 0);
	__sync_fetch_and_add(&causal_delayed_hits, 1);
	d = bpf_ktime_get_ns();
	__sync_fetch_and_add(&causal_waited_ns, d - now);
	if (w.yielded) {
		if (debt && w.end > d)
			debt->ns = w.end - d;
		__sync_fetch_and_add(&causal_yielded_hits, 1);
	}
}

static __always_inline void causal_delay(__u32 probe_id)
{
	__u64 d;

	if (probe_id >= LP_MAX_PROBES)
		return;
	d = causal_delay_ns[probe_id];
	if (d)
		causal_wait_ns(d);
}

/*
 * Line candidates: delays triggered by samples (coz's trigger). A line's
 * time is where its instructions run, mostly inside loops, and a uprobe
 * hit per execution would cost more than the experiment measures. So
 * during a line's experiments a separate cpu-clock event ticks on every
 * CPU at a fixed period P (bpf_session__start_causal_ticks), and a tick
 * that interrupts the target's user code in one of the line's ranges
 * waits causal_line_delay_ns there (the same wait and debts as above).
 * The wait runs in the tick's interrupt, on the thread's CPU, as slower
 * code of the line would. No tick lands inside a wait, so the line's share
 * of the process's ticks is its share of the process's time outside the
 * waits (causal_line.c turns that into its slow-down).
 */
__u64 causal_line_lo[LP_CAUSAL_MAX_RANGES];
__u64 causal_line_hi[LP_CAUSAL_MAX_RANGES];
__u32 causal_line_n = 0;    /* ranges in use; 0: no line */
__u32 causal_line_tgid = 0; /* the process whose ticks count */
__u64 causal_line_delay_ns = 0;
__u64 causal_line_ticks = 0; /* ticks in the process */
__u64 causal_line_user = 0;  /* of those, in its user code (a line's share is of these) */
__u64 causal_line_hits = 0;  /* of those, in the line */

SEC("perf_event")
int lp_causal_tick(struct bpf_perf_event_data *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, n = causal_line_n, i;
	__u64 ip = ctx->regs.ip, d;

	LP_REFUSED_FOR_TEST(LP_CAP_CAUSAL);

	if (!n || tgid != causal_line_tgid)
		return 0;
	__sync_fetch_and_add(&causal_line_ticks, 1);
	/* the line's code is the user's (kernel addresses have the top bit);
	 * nor is the [uprobes] page's: a probe single-steps its instruction
	 * there (the progress point's, say), a trap each way, and on this VM
	 * about 10 us a call of it counted as the program's user time (a
	 * line's share of 60% measured 45-56%) */
	if ((__s64)ip < 0 || ip - LP_UPROBE_TRAMP_LO < LP_UPROBE_TRAMP_HI - LP_UPROBE_TRAMP_LO)
		return 0;
	__sync_fetch_and_add(&causal_line_user, 1);
	for (i = 0; i < LP_CAUSAL_MAX_RANGES; i++) {
		if (i >= n)
			return 0;
		if (ip >= causal_line_lo[i] && ip < causal_line_hi[i])
			break;
	}
	if (i >= LP_CAUSAL_MAX_RANGES)
		return 0;
	__sync_fetch_and_add(&causal_line_hits, 1);
	d = causal_line_delay_ns;
	if (d)
		causal_wait_ns(d);
	return 0;
}

#endif /* LP_CAUSAL_BPF_H */
