/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind.bpf.h - user stacks walked in BPF with CFI tables.
 *
 * From the user registers (rip, rsp, rbp) the walk finds the pc's
 * executable mapping in the process (unwind_procs), binary-searches that
 * module's rows (unwind_rows, loaded by user space from .eh_frame), and
 * applies the row: the CFA from rsp or rbp, the return address at CFA - 8,
 * the caller's rbp. Mappings without a table, and rows the table marks as
 * "fall back", are stepped with frame pointers. One frame per bpf_loop
 * iteration, up to max_frames. The walk ends cleanly at a frame whose
 * return address CFI declares undefined (_start, clone) or is 0, and is
 * marked LP_SF_UTRUNC when it stops for any other reason: a frame that
 * cannot be computed is never guessed.
 *
 * A pending uretprobe has replaced a return address on the stack with
 * the [uprobes] trampoline. The tracer saved the real one with the slot's
 * address (struct lp_call_tag ret_slot/ret_addr); a read of such a slot
 * returns the saved address instead. A call returning through the
 * trampoline has left the calls in flight before the kernel writes its
 * return address back: the return program's note of it (tramp_*) stands
 * in, only there and only while the slot holds what the note says.
 */
#ifndef LP_UNWIND_BPF_H
#define LP_UNWIND_BPF_H

/* Frames walked per stack (--max-frames), at most LP_MAX_USTACK. */
const volatile __u32 max_frames = LP_MAX_USTACK;
/* Walk user stacks in BPF (--call-graph dwarf/auto), else frame pointers. */
const volatile bool kernel_unwind = false;
/* Uprobes may be attached (the tracing programs are loaded). */
const volatile bool uprobes_possible = false;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE); /* user space writes rows in place */
	__uint(max_entries, 1);		   /* set by the loader (--unwind-rows) */
	__type(key, __u32);
	__type(value, struct lp_unwind_rows4);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct lp_unwind_table);
} unwind_tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct lp_unwind_proc);
} unwind_procs SEC(".maps");

struct lp_unwind_fix {
	__u64 slot, ret;
};

/* The walk in progress; per CPU, slot 0 for samples, 1 for context switches. */
struct lp_unwind_state {
	__u64 pc, sp, bp;
	__u32 n;
	__u32 flags;  /* LP_SF_KUNWIND | LP_SF_UTRUNC | LP_SF_UNKNOWN_MAP */
	__u32 bp_ok;  /* rbp is known in this frame */
	__u32 exact;  /* pc is exact (after a signal frame), not a return address */
	__u32 via_fp; /* pc came from a frame-pointer step */
	__u32 pad;
	__u32 n_fix;
	__u32 tgid;
	struct lp_unwind_fix fix[LP_MAX_CALLS];
	/* the thread's last return through the trampoline (calls.bpf.h) */
	__u64 tramp_slot, tramp_ret, tramp_ax;
	__u64 pcs[LP_MAX_USTACK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct lp_unwind_state);
} unwind_state SEC(".maps");

struct unwind_ctx {
	struct lp_unwind_state *st;
};

static __always_inline bool in_uprobe_tramp(__u64 a)
{
	return a >= LP_UPROBE_TRAMP_LO && a < LP_UPROBE_TRAMP_HI;
}

/*
 * The steps below are global BPF functions: the verifier checks each once,
 * on its own, instead of once per inlined call site and per bpf_loop
 * iteration it has to explore. That keeps loading in milliseconds; the
 * cost is a BPF-to-BPF call per step.
 */

/* The saved return address of slot @addr, if a uretprobe overwrote it: 0, else -1. */
__noinline int lp_uw_read_fix(struct lp_unwind_state *st, __u64 addr, __u64 *v)
{
	if (!st || !v)
		return -1;
	for (int i = 0; i < LP_MAX_CALLS; i++) {
		if (i >= st->n_fix)
			break;
		if (st->fix[i].slot == addr) {
			*v = st->fix[i].ret;
			return 0;
		}
	}
	return -1;
}

/* Read a user word; a slot a uretprobe overwrote gives the saved address. */
__noinline int lp_uw_read(struct lp_unwind_state *st, __u64 addr, __u64 *v)
{
	if (!st || !v)
		return -1;
	if (!lp_uw_read_fix(st, addr, v))
		return 0;
	return bpf_probe_read_user(v, sizeof(*v), (const void *)addr) ? -1 : 0;
}

