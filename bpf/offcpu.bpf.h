/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * offcpu.bpf.h - time target threads spend off CPU, with the stack where
 * they blocked. At switch-out the stack is stashed (stack map ids); at
 * switch-in one LP_EV_SAMPLE with LP_SF_OFFCPU is sent, weighted by the
 * time blocked and tagged with the traced calls in flight.
 */
#ifndef LP_OFFCPU_BPF_H
#define LP_OFFCPU_BPF_H

struct offcpu_stash {
	__u64 start_ns;
	__s32 ustack_id;
	__s32 kstack_id;
	__u64 ip, sp, bp;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct offcpu_stash);
} offcpu_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, LP_MAX_USTACK * sizeof(__u64));
} offcpu_stacks SEC(".maps");

static __always_inline __u32 copy_stack(__s32 stack_id, __u64 *dst)
{
	__u64 *src;
	__u32 i, n = 0;

	if (stack_id < 0)
		return 0;
	src = bpf_map_lookup_elem(&offcpu_stacks, &stack_id);
	if (!src)
		return 0;
	for (i = 0; i < LP_MAX_USTACK; i++) {
		if (!src[i])
			break;
		dst[i] = src[i];
		n++;
	}
	return n;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(lp_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 prev_tgid = prev->tgid, prev_tid = prev->pid;
	__u32 next_tgid = next->tgid, next_tid = next->pid;
	struct offcpu_stash *st;

	if (!offcpu_enabled || is_paused())
		return 0;

	/* Switch-out: current is still prev, so its stacks can be taken. */
	if (is_target(prev_tgid)) {
		struct offcpu_stash s = {};
		struct pt_regs *uregs = (struct pt_regs *)bpf_task_pt_regs(prev);
		__u32 zero = 0;
		struct lp_runtime *rt = bpf_map_lookup_elem(&runtime, &zero);

		if (!(rt && rt->offcpu_only_in_calls && !bpf_map_lookup_elem(&thread_calls, &prev_tid))) {
			s.start_ns = bpf_ktime_get_ns();
			s.ustack_id = bpf_get_stackid(ctx, &offcpu_stacks, BPF_F_USER_STACK);
			s.kstack_id = capture_kernel ? bpf_get_stackid(ctx, &offcpu_stacks, 0) : -1;
			s.ip = BPF_CORE_READ(uregs, ip);
			s.sp = BPF_CORE_READ(uregs, sp);
			s.bp = BPF_CORE_READ(uregs, bp);
			bpf_map_update_elem(&offcpu_start, &prev_tid, &s, BPF_ANY);
		}
	}

	/* Switch-in of a thread we saw leave. */
	st = bpf_map_lookup_elem(&offcpu_start, &next_tid);
	if (st) {
		__u64 now = bpf_ktime_get_ns(), delta = now - st->start_ns;
		struct lp_sample *s;

		if (delta >= offcpu_min_ns && is_target(next_tgid)) {
			s = bpf_ringbuf_reserve(&events, sizeof(*s), 0);
			if (!s) {
				count_event(LP_CNT_LOST);
			} else {
				s->hdr.type = LP_EV_SAMPLE;
				s->hdr.size = sizeof(*s);
				s->pid = next_tgid;
				s->tid = next_tid;
				s->cpu = bpf_get_smp_processor_id();
				s->flags = LP_SF_OFFCPU;
				s->time_ns = now;
				s->weight_ns = delta;
				s->reserved = 0;
				s->reserved2 = 0;
				BPF_CORE_READ_STR_INTO(&s->comm, next, comm);
				s->regs.ip = st->ip;
				s->regs.sp = st->sp;
				s->regs.bp = st->bp;
				s->n_ustack = copy_stack(st->ustack_id, s->ustack);
				s->n_kstack = 0;
				if (capture_kernel && st->kstack_id >= 0) {
					__s32 kid = st->kstack_id;
					__u64 *src = bpf_map_lookup_elem(&offcpu_stacks, &kid);
					__u32 i;

					if (src) {
						for (i = 0; i < LP_MAX_KSTACK; i++) {
							if (!src[i])
								break;
							s->kstack[i] = src[i];
							s->n_kstack++;
						}
						s->flags |= LP_SF_KSTACK;
					}
				}
				tag_calls(s, next_tid);
				bpf_ringbuf_submit(s, 0);
				count_event(LP_CNT_OFFCPU);
			}
		}
		bpf_map_delete_elem(&offcpu_start, &next_tid);
	}
	return 0;
}

#endif /* LP_OFFCPU_BPF_H */
