/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * python.bpf.h - CPython frames at a sample (3.11 to 3.13).
 *
 * For a process user space recognized as CPython (py_procs, filled from
 * the interpreter's DWARF or liveprof's table of offsets), find the
 * sampled thread's PyThreadState and walk its chain of
 * _PyInterpreterFrame, recording per frame the code object and the code
 * unit it was executing. User space names them and puts them where the
 * evaluator's C frame stands in the native stack.
 *
 * The thread state is the one whose thread_id (its pthread_self(), the
 * fs base on x86-64) is the sampled thread's fs base. It is found by
 * walking the interpreter's thread list once per thread and then kept in
 * py_tstates, checked again at each sample. Every read is of the target's
 * memory and may fail or see garbage (a thread being torn down, a frame
 * being pushed): a failed read ends the walk and is counted, a wrong
 * pointer can only yield a frame user space cannot name.
 */
#ifndef LP_PYTHON_BPF_H
#define LP_PYTHON_BPF_H

#define LP_PY_MAX_THREADS 64 /* thread states looked at per search */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, struct lp_py_cfg);
} py_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);   /* tid */
	__type(value, __u64); /* its PyThreadState */
} py_tstates SEC(".maps");

static __always_inline __u64 py_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

struct py_search {
	const struct lp_py_cfg *cfg;
	__u64 ts, fsbase, found;
};

static long py_search_step(__u32 i, struct py_search *w)
{
	const struct lp_py_cfg *cfg = w->cfg;

	if (!w->ts || !cfg)
		return 1;
	if (py_read_ptr(w->ts + cfg->tstate_thread_id) == w->fsbase) {
		w->found = w->ts;
		return 1;
	}
	w->ts = py_read_ptr(w->ts + cfg->tstate_next);
	return 0;
}

/* The PyThreadState of the current thread, or 0 (not a Python thread). */
static __always_inline __u64 py_thread_state(const struct lp_py_cfg *cfg, struct task_struct *task,
					     __u32 tid)
{
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase), *cached, interp;
	struct py_search w = {.cfg = cfg, .fsbase = fsbase};

	cached = bpf_map_lookup_elem(&py_tstates, &tid);
	if (cached && *cached && py_read_ptr(*cached + cfg->tstate_thread_id) == fsbase)
		return *cached;
	interp = py_read_ptr(cfg->runtime + cfg->runtime_interpreters_head);
	if (!interp)
		return 0;
	w.ts = py_read_ptr(interp + cfg->interp_threads_head);
	bpf_loop(LP_PY_MAX_THREADS, py_search_step, &w, 0);
	if (w.found)
		bpf_map_update_elem(&py_tstates, &tid, &w.found, BPF_ANY);
	return w.found;
}

struct py_walk {
	const struct lp_py_cfg *cfg;
	struct lp_interp_stack *s;
	struct lp_interp_scratch *x;
	__u64 frame;
	__u32 n;
	__u32 faults;
};

/* The hash of @code's identity window now (liveprof.h); 0 if unread. */
static __always_inline __u16 py_code_ident(const struct lp_py_cfg *cfg, __u64 code,
					   struct lp_interp_scratch *x)
{
	if (!cfg->code_ident ||
	    bpf_probe_read_user(x->ident, LP_PY_IDENT_WORDS * 8,
				(const void *)(code + cfg->code_ident)))
		return 0;
	return lp_py_ident_hash(x->ident);
}

/* One _PyInterpreterFrame: record it, or mark the boundary a shim is. */
static long py_walk_step(__u32 i, struct py_walk *w)
{
	const struct lp_py_cfg *cfg = w->cfg;
	struct lp_interp_stack *s = w->s;
	__u64 code, instr, f = w->frame;
	__u8 owner = 0, entry = 0;
	__u32 k;

	if (!f || !cfg || !s || !w->x || w->n >= LP_MAX_PYFRAMES)
		return 1;
	if (bpf_probe_read_user(&code, sizeof(code), (const void *)(f + cfg->iframe_code)) ||
	    bpf_probe_read_user(&instr, sizeof(instr), (const void *)(f + cfg->iframe_instr)) ||
	    bpf_probe_read_user(&owner, 1, (const void *)(f + cfg->iframe_owner))) {
		w->faults++;
		return 1;
	}
	w->frame = py_read_ptr(f + cfg->iframe_previous);
	if (cfg->minor >= 12 && owner == LP_PY_OWNED_BY_CSTACK) {
		/* the shim below an evaluator call's first frame: that frame
		 * (the last one recorded) is where the C frame starts */
		k = w->n - 1;
		if (w->n && k < LP_MAX_PYFRAMES)
			s->f[k].instr |= LP_PYF_ENTRY;
		return 0;
	}
	if (cfg->minor == 11 &&
	    bpf_probe_read_user(&entry, 1, (const void *)(f + cfg->iframe_is_entry)))
		entry = 0;
	k = w->n;
	if (k >= LP_MAX_PYFRAMES)
		return 1;
	/* code units are 2-byte aligned: bit 0 carries the entry mark */
	s->f[k].code = code;
	/* the object's identity now: it is named later (liveprof.h) */
	s->f[k].aux = py_code_ident(cfg, code, w->x);
	s->f[k].instr = (instr & ~(__u64)LP_PYF_ENTRY) | (entry ? LP_PYF_ENTRY : 0);
	w->n = k + 1;
	return 0;
}

/*
 * Record the current thread's Python frames into @s, innermost first.
 * A global function: the verifier checks it once, not per caller.
 * Return: LP_INTERP_NONE if @tgid is not a CPython process, else the
 * frames written with LP_INTERP_FAULT and LP_INTERP_TRUNC.
 */
__noinline int lp_py_walk(struct lp_interp_stack *s, __u32 tgid, __u32 tid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct py_walk w = {};
	const struct lp_py_cfg *cfg;
	__u64 ts, cf;
	int r;

	if (!s)
		return LP_INTERP_NONE;
	cfg = bpf_map_lookup_elem(&py_procs, &tgid);
	if (!cfg)
		return LP_INTERP_NONE;
	ts = py_thread_state(cfg, task, tid);
	if (!ts)
		return 0;
	if (cfg->tstate_current_frame != LP_PY_OFF_NONE) {
		w.frame = py_read_ptr(ts + cfg->tstate_current_frame);
	} else {
		cf = py_read_ptr(ts + cfg->tstate_cframe);
		w.frame = cf ? py_read_ptr(cf + cfg->cframe_current_frame) : 0;
	}
	w.cfg = cfg;
	w.s = s;
	w.x = lp_interp_scratch();
	bpf_loop(LP_MAX_PYFRAMES * 2, py_walk_step, &w, 0);
	r = w.n;
	if (w.faults)
		r |= LP_INTERP_FAULT;
	if (w.frame && w.n >= LP_MAX_PYFRAMES)
		r |= LP_INTERP_TRUNC;
	return r;
}

#endif /* LP_PYTHON_BPF_H */
