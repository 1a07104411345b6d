/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cost.bpf.h - what liveprof's own work costs the threads it watches.
 *
 * A sample interrupts the thread: the cpu-clock interrupt, perf, the BPF
 * dispatch and the sampler program itself all run on its time. A traced
 * call that is sampled is that much longer, and a split at pNN would
 * otherwise call it slow because it was sampled. So each sample adds its
 * cost to the thread's overhead_ns: the sampler's own time, measured here
 * from its first to its last instruction, plus sample_irq_ns, the rest,
 * which the daemon calibrates (lp_sample_calib) and writes before any
 * traced call can be sampled. The tracer subtracts what a call was
 * charged from its latency.
 */
#ifndef LP_COST_BPF_H
#define LP_COST_BPF_H

/* Written by the daemon (skeleton .bss). */
__u64 sample_irq_ns = 0; /* per sample, outside what BPF can time of it */
/* per timed interrupt, its length less the sampler's own time, x this / 1024 more */
__u64 sample_irq_scale = 0;
__u64 calib_samples = 0;    /* samples of calib_tid */
__u32 calib_tid = 0;	    /* the daemon's calibration thread, while it runs */
bool timer_bracket = false; /* lp_timer_entry/exit are attached */

/*
 * Timer interrupts on this CPU. The cpu-clock sample runs inside the
 * local APIC timer interrupt, between the local_timer_entry and
 * local_timer_exit tracepoints, so that bracket times all of the
 * interrupt's handling (hrtimer and perf work, re-arming the timer, which
 * in a VM is an exit to the host, the sampler): measured per sample, it
 * follows the machine's load. What lies outside the bracket (entry and
 * exit of the interrupt, the caches it leaves cold) is charged in
 * proportion to the kernel's part of it, sample_irq_scale / 1024 of the
 * bracket less the sampler program's own time: both grow together when
 * samples are rarer (a sample in a call of constant work measured 18 us
 * at 10 kHz and 36-40 us at 100 Hz here, bracket and rest alike), which
 * a constant calibrated at one rate does not follow. The sampler's own
 * time is left out of that share because it varies with the target, not
 * with the machine: walking a CPython stack adds 3-4 us to it here,
 * all of it reads of the target's own memory, and the calibration's
 * native stack has no such part (charged in proportion, it over-charged
 * every sampled Python call by a further 3-4 us).
 */
struct lp_timer_irq {
	__u64 entry_ns;	 /* 0: not inside a timer interrupt */
	__u64 bpf_ns;	 /* the sampler's own time in this one */
	__u32 sampled;	 /* a sample of a traced thread ran in this one */
	__u32 calib;	 /* the calibration sampler ran in this one: */
	__u64 calib_idx; /* its number (calib_samples before it) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lp_timer_irq);
} timer_irq SEC(".maps");

/* The bracket of calibration sample i at [i % LP_CALIB_SLOTS], for the
 * daemon to pair with the piece of work that sample landed in. */
struct lp_calib_slot calib_slots[LP_CALIB_SLOTS];

static __always_inline struct lp_timer_irq *timer_irq_here(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&timer_irq, &zero);
}

static __always_inline void charge_current(__u64 ns)
{
	struct lp_thread_calls *tc = thread_calls_of(bpf_get_current_task_btf(), false);

	if (tc && tc->depth)
		tc->overhead_ns += ns;
}

/*
 * Charge a sample that started at @t0 to the current thread: later, with
 * the whole interrupt, when it runs inside a timed timer interrupt, else
 * now, its own time plus the calibrated rest. Not atomic against the
 * tracer's own update of overhead_ns on the same thread; a sample landing
 * in those few instructions loses one charge.
 */
static __always_inline void charge_sample(__u64 t0)
{
	struct lp_timer_irq *ti = timer_bracket ? timer_irq_here() : NULL;

	__u64 own = bpf_ktime_get_ns() - t0;

	if (ti && ti->entry_ns) {
		ti->sampled = 1;
		ti->bpf_ns += own;
		return;
	}
	charge_current(own + sample_irq_ns);
}

SEC("tp_btf/local_timer_entry")
int BPF_PROG(lp_timer_entry, int vector)
{
	struct lp_timer_irq *ti = timer_irq_here();

	if (ti) {
		ti->entry_ns = bpf_ktime_get_ns();
		ti->bpf_ns = 0;
		ti->sampled = 0;
		ti->calib = 0;
	}
	return 0;
}

SEC("tp_btf/local_timer_exit")
int BPF_PROG(lp_timer_exit, int vector)
{
	struct lp_timer_irq *ti = timer_irq_here();
	__u64 d, kernel;

	if (!ti || !ti->entry_ns)
		return 0;
	d = bpf_ktime_get_ns() - ti->entry_ns;
	kernel = d > ti->bpf_ns ? d - ti->bpf_ns : 0;
	ti->entry_ns = 0;
	if (ti->sampled)
		charge_current(d + (kernel * sample_irq_scale >> 10));
	if (ti->calib) {
		struct lp_calib_slot *c = &calib_slots[ti->calib_idx & (LP_CALIB_SLOTS - 1)];

		c->bracket_ns = d;
		c->kernel_ns = kernel;
	}
	return 0;
}

/*
 * Calibration: the daemon points the real sampler at one of its own
 * threads (calib_tid), which runs constant work and compares pieces of it
 * with and without a sample inside. calib_samples counts those samples.
 */
static __always_inline bool is_calib(__u32 tid)
{
	struct lp_timer_irq *ti;
	__u64 idx;

	if (!calib_tid || tid != calib_tid)
		return false;
	idx = __sync_fetch_and_add(&calib_samples, 1);
	ti = timer_bracket ? timer_irq_here() : NULL;
	if (ti && ti->entry_ns) {
		ti->calib = 1;
		ti->calib_idx = idx;
	}
	return true;
}

#endif /* LP_COST_BPF_H */
