/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pytrace.bpf.h - --trace py:QUALNAME: calls of Python functions, timed
 * per thread between the start of their frame and its return.
 *
 * Start: uprobes on the jumps of the evaluator's recursion check into
 * the block that every frame start runs just before resume_frame
 * (dwarf/python_starts.c), or, in a build laid out otherwise, on
 * resume_frame itself, where callers also resume. Either way BPF counts
 * a start only for a frame that has run no code unit yet: its
 * prev_instr is still one before its first unit, as
 * _PyFrame_InitializeSpecials left it. Python-to-Python calls never
 * leave the evaluator in 3.11+, so these are the places that see them
 * all (USDT function__entry does not: CPython gh-98894).
 *
 * Return: USDT python:function__return, which fires for every return
 * (also when an exception ends the frame) while the frame is still the
 * thread's current one; in a build without USDT, uprobes on the labels
 * TARGET_RETURN_VALUE and exit_unwind, where the same holds.
 *
 * The probes carry the trace's probe id as their cookie.
 *
 * Filter: map py_codes remembers per code object whether its qualname is
 * traced (py_names), decided at its first call by reading the name, so
 * a call of an untraced function costs one lookup in py_codes. A frame
 * in flight is pushed as a USDT-style call (no stack slot) with its
 * frame address in sp: a return pops the innermost call of its own frame,
 * dropping those above it (frames an exception unwound without a
 * return probe), and a frame that starts at an address still on the
 * stack of calls ends the one that was there, so pairing never drifts.
 *
 * Generators and coroutines: pygen.bpf.h.
 */
#ifndef LP_PYTRACE_BPF_H
#define LP_PYTRACE_BPF_H

/* A frame of --trace py: in thread_calls (with LP_FS_USDT, sp = frame). */
#define LP_FS_PY (1u << 4)

#include "pygen.bpf.h"

/* PyASCIIObject.state: compact (bit 5) and ascii (bit 6), 3.11 to 3.13 */
#define PY_STATE_COMPACT_ASCII (3u << 5)

struct py_code_key {
	__u32 tgid;
	__u32 pad;
	__u64 code;
};

struct py_code_val {
	__u32 id1;	 /* traced: probe id + 1; 0: not traced */
	__u32 names_gen; /* py_names_gen when decided */
	__u64 qualname;	 /* co_qualname then: a reused address decides anew */
	__u32 is_gen;	 /* traced, and a generator, coroutine or async generator */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, char[LP_STR_LEN]); /* a qualname, zero-padded */
	__type(value, __u32);	       /* its trace's probe id */
} py_names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct py_code_key);
	__type(value, struct py_code_val);
} py_codes SEC(".maps");

/* Raised by user space when py_names changes: cached decisions lapse. */
volatile __u32 py_names_gen;
/*
 * What a hit of each probe costs the thread beyond its program's own run
 * (the trap, the other py: traces' programs, what the interpreter
 * computes for the probe): set by user space from the shortest gaps
 * between hits in the target (py_gaps), else calibrated with these very
 * programs, idle, on nops. A hit inside traced calls is charged to them
 * at that plus its program's run as timed on that hit: the programs read
 * the target's frames and code objects, 0.3-0.6 us a hit here against
 * the 0.1 us of a program on a nop, so a nop pair's calibrated cost alone
 * left 1.0-2.4 us of every nested Python call in the calls around it
 * (py_charge.py, mode rec: a level of recursion that costs 30-45 ns
 * unprobed); timed, 0.2-0.8 us was left; with the gaps, 0.03-0.06 us.
 */
volatile __u64 py_start_hit_ns;
volatile __u64 py_return_hit_ns;
/*
 * Each py: trace attaches its own probes, so a hit runs the programs of
 * every py: trace. Those of trace py_owner_id (their cookie) do all the
 * work, for every traced code object; the others return at once: with
 * six py: traces, each doing it all made a call cost 8 us, not 1.5.
 */
volatile __u32 py_owner_id;

