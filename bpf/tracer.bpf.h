/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tracer.bpf.h - function entry/return and line probes.
 *
 * Each attachment carries a BPF cookie: the probe id in the low 32 bits.
 * A per-thread stack of calls in flight (task storage thread_calls) pairs
 * returns with entries by stack pointer, which makes it recursion-safe and
 * lets it drop frames that longjmp or an exception skipped: a frame whose
 * return-address slot is at or below the current stack pointer is gone.
 * Two traces of one function (a causal candidate that is also the
 * progress point, --trace f beside a causal run on f) push two frames at
 * the same stack pointer in the same hit: siblings, both live, told apart
 * from a stale frame of the same slot by their other probe id at the same
 * address. Calls deeper than LP_MAX_DEPTH are counted (probe_stats.untimed) but
 * not timed. Latencies are net of what samples and nested traced calls'
 * probes cost the call (cost.bpf.h), unless raw_latency is set.
 */
#ifndef LP_TRACER_BPF_H
#define LP_TRACER_BPF_H

#define CALLS_MASK (LP_MAX_DEPTH - 1)

/*
 * Index into a thread's call array. The empty asm hides the value's known
 * range from clang, so the mask survives into the object and the verifier
 * sees a bounded index (clang drops a mask it can prove redundant).
 */
static __always_inline __u32 call_idx(__u32 i)
{
	asm volatile("" : "+r"(i));
	return i & CALLS_MASK;
}

/* Unique while the thread lives and never 0: the thread's own counter. */
static __always_inline __u32 next_seq(struct lp_thread_calls *tc)
{
	if (++tc->seq == 0)
		tc->seq = 1;
	return tc->seq;
}

static __always_inline __u64 call_id_of(__u32 tid, const struct lp_frame_state *fs)
{
	return ((__u64)tid << 32) | fs->seq;
}

/* Bumped by user space before it attaches a uprobe and after it detaches
 * one: every thread's memo of probe ids by address starts anew. */
__u32 probe_gen = 0;

/*
 * The probe id of this function entry: the low half of the link's BPF
 * cookie. The helper that reads it is a call, and here a call costs about
 * 19 ns of the entry program's 150 (measured by leaving it out; most of
 * it is the return through the CPU's return-stack mitigation). So each
 * thread remembers which probe it entered at its last few addresses in
 * its program's own file (LP_PCF_IN_PROGRAM, remember_probe_id()), for as
 * long as no uprobe comes or goes (probe_gen) and it runs the same exec:
 * a library may be unloaded, and another one's probed function mapped at
 * the same address. Two probes at one address (is_sibling) run one after
 * the other at the same hit, which a memo by address cannot tell apart:
 * when the innermost frame was entered at this very address and stack
 * slot, or there is no room for another frame, the cookie answers. *@m is
 * the memo's slot for this address, or NULL when the cookie must answer;
 * @tc is the current @task's.
 */
static __always_inline __u32 entry_probe_id(struct pt_regs *ctx, struct task_struct *task,
					    struct lp_thread_calls *tc, struct lp_site_memo **m)
{
	__u64 ip = ctx->ip, exec_id = task->self_exec_id;
	__u32 d = tc->depth, i;
	const struct lp_frame_state *top = &tc->f[call_idx(d - 1)];

	*m = NULL;
	if (tc->memo_exec_id != exec_id) {
		for (i = 0; i < LP_SITE_MEMO; i++)
			tc->memo[i].ip = 0;
		tc->memo_exec_id = exec_id;
	}
	if (d >= LP_MAX_DEPTH || (d && top->sp == ctx->sp && top->ip_lo == (__u32)ip))
		return (__u32)bpf_get_attach_cookie(ctx);
	i = call_idx((__u32)(ip >> 4)) & (LP_SITE_MEMO - 1);
	if (tc->memo[i].ip == ip && tc->memo[i].gen == probe_gen)
		return tc->memo[i].probe_id;
	*m = &tc->memo[i];
	return (__u32)bpf_get_attach_cookie(ctx);
}

