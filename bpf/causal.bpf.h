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
 * The wait is a bounded bpf_loop over bpf_ktime_get_ns(), and the delay is
 * clamped to LP_CAUSAL_MAX_DELAY_NS here as well as in user space, so no hit
 * can stall its thread for longer, whatever the map holds. Busy-waiting
 * (rather than sleeping) keeps the thread on its CPU, as slower code would.
 */
#ifndef LP_CAUSAL_BPF_H
#define LP_CAUSAL_BPF_H

/* Written by user space (bpf_session__set_causal_delay), read per hit. */
__u64 causal_delay_ns[LP_MAX_PROBES];
__u64 causal_delayed_hits = 0; /* hits that waited, to check delays happen */

static long causal_spin_cb(__u32 i, void *ctx)
{
	__u64 end = *(__u64 *)ctx;

	return bpf_ktime_get_ns() >= end ? 1 : 0;
}

static __always_inline void causal_delay(__u32 probe_id)
{
	__u64 d, end;

	if (probe_id >= LP_MAX_PROBES)
		return;
	d = causal_delay_ns[probe_id];
	if (!d)
		return;
	if (d > LP_CAUSAL_MAX_DELAY_NS)
		d = LP_CAUSAL_MAX_DELAY_NS;
	end = bpf_ktime_get_ns() + d;
	/* Each iteration reads the clock (tens of ns): the count only bounds
	 * the loop for the verifier, the clock ends it. */
	bpf_loop(LP_CAUSAL_MAX_LOOPS, causal_spin_cb, &end, 0);
	__sync_fetch_and_add(&causal_delayed_hits, 1);
}

#endif /* LP_CAUSAL_BPF_H */
