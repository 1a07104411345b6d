/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * offcpu.bpf.h - time target threads spend off CPU, with the stack where
 * they blocked. At switch-out the stacks are stashed per thread; at
 * switch-in one LP_EV_SAMPLE with LP_SF_OFFCPU is sent, weighted by the
 * time blocked and tagged with the traced calls in flight.
 *
 * A thread woken from a futex wait by another thread of its process (the
 * holder of the mutex it waited for, unlocking it) also gets the waker's
 * stack, taken at the wake-up, sent after the sample as an LP_EV_WAKER.
 */
#ifndef LP_OFFCPU_BPF_H
#define LP_OFFCPU_BPF_H

/*
 * Where and when a target thread left the CPU. The stacks are taken at
 * switch-out (the only moment they can be) straight into the map value;
 * a stack-trace map would be smaller, but BPF programs cannot read one.
 */
struct offcpu_stash {
	__u64 start_ns;
	__s64 ustack_bytes; /* from bpf_get_stack, < 0 on failure */
	__s64 kstack_bytes;
	__u32 uflags;	  /* LP_SF_KUNWIND etc. of the CFI walk */
	__s32 interp_res; /* of the interpreter walk (interp.bpf.h) */
	__u64 ip, sp, bp;
	__u64 ustack[LP_MAX_USTACK];
	__u64 kstack[LP_MAX_KSTACK];
	struct lp_interp_stack interp; /* read at the switch-out, while current */
	__u32 waker_tid;	       /* 0: not woken by a thread of its process */
	__u32 waker_n;		       /* frames in wstack */
	__u64 wstack[LP_MAX_WSTACK];
	char next_comm[16]; /* set at the switch-in, for its sample */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct offcpu_stash);
} offcpu_start SEC(".maps");

/* A zeroed value to create stash entries from (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_stash);
} offcpu_zero SEC(".maps");

/*
 * The off-CPU stash's user stack is a CFI walk from the registers the task
 * entered the kernel with: a wait inside libc's futex wrappers (no frame
 * pointers) then shows its whole chain. The task switching out is still
 * current, so its memory is readable.
 *
 * lp_offcpu_fixups(), lp_offcpu_ustack() and lp_offcpu_emit() are global
 * functions, each with a frame of its own: inlined into lp_sched_switch,
 * the program's frame and the frames of the unwinder's or an interpreter
 * walker's callbacks under it came to 544-688 bytes, and 6.1, 6.12 and
 * some 6.18 builds refuse more than 512.
 *
 * lp_offcpu_fixups - add to @st the real return addresses of the current
 * thread's traced calls in flight (their slots hold the uretprobe
 * trampoline). Returns 0.
 */
__noinline int lp_offcpu_fixups(struct lp_unwind_state *st)
{
	struct task_struct *prev = bpf_get_current_task_btf();
	struct lp_thread_calls *tc = thread_calls_of(prev, false);
	struct returns_walk w;
	__u32 depth, first = 0;

	if (!st || !tc)
		return 0;
	/* the innermost calls, as tag_calls() picks them; a call whose slot
	 * no uretprobe hijacked needs no fix-up (0) */
	depth = tc->depth < LP_MAX_DEPTH ? tc->depth : LP_MAX_DEPTH;
	if (depth > LP_MAX_CALLS)
		first = depth - LP_MAX_CALLS;
	real_returns(&w, lp_return_instances(prev), tc, first, depth - first, false);
	for (__u32 i = 0; i < LP_MAX_CALLS; i++) {
		__u32 k = first + i;

		if (k >= depth)
			break;
		asm volatile("" : "+r"(k));
		if (w.ret[i])
			unwind_add_fix(st, tc->f[k & (LP_MAX_DEPTH - 1)].sp, w.ret[i]);
	}
	return 0;
}

/* The walk itself, from @s's registers, fixed up by lp_offcpu_fixups(). */
__noinline int lp_offcpu_ustack(struct offcpu_stash *s, __u32 tgid)
{
	struct lp_unwind_state *st = unwind_begin(1);

	if (!s)
		return 0;
	s->ustack_bytes = -1;
	if (!st)
		return 0;
	lp_offcpu_fixups(st);
	unwind_user(st, tgid, s->ip, s->sp, s->bp);
	__builtin_memcpy(s->ustack, st->pcs, sizeof(s->ustack));
	s->ustack_bytes = (st->n <= LP_MAX_USTACK ? st->n : LP_MAX_USTACK) * sizeof(__u64);
	s->uflags = st->flags;
	return 0;
}