/*
 * One step of a binary search, without a branch: @lo becomes @mid when
 * @key_at_mid <= @key, else @hi does. With a branch per step the verifier
 * walks every path through the search separately (2^steps of them: most of
 * the time it took to load the sampler, 74 ms here); computed, it is one.
 * Keys are user addresses or module offsets, below 2^63, so the sign of
 * the difference is the comparison.
 */
static __always_inline void bsearch_step(__u32 *lo, __u32 *hi, __u32 mid, __u64 key_at_mid,
					 __u64 key)
{
	__u64 below = (key - key_at_mid) >> 63; /* 1: key < key_at_mid */
	__u32 keep = (__u32)below - 1;		/* ~0: go right, 0: go left */

	/* hide that keep is a bool, or clang makes a branch of it again */
	barrier_var(keep);
	*lo = (mid & keep) | (*lo & ~keep);
	*hi = (*hi & keep) | (mid & ~keep);
}

/*
 * The mapping of process @tgid that holds @pc, copied to @out: 1 found,
 * 0 in no mapping, -1 no tables for the process.
 */
__noinline int lp_uw_find_map(__u32 tgid, __u64 pc, struct lp_unwind_map *out)
{
	struct lp_unwind_proc *p = bpf_map_lookup_elem(&unwind_procs, &tgid);
	__u32 lo = 0, hi, mid;

	if (!p || !out)
		return -1;
	hi = p->n_maps;
	if (hi > LP_UNWIND_MAX_MAPS)
		hi = LP_UNWIND_MAX_MAPS;
	/* log2(LP_UNWIND_MAX_MAPS) + 1 steps; once hi - lo <= 1 they change nothing */
	for (int i = 0; i < 9; i++) {
		mid = lo + (hi - lo) / 2;
		bsearch_step(&lo, &hi, mid, p->maps[mid & (LP_UNWIND_MAX_MAPS - 1)].start, pc);
	}
	if (lo >= p->n_maps)
		return 0;
	lo &= LP_UNWIND_MAX_MAPS - 1;
	if (pc < p->maps[lo].start || pc >= p->maps[lo].end)
		return 0;
	*out = p->maps[lo];
	return 1;
}

/* Row @k of the concatenated tables. */
static __always_inline struct lp_unwind_row *row_at(__u32 k)
{
	__u32 blk = k / LP_UNWIND_ROWS_PER_BLOCK;
	struct lp_unwind_rows4 *b = bpf_map_lookup_elem(&unwind_rows, &blk);

	return b ? &b->r[k & (LP_UNWIND_ROWS_PER_BLOCK - 1)] : NULL;
}

/* The row covering module address @rel, copied to @out: 0, or -1 for none. */
__noinline int lp_uw_find_row(__u32 table_id, __u64 rel, struct lp_unwind_row *out)
{
	struct lp_unwind_table *t = bpf_map_lookup_elem(&unwind_tables, &table_id);
	struct lp_unwind_row *r;
	__u32 lo, hi, mid;

	if (!t || !out || !t->n_rows || rel > 0xffffffffULL)
		return -1;
	lo = 0;
	hi = t->n_rows;
	for (int i = 0; i < 24; i++) { /* 16M rows per module */
		if (hi - lo <= 1)
			break;
		mid = lo + (hi - lo) / 2;
		r = row_at(t->first_row + mid);
		if (!r)
			return -1;
		bsearch_step(&lo, &hi, mid, r->pc, rel);
	}
	r = row_at(t->first_row + lo);
	if (!r || r->pc > rel)
		return -1;
	*out = *r;
	return 0;
}

/*
 * One frame with frame pointers: rbp points at the saved rbp, the return
 * address above it. Returns 1 to end the walk, 0 to go on.
 */
static __always_inline int step_fp(struct lp_unwind_state *st)
{
	__u64 ra, bp;

	count_event(LP_CNT_UNWIND_FP);
	if (!st->bp_ok || !st->bp)
		return 1; /* rbp 0: glibc's _start cleared it; the chain ends */
	if (st->bp < st->sp || lp_uw_read(st, st->bp + 8, &ra) || lp_uw_read(st, st->bp, &bp)) {
		st->flags |= LP_SF_UTRUNC;
		return 1;
	}
	st->sp = st->bp + 16;
	st->bp = bp;
	st->pc = ra;
	st->exact = 0;
	st->via_fp = 1;
	return 0;
}