/* Keep @probe_id, which the cookie gave for this entry, in the memo slot
 * @m (entry_probe_id()) if its function is in the program's own file. */
static __always_inline void remember_probe_id(struct pt_regs *ctx, struct lp_site_memo *m,
					      __u32 probe_id, const struct lp_probe_cfg *cfg)
{
	if (!m || !(cfg->flags & LP_PCF_IN_PROGRAM))
		return;
	m->ip = ctx->ip;
	m->probe_id = probe_id;
	m->gen = probe_gen;
}

/* The probed module's load bias for this hit (liveprof.h, site_vaddr). */
static __always_inline __u64 probe_bias(const struct pt_regs *ctx, const struct lp_probe_cfg *cfg)
{
	return cfg->site_vaddr ? ctx->ip - cfg->site_vaddr : cfg->module_bias;
}

/* A call that cannot be timed is still counted, beside the histogram. */
static __always_inline void count_untimed(__u32 probe_id)
{
	struct lp_probe_stats *st = bpf_map_lookup_elem(&probe_stats, &probe_id);

	if (st)
		__sync_fetch_and_add(&st->untimed, 1);
}

/*
 * A call counted but not timed: deeper than LP_MAX_DEPTH (@event
 * LP_CNT_CALLS_DROPPED), or a frame whose return we never saw
 * (LP_CNT_CALLS_UNWOUND: longjmp or an exception skipped it, or the kernel
 * did not hijack its return; it keeps at most 64 pending uretprobes per
 * thread). It ran its entry probe only: half of its site's entry+return
 * cost is returned, for the calls around it. A global function, verified
 * once on its own: inlined into the loops that drop stale frames, it was
 * verified once per iteration and state, and the return programs came
 * near the verifier's limit.
 */
__noinline __u64 lp_untimed_call(__u32 probe_id, __u32 event)
{
	struct lp_probe_cfg *cfg = bpf_map_lookup_elem(&probes, &probe_id);

	count_untimed(probe_id);
	count_event(event);
	return cfg ? cfg->cost_ns / 2 : 0;
}

static __always_inline void drop_stale(struct lp_thread_calls *tc, __u32 probe_id)
{
	tc->overhead_ns += lp_untimed_call(probe_id, LP_CNT_CALLS_UNWOUND);
}

/*
 * Run the fetch programs [first, first + n) of @probe_id and send them.
 *
 * A global (non-static) function: the verifier checks it once, on its
 * own, instead of once per state of each caller. Inlined into the return
 * path, whose call-stack pops already fork many states, the fetch loops
 * made the program too large to verify.
 */
#define VALUES_RANGE(first, n, at_return) ((first) | ((n) << 8) | ((at_return) << 16))

__noinline int lp_emit_values(struct pt_regs *ctx, __u32 probe_id, __u32 range, __u64 bias,
			      __u64 call_id)
{
	/* BPF calls take five arguments: first, n and at_return share one. */
	__u32 first = range & 0xff, n = (range >> 8) & 0xff, at_return = range >> 16;
	__u64 id = bpf_get_current_pid_tgid();
	struct fetch_regs *fr = fetch_regs_here();
	struct lp_hit *h;
	__u32 i;

	if (!ctx)
		return 0;
	if (!fr) {
		count_event(LP_CNT_FETCH_FAULTS);
		return 0;
	}
	fetch_regs_load(fr, ctx);
	h = bpf_ringbuf_reserve(&events, sizeof(*h), 0);
	if (!h) {
		count_event(LP_CNT_LOST);
		return 0;
	}
	h->hdr.type = LP_EV_HIT;
	h->hdr.size = sizeof(*h);
	h->pid = id >> 32;
	h->tid = (__u32)id;
	h->probe_id = probe_id;
	h->n_values = n;
	h->time_ns = bpf_ktime_get_ns();
	h->call_id = call_id;
	h->at_return = at_return;
	h->reserved = 0;
	h->fault_mask = 0;
	for (i = 0; i < LP_MAX_VALUES; i++) {
		if (i >= n)
			break;
		if (run_fetch(fr, probe_id * LP_MAX_VALUES + first + i, bias, &h->values[i])) {
			h->fault_mask |= 1ULL << i;
			count_event(LP_CNT_FETCH_FAULTS);
		}
	}
	bpf_ringbuf_submit(h, rb_flags());
	return 0;
}

