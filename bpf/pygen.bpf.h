/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pygen.bpf.h - --trace py: of a generator, a coroutine (async def) or an
 * async generator: one call from its first resumption to its end, timed
 * across the yields and awaits between, which are suspensions.
 *
 * CPython 3.11 runs such a function's creating call only as far as
 * RETURN_GENERATOR, which copies the frame into the new generator object
 * (gi_iframe) and returns it without a return probe: that call is not
 * timed. Each resumption (next(), send(), the event loop stepping a
 * task) enters the evaluator anew, so the start probes see it with the
 * generator's frame, at the same address every time; each yield leaves
 * it, through python:function__return with gi_frame_state already
 * SUSPENDED (negative), or the label TARGET_YIELD_VALUE in a build
 * without USDT. The first resumption is the one whose frame still stands
 * at RETURN_GENERATOR.
 *
 * Map py_gens keeps a call between its segments, by process and frame
 * address: when it began, what the probes and samples of its segments
 * cost it, its call id and whether a sample was taken in it. A segment is
 * a call in thread_calls like any other (flag LP_FS_GEN), so samples and
 * nested calls inside it see it; while it is suspended, the thread runs
 * other work, which is not its own. Its end sends the one histogram
 * entry and the one call end, with the latency from the first
 * resumption: the wall time a caller awaiting it waits.
 *
 * A resumption by throw() (cancellation, close()) enters the evaluator
 * past the start probes: that last segment is not seen starting, and
 * its end finishes the call from py_gens (py_gen_end_unseen).
 */
#ifndef LP_PYGEN_BPF_H
#define LP_PYGEN_BPF_H

/* A segment of a generator's call in thread_calls (pytrace.bpf.h) */
#define LP_FS_GEN (1u << 5)

/* co_flags: CO_GENERATOR, CO_COROUTINE, CO_ASYNC_GENERATOR */
#define PY_CO_GEN_KINDS (0x20u | 0x80u | 0x200u)

struct py_gen_key {
	__u32 tgid;
	__u32 pad;
	__u64 frame; /* the generator's gi_iframe */
};

struct py_gen_call {
	__u64 start_ns;	  /* the first resumption's start */
	__u64 charged_ns; /* what its segments were charged so far */
	__u32 seq;	  /* its call id on thread tid */
	__u32 tid;	  /* where it first ran */
	__u32 flags;	  /* LP_FS_SAMPLED of its segments */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32768);
	__type(key, struct py_gen_key);
	__type(value, struct py_gen_call);
} py_gens SEC(".maps");

enum py_start_kind {
	PY_START_NONE,	     /* not a start of a traced call */
	PY_START_CALL,	     /* a frame of a plain function starts */
	PY_START_GEN_FIRST,  /* a generator's first resumption */
	PY_START_GEN_RESUME, /* a later one, of a call in py_gens */
};

/* Does the frame of @code at @instr stand at RETURN_GENERATOR? */
static __always_inline bool py_gen_unstarted(const struct lp_py_cfg *cfg, __u64 instr)
{
	__u8 op = 0;

	/* a code unit is (opcode, oparg), little-endian: the opcode first */
	return !bpf_probe_read_user(&op, sizeof(op), (void *)instr) &&
	       op == cfg->op_return_generator;
}

/*
 * What a start probe's hit on frame @f of traced @code is (@is_gen: its
 * co_flags say generator), with @instr the frame's last instruction;
 * @fresh: the frame has run no code unit yet. For a later resumption,
 * *@g is its call.
 */
static __always_inline enum py_start_kind py_start_kind(const struct lp_py_cfg *cfg, __u32 tgid,
							__u64 f, __u64 instr, bool fresh,
							bool is_gen, struct py_gen_call **g)
{
	struct py_gen_key key = {.tgid = tgid, .frame = f};

	if (fresh)
		/* a generator's creating call: no return probe ends it */
		return is_gen ? PY_START_NONE : PY_START_CALL;
	if (!is_gen || !cfg->op_return_generator || !cfg->gen_state_back)
		return PY_START_NONE; /* a plain frame resumed by its callee's return */
	if (py_gen_unstarted(cfg, instr))
		return PY_START_GEN_FIRST;
	*g = bpf_map_lookup_elem(&py_gens, &key);
	/* none: it began before we attached (or the map evicted it) */
	return *g ? PY_START_GEN_RESUME : PY_START_NONE;
}

