/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sampler.bpf.h - building a stack sample: the user stack (frame
 * pointers), optionally the kernel stack, the user registers, the traced
 * calls in flight on the thread, and optionally a copy of the top of the
 * user stack that the daemon unwinds with DWARF CFI.
 */
#ifndef LP_SAMPLER_BPF_H
#define LP_SAMPLER_BPF_H

/*
 * Copy the thread's in-flight traced calls into the sample and mark them
 * sampled, so that their returns send LP_EV_CALL_END. Marking here is
 * what keeps the event rate bounded by the sampling rate.
 */
static __always_inline void tag_calls(struct lp_sample *s, struct lp_thread_calls *tc, __u64 ri,
				      bool is_current)
{
	struct returns_walk w;
	__u32 depth, first = 0, i;

	s->n_calls = 0;
	if (!tc)
		return;
	depth = tc->depth;
	if (depth > LP_MAX_DEPTH)
		depth = LP_MAX_DEPTH;
	/* The innermost calls: a pending uretprobe's trampoline is nearest
	 * the leaf, and the fix-up needs those first. */
	if (depth > LP_MAX_CALLS) {
		first = depth - LP_MAX_CALLS;
		s->flags |= LP_SF_CALLS_OVFL;
	}
	real_returns(&w, ri, tc, first, depth - first, is_current);
	for (i = 0; i < LP_MAX_CALLS; i++) {
		__u32 k = first + i;
		struct lp_frame_state *f;

		if (k >= depth)
			break;
		/* hide k's range from clang so the mask reaches the verifier */
		asm volatile("" : "+r"(k));
		f = &tc->f[k & (LP_MAX_DEPTH - 1)];
		f->flags |= LP_FS_SAMPLED;
		s->calls[i].probe_id = f->probe_id;
		s->calls[i].depth = first + i;
		s->calls[i].call_id = ((__u64)s->tid << 32) | f->seq;
		s->calls[i].ret_addr = w.ret[i];
		s->calls[i].ret_slot = f->sp;
	}
	s->n_calls = depth - first;
}

/*
 * The user stack by the CFI walk (unwind.bpf.h), fixed up for the calls in
 * s->calls and for the thread's last return (@tc's, may be NULL).
 */
static __always_inline void walk_ustack(struct lp_sample *s, __u32 tgid,
					const struct lp_thread_calls *tc)
{
	struct lp_unwind_state *st = unwind_begin(0);

	s->n_ustack = 0;
	if (!st) {
		s->flags |= LP_SF_USTACK_ERR;
		return;
	}
	for (int i = 0; i < LP_MAX_CALLS; i++) {
		if (i >= s->n_calls)
			break;
		unwind_add_fix(st, s->calls[i].ret_slot, s->calls[i].ret_addr);
	}
	if (tc)
		unwind_set_return(st, tc->tramp_slot, tc->tramp_ret, tc->tramp_ax);
	unwind_user(st, tgid, s->regs.ip, s->regs.sp, s->regs.bp);
	__builtin_memcpy(s->ustack, st->pcs, sizeof(s->ustack));
	s->n_ustack = st->n <= LP_MAX_USTACK ? st->n : LP_MAX_USTACK;
	s->flags |= st->flags;
}

/*
 * The sample's header, registers and traced calls. Global functions, as
 * lp_sample_ustack() below: each has a frame of its own, and the frames
 * that sit under the unwinder's and the interpreter walkers' callbacks are
 * only lp_sample_cpu's and the one walking. Inlined into one program they
 * added up to 544 bytes of stack, which 6.1 and 6.12 refuse (512 at most
 * for a program and all the calls under it).
 */
__noinline int lp_sample_head(struct lp_sample *s, __u32 tgid, __u32 tid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *uregs = (struct pt_regs *)bpf_task_pt_regs(task);

	if (!s)
		return 0;
	s->hdr.type = LP_EV_SAMPLE;
	s->hdr.size = sizeof(*s);
	s->pid = tgid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	s->time_ns = bpf_ktime_get_ns();
	s->flags = 0;
	s->reserved = 0;
	s->stack_len = 0;
	s->pad = 0;
	bpf_get_current_comm(s->comm, sizeof(s->comm));

	/* The registers user space had when it last entered the kernel (or
	 * was interrupted): the start of the user stack walk either way. */
	s->regs.ip = BPF_CORE_READ(uregs, ip);
	s->regs.sp = BPF_CORE_READ(uregs, sp);
	s->regs.bp = BPF_CORE_READ(uregs, bp);
	tag_calls(s, thread_calls_of(task, false), lp_return_instances(task), true);
	return 0;
}