/* The thread's current _PyInterpreterFrame and its code object, or 0. */
static __always_inline __u64 py_current_frame(const struct lp_py_cfg *cfg, __u32 tid, __u64 *code)
{
	__u64 ts = py_thread_state(cfg, bpf_get_current_task_btf(), tid), f, cf;

	if (!ts)
		return 0;
	if (cfg->tstate_current_frame != LP_PY_OFF_NONE) {
		f = py_read_ptr(ts + cfg->tstate_current_frame);
	} else {
		cf = py_read_ptr(ts + cfg->tstate_cframe);
		f = cf ? py_read_ptr(cf + cfg->cframe_current_frame) : 0;
	}
	*code = f ? py_read_ptr(f + cfg->iframe_code) : 0;
	return *code ? f : 0;
}

#define PY_TAIL 64 /* bytes of a file name read for its module */

/* The length of compact ASCII str @s, 0 if it is not one (or is empty). */
static __always_inline __u64 py_ascii_len(const struct lp_py_cfg *cfg, __u64 s)
{
	__u32 state = 0;
	__u64 len = 0;

	if (!s || bpf_probe_read_user(&state, sizeof(state), (void *)(s + cfg->unicode_state)) ||
	    (state & PY_STATE_COMPACT_ASCII) != PY_STATE_COMPACT_ASCII ||
	    bpf_probe_read_user(&len, sizeof(len), (void *)(s + cfg->unicode_length)))
		return 0;
	return len;
}

/* An index into a PY_TAIL or LP_STR_LEN array (@mask: its size - 1): the
 * empty asm keeps clang from dropping the mask the verifier needs. */
static __always_inline __u32 py_idx(__u32 i, __u32 mask)
{
	asm volatile("" : "+r"(i));
	return i & mask;
}

struct py_modkey {
	char tail[PY_TAIL];	   /* the file name's last bytes */
	char key[LP_STR_LEN];	   /* the qualname */
	char mkey[2 * LP_STR_LEN]; /* "module.qualname", zero-padded */
};

struct py_slash {
	const struct py_modkey *m;
	__u32 end, start;
};

/* bpf_loop: the last '/' before end (a callback: verified once, not per byte) */
static long py_slash_step(__u32 i, struct py_slash *c)
{
	if (i >= c->end)
		return 1;
	if (c->m->tail[py_idx(i, PY_TAIL - 1)] == '/')
		c->start = i + 1;
	return 0;
}

static __always_inline __u32 py_after_slash(const struct py_modkey *m, __u32 end)
{
	struct py_slash c = {.m = m, .end = end};

	bpf_loop(PY_TAIL, py_slash_step, &c, 0);
	return c.start;
}

/* Is "__init__" at @m->tail[@at]? */
static __always_inline bool py_is_init(const struct py_modkey *m, __u32 at)
{
	const char init[8] = "__init__";
	__u32 i;

	for (i = 0; i < 8; i++)
		if (m->tail[py_idx(at + i, PY_TAIL - 1)] != init[i])
			return false;
	return true;
}

/*
 * "module.qualname" into @m->mkey, from the file name's bytes in @m->tail
 * up to @end (".py" cut off): its base name, or for a package's
 * __init__.py its directory. Helper copies, not byte loops: the verifier
 * would follow every byte's branches. Return: 0, or -1 if it does not fit.
 */
static __always_inline int py_modkey(struct py_modkey *m, __u32 end, __u32 qlen)
{
	__u32 start = py_after_slash(m, end), mlen;

	/* a package: json/__init__.py is module json */
	if (end - start == 8 && start > 1 && py_is_init(m, start)) {
		end = start - 1;
		start = py_after_slash(m, end);
	}
	mlen = end - start;
	if (!mlen || end > PY_TAIL || mlen + 1 + qlen > LP_STR_LEN - 2)
		return -1;
	bpf_probe_read_kernel(m->mkey, py_idx(mlen, LP_STR_LEN - 1),
			      &m->tail[py_idx(start, PY_TAIL - 1)]);
	m->mkey[py_idx(mlen, LP_STR_LEN - 1)] = '.';
	bpf_probe_read_kernel(&m->mkey[py_idx(mlen + 1, LP_STR_LEN - 1)],
			      py_idx(qlen, LP_STR_LEN - 1), m->key);
	return 0;
}

