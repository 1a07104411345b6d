/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ruby.bpf.h - CRuby frames at a sample (3.1).
 *
 * For a process user space recognized as CRuby (rb_procs, filled from
 * liveprof's table of offsets), find the sampled thread's rb_thread_t,
 * take its current execution context (a fiber switch changes th->ec, so
 * it is read at every sample) and walk the control frames from ec->cfp to
 * the end of the VM stack, recording per frame the iseq, the pc and
 * what names its method's class (rb_frame_me: the frame's envs are gone by
 * the time user space names it) and the iseq's identity (rb_iseq_ident: GC
 * may have given its slot to another iseq by then). User
 * space names them and puts them where the VM loop's C frame (rb_vm_exec)
 * stands in the native stack.
 *
 * Only frames that run an iseq are recorded (iseq and pc both set). A C
 * method's frame (iseq 0), a C block's (an ifunc, pc 0) and the dummy
 * frames at the bottom of the stack are skipped: a C method runs on the
 * native stack, where its own C frames show it between the Ruby frames
 * that called it and those it calls back, so a marker would say nothing
 * the native frames do not.
 *
 * The thread is the one of the main ractor's threads whose thread_id
 * (pthread_self(), the fs base on x86-64) is the sampled thread's fs
 * base; found by walking the thread list once per thread, then kept in
 * rb_threads and checked again at each sample. Every read is of the
 * target's memory and may fail or see garbage (a thread being torn down,
 * a frame being pushed): a failed read ends the walk and is counted, a
 * wrong pointer can only yield a frame user space cannot name.
 */
#ifndef LP_RUBY_BPF_H
#define LP_RUBY_BPF_H

#define LP_RB_MAX_THREADS  64	/* threads looked at per search */
#define LP_RB_FRAME_FINISH 0x20 /* VM_FRAME_FLAG_FINISH in ep[0]: a VM loop began here */
#define LP_RB_ENV_LOCAL	   0x02 /* VM_ENV_FLAG_LOCAL in ep[0]: a method's (or top) env */
#define LP_RB_EP_ME_CREF   16	/* ep[-2] (bytes below ep): method entry, cref or svar */
#define LP_RB_EP_HOPS	   6	/* block envs walked to the method's (nested blocks) */
/* RBasic.flags of an imemo method entry: T_IMEMO, imemo type ment (6) at bit 12 */
#define LP_RB_IMEMO_MENT_MASK 0xf01f
#define LP_RB_IMEMO_MENT      0x601a
/* control frames looked at per sample: the recorded ones and the C ones between */
#define LP_RB_MAX_CFPS (LP_MAX_PYFRAMES * 4)

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, struct lp_rb_cfg);
} rb_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);   /* tid */
	__type(value, __u64); /* its rb_thread_t */
} rb_threads SEC(".maps");

static __always_inline __u64 rb_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

struct rb_search {
	const struct lp_rb_cfg *cfg;
	__u64 head; /* the list head: the walk is back at it after the last thread */
	__u64 node; /* the current thread's lt_node */
	__u64 fsbase;
	__u64 found;
};

static long rb_search_step(__u32 i, struct rb_search *w)
{
	const struct lp_rb_cfg *cfg = w->cfg;
	__u64 th;

	if (!cfg || !w->node || w->node == w->head)
		return 1;
	th = w->node - cfg->thread_lt_node;
	if (rb_read_ptr(th + cfg->thread_native_id) == w->fsbase) {
		w->found = th;
		return 1;
	}
	w->node = rb_read_ptr(w->node);
	return 0;
}