static __always_inline void stash_switch_out(void *ctx, struct task_struct *prev, __u32 tgid,
					     __u32 tid)
{
	struct pt_regs *uregs = (struct pt_regs *)bpf_task_pt_regs(prev);
	__u32 zero = 0;
	struct lp_runtime *rt = bpf_map_lookup_elem(&runtime, &zero);
	struct offcpu_stash *z = bpf_map_lookup_elem(&offcpu_zero, &zero), *s;

	if (!z)
		return;
	/* Under a split only blocks inside traced calls matter. */
	if (rt && rt->offcpu_only_in_calls) {
		struct lp_thread_calls *tc = thread_calls_of(prev, false);

		if (!tc || !tc->depth)
			return;
	}
	if (bpf_map_update_elem(&offcpu_start, &tid, z, BPF_ANY))
		return;
	s = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (!s)
		return;
	s->start_ns = bpf_ktime_get_ns();
	s->kstack_bytes = capture_kernel ? bpf_get_stack(ctx, s->kstack, sizeof(s->kstack), 0) : -1;
	s->ip = BPF_CORE_READ(uregs, ip);
	s->sp = BPF_CORE_READ(uregs, sp);
	s->bp = BPF_CORE_READ(uregs, bp);
	s->uflags = 0;
	if (kernel_unwind)
		lp_offcpu_ustack(s, tgid);
	else
		s->ustack_bytes =
			bpf_get_stack(ctx, s->ustack, sizeof(s->ustack), BPF_F_USER_STACK);
	s->interp_res = LP_INTERP_NONE;
	if (interp_frames) {
		/* each leaves a process of the other kind alone */
		s->interp_res = lp_py_walk(&s->interp, tgid, tid);
		if (s->interp_res == LP_INTERP_NONE)
			s->interp_res = lp_rb_walk(&s->interp, tgid, tid);
	}
}

/* After the off-CPU sample: the stack that woke it, if known. */
static __always_inline void emit_waker(__u32 tgid, __u32 tid, __u64 time_ns,
				       struct offcpu_stash *st)
{
	struct lp_waker *w;

	if (!st->waker_tid)
		return;
	w = bpf_ringbuf_reserve(&events, sizeof(*w), 0);
	if (!w) {
		count_event(LP_CNT_LOST);
		return;
	}
	w->hdr.type = LP_EV_WAKER;
	w->hdr.size = sizeof(*w);
	w->pid = tgid;
	w->tid = tid;
	w->waker_tid = st->waker_tid;
	w->n_ustack = st->waker_n < LP_MAX_WSTACK ? st->waker_n : LP_MAX_WSTACK;
	w->time_ns = time_ns;
	__builtin_memcpy(w->ustack, st->wstack, sizeof(w->ustack));
	bpf_ringbuf_submit(w, rb_flags());
}

/*
 * The off-CPU sample of a thread switching in after @st's wait, tagged with
 * its calls in flight @tc (its task storage, may be NULL) and @ri (its
 * pending uretprobe returns). A global function: see lp_offcpu_ustack().
 */