/* The trace of "module.qualname" for @code whose qualname is in @m->key. */
static __always_inline __u32 py_decide_module(const struct lp_py_cfg *cfg, __u64 code,
					      struct py_modkey *m, __u32 qlen)
{
	__u64 fname = py_read_ptr(code + cfg->code_filename), flen = py_ascii_len(cfg, fname), off;
	__u32 n, end, *id;

	if (!flen)
		return 0;
	n = flen > PY_TAIL ? PY_TAIL : (__u32)flen;
	off = flen - n;
	if (bpf_probe_read_user(m->tail, n, (void *)(fname + cfg->unicode_ascii_data + off)))
		return 0;
	end = n;
	if (n > 3 && m->tail[py_idx(n - 3, PY_TAIL - 1)] == '.' &&
	    m->tail[py_idx(n - 2, PY_TAIL - 1)] == 'p' &&
	    m->tail[py_idx(n - 1, PY_TAIL - 1)] == 'y')
		end = n - 3;
	if (py_modkey(m, end, qlen))
		return 0;
	id = bpf_map_lookup_elem(&py_names, m->mkey);
	return id ? *id + 1 : 0;
}

/*
 * Decide once per code object: is its qualname, or "module.qualname",
 * one of py_names? (The bare qualname first: a function both specs
 * name is counted under that one.)
 */
static __always_inline __u32 py_decide(const struct lp_py_cfg *cfg, __u64 code, __u64 qual)
{
	struct py_modkey m = {};
	__u64 len = py_ascii_len(cfg, qual);
	__u32 *id;

	/* names of LP_STR_LEN - 1 bytes and more are not traced (user space
	 * refuses such specs): a longer one cannot match by its prefix */
	if (len == 0 || len > LP_STR_LEN - 2)
		return 0;
	if (bpf_probe_read_user(m.key, len, (void *)(qual + cfg->unicode_ascii_data)))
		return 0;
	id = bpf_map_lookup_elem(&py_names, m.key);
	if (id)
		return *id + 1;
	return py_decide_module(cfg, code, &m, (__u32)len);
}

/*
 * The probe id + 1 of @code's trace in process @tgid, 0 if untraced, and
 * whether a traced code is a generator's (*@is_gen). One lookup when
 * decided already (and still valid).
 */
static __always_inline __u32 py_code_trace(const struct lp_py_cfg *cfg, __u32 tgid, __u64 code,
					   bool *is_gen)
{
	struct py_code_key key = {.tgid = tgid, .code = code};
	struct py_code_val *v = bpf_map_lookup_elem(&py_codes, &key), nv = {};
	__u32 names_gen = py_names_gen, co_flags = 0;

	nv.qualname = py_read_ptr(code + cfg->code_qualname);
	if (v && v->names_gen == names_gen && v->qualname == nv.qualname) {
		*is_gen = v->is_gen;
		return v->id1;
	}
	nv.id1 = py_decide(cfg, code, nv.qualname);
	nv.names_gen = names_gen;
	if (nv.id1 && cfg->code_flags != LP_PY_OFF_NONE &&
	    !bpf_probe_read_user(&co_flags, sizeof(co_flags), (void *)(code + cfg->code_flags)))
		nv.is_gen = (co_flags & PY_CO_GEN_KINDS) != 0;
	bpf_map_update_elem(&py_codes, &key, &nv, BPF_ANY);
	*is_gen = nv.is_gen;
	return nv.id1;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lp_py_gaps);
} py_gaps SEC(".maps");

/*
 * What a hit of kind @kind (0 start, 1 return) whose program began at @t0
 * costs the thread of @tc: @trap_ns for what the program cannot time,
 * and its own run, until now. The gap since the thread's last timed run
 * goes into py_gaps, which user space calibrates @trap_ns from.
 */