/* The rb_thread_t of the current thread, or 0 (not a Ruby thread). */
static __always_inline __u64 rb_thread_of(const struct lp_rb_cfg *cfg, struct task_struct *task,
					  __u32 tid)
{
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase), *cached, vm, ractor;
	struct rb_search w = {.cfg = cfg, .fsbase = fsbase};

	cached = bpf_map_lookup_elem(&rb_threads, &tid);
	if (cached && *cached && rb_read_ptr(*cached + cfg->thread_native_id) == fsbase)
		return *cached;
	vm = rb_read_ptr(cfg->vm_ptr);
	ractor = vm ? rb_read_ptr(vm + cfg->vm_main_ractor) : 0;
	if (!ractor)
		return 0;
	w.head = ractor + cfg->ractor_threads_set;
	w.node = rb_read_ptr(w.head);
	bpf_loop(LP_RB_MAX_THREADS, rb_search_step, &w, 0);
	if (w.found)
		bpf_map_update_elem(&rb_threads, &tid, &w.found, BPF_ANY);
	return w.found;
}

struct rb_walk {
	const struct lp_rb_cfg *cfg;
	struct lp_interp_stack *s;
	struct lp_interp_scratch *x;
	__u64 cfp, end; /* the next frame; the end of the VM stack */
	__u32 n;
	__u32 faults;
};

/* The data of a VM env, ep[-2] to ep[0]: read in one go, the flags a
 * frame's walk reads anyway and, beside them, what names its method. */
struct rb_env {
	__u64 me_cref; /* ep[-2]: a method entry, a cref, an svar, or 0 */
	__u64 specval; /* ep[-1]: a block env's enclosing ep, tagged in 2 bits */
	__u64 flags;   /* ep[0] */
};

static __always_inline long rb_read_env(__u64 ep, struct rb_env *e)
{
	return bpf_probe_read_user(e, sizeof(*e), (const void *)(ep - LP_RB_EP_ME_CREF));
}

/*
 * What names the method a frame runs in, as rb_vm_frame_method_entry()
 * finds it: from the frame's env @e towards its local env through each
 * block env's enclosing one, the first ep[-2] that is a method entry, or
 * the local env's ep[-2] whatever it is (a method entry, or an svar that
 * may hold one; user space checks). Read now: the envs of a frame live on
 * the VM stack and are reused once it returns. A method's frame costs no
 * read more (its env is local); a block's, or the main script's (an eval
 * frame over the toplevel binding's env), one per env up to the local one
 * and one per ep[-2] set on the way (the main script's cref). 0 when
 * nothing was found or a read failed (the frame is then named by its iseq
 * alone).
 */
static __always_inline __u64 rb_frame_me(struct rb_env e)
{
	__u64 vflags, ep;

	for (int i = 0; i < LP_RB_EP_HOPS; i++) {
		if (e.flags & LP_RB_ENV_LOCAL)
			return e.me_cref;
		/* a block env's is usually 0; a cref (instance_eval) goes on */
		if (e.me_cref && !(e.me_cref & 7) &&
		    !bpf_probe_read_user(&vflags, sizeof(vflags), (const void *)e.me_cref) &&
		    (vflags & LP_RB_IMEMO_MENT_MASK) == LP_RB_IMEMO_MENT)
			return e.me_cref;
		ep = e.specval & ~3ull;
		if (!ep || rb_read_env(ep, &e))
			return 0;
	}
	return 0;
}

/*
 * The hash of @iseq's identity now (liveprof.h), 0 if unread: the iseq of
 * a running frame is live (the frame marks it), so this is the iseq the
 * sample saw, whatever user space finds at its address later.
 */
static __always_inline __u16 rb_iseq_ident(const struct lp_rb_cfg *cfg, __u64 iseq,
					   struct lp_interp_scratch *x)
{
	__u64 *w = x->ident;

	if (!cfg->iseq_body ||
	    bpf_probe_read_user(&w[0], sizeof(w[0]), (const void *)(iseq + cfg->iseq_body)) ||
	    !w[0] ||
	    bpf_probe_read_user(&w[1], (LP_RB_IDENT_WORDS - 1) * 8, (const void *)w[0]))
		return 0;
	return lp_rb_ident_hash(w);
}