/* A sigreturn frame: rsp points at the ucontext the kernel saved. */
static __always_inline int step_signal(struct lp_unwind_state *st, const struct lp_unwind_row *r)
{
	__u64 sp, ra, bp;

	if (lp_uw_read(st, st->sp + r->cfa_off, &sp) ||
	    lp_uw_read(st, st->sp + r->cfa_off + 8, &ra) ||
	    lp_uw_read(st, st->sp + r->rbp_off, &bp)) {
		st->flags |= LP_SF_UTRUNC;
		return 1;
	}
	/* The trampoline's own frame is no call site: stored + 1 as libdw
	 * does, so that pc - 1 names __restore_rt itself. Not as frame 0:
	 * the sampled ip is exact and is read as it is. */
	{
		__u64 n = st->n;

		/* Each bound tested on the register that indexes: clang
		 * folds "2 <= n <= max" into one test of a copy, n - 2,
		 * whose bound only 6.18's verifier carries back to n. */
		if (n >= 2) {
			asm volatile("" : "+r"(n));
			if (n <= LP_MAX_USTACK)
				st->pcs[n - 1] += 1;
		}
	}
	st->sp = sp;
	st->bp = bp;
	st->bp_ok = 1;
	st->pc = ra;
	st->exact = 1;
	count_event(LP_CNT_UNWIND_CFI);
	return 0;
}

/* One frame with a CFI row. Returns 1 to end the walk, 0 to go on. */
__noinline int lp_uw_step_cfi(struct lp_unwind_state *st, const struct lp_unwind_row *r)
{
	__u64 cfa, ra, bp, v;

	if (!st || !r)
		return 1;
	bp = st->bp;
	switch (r->cfa_rule) {
	case LP_CFA_RSP:
		cfa = st->sp + r->cfa_off;
		break;
	case LP_CFA_RBP:
		if (!st->bp_ok)
			goto stop;
		cfa = st->bp + r->cfa_off;
		break;
	case LP_CFA_DEREF_RBP:
		if (!st->bp_ok || lp_uw_read(st, st->bp + r->cfa_off, &cfa))
			goto stop;
		break;
	case LP_CFA_PLT:
		cfa = st->sp + r->cfa_off + ((st->pc & 15) >= (__u64)r->rbp_off ? 8 : 0);
		break;
	case LP_CFA_SIGNAL:
		return step_signal(st, r);
	case LP_CFA_END:
		return 1;
	default:
		return step_fp(st);
	}
	/* A caller's frame lies above its callee's: anything else is a bad row
	 * or a bad rbp, and the walk would loop or wander. */
	if (cfa <= st->sp || lp_uw_read(st, cfa - 8, &ra))
		goto stop;
	if (r->rbp_rule == LP_RBP_AT_CFA) {
		if (lp_uw_read(st, cfa + r->rbp_off, &v))
			goto stop;
		bp = v;
		st->bp_ok = 1;
	} else if (r->rbp_rule == LP_RBP_UNDEF) {
		st->bp_ok = 0;
	}
	st->sp = cfa;
	st->bp = bp;
	st->pc = ra;
	st->exact = 0;
	st->via_fp = 0;
	count_event(LP_CNT_UNWIND_CFI);
	return 0;
stop:
	st->flags |= LP_SF_UTRUNC;
	return 1;
}

/*
 * Bytes the uretprobe trampoline has pushed at offset @off, or -1 (Linux
 * >= 6.11: push %rax; push %rcx; push %r11; mov $NR,%rax; syscall;
 * pop %r11; pop %rcx; ret; older kernels: int3 at 0). A table, not a
 * chain of ifs: read at a variable index, its value is unknown to the
 * verifier, which then checks what follows once instead of once per
 * constant the ifs returned.
 */
static const __s8 tramp_push_tab[0x11] = {
	0, 8, 16, 16, 24, 24, 24, 24, 24, 24, 24, 24, 24, 24, -1, 16, 8,
};

static __always_inline int tramp_pushed(__u64 off)
{
	return off < sizeof(tramp_push_tab) ? tramp_push_tab[off] : -1;
}

/* The caller's state: running @ret with sp just above @slot (a frame 0). */
static __always_inline void to_caller(struct lp_unwind_state *st, __u64 ret, __u64 slot)
{
	st->pc = ret;
	st->sp = slot + 8;
}