/* One value (the --by key) without sending it; 0 if it cannot be read. */
__noinline __u64 lp_fetch_value(struct pt_regs *ctx, __u32 idx, __u64 bias)
{
	struct fetch_regs *fr = fetch_regs_here();
	struct lp_value v;

	if (!ctx || !fr)
		return 0;
	fetch_regs_load(fr, ctx);
	if (run_fetch(fr, idx, bias, &v))
		return 0;
	return v.u64;
}

/*
 * Is @fs another trace's frame of this very hit: the same function entered
 * at the same stack pointer, pushed by another probe id just before us?
 * A stale frame of the same slot (its return missed) has our probe id, or
 * another function's address.
 */
static __always_inline bool is_sibling(const struct lp_frame_state *fs, __u32 probe_id, __u64 sp,
				       __u32 ip_lo)
{
	return fs->sp == sp && fs->probe_id != probe_id && fs->ip_lo == ip_lo &&
	       !(fs->flags & LP_FS_USDT);
}

/*
 * Push a call of @probe_id at depth @d (< LP_MAX_DEPTH) of @tc: its
 * entry values, its --by value, and its start, taken last so that the
 * latency excludes our own work. @sp is its return-address slot (0 for
 * a USDT pair, flagged LP_FS_USDT in @flags). The values are fetched by
 * the programs of @site_id (@probe_id but for USDT sites).
 */
static __always_inline void push_call(struct pt_regs *ctx, struct lp_thread_calls *tc, __u32 d,
				      const struct lp_probe_cfg *cfg, __u32 probe_id, __u64 sp,
				      __u32 flags, __u32 site_id)
{
	struct lp_frame_state *fs;

	fs = &tc->f[call_idx(d)];
	fs->probe_id = probe_id;
	fs->flags = flags;
	fs->seq = next_seq(tc);
	fs->sp = sp;
	fs->ip_lo = (__u32)ctx->ip;
	if (cfg->n_values) {
		if (cfg->flags & LP_PCF_EMIT_VALUES)
			lp_emit_values(ctx, site_id, VALUES_RANGE(0, cfg->n_values, 0),
				       probe_bias(ctx, cfg), call_id_of(current_tid(), fs));
		if (cfg->by_index >= 0 && cfg->by_index < LP_MAX_VALUES) {
			fs->by_value = lp_fetch_value(ctx, site_id * LP_MAX_VALUES + cfg->by_index,
						      probe_bias(ctx, cfg));
			fs->flags |= LP_FS_HAS_BY;
		}
	}
	tc->depth = d + 1;
	/* A causal experiment's delay: outside the call's own latency. */
	causal_delay(probe_id);
	/* Last, so the latency excludes our own work above. */
	fs->ovh0 = tc->overhead_ns;
	fs->start_ns = bpf_ktime_get_ns();
}

/*
 * Whether the innermost call of @tc (depth @d > 0) is gone by the time the
 * call of @probe_id enters with its return-address slot at @sp: its slot
 * is at or below ours, and it is neither a USDT pair nor a sibling.
 */
static __always_inline bool top_is_stale(const struct lp_thread_calls *tc, __u32 d, __u32 probe_id,
					 __u64 sp, __u32 ip_lo)
{
	const struct lp_frame_state *top = &tc->f[call_idx(d - 1)];

	return top->sp <= sp && !(top->flags & LP_FS_USDT) && !is_sibling(top, probe_id, sp, ip_lo);
}

/*
 * Drop the calls of @tc that the call of @probe_id, entered with its
 * return-address slot at @sp, shows are gone; return the depth left. Only
 * called when the innermost one is (top_is_stale()), which a longjmp or
 * an exception leaves behind: a global function, verified once on its
 * own, so that the entry program's common path has no loop and no call.
 */