static __always_inline __u64 py_hit_cost(struct lp_thread_calls *tc, __u64 t0, __u64 trap_ns,
					 __u32 kind)
{
	__u64 now = bpf_ktime_get_ns(), gap = t0 - tc->py_end_ns;
	__u32 zero = 0;
	struct lp_py_gaps *g =
		tc->py_end_ns && t0 > tc->py_end_ns ? bpf_map_lookup_elem(&py_gaps, &zero) : NULL;

	kind &= 1;
	if (g) {
		if (!g->min_ns[kind] || gap < g->min_ns[kind])
			g->min_ns[kind] = gap;
		g->n[kind]++;
	}
	tc->py_end_ns = now;
	return trap_ns + (now - t0);
}

/* Index (depth) above the innermost call of frame @f in @tc, 0: none. */
static __always_inline __u32 py_find_frame(struct lp_thread_calls *tc, __u64 f)
{
	struct lp_frame_state *fs;
	__u32 d = tc->depth, k;

	if (d > LP_MAX_DEPTH)
		d = LP_MAX_DEPTH;
	for (k = 0; k < USDT_SCAN; k++) {
		if (d == 0)
			return 0;
		fs = &tc->f[call_idx(d - 1)];
		if ((fs->flags & LP_FS_PY) && fs->sp == f)
			return d;
		d--;
	}
	return 0;
}

/* Drop the calls at depths [@d, top): their frames are gone. */
static __always_inline void py_drop_above(struct lp_thread_calls *tc, __u32 d)
{
	__u32 top = tc->depth, k;

	if (top > LP_MAX_DEPTH)
		top = LP_MAX_DEPTH;
	for (k = 0; k < USDT_SCAN; k++) {
		if (top <= d)
			break;
		top--;
		drop_stale(tc, tc->f[call_idx(top)].probe_id);
	}
	tc->depth = top;
}

/* What both py: programs look up first (lp_py_hit_frame()). */
struct py_hit {
	__u64 f;    /* the thread's current frame */
	__u64 code; /* its code object */
	__u32 id1;  /* that code's trace: probe id + 1, 0 if untraced */
	__u32 is_gen; /* a generator's code */
};

/*
 * Fill @h for the hit of probe @mine: the thread's current frame, its code
 * object and that code's trace. Returns 0 when there is nothing to do:
 * another trace's program (@mine is not the owner), liveprof itself,
 * paused, or no frame to read. A global function with a frame of its own:
 * inlined, its reads and lookups put the py: programs' frames at 296-304
 * bytes, and with the push and the value fetches under them 6.1 and 6.12
 * refused 656 (512 at most).
 */
__noinline int lp_py_hit_frame(__u32 mine, struct py_hit *h)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct lp_py_cfg *cfg;
	bool is_gen = false;

	if (!h || mine != py_owner_id || (filter_all && tgid == self_tgid) || is_paused())
		return 0;
	cfg = bpf_map_lookup_elem(&py_procs, &tgid);
	if (!cfg)
		return 0;
	h->f = py_current_frame(cfg, (__u32)id, &h->code);
	if (!h->f)
		return 0;
	h->id1 = py_code_trace(cfg, tgid, h->code, &is_gen);
	h->is_gen = is_gen;
	return 1;
}

/* What kind of start a hit on frame @f of @code (trace @id1) is. */
static __always_inline enum py_start_kind py_classify_start(const struct lp_py_cfg *cfg, __u64 id,
							    __u64 f, __u64 code, __u32 id1,
							    bool is_gen, struct py_gen_call **g)
{
	__u64 instr = 0;

	if (!id1 || bpf_probe_read_user(&instr, sizeof(instr), (void *)(f + cfg->iframe_instr)))
		return PY_START_NONE;
	/* a frame that ran no code unit yet starts here; others resume */
	return py_start_kind(cfg, id >> 32, f, instr, instr == code + cfg->code_adaptive - 2,
			     is_gen, g);
}