__noinline int lp_offcpu_emit(struct offcpu_stash *st, struct lp_thread_calls *tc, __u64 ri,
			      __u32 tgid, __u32 tid)
{
	__u64 now = bpf_ktime_get_ns(), delta;
	struct lp_sample *s;

	if (!st)
		return 0;
	delta = now - st->start_ns;
	if (delta < offcpu_min_ns || !is_target(tgid))
		return 0;
	s = bpf_ringbuf_reserve(&events, sizeof(*s), 0);
	if (!s) {
		count_event(LP_CNT_LOST);
		return 0;
	}
	s->hdr.type = LP_EV_SAMPLE;
	s->hdr.size = sizeof(*s);
	s->pid = tgid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	s->flags = LP_SF_OFFCPU;
	s->time_ns = now;
	s->weight_ns = delta;
	s->reserved = 0;
	s->stack_len = 0;
	s->pad = 0;
	__builtin_memcpy(s->comm, st->next_comm, sizeof(s->comm));
	s->regs.ip = st->ip;
	s->regs.sp = st->sp;
	s->regs.bp = st->bp;
	s->n_ustack = 0;
	s->n_kstack = 0;
	s->n_interp = 0;
	if (st->ustack_bytes > 0) {
		__builtin_memcpy(s->ustack, st->ustack, sizeof(s->ustack));
		s->n_ustack = st->ustack_bytes / sizeof(__u64);
	}
	s->flags |= st->uflags;
	if (st->kstack_bytes > 0) {
		__builtin_memcpy(s->kstack, st->kstack, sizeof(s->kstack));
		s->n_kstack = st->kstack_bytes / sizeof(__u64);
		s->flags |= LP_SF_KSTACK;
	}
	if (st->interp_res != LP_INTERP_NONE) {
		/* in two halves: clang inlines no single copy that long */
		__builtin_memcpy(s->interp, st->interp.f, sizeof(s->interp) / 2);
		__builtin_memcpy(&s->interp[LP_MAX_PYFRAMES / 2],
				 &st->interp.f[LP_MAX_PYFRAMES / 2], sizeof(s->interp) / 2);
		lp_interp_to_sample(s, st->interp_res);
	}
	tag_calls(s, tc, ri, false);
	bpf_ringbuf_submit(s, rb_flags());
	count_event(LP_CNT_OFFCPU);
	emit_waker(tgid, tid, now, st);
	return 0;
}

#define NR_FUTEX 202 /* x86-64 */

/*
 * A blocked target thread is being woken. If the waker is another thread
 * of its process inside a futex call (a wake from an interrupt would find
 * some unrelated thread current), its user stack says where it released
 * what the woken thread waited for. Runs with interrupts off, as
 * sched_switch does, so the two never share unwind state slot 1 at once.
 */
SEC("tp_btf/sched_waking")
int BPF_PROG(lp_sched_waking, struct task_struct *p)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = p->pid, tgid = id >> 32;
	struct pt_regs *uregs;
	struct offcpu_stash *st;

	if (!offcpu_enabled || is_paused() || tgid != (__u32)p->tgid || (__u32)id == tid)
		return 0;
	st = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (!st)
		return 0;
	uregs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (BPF_CORE_READ(uregs, orig_ax) != NR_FUTEX)
		return 0;
	if (kernel_unwind) {
		struct lp_unwind_state *us = unwind_begin(1);

		if (!us)
			return 0;
		unwind_user(us, tgid, BPF_CORE_READ(uregs, ip), BPF_CORE_READ(uregs, sp),
			    BPF_CORE_READ(uregs, bp));
		__builtin_memcpy(st->wstack, us->pcs, sizeof(st->wstack));
		st->waker_n = us->n;
	} else {
		long n = bpf_get_stack(ctx, st->wstack, sizeof(st->wstack), BPF_F_USER_STACK);

		st->waker_n = n > 0 ? (__u32)(n / sizeof(__u64)) : 0;
	}
	if (st->waker_n)
		st->waker_tid = (__u32)id;
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(lp_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 prev_tgid = prev->tgid, prev_tid = prev->pid;
	__u32 next_tgid = next->tgid, next_tid = next->pid;
	struct offcpu_stash *st;

	LP_REFUSED_FOR_TEST(LP_CAP_OFFCPU);

	if (!offcpu_enabled || is_paused())
		return 0;
	/* Switch-out: current is still prev, so its stacks can be taken. */
	if (is_target(prev_tgid))
		stash_switch_out(ctx, prev, prev_tgid, prev_tid);
	st = bpf_map_lookup_elem(&offcpu_start, &next_tid);
	if (st) {
		BPF_CORE_READ_STR_INTO(&st->next_comm, next, comm);
		lp_offcpu_emit(st, thread_calls_of(next, false), lp_return_instances(next),
			       next_tgid, next_tid);
		bpf_map_delete_elem(&offcpu_start, &next_tid);
	}
	return 0;
}

#endif /* LP_OFFCPU_BPF_H */