__noinline __u32 lp_drop_stale_entries(struct lp_thread_calls *tc, __u32 probe_id, __u64 sp,
				       __u32 ip_lo)
{
	__u32 d, k;

	if (!tc)
		return 0;
	d = tc->depth;
	if (d > LP_MAX_DEPTH)
		d = LP_MAX_DEPTH;
	for (k = 0; k < LP_MAX_DEPTH; k++) {
		if (d == 0 || !top_is_stale(tc, d, probe_id, sp, ip_lo))
			break;
		d--;
		drop_stale(tc, tc->f[call_idx(d)].probe_id);
	}
	return d;
}

SEC("uprobe")
int BPF_KPROBE(lp_func_entry)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct lp_site_memo *memo;
	struct lp_thread_calls *tc;
	struct lp_probe_cfg *cfg;
	__u64 sp = ctx->sp;
	__u32 probe_id, d;

	LP_REFUSED_FOR_TEST(LP_CAP_TRACING);

	/* No target lookup: uprobes are attached per target pid, so they fire
	 * only where they should. With -a they fire everywhere but in us.
	 * (liveprof probes itself on purpose once, to measure probe cost.) */
	if (in_self() || is_paused())
		return 0;
	tc = thread_calls_of(task, true);
	if (!tc)
		return 0;
	probe_id = entry_probe_id(ctx, task, tc, &memo);
	cfg = bpf_map_lookup_elem(&probes, &probe_id);
	if (!cfg)
		return 0;
	remember_probe_id(ctx, memo, probe_id, cfg);
	d = tc->depth;
	if (d && top_is_stale(tc, d, probe_id, sp, (__u32)ctx->ip))
		d = lp_drop_stale_entries(tc, probe_id, sp, (__u32)ctx->ip);
	if (d >= LP_MAX_DEPTH) {
		tc->depth = d;
		tc->overhead_ns += lp_untimed_call(probe_id, LP_CNT_CALLS_DROPPED);
		return 0;
	}
	push_call(ctx, tc, d, cfg, probe_id, sp, 0, probe_id);
	return 0;
}

/* Send the end of a sampled call, so the daemon can class its samples. */
static __always_inline void send_call_end(const struct lp_frame_state *fs, __u64 lat, __u64 charged)
{
	struct lp_call_end *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	__u64 id = bpf_get_current_pid_tgid();

	if (!e) {
		count_event(LP_CNT_LOST);
		return;
	}
	e->hdr.type = LP_EV_CALL_END;
	e->hdr.size = sizeof(*e);
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->probe_id = fs->probe_id;
	e->flags = 0;
	if (fs->flags & LP_FS_LINE_HIT)
		e->flags |= LP_CF_LINE_HIT;
	if (fs->flags & LP_FS_HAS_BY)
		e->flags |= LP_CF_HAS_BY;
	e->call_id = call_id_of((__u32)id, fs);
	e->start_ns = fs->start_ns;
	e->latency_ns = lat;
	e->by_value = fs->by_value;
	e->overhead_ns = charged;
	bpf_ringbuf_submit(e, rb_flags());
}

/*
 * The end of the call @fs (the innermost of @tc) at @now: its latency net
 * of what it was charged, into the histogram, the maximum, the --by
 * histogram; its return values and, if a sample was taken in it, its
 * end for the daemon. The caller pops it. @outer_cost is what its probes
 * cost the calls around it: the site's calibrated pair, or for py: the
 * hits as timed (pytrace.bpf.h).
 */