/*
 * Push the call of trace @packed's low half that starts (or resumes: kind
 * in bits 32-33, enum py_start_kind) on frame @f, its probe's hit having
 * begun at @t0, on the thread's calls @tc. A global function, verified
 * once: inlined after the frame reads and the lookups, the start program
 * took 0.2-0.25 s to verify (158,178 instructions).
 */
__noinline int lp_py_push(struct pt_regs *ctx, struct lp_thread_calls *tc, __u64 packed, __u64 f,
			  __u64 t0)
{
	__u64 id = bpf_get_current_pid_tgid(), hit = 0;
	__u32 id1 = (__u32)packed, d;
	enum py_start_kind kind = (packed >> 32) & 3;
	struct py_gen_key key = {.tgid = id >> 32, .frame = f};
	struct lp_probe_cfg *pcfg = bpf_map_lookup_elem(&probes, &id1);
	struct py_gen_call *g = NULL;

	if (!ctx || !tc || !pcfg)
		return 0;
	if (kind == PY_START_GEN_RESUME) {
		g = bpf_map_lookup_elem(&py_gens, &key);
		if (!g)
			return 0;
	}
	/* this frame's address held a frame that never returned */
	d = py_find_frame(tc, f);
	if (d)
		py_drop_above(tc, d - 1);
	d = tc->depth;
	if (d >= LP_MAX_DEPTH) {
		tc->overhead_ns += lp_untimed_call(id1, LP_CNT_CALLS_DROPPED);
		return 0;
	}
	/* the calls around it pay for this hit, and so does a generator's
	 * call it resumes; push_call() starts the new call's charges after */
	if (d || kind == PY_START_GEN_RESUME)
		hit = py_hit_cost(tc, t0, py_start_hit_ns, 0);
	if (d)
		tc->overhead_ns += hit;
	push_call(ctx, tc, d, pcfg, id1, f,
		  LP_FS_USDT | LP_FS_PY | (kind == PY_START_CALL ? 0 : LP_FS_GEN), id1);
	if (kind != PY_START_CALL)
		py_gen_begin(tc, &tc->f[call_idx(d)], id, f, kind, g, hit);
	return 0;
}

/*
 * The kind of start that hit @h is, with its generator call in *@g; a
 * global function, as lp_py_hit_frame() is.
 */
__noinline int lp_py_classify(struct py_hit *h)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct lp_py_cfg *cfg = bpf_map_lookup_elem(&py_procs, &tgid);
	struct py_gen_call *g = NULL;

	if (!h || !cfg)
		return PY_START_NONE;
	return py_classify_start(cfg, id, h->f, h->code, h->id1, h->is_gen, &g);
}

SEC("uprobe")
int BPF_KPROBE(lp_py_start)
{
	__u32 mine = (__u32)bpf_get_attach_cookie(ctx);
	struct py_hit h = {};
	struct lp_thread_calls *tc;
	enum py_start_kind kind;
	__u64 t0;

	LP_REFUSED_FOR_TEST(LP_CAP_PY_TRACE);

	if (mine != py_owner_id)
		return 0;
	t0 = bpf_ktime_get_ns();
	if (!lp_py_hit_frame(mine, &h))
		return 0;
	kind = lp_py_classify(&h);
	if (kind == PY_START_NONE) {
		/* an untraced frame inside traced calls: theirs */
		tc = thread_calls_of(bpf_get_current_task_btf(), false);
		if (tc && tc->depth)
			tc->overhead_ns += py_hit_cost(tc, t0, py_start_hit_ns, 0);
		return 0;
	}
	tc = thread_calls_of(bpf_get_current_task_btf(), true);
	return lp_py_push(ctx, tc, ((__u64)kind << 32) | (h.id1 - 1), h.f, t0);
}

#define PY_END_YIELDED (1ull << 63)
#define PY_END_GEN     (1ull << 62)