/* The user stack of sample @s by the BPF walk (a global function: above). */
__noinline int lp_sample_ustack(struct lp_sample *s, __u32 tgid)
{
	if (!s)
		return 0;
	walk_ustack(s, tgid, thread_calls_of(bpf_get_current_task_btf(), false));
	return 0;
}

/*
 * Fill everything but the weight and the flags that depend on the caller.
 * @ctx is the program context, used by bpf_get_stack.
 */
static __always_inline void fill_sample(void *ctx, struct lp_sample *s, __u32 tgid, __u32 tid)
{
	long n;

	lp_sample_head(s, tgid, tid);
	if (kernel_unwind) {
		lp_sample_ustack(s, tgid);
	} else {
		n = bpf_get_stack(ctx, s->ustack, sizeof(s->ustack), BPF_F_USER_STACK);
		if (n < 0) {
			s->flags |= LP_SF_USTACK_ERR;
			n = 0;
		}
		s->n_ustack = n / sizeof(__u64);
	}

	s->n_interp = 0;
	if (interp_frames) {
		/* each leaves a process of the other kind alone */
		lp_interp_to_sample(s, lp_py_walk((struct lp_interp_stack *)s->interp, tgid, tid));
		lp_interp_to_sample(s, lp_rb_walk((struct lp_interp_stack *)s->interp, tgid, tid));
	}

	s->n_kstack = 0;
	if (capture_kernel) {
		n = bpf_get_stack(ctx, s->kstack, sizeof(s->kstack), 0);
		if (n > 0) {
			s->n_kstack = n / sizeof(__u64);
			s->flags |= LP_SF_KSTACK;
		}
	}
}

#define LP_PAGE_SIZE 4096
/* Page ends a copy of at most LP_MAX_STACK_COPY bytes can cross. */
#define LP_COPY_PAGES (LP_MAX_STACK_COPY / LP_PAGE_SIZE + 1)

/*
 * Copy @want bytes of user stack from @sp to @dst; return the bytes
 * copied. Near the top of a thread's stack a full-length read runs past
 * the end of the mapping and bpf_probe_read_user() fails as a whole, so
 * then find the end: the stack mapping ends on a page boundary and is
 * contiguous above sp, so probe one byte per page upwards and copy what
 * is readable. Exact, where halving the length would lose up to half of
 * it, and linear for the verifier (one exit per page), where a bisection
 * would make it explore every combination of outcomes.
 */
static __always_inline __u32 copy_ustack(void *dst, __u64 sp, __u32 want)
{
	__u64 end = (sp & ~(__u64)(LP_PAGE_SIZE - 1)) + LP_PAGE_SIZE;
	__u64 readable = sp;
	__u32 k;
	__u64 n;
	__u8 byte;

	if (want > LP_MAX_STACK_COPY)
		want = LP_MAX_STACK_COPY;
	if (!want || !sp)
		return 0;
	if (!bpf_probe_read_user(dst, want, (const void *)sp))
		return want;
	for (k = 0; k < LP_COPY_PAGES; k++) {
		if (end - sp >= want)
			break;
		if (bpf_probe_read_user(&byte, 1, (const void *)(end - 1)))
			break;
		readable = end;
		end += LP_PAGE_SIZE;
	}
	/* 64-bit, and opaque to clang: the verifier must see the clamp on the
	 * very register passed as the length, not on a truncated copy. */
	n = readable - sp;
	asm volatile("" : "+r"(n));
	if (n > LP_MAX_STACK_COPY)
		n = LP_MAX_STACK_COPY;
	if (!n || bpf_probe_read_user(dst, n, (const void *)sp))
		return 0;
	return n;
}

/*
 * Append @want bytes of user stack (and the red zone below sp) to the
 * sample already built in @b, and send it with bpf_ringbuf_output(): one
 * more copy than a reservation, but the event is only as long as the
 * stack copied.
 */