static __always_inline void finish_call(struct pt_regs *ctx, struct lp_thread_calls *tc,
					const struct lp_frame_state *fs,
					const struct lp_probe_cfg *cfg, __u64 now, __u64 outer_cost)
{
	__u32 probe_id = fs->probe_id, idx;
	struct lp_probe_stats *st;
	__u64 lat, charged, *slot;

	/* Net of what samples and nested probes cost it, and of the part of
	 * its own probes that lies between our two timestamps. */
	charged = tc->overhead_ns - fs->ovh0 + cfg->self_ns;
	lat = now - fs->start_ns;
	if (!raw_latency)
		lat = lat > charged ? lat - charged : 0;
	/* The calls around this one see all of its probes' cost. */
	tc->overhead_ns += outer_cost;
	idx = probe_id * LP_HIST_BUCKETS + lp_hist_bucket(lat);
	slot = bpf_map_lookup_elem(&hist, &idx);
	if (slot)
		__sync_fetch_and_add(slot, 1);
	/* Calls and their sum are in the histogram already: only the exact
	 * maximum is kept here, without an atomic (a lost race under-reports
	 * it until the next larger call). */
	st = bpf_map_lookup_elem(&probe_stats, &probe_id);
	if (st && lat > st->max_ns)
		st->max_ns = lat;
	if (fs->flags & LP_FS_HAS_BY) {
		struct lp_by_key key = {
			.probe_id = probe_id, .bucket = lp_hist_bucket(lat), .value = fs->by_value};
		__u64 one = 1, *c = bpf_map_lookup_elem(&by_hist, &key);

		if (c)
			__sync_fetch_and_add(c, 1);
		else
			bpf_map_update_elem(&by_hist, &key, &one, BPF_NOEXIST);
	}
	if (cfg->n_ret_values)
		lp_emit_values(ctx, probe_id, VALUES_RANGE(cfg->n_values, cfg->n_ret_values, 1),
			       cfg->module_bias, call_id_of(current_tid(), fs));
	if (fs->flags & LP_FS_SAMPLED)
		send_call_end(fs, lat, charged);
}

/*
 * Whether @probe_id's frame returning at @entry_sp is the second of the top
 * @d of @tc, under a sibling (is_sibling) that entered after it.
 */
static __always_inline bool under_sibling(const struct lp_thread_calls *tc, __u32 d, __u32 probe_id,
					  __u64 entry_sp)
{
	const struct lp_frame_state *top = &tc->f[call_idx(d - 1)];
	const struct lp_frame_state *below = &tc->f[call_idx(d - 2)];

	return d >= 2 && below->sp == entry_sp && below->probe_id == probe_id &&
	       is_sibling(top, probe_id, entry_sp, below->ip_lo);
}

/*
 * Drop the calls of @tc deeper than the one returning with its
 * return-address slot at @entry_sp: they never returned (longjmp, an
 * exception). Return the depth left. Only called when the innermost call
 * is one of them: a global function, verified once on its own, so that
 * the return programs' common path has no loop and no call.
 */
__noinline __u32 lp_drop_stale_returns(struct lp_thread_calls *tc, __u64 entry_sp)
{
	__u32 d, k;

	if (!tc)
		return 0;
	d = tc->depth;
	if (d > LP_MAX_DEPTH)
		d = LP_MAX_DEPTH;
	for (k = 0; k < LP_MAX_DEPTH; k++) {
		if (d == 0 || tc->f[call_idx(d - 1)].sp >= entry_sp ||
		    (tc->f[call_idx(d - 1)].flags & LP_FS_USDT))
			break;
		d--;
		drop_stale(tc, tc->f[call_idx(d)].probe_id);
	}
	return d;
}

/*
 * The return of the call whose return-address slot was at @entry_sp, at
 * @now: the innermost call of the thread's @tc at depth @d (the stale
 * ones above it dropped) if its slot is that one. Its probe id is the
 * frame's own, but where a sibling shares the slot (is_sibling): then
 * the link's cookie tells which of the two returns.
 */