/*
 * The rest of a return of frame @f at @now, once its call is found at
 * depth d of @tc (0: not there). @packed holds d (bits 32-40), the trace's
 * probe id (low half) and the flags PY_END_YIELDED (the probe's place says
 * a yield) and PY_END_GEN (the code is a generator's). A global function,
 * verified once: inlined after the frame reads and the lookups, the
 * return program took 0.43 s to verify (272,369 instructions).
 */
__noinline int lp_py_end(struct pt_regs *ctx, struct lp_thread_calls *tc, __u64 packed, __u64 f,
			 __u64 now)
{
	__u64 id = bpf_get_current_pid_tgid(), hit;
	__u32 tgid = id >> 32, id1 = (__u32)packed, d = (packed >> 32) & 0x1ff;
	bool yielded = packed & PY_END_YIELDED;
	struct lp_py_cfg *cfg = bpf_map_lookup_elem(&py_procs, &tgid);
	struct lp_probe_cfg *pcfg = bpf_map_lookup_elem(&probes, &id1);
	struct lp_frame_state *fs;

	if (!ctx || !tc || !cfg || !pcfg || d > LP_MAX_DEPTH)
		return 0;
	if (!d) {
		/* none: it started before we attached, or a throw() resumed it */
		if (packed & PY_END_GEN)
			py_gen_end_unseen(ctx, tc, cfg, pcfg, id1, id, f, now, yielded);
		return 0;
	}
	py_drop_above(tc, d);
	fs = &tc->f[call_idx(d - 1)];
	if (fs->probe_id != id1)
		return 0;
	if ((fs->flags & LP_FS_GEN) && (yielded || py_gen_suspended(cfg, f))) {
		/* a suspension: the call goes on at the next resumption */
		hit = py_hit_cost(tc, now, py_return_hit_ns, 1);
		py_gen_suspend(tc, fs, tgid, f, hit);
		if (d > 1)
			tc->overhead_ns += hit;
		tc->depth = d - 1;
		return 0;
	}
	/* the start's hit was charged when it ran; this one is, as timed */
	finish_call(ctx, tc, fs, pcfg, now, 0);
	if (fs->flags & LP_FS_GEN)
		py_gen_forget(tc, id, f);
	if (d > 1)
		tc->overhead_ns += py_hit_cost(tc, now, py_return_hit_ns, 1);
	tc->depth = d - 1;
	return 0;
}

/*
 * A return of the thread's current frame (@yielded: at a yield, known
 * from the probe's place): a traced call's end, or a generator's
 * segment's.
 */
static __always_inline int py_on_return(struct pt_regs *ctx, bool yielded)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 mine = (__u32)bpf_get_attach_cookie(ctx);
	struct lp_thread_calls *tc;
	struct py_hit h = {};

	/* No call in flight on this thread (nor a generator's suspended): no
	 * call can end here and none is there to charge, so most returns
	 * outside traced calls end now, before the frame reads and the code
	 * lookup (about 500 of the 600 ns the program took per return here). */
	if (mine != py_owner_id)
		return 0;
	tc = thread_calls_of(bpf_get_current_task_btf(), false);
	if (!tc || (!tc->depth && !tc->py_gens))
		return 0;
	if (!lp_py_hit_frame(mine, &h))
		return 0;
	if (!h.id1) {
		/* an untraced frame's return inside traced calls: theirs */
		if (tc->depth)
			tc->overhead_ns += py_hit_cost(tc, now, py_return_hit_ns, 1);
		return 0;
	}
	return lp_py_end(ctx, tc,
			 ((__u64)py_find_frame(tc, h.f) << 32) | (h.id1 - 1) |
				 (yielded ? PY_END_YIELDED : 0) | (h.is_gen ? PY_END_GEN : 0),
			 h.f, now);
}

SEC("uprobe")
int BPF_KPROBE(lp_py_return)
{
	return py_on_return(ctx, false);
}

/* The label TARGET_YIELD_VALUE, in a build without USDT. */
SEC("uprobe")
int BPF_KPROBE(lp_py_yield)
{
	return py_on_return(ctx, true);
}

#endif /* LP_PYTRACE_BPF_H */