/* One control frame: record it if it runs an iseq, then go to its caller. */
static long rb_walk_step(__u32 i, struct rb_walk *w)
{
	const struct lp_rb_cfg *cfg = w->cfg;
	struct lp_interp_stack *s = w->s;
	struct lp_interp_scratch *x = w->x;
	__u64 cfp = w->cfp, pc, iseq, ep, ident, *c;
	struct rb_env env = {};
	__u32 k;

	/* the two outermost frames are the VM stack's dummy and the toplevel
	 * (TOPLEVEL_BINDING's) frame: Ruby's own backtraces stop before them */
	if (!cfg || !s || !x || !cfg->cfp_size || cfp + 2 * cfg->cfp_size > w->end)
		return 1;
	c = x->cfp;
	/* one read for the frame's pc, iseq and ep: the identity's two reads
	 * below cost what the two saved here did (inside the VM stack: two
	 * frames are left, each larger than half of the read) */
	if (bpf_probe_read_user(c, sizeof(x->cfp), (const void *)cfp)) {
		w->faults++;
		return 1;
	}
	pc = c[cfg->cfp_pc / 8 & (LP_RB_CFP_WORDS - 1)];
	iseq = c[cfg->cfp_iseq / 8 & (LP_RB_CFP_WORDS - 1)];
	ep = c[cfg->cfp_ep / 8 & (LP_RB_CFP_WORDS - 1)];
	if (ep && rb_read_env(ep, &env)) {
		w->faults++;
		return 1;
	}
	w->cfp = cfp + cfg->cfp_size;
	if (!iseq || !pc)
		return 0;
	k = w->n;
	if (k >= LP_MAX_PYFRAMES)
		return 1;
	s->f[k].code = iseq;
	ident = rb_iseq_ident(cfg, iseq, x);
	s->f[k].aux = (rb_frame_me(env) & LP_RBF_ME_MASK) | ident << LP_RBF_IDENT_SHIFT;
	s->f[k].instr = pc & ~LP_PYF_ENTRY;
	if (env.flags & LP_RB_FRAME_FINISH)
		s->f[k].instr |= LP_PYF_ENTRY;
	w->n = k + 1;
	return 0;
}

/*
 * Record the current thread's Ruby frames into @s, innermost first. A
 * global function: the verifier checks it once, not per caller.
 * Return: LP_INTERP_NONE if @tgid is not a CRuby process, else the
 * frames written with LP_INTERP_FAULT and LP_INTERP_TRUNC.
 */
__noinline int lp_rb_walk(struct lp_interp_stack *s, __u32 tgid, __u32 tid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct rb_walk w = {};
	const struct lp_rb_cfg *cfg;
	__u64 th, ec, stack, size;
	int r;

	if (!s)
		return LP_INTERP_NONE;
	cfg = bpf_map_lookup_elem(&rb_procs, &tgid);
	if (!cfg)
		return LP_INTERP_NONE;
	th = rb_thread_of(cfg, task, tid);
	ec = th ? rb_read_ptr(th + cfg->thread_ec) : 0;
	if (!ec)
		return 0;
	stack = rb_read_ptr(ec + cfg->ec_vm_stack);
	size = rb_read_ptr(ec + cfg->ec_vm_stack_size);
	w.cfp = rb_read_ptr(ec + cfg->ec_cfp);
	if (!stack || !w.cfp || w.cfp < stack)
		return LP_INTERP_FAULT;
	w.end = stack + size * 8;
	w.cfg = cfg;
	w.s = s;
	w.x = lp_interp_scratch();
	bpf_loop(LP_RB_MAX_CFPS, rb_walk_step, &w, 0);
	r = w.n;
	if (w.faults)
		r |= LP_INTERP_FAULT;
	/* not at the toplevel frame, and no read failed: out of room */
	if (!w.faults && w.cfp + 2 * cfg->cfp_size < w.end)
		r |= LP_INTERP_TRUNC;
	return r;
}

#endif /* LP_RUBY_BPF_H */
