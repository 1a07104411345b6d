/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * usdt.bpf.h - USDT entry/return pairs (--trace usdt:BIN:P:ENTRY,RETURN
 * and rb:Class#method): latency between two probes of one thread.
 *
 * A USDT probe is a nop somewhere in a function, not its entry: there is
 * no return address to hijack and the stack pointer says nothing about
 * nesting (Ruby runs nested Ruby calls in one C frame). So the entry
 * pushes a frame flagged LP_FS_USDT on the thread's stack of calls in
 * flight (tracer.bpf.h), and the return pops the innermost frame of its
 * probe, dropping the frames above it as stale. Plain USDT probes (no
 * pair) are hit counters: lp_line_hit.
 */
#ifndef LP_USDT_BPF_H
#define LP_USDT_BPF_H

#define USDT_SCAN 16 /* frames above a return's own that it may drop as stale */

/*
 * Whether the two strings that fetch programs 0 and 1 of @probe_id read
 * are a pair asked for (map str_match). A global function: verified once.
 */
__noinline int lp_usdt_match(struct pt_regs *ctx, __u32 probe_id, __u64 bias)
{
	struct fetch_regs *fr = fetch_regs_here();
	struct lp_str_key key;
	struct lp_value v;

	if (!ctx || !fr)
		return 0;
	__builtin_memset(&key, 0, sizeof(key));
	key.probe_id = probe_id;
	fetch_regs_load(fr, ctx);
	/* zeroed first: the string read stops at the NUL, the key's bytes
	 * after it must be zeros */
	__builtin_memset(&v, 0, sizeof(v));
	if (run_fetch(fr, probe_id * LP_MAX_VALUES, bias, &v))
		return 0;
	__builtin_memcpy(key.a, v.str, LP_STR_LEN);
	__builtin_memset(&v, 0, sizeof(v));
	if (run_fetch(fr, probe_id * LP_MAX_VALUES + 1, bias, &v))
		return 0;
	__builtin_memcpy(key.b, v.str, LP_STR_LEN);
	/* The read keeps LP_STR_LEN - 1 bytes and a NUL: a name that long
	 * may have been cut, and the names asked for are shorter (a cut
	 * name must not match by its prefix). */
	if (key.a[LP_STR_LEN - 2] || key.b[LP_STR_LEN - 2])
		return 0;
	return bpf_map_lookup_elem(&str_match, &key) != NULL;
}

/*
 * The site's configuration if this hit is one to time, else NULL; then
 * *@tc is the thread's calls in flight (created at an entry: @create).
 */
static __always_inline struct lp_probe_cfg *usdt_cfg(struct pt_regs *ctx, __u32 site_id, __u32 tgid,
						     bool create, struct lp_thread_calls **tc)
{
	struct lp_probe_cfg *cfg;

	if ((filter_all && tgid == self_tgid) || is_paused())
		return NULL;
	cfg = bpf_map_lookup_elem(&probes, &site_id);
	if (!cfg)
		return NULL;
	if ((cfg->flags & LP_PCF_STR_MATCH) && !lp_usdt_match(ctx, site_id, probe_bias(ctx, cfg)))
		return NULL;
	*tc = thread_calls_of(bpf_get_current_task_btf(), create);
	return *tc ? cfg : NULL;
}

/*
 * Each site has its own probe id, the cookie, for its fetch programs;
 * the pair's calls are timed under cfg->pair_id.
 */
SEC("uprobe")
int BPF_KPROBE(lp_usdt_entry)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 site_id = (__u32)bpf_get_attach_cookie(ctx), probe_id, d;
	struct lp_thread_calls *tc = NULL;
	struct lp_probe_cfg *cfg = usdt_cfg(ctx, site_id, id >> 32, true, &tc);

	if (!cfg || !tc)
		return 0;
	probe_id = cfg->pair_id;
	d = tc->depth;
	if (d >= LP_MAX_DEPTH) {
		tc->overhead_ns += lp_untimed_call(probe_id, LP_CNT_CALLS_DROPPED);
		return 0;
	}
	push_call(ctx, tc, d, cfg, probe_id, 0, LP_FS_USDT, site_id);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(lp_usdt_return)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 site_id = (__u32)bpf_get_attach_cookie(ctx), probe_id, d, k, top;
	struct lp_thread_calls *tc = NULL;
	struct lp_probe_cfg *cfg = usdt_cfg(ctx, site_id, id >> 32, false, &tc);
	struct lp_frame_state *fs;

	if (!cfg || !tc)
		return 0;
	probe_id = cfg->pair_id;
	top = tc->depth;
	if (top > LP_MAX_DEPTH)
		top = LP_MAX_DEPTH;
	/* The innermost frame of this pair; none: entered before we attached
	 * (or too deep to time, counted then), and nothing is dropped. */
	d = top;
	for (k = 0; k < USDT_SCAN; k++) {
		if (d == 0)
			return 0;
		fs = &tc->f[call_idx(d - 1)];
		if (fs->probe_id == probe_id && (fs->flags & LP_FS_USDT))
			break;
		d--;
	}
	if (k == USDT_SCAN)
		return 0;
	for (k = 0; k < USDT_SCAN; k++) {
		if (top <= d)
			break;
		top--;
		drop_stale(tc, tc->f[call_idx(top)].probe_id);
	}
	/* the pair's own configuration holds its calibrated cost */
	cfg = bpf_map_lookup_elem(&probes, &probe_id);
	if (!cfg)
		return 0;
	fs = &tc->f[call_idx(d - 1)];
	finish_call(ctx, tc, fs, cfg, now, cfg->cost_ns);
	tc->depth = d - 1;
	return 0;
}

#endif /* LP_USDT_BPF_H */