/*
 * The segment just pushed as @fs (at @tc's top) of a generator's call on
 * frame @f: a first resumption records its call, a later one continues
 * it: its start, its charges so far (and @hit, this resumption's own
 * probe), its call id if on the same thread, and its sampled flag.
 */
static __always_inline void py_gen_begin(struct lp_thread_calls *tc, struct lp_frame_state *fs,
					 __u64 id, __u64 f, enum py_start_kind kind,
					 struct py_gen_call *g, __u64 hit)
{
	struct py_gen_key key = {.tgid = id >> 32, .frame = f};
	struct py_gen_call nc = {};

	if (kind == PY_START_GEN_FIRST) {
		nc.start_ns = fs->start_ns;
		nc.seq = fs->seq;
		nc.tid = (__u32)id;
		/* a generator freed at this address left its call: replaced */
		bpf_map_update_elem(&py_gens, &key, &nc, BPF_ANY);
		tc->py_gens++;
		return;
	}
	if (!g)
		return;
	fs->start_ns = g->start_ns;
	/* overhead_ns - ovh0 is what the call was charged: modular, so a
	 * call resumed on another thread comes out right too */
	fs->ovh0 = tc->overhead_ns - g->charged_ns - hit;
	if (g->tid == (__u32)id)
		fs->seq = g->seq;
	fs->flags |= g->flags & LP_FS_SAMPLED;
}

/* gi_frame_state of the generator whose frame is @f: < 0 suspended */
static __always_inline bool py_gen_suspended(const struct lp_py_cfg *cfg, __u64 f)
{
	__s8 state = 0;

	return !bpf_probe_read_user(&state, sizeof(state), (void *)(f - cfg->gen_state_back)) &&
	       state < 0;
}

/*
 * A segment @fs of frame @f yields (@hit: this return probe's cost):
 * keep what it was charged and whether it was sampled for the next one.
 * The caller pops it.
 */
static __always_inline void py_gen_suspend(struct lp_thread_calls *tc,
					   const struct lp_frame_state *fs, __u32 tgid, __u64 f,
					   __u64 hit)
{
	struct py_gen_key key = {.tgid = tgid, .frame = f};
	struct py_gen_call *g = bpf_map_lookup_elem(&py_gens, &key);

	if (!g)
		return;
	g->charged_ns = tc->overhead_ns - fs->ovh0 + hit;
	g->flags |= fs->flags & LP_FS_SAMPLED;
}

/* The call of frame @f ended: forget it. */
static __always_inline void py_gen_forget(struct lp_thread_calls *tc, __u64 id, __u64 f)
{
	struct py_gen_key key = {.tgid = id >> 32, .frame = f};
	struct py_gen_call *g = bpf_map_lookup_elem(&py_gens, &key);

	if (!g)
		return;
	if (g->tid == (__u32)id && tc->py_gens)
		tc->py_gens--;
	bpf_map_delete_elem(&py_gens, &key);
}

/*
 * A return of generator frame @f, of trace @probe_id, that no segment in
 * thread_calls holds: the segment a throw() resumed (its start unseen).
 * If the generator ended (not @yielded, and its state is not
 * suspended), finish its call from py_gens.
 */
static __always_inline void py_gen_end_unseen(struct pt_regs *ctx, struct lp_thread_calls *tc,
					      const struct lp_py_cfg *cfg,
					      const struct lp_probe_cfg *pcfg, __u32 probe_id,
					      __u64 id, __u64 f, __u64 now, bool yielded)
{
	struct py_gen_key key = {.tgid = id >> 32, .frame = f};
	struct py_gen_call *g;
	struct lp_frame_state fs = {};

	if (yielded || !cfg->gen_state_back || py_gen_suspended(cfg, f))
		return;
	g = bpf_map_lookup_elem(&py_gens, &key);
	if (!g)
		return;
	fs.probe_id = probe_id;
	fs.flags = LP_FS_USDT | LP_FS_PY | LP_FS_GEN | (g->flags & LP_FS_SAMPLED);
	fs.seq = g->seq;
	fs.start_ns = g->start_ns;
	fs.ovh0 = tc->overhead_ns - g->charged_ns;
	fs.sp = f;
	finish_call(ctx, tc, &fs, pcfg, now, 0);
	py_gen_forget(tc, id, f);
}

#endif /* LP_PYGEN_BPF_H */
