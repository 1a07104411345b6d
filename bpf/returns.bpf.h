/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * returns.bpf.h - the real return addresses of the traced calls in flight.
 *
 * A pending uretprobe replaces a call's return address on the user stack
 * with the [uprobes] trampoline. The kernel keeps the original in the
 * task's uprobe_task: a list of return_instance, newest first, each with
 * the stack slot it hijacked (ri->stack) and what the slot held
 * (ri->orig_ret_vaddr, already resolved through chained trampolines).
 *
 * The tracer used to read the slot at every traced call's entry. That
 * bpf_probe_read_user() was about 200 ns of the entry program's 440 on
 * this machine, paid by every call; reading the kernel's list at a sample
 * puts a short walk on each sample instead, which is orders of magnitude
 * rarer than a call.
 */
#ifndef LP_RETURNS_BPF_H
#define LP_RETURNS_BPF_H

/* The kernel keeps at most 64 pending uretprobes per thread. */
#define LP_MAX_PENDING 64

/* On the caller's stack (bpf_loop's context must be): kept small. */
struct returns_walk {
	__u64 ri;		  /* the next list entry to look at (kernel address) */
	__u64 slot[LP_MAX_CALLS]; /* the calls' return-address slots */
	__u64 ret[LP_MAX_CALLS];  /* out */
	__u32 n, done;		  /* calls, and calls answered (from the innermost) */
	__u32 read_slot;
};

/* One step of real_returns(): a list entry skipped, or one call answered. */
static long real_return_step(__u32 k, struct returns_walk *w)
{
	struct return_instance *ri = (struct return_instance *)w->ri;
	__u64 slot, stack, ret = 0;
	__u32 i;

	if (w->done >= w->n)
		return 1;
	i = (w->n - 1 - w->done) & (LP_MAX_CALLS - 1);
	slot = w->slot[i];
	stack = ri ? BPF_CORE_READ(ri, stack) : ~0ULL;
	if (stack < slot) {
		w->ri = (__u64)BPF_CORE_READ(ri, next);
		return 0;
	}
	if (stack == slot) {
		ret = BPF_CORE_READ(ri, orig_ret_vaddr);
		w->ri = (__u64)BPF_CORE_READ(ri, next);
	} else if (w->read_slot && bpf_probe_read_user(&ret, sizeof(ret), (void *)slot)) {
		ret = 0;
	}
	w->ret[i] = ret;
	w->done++;
	return 0;
}

/*
 * Fill w->ret[i] with the return address of tc->f[first + i], for i < n
 * (n <= LP_MAX_CALLS): what a pending uretprobe saved, else, where
 * @read_slot allows (the task is current, so its memory is ours to read),
 * what the slot holds (a ret-instruction probe, or a call past the
 * kernel's nesting limit, was never hijacked), else 0.
 *
 * The calls are asked for from the innermost out, the same order as the
 * kernel's list, so one pass over both pairs them: list entries with a
 * lower slot belong to inner calls that are not ours (another tool's
 * uretprobes) and are skipped; an entry with a higher slot belongs to an
 * outer call, and the current call has none. A bpf_loop() callback, so
 * the verifier checks one step, not every path through 72 of them.
 * @ri is the thread's list of pending returns (lp_return_instances()).
 */
/* The first of @task's pending uretprobe returns (its kernel list). */
static __always_inline __u64 lp_return_instances(struct task_struct *task)
{
	return (__u64)BPF_CORE_READ(task, utask, return_instances);
}

static __always_inline void real_returns(struct returns_walk *w, __u64 ri,
					 const struct lp_thread_calls *tc, __u32 first, __u32 n,
					 bool read_slot)
{
	__u32 i;

	__builtin_memset(w, 0, sizeof(*w));
	if (n > LP_MAX_CALLS)
		n = LP_MAX_CALLS;
	for (i = 0; i < LP_MAX_CALLS; i++) {
		if (i >= n)
			break;
		w->slot[i] = tc->f[(first + i) & (LP_MAX_DEPTH - 1)].sp;
	}
	w->ri = ri;
	w->n = n;
	w->read_slot = read_slot;
	bpf_loop(LP_MAX_PENDING + LP_MAX_CALLS, real_return_step, w, 0);
}

#endif /* LP_RETURNS_BPF_H */