static __always_inline void send_buf_with_stack(struct lp_sample_buf *b, __u32 want)
{
	__u64 size;
	__u32 n;

	n = copy_ustack(b->stack, b->s.regs.sp, want);
	/*
	 * In an epilogue, after "pop %rbx", CFI still says where rbx was
	 * saved: just below sp now. Those 128 bytes (the x86-64 red zone)
	 * are still intact, and without them the unwind stops there.
	 */
	if (n &&
	    bpf_probe_read_user(b->redzone, LP_REDZONE, (const void *)(b->s.regs.sp - LP_REDZONE)))
		__builtin_memset(b->redzone, 0, LP_REDZONE);
	size = n ? sizeof(b->s) + LP_REDZONE + n : sizeof(b->s);
	asm volatile("" : "+r"(size));
	if (size > sizeof(*b))
		return;
	b->s.stack_len = n;
	b->s.hdr.size = size;
	if (bpf_ringbuf_output(&events, b, size, rb_flags()))
		count_event(LP_CNT_LOST);
}

static __always_inline struct lp_sample_buf *this_cpu_buf(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&sample_buf, &cpu);
}

/*
 * LP_SF_KMODE when the tick interrupted the kernel (a system call, a page
 * fault, a probe's handler): the user frames then say where the thread
 * entered the kernel, not user code that ran, and a ranking of user code
 * (causal --candidates auto) leaves such samples out. Kernel addresses
 * have the top bit set.
 */
static __always_inline __u32 kernel_mode_flag(const struct bpf_perf_event_data *ctx)
{
	return (__s64)ctx->regs.ip < 0 ? LP_SF_KMODE : 0;
}

/* --call-graph copy: every sample carries --stack-size bytes of stack. */
static __always_inline void send_with_stack(struct bpf_perf_event_data *ctx, __u32 tgid, __u32 tid)
{
	struct lp_sample_buf *b = this_cpu_buf();

	if (!b) {
		count_event(LP_CNT_LOST);
		return;
	}
	fill_sample(ctx, &b->s, tgid, tid);
	b->s.weight_ns = ctx->sample_period;
	b->s.flags |= kernel_mode_flag(ctx);
	send_buf_with_stack(b, stack_copy_bytes);
}

/*
 * The BPF walk of reserved sample @s was cut at a mapping with no table
 * yet (a new image or dlopen'ed library before its table is loaded):
 * resend it with a stack copy for user space to unwind with libdw. Only
 * these few samples pay for the second copy; the rest stay reservations.
 */
static __always_inline void rescue_cut_walk(struct lp_sample *s)
{
	struct lp_sample_buf *b = this_cpu_buf();

	if (!b || bpf_probe_read_kernel(&b->s, sizeof(b->s), s)) {
		bpf_ringbuf_submit(s, rb_flags());
		return;
	}
	bpf_ringbuf_discard(s, BPF_RB_NO_WAKEUP);
	send_buf_with_stack(b, rescue_copy_bytes);
}

static __always_inline bool walk_cut_at_unknown_map(const struct lp_sample *s)
{
	const __u32 cut = LP_SF_UNKNOWN_MAP | LP_SF_UTRUNC;

	return rescue_copy_bytes && (s->flags & cut) == cut;
}

SEC("perf_event")
int lp_sample_cpu(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	__u64 t0 = bpf_ktime_get_ns(); /* this sample's cost starts here (cost.bpf.h) */
	struct lp_sample *s;

	if (kernel_unwind)
		LP_REFUSED_FOR_TEST(LP_CAP_KUNWIND);
	/* the daemon's calibration thread is sampled like a target (and its
	 * samples dropped by the daemon) */
	if (!is_calib(tid)) {
		if (!is_target(tgid) || is_paused())
			return 0;
		count_event(LP_CNT_SAMPLES);
	}
	if (stack_copy_bytes) {
		send_with_stack(ctx, tgid, tid);
		charge_sample(t0);
		return 0;
	}
	s = bpf_ringbuf_reserve(&events, sizeof(*s), 0);
	if (!s) {
		count_event(LP_CNT_LOST);
		charge_sample(t0);
		return 0;
	}
	fill_sample(ctx, s, tgid, tid);
	s->weight_ns = ctx->sample_period;
	s->flags |= kernel_mode_flag(ctx);
	if (walk_cut_at_unknown_map(s))
		rescue_cut_walk(s);
	else
		bpf_ringbuf_submit(s, rb_flags());
	charge_sample(t0);
	return 0;
}

#endif /* LP_SAMPLER_BPF_H */