/*
 * The return address of the call that is returning through the
 * trampoline (at offset 0xd or after, its frame gone) from slot @slot,
 * or 0 if it cannot be told.
 *
 * The uretprobe system call puts the pushed registers back, sets ip to
 * the real return address, runs the return programs, then writes that
 * address over the pushed %rax, in the hijacked slot, and sets ip back
 * to the trampoline for its pops and ret. So between the last two steps
 * the slot still holds %rax: read as a return address, it made a wrong
 * frame (19 of 3,529 samples of a traced 1 us call cut as unwind errors
 * in the daemon). The return program's note tells both states apart: the
 * slot holds its return address or its %rax. Where no note vouches for
 * the slot (another tool's uretprobe, or the thread's calls not readable
 * at this sample), the slot's value is taken unless it is the trampoline,
 * as before: right once the kernel has written it back.
 */
static __always_inline __u64 returned_through(const struct lp_unwind_state *st, __u64 slot)
{
	__u64 v;

	if (bpf_probe_read_user(&v, 8, (const void *)slot))
		return 0;
	if (st->tramp_slot == slot && st->tramp_ret && (v == st->tramp_ret || v == st->tramp_ax))
		return st->tramp_ret;
	return in_uprobe_tramp(v) ? 0 : v;
}

/*
 * The sampled thread inside uprobe machinery (user space mirrors this in
 * user/session/stack_fixup.c for copied stacks):
 *  - in the uretprobe trampoline, the probed call has returned: go on in
 *    the caller at the real return address;
 *  - at a traced function's entry (its first instruction single-stepped
 *    out of line, or the breakpoint itself), with the return address at
 *    sp (sp + 8 once an emulated push ran): the leaf is kept, then the
 *    caller;
 *  - stopped on a breakpoint's int3 before the handler: ip is one past
 *    the probed address, where nothing has run yet.
 * Returns 0 to walk on from st (pc may have changed, n may be 1), 1 to
 * end the walk, -1 to go on with the next frame (st set for it).
 */
__noinline int lp_uw_uprobe_state(struct lp_unwind_state *st)
{
	__u64 pc, sp, off, ret = 0, slot = 0, top_slot = 0, top_ret = 0, want, want_alt;
	__u32 n_fix;
	__u8 op = 0;
	int pushed;
	bool found = false;

	if (!st)
		return 1;
	pc = st->pc;
	sp = st->sp;
	off = pc - LP_UPROBE_TRAMP_LO;
	n_fix = st->n_fix;
	if (n_fix > LP_MAX_CALLS)
		n_fix = LP_MAX_CALLS;
	if (n_fix) { /* the innermost call in flight */
		top_slot = st->fix[(n_fix - 1) & (LP_MAX_CALLS - 1)].slot;
		top_ret = st->fix[(n_fix - 1) & (LP_MAX_CALLS - 1)].ret;
	}
	if (in_uprobe_tramp(pc) && off < 128) {
		pushed = tramp_pushed(off);
		/* slots are 8-aligned: 1 matches none */
		want = pushed >= 0 ? sp + pushed - 8 : 1;
		want_alt = off == 0xd ? sp - 8 : 1;
		for (int i = 0; i < LP_MAX_CALLS; i++) {
			__u64 s;

			if (i >= n_fix)
				break;
			s = st->fix[i].slot;
			if (s == want || s == want_alt) {
				ret = st->fix[i].ret;
				slot = s;
				found = true;
			}
		}
		if (!found && off >= 0xd && pushed > 0) {
			slot = sp + pushed - 8;
			ret = returned_through(st, slot);
			found = ret != 0;
		}
		if (!found) {
			st->flags |= LP_SF_UTRUNC;
			return 1;
		}
		to_caller(st, ret, slot);
		return 0;
	}
	if (top_slot && (top_slot == sp || top_slot == sp + 8) &&
	    (in_uprobe_tramp(pc) ||
	     (!bpf_probe_read_user(&op, 1, (const void *)pc) && op == 0xcc))) {
		st->pcs[0] = pc;
		st->n = 1;
		to_caller(st, top_ret, top_slot);
		st->exact = 0;
		return -1;
	}
	if (in_uprobe_tramp(pc)) { /* a line probe's XOL slot: nothing to go on */
		st->pcs[0] = pc;
		st->n = 1;
		st->flags |= LP_SF_UTRUNC;
		return 1;
	}
	if ((!top_slot || top_slot != sp + 8) &&
	    !bpf_probe_read_user(&op, 1, (const void *)(pc - 1)) && op == 0xcc)
		st->pc = pc - 1;
	return 0;
}