static __always_inline int end_call(struct pt_regs *ctx, struct lp_thread_calls *tc, __u32 d,
				    __u64 entry_sp, __u64 now)
{
	struct lp_probe_cfg *cfg;
	struct lp_frame_state *fs;
	__u32 probe_id;

	if (d == 0 || d > LP_MAX_DEPTH) {
		tc->depth = 0;
		return 0;
	}
	fs = &tc->f[call_idx(d - 1)];
	if (fs->sp != entry_sp) {
		/* Entered before we attached, or too deep to time (counted). */
		tc->depth = d;
		return 0;
	}
	probe_id = fs->probe_id;
	if (d >= 2 && tc->f[call_idx(d - 2)].sp == entry_sp) {
		probe_id = (__u32)bpf_get_attach_cookie(ctx);
		/* Ours may be under a sibling that returns after us (return
		 * probes run in the order the entry probes did): swap them,
		 * and ours is on top like any other. */
		if (under_sibling(tc, d, probe_id, entry_sp)) {
			struct lp_frame_state t = tc->f[call_idx(d - 1)];

			tc->f[call_idx(d - 1)] = tc->f[call_idx(d - 2)];
			tc->f[call_idx(d - 2)] = t;
		}
		if (fs->probe_id != probe_id) {
			tc->depth = d;
			return 0;
		}
	}
	cfg = bpf_map_lookup_elem(&probes, &probe_id);
	if (!cfg)
		return 0;
	finish_call(ctx, tc, fs, cfg, now, cfg->cost_ns);
	tc->depth = d - 1;
	return 0;
}

static __always_inline int on_return(struct pt_regs *ctx, __u64 entry_sp, bool via_tramp)
{
	__u64 now = bpf_ktime_get_ns();
	struct lp_thread_calls *tc;
	__u32 d;

	if (in_self())
		return 0;
	tc = thread_calls_of(bpf_get_current_task_btf(), false);
	if (!tc)
		return 0;
	/* The note unwind.bpf.h reads once this program is done and the
	 * kernel has yet to write the return address back (calls.bpf.h);
	 * ip is the real return address already. */
	if (via_tramp) {
		tc->tramp_slot = entry_sp;
		tc->tramp_ret = ctx->ip;
		tc->tramp_ax = ctx->ax;
	}
	d = tc->depth;
	if (d > LP_MAX_DEPTH)
		d = LP_MAX_DEPTH;
	/* Calls deeper than ours that never returned (longjmp, exceptions). */
	if (d && tc->f[call_idx(d - 1)].sp < entry_sp &&
	    !(tc->f[call_idx(d - 1)].flags & LP_FS_USDT))
		d = lp_drop_stale_returns(tc, entry_sp);
	return end_call(ctx, tc, d, entry_sp, now);
}

/* uretprobe: the return address has been popped, so entry sp = sp - 8. */
SEC("uretprobe")
int BPF_KRETPROBE(lp_func_return)
{
	return on_return(ctx, ctx->sp - 8, true);
}

/* A uprobe on a `ret` instruction (Go binaries): sp is still the entry sp. */
SEC("uprobe")
int BPF_KPROBE(lp_func_ret_insn)
{
	return on_return(ctx, ctx->sp, false);
}

SEC("uprobe")
int BPF_KPROBE(lp_line_hit)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u32 probe_id = (__u32)bpf_get_attach_cookie(ctx);
	struct lp_probe_stats *st;
	struct lp_probe_cfg *cfg;
	__u32 k;

	if (!is_target(tgid) || is_paused())
		return 0;
	cfg = bpf_map_lookup_elem(&probes, &probe_id);
	if (!cfg)
		return 0;
	st = bpf_map_lookup_elem(&probe_stats, &probe_id);
	if (st)
		__sync_fetch_and_add(&st->calls, 1);
	if (cfg->flags & LP_PCF_WHEN) {
		struct lp_thread_calls *tc = thread_calls_of(bpf_get_current_task_btf(), false);

		if (tc) {
			for (k = 0; k < LP_MAX_DEPTH; k++) {
				if (k >= tc->depth)
					break;
				if (tc->f[call_idx(k)].probe_id == cfg->when_of)
					tc->f[call_idx(k)].flags |= LP_FS_LINE_HIT;
			}
		}
	}
	if (cfg->n_values && (cfg->flags & LP_PCF_EMIT_VALUES))
		lp_emit_values(ctx, probe_id, VALUES_RANGE(0, cfg->n_values, 0),
			       probe_bias(ctx, cfg), 0);
	return 0;
}

#endif /* LP_TRACER_BPF_H */
