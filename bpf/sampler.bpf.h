/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sampler.bpf.h - building a stack sample: the user stack (frame
 * pointers), optionally the kernel stack, the user registers for CFI
 * fix-ups, and the traced calls in flight on the thread.
 */
#ifndef LP_SAMPLER_BPF_H
#define LP_SAMPLER_BPF_H

/*
 * Copy the thread's in-flight traced calls into the sample and mark them
 * sampled, so that their returns send LP_EV_CALL_END. Marking here is
 * what keeps the event rate bounded by the sampling rate.
 */
static __always_inline void tag_calls(struct lp_sample *s, __u32 tid)
{
	struct lp_thread_calls *tc = bpf_map_lookup_elem(&thread_calls, &tid);
	__u32 depth, i;

	s->n_calls = 0;
	if (!tc)
		return;
	depth = tc->depth;
	if (depth > LP_MAX_CALLS) {
		depth = LP_MAX_CALLS;
		s->flags |= LP_SF_CALLS_OVFL;
	}
	for (i = 0; i < LP_MAX_CALLS; i++) {
		if (i >= depth)
			break;
		tc->f[i].flags |= LP_FS_SAMPLED;
		s->calls[i].probe_id = tc->f[i].probe_id;
		s->calls[i].depth = i;
		s->calls[i].call_id = tc->f[i].call_id;
		s->calls[i].ret_addr = tc->f[i].ret_addr;
		s->calls[i].ret_slot = tc->f[i].sp;
	}
	s->n_calls = depth;
}

/*
 * Fill everything but the weight and the flags that depend on the caller.
 * @ctx is the program context, used by bpf_get_stack.
 */
static __always_inline void fill_sample(void *ctx, struct lp_sample *s, __u32 tgid, __u32 tid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *uregs = (struct pt_regs *)bpf_task_pt_regs(task);
	long n;

	s->hdr.type = LP_EV_SAMPLE;
	s->hdr.size = sizeof(*s);
	s->pid = tgid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	s->time_ns = bpf_ktime_get_ns();
	s->flags = 0;
	s->reserved = 0;
	s->reserved2 = 0;
	bpf_get_current_comm(s->comm, sizeof(s->comm));

	/* The registers user space had when it last entered the kernel (or
	 * was interrupted): the start of the user stack walk either way. */
	s->regs.ip = BPF_CORE_READ(uregs, ip);
	s->regs.sp = BPF_CORE_READ(uregs, sp);
	s->regs.bp = BPF_CORE_READ(uregs, bp);

	n = bpf_get_stack(ctx, s->ustack, sizeof(s->ustack), BPF_F_USER_STACK);
	if (n < 0) {
		s->flags |= LP_SF_USTACK_ERR;
		n = 0;
	}
	s->n_ustack = n / sizeof(__u64);

	s->n_kstack = 0;
	if (capture_kernel) {
		n = bpf_get_stack(ctx, s->kstack, sizeof(s->kstack), 0);
		if (n > 0) {
			s->n_kstack = n / sizeof(__u64);
			s->flags |= LP_SF_KSTACK;
		}
	}
	tag_calls(s, tid);
}

SEC("perf_event")
int lp_sample_cpu(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct lp_sample *s;

	if (!is_target(tgid) || is_paused())
		return 0;
	count_event(LP_CNT_SAMPLES);
	s = bpf_ringbuf_reserve(&events, sizeof(*s), 0);
	if (!s) {
		count_event(LP_CNT_LOST);
		return 0;
	}
	fill_sample(ctx, s, tgid, tid);
	s->weight_ns = ctx->sample_period;
	bpf_ringbuf_submit(s, 0);
	return 0;
}

#endif /* LP_SAMPLER_BPF_H */