/* One frame: record the pc, find its row, step. 1 ends the walk. */
__noinline int lp_uw_frame(struct lp_unwind_state *st)
{
	struct lp_unwind_map m;
	struct lp_unwind_row r;
	__u64 pc, look;
	__u32 n;
	int found;

	if (!st)
		return 1;
	pc = st->pc;
	n = st->n;
	if (n >= max_frames || n >= LP_MAX_USTACK) {
		st->flags |= LP_SF_UTRUNC;
		return 1;
	}
	if (!pc)
		return 1; /* a return address of 0: the outermost frame */
	if (!n && (uprobes_possible || in_uprobe_tramp(pc))) {
		int r = lp_uw_uprobe_state(st);

		if (r)
			return r > 0 ? 1 : 0;
		pc = st->pc;
		n = st->n;
		if (n >= max_frames || n >= LP_MAX_USTACK) {
			st->flags |= LP_SF_UTRUNC;
			return 1;
		}
	} else if (in_uprobe_tramp(pc)) {
		/* every slot a uretprobe overwrote is fixed up on read */
		st->flags |= LP_SF_UTRUNC;
		return 1;
	}
	/* Stored as return addresses: an exact pc (after a signal frame) as
	 * pc + 1, so that pc - 1 names the right instruction for every i >= 1. */
	st->pcs[n] = (n && st->exact) ? pc + 1 : pc;
	look = (n && !st->exact) ? pc - 1 : pc;
	found = lp_uw_find_map(st->tgid, look, &m);
	if (found <= 0) {
		st->flags |= LP_SF_UNKNOWN_MAP;
		/*
		 * A process whose tables are not loaded yet: its frame pointers
		 * may be data, so keep the one sure frame and mark the cut. A
		 * pc in no mapping that frame pointers led to is no frame at
		 * all: drop it. Anywhere else (JIT code called from known
		 * code) frame pointers are the best there is.
		 */
		if (found < 0 || (n && st->via_fp)) {
			st->n = n + (n == 0);
			st->flags |= LP_SF_UTRUNC;
			return 1;
		}
		st->n = n + 1;
		return step_fp(st);
	}
	st->n = n + 1;
	st->via_fp = 0;
	if (m.table_id == LP_UNWIND_NO_TABLE || lp_uw_find_row(m.table_id, look - m.bias, &r) ||
	    r.cfa_rule == LP_CFA_NONE || r.cfa_rule == LP_CFA_FALLBACK)
		return step_fp(st);
	return lp_uw_step_cfi(st, &r);
}

static long unwind_step(__u32 i, void *ctx)
{
	struct unwind_ctx *c = ctx;

	return lp_uw_frame(c->st) ? 1 : 0; /* the verifier wants exactly 0 or 1 */
}

/* The per-CPU walk state @slot, with no fix-ups yet. */
static __always_inline struct lp_unwind_state *unwind_begin(__u32 slot)
{
	struct lp_unwind_state *st = bpf_map_lookup_elem(&unwind_state, &slot);

	if (st) {
		st->n_fix = 0;
		st->tramp_slot = st->tramp_ret = st->tramp_ax = 0;
	}
	return st;
}

/* The thread's last return through the trampoline (calls.bpf.h), for returned_through(). */
static __always_inline void unwind_set_return(struct lp_unwind_state *st, __u64 slot, __u64 ret,
					      __u64 ax)
{
	st->tramp_slot = slot;
	st->tramp_ret = ret;
	st->tramp_ax = ax;
}

/* A return-address slot a pending uretprobe overwrote, and what it held. */
static __always_inline void unwind_add_fix(struct lp_unwind_state *st, __u64 slot, __u64 ret)
{
	__u32 k = st->n_fix;

	if (k < LP_MAX_CALLS) {
		st->fix[k].slot = slot;
		st->fix[k].ret = ret;
		st->n_fix = k + 1;
	}
}

/*
 * Walk the user stack of the current task from ip/sp/bp into @st (from
 * unwind_begin, fix-ups added): pcs[0..n) and flags on return.
 */
static __always_inline void unwind_user(struct lp_unwind_state *st, __u32 tgid, __u64 ip, __u64 sp,
					__u64 bp)
{
	struct unwind_ctx c;

	st->pc = ip;
	st->sp = sp;
	st->bp = bp;
	st->bp_ok = 1;
	st->exact = 0;
	st->via_fp = 0;
	st->n = 0;
	st->flags = LP_SF_KUNWIND;
	st->tgid = tgid;
	c.st = st;
	/* one more than the frames, so that a full stack is seen as cut */
	bpf_loop(LP_MAX_USTACK + 1, unwind_step, &c, 0);
	if (st->flags & LP_SF_UTRUNC)
		count_event(LP_CNT_UNWIND_STOP);
}

#endif /* LP_UNWIND_BPF_H */
