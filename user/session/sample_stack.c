// SPDX-License-Identifier: GPL-2.0
/*
 * sample_stack.c - the user stack of a sample, leaf first: unwound with CFI
 * over the copied stack or taken from the kernel's frame-pointer walk, with
 * what a uretprobe or a sample in the [uprobes] page changed put back.
 */
#include <string.h>

#include "bpf/liveprof.h"
#include "dwarf/unwind.h"
#include "user/session/bpf_session.h"
#include "user/session/daemon.h"
#include "user/session/sample_stack.h"
#include "user/session/unwind_tables.h"
#include "user/session/stack_fixup.h"
#include "user/util/log.h"
#include "user/util/util.h"

/*
 * A pending uretprobe replaced its frame's return address with the
 * trampoline. Walking leaf to root, the k-th trampoline address belongs
 * to the k-th innermost call in flight above @sp; put the saved address
 * back (calls whose slot is below @sp have returned already).
 */
static unsigned int fix_trampolines(struct daemon *d, uint64_t *us, unsigned int n,
				    const struct lp_sample *s, uint64_t sp)
{
	int call = (int)(s->n_calls < LP_MAX_CALLS ? s->n_calls : LP_MAX_CALLS) - 1;
	unsigned int out = 0;

	while (call >= 0 && s->calls[call].ret_slot < sp)
		call--;
	for (unsigned int i = 0; i < n; i++) {
		if (us[i] >= LP_UPROBE_TRAMP_LO && us[i] < LP_UPROBE_TRAMP_HI) {
			/* No saved address left (a uretprobe that is not ours):
			 * drop the frame rather than show the trampoline. */
			if (call < 0)
				continue;
			us[i] = s->calls[call--].ret_addr;
			d->tramp_fixed++;
		}
		us[out++] = us[i];
	}
	return out;
}

/*
 * Copy the @n frames of @src to @dst; whether one is in the [uprobes]
 * page. Nearly no stack has one: the copy finds out on its way, and
 * fix_trampolines() no longer reads every frame of every copy again.
 */
static bool copy_frames(uint64_t *dst, const uint64_t *src, unsigned int n)
{
	bool tramp = false;

	for (unsigned int i = 0; i < n; i++) {
		dst[i] = src[i];
		tramp |= src[i] - LP_UPROBE_TRAMP_LO < LP_UPROBE_TRAMP_HI - LP_UPROBE_TRAMP_LO;
	}
	return tramp;
}

/*
 * A frame-pointer chain through code that uses rbp as data (a thread's
 * first instructions in clone3, say) can point at itself: the kernel then
 * repeats one bogus address until its depth limit. Recursion also repeats
 * return addresses, but those resolve to a function; a run of the same
 * address that resolves to nothing is cut, and the stack marked truncated.
 */
static unsigned int cut_fp_loop(struct daemon *d, uint32_t pid, uint64_t *us, unsigned int n,
				uint32_t *flags)
{
	for (unsigned int i = 2; i < n; i++) {
		struct sym_frame sf;

		if (us[i] != us[i - 1] || us[i] != us[i - 2])
			continue;
		if (symbolizer__resolve(d->sym, (int)pid, us[i] - 1, &sf, 1) == 1 && sf.func)
			continue;
		*flags |= STACK_F_TRUNCATED;
		return i > 2 ? i - 2 : 1; /* keep what came before the loop */
	}
	return n;
}

/* Whether a probe's breakpoint is at @addr of @pid (see stack_fixup__state). */
static bool at_probe_site(void *ctx, uint32_t pid, uint64_t addr)
{
	struct daemon *d = ctx;
	uint64_t dev, ino, off;

	if (!d->traces || symbolizer__file_pos(d->sym, (int)pid, addr, &dev, &ino, &off))
		return false;
	return bpf_session__probe_site(d->core.bpf, dev, ino, off);
}

/* The address in @pid of the function entry probe @probe_id sits on, or 0. */
static uint64_t probe_entry_pc(struct daemon *d, uint32_t pid, uint32_t probe_id)
{
	struct bpf_probe_site site[4];
	int n = bpf_session__entry_sites(d->core.bpf, probe_id, site, 4);

	for (int i = 0; i < n; i++) {
		uint64_t a = symbolizer__addr_of(d->sym, (int)pid, site[i].dev, site[i].ino,
						 site[i].offset);

		if (a)
			return a;
	}
	return 0;
}

/*
 * What the unwinder reads besides the copy: the slots a pending uretprobe
 * overwrote, with what was there before, and the red zone below sp,
 * served as fix-ups since the unwinder reads memory from sp upwards only:
 * an epilogue's CFI finds the registers it just popped there, and without
 * them the step is refused.
 */
static void fill_input(const struct lp_sample *s, const struct ustate *st, struct unwind_input *in,
		       struct unwind_regs *regs, struct unwind_fixup *fx)
{
	regs->ip = st->regs.ip;
	regs->sp = st->regs.sp;
	regs->bp = st->regs.bp;
	in->fixups = fx;
	in->regs = regs;
	in->stack = st->stack;
	in->stack_len = st->stack_len;
	in->nr_fixups = 0;
	for (unsigned int i = 0; i < s->n_calls && i < LP_MAX_CALLS; i++) {
		fx[in->nr_fixups].slot = s->calls[i].ret_slot;
		fx[in->nr_fixups].ret = s->calls[i].ret_addr;
		in->nr_fixups++;
	}
	if (!st->redzone)
		return;
	for (unsigned int i = 0; i < LP_REDZONE / 8; i++) {
		fx[in->nr_fixups].slot = st->regs.sp - LP_REDZONE + 8 * i;
		memcpy(&fx[in->nr_fixups].ret, st->redzone + 8 * i, 8);
		in->nr_fixups++;
	}
}

/*
 * The kernel's frame-pointer walk, mended. It walked from the sampled ip:
 * in the trampoline the caller is running again (its ip replaces the
 * trampoline's); at a traced function's entry the frame pointer is still
 * the caller's, so the leaf, then the caller's own pc, come before the
 * chain. @lead: the @n_lead leaf pcs of USTATE_ENTRY.
 */
static unsigned int fp_user(struct daemon *d, const struct lp_sample *s, const struct ustate *st,
			    const struct unwind_input *in, const uint64_t *lead,
			    unsigned int n_lead, uint64_t *us, uint32_t *flags)
{
	unsigned int nu = s->n_ustack < LP_MAX_USTACK ? s->n_ustack : LP_MAX_USTACK;
	uint64_t t0;
	int n;

	memcpy(us, s->ustack, nu * sizeof(uint64_t));
	if (nu && (st->kind == USTATE_RETURNED || st->kind == USTATE_TRAPPED)) {
		us[0] = st->regs.ip;
	} else if (nu && st->kind == USTATE_ENTRY) {
		memmove(&us[n_lead + 1], &us[1], (nu - 1) * sizeof(uint64_t));
		memcpy(us, lead, n_lead * sizeof(uint64_t));
		us[n_lead] = st->regs.ip;
		nu += n_lead;
	}
	nu = fix_trampolines(d, us, nu, s, st->regs.sp);
	nu = cut_fp_loop(d, s->pid, us, nu, flags);
	if (st->stack_len && nu && (st->kind == USTATE_PLAIN || st->kind == USTATE_TRAPPED)) {
		t0 = lp_now_ns();
		n = unwinder__fix_leaf_input(d->unwind, s->pid, in, us, (int)nu, MAX_USER_FRAMES);
		d->unwind_ns += lp_now_ns() - t0;
		if (n > (int)nu)
			d->leaf_fixed++;
		if (n > 0)
			nu = (unsigned int)n;
	}
	/* bpf_get_stack stops at LP_MAX_USTACK frames, not at the root. */
	if (s->n_ustack >= LP_MAX_USTACK)
		*flags |= STACK_F_TRUNCATED;
	d->unwound_fp++;
	return nu;
}

/*
 * The user stack of sample @s, leaf first, into @us (MAX_USER_FRAMES
 * entries); @stack is the copy of the user stack that follows the sample.
 * Sets STACK_F_TRUNCATED in @flags when the stack is known to go on.
 *
 * dwarf and auto unwind every sample with CFI over the copy: measured
 * with tests/bench/bench_unwind.py, that costs a few microseconds per
 * sample more than frame pointers plus the leaf fix, and it is the only
 * way that is right for mixed stacks: deciding per module whether frame
 * pointers can be trusted would still have to find the frames a no-FP
 * caller hides in the middle of the chain, which takes CFI anyway. Frame
 * pointers remain the fallback when CFI has nothing to go on (no copy,
 * as for off-CPU samples; a process whose maps are gone).
 *
 * fp takes the kernel's frame-pointer walk and, from a small copy, puts
 * back with CFI the caller a frameless leaf hides.
 */
/*
 * --unwind-check: the same sample unwound again by libdw over the copied
 * stack, frame by frame. Where either side was cut (the copy too short,
 * a walk that stopped) only the frames both have are compared.
 */
static void check_unwind(struct daemon *d, const struct lp_sample *s, const struct unwind_input *in,
			 const uint64_t *kus, unsigned int nk)
{
	uint64_t ref[MAX_USER_FRAMES];
	bool ref_cut = false, k_cut = (s->flags & LP_SF_UTRUNC) || nk >= LP_MAX_USTACK;
	int n = unwinder__unwind_input(d->unwind, s->pid, in, ref, MAX_USER_FRAMES, &ref_cut);
	unsigned int common;
	bool same;

	/* libdw found nothing past the ip (no CFI, no frame pointer) */
	if (n <= 0 || (n == 1 && !ref_cut && nk > 1)) {
		d->check_skipped++;
		return;
	}
	common = (unsigned int)n < nk ? (unsigned int)n : nk;
	same = (ref_cut || k_cut || (unsigned int)n == nk);
	for (unsigned int i = 0; i < common && same; i++)
		same = ref[i] == kus[i];
	d->check_compared++;
	d->check_same += same;
	if (!same && lp_verbose) {
		unsigned int i = 0;

		while (i < common && ref[i] == kus[i])
			i++;
		lp_debug("unwind check: pid %u frame %u of %u/%d: bpf %#llx libdw %#llx", s->pid, i,
			 nk, n, i < nk ? (unsigned long long)kus[i] : 0ULL,
			 i < (unsigned int)n ? (unsigned long long)ref[i] : 0ULL);
	}
}

/*
 * The BPF walk was cut at a pc no table covered yet (the first samples of
 * a command that has just exec'd, a library just dlopen'ed) and the
 * sample came with a copy of the stack: unwind that with libdw, which
 * reads the maps again for a pc it does not know. Its chain replaces the
 * cut one when it goes further. Returns the frames now in @us.
 */
static unsigned int rescue_cut_walk(struct daemon *d, const struct lp_sample *s, const void *mem,
				    uint64_t *us, unsigned int nu, bool *cut)
{
	struct unwind_fixup fx[LP_MAX_CALLS + LP_REDZONE / 8];
	uint64_t pcs[MAX_USER_FRAMES];
	struct unwind_regs regs;
	struct unwind_input in;
	struct ustate st;
	bool truncated = false;
	uint64_t t0;
	int n;

	stack_fixup__state(s, mem, at_probe_site, d, &st);
	if (st.kind != USTATE_PLAIN || !st.stack_len)
		return nu;
	fill_input(s, &st, &in, &regs, fx);
	t0 = lp_now_ns();
	n = unwinder__unwind_input(d->unwind, s->pid, &in, pcs, MAX_USER_FRAMES, &truncated);
	d->unwind_ns += lp_now_ns() - t0;
	if (n <= (int)nu)
		return nu;
	memcpy(us, pcs, (size_t)n * sizeof(uint64_t));
	*cut = truncated || n == MAX_USER_FRAMES;
	d->rescued_walks++;
	return (unsigned int)n;
}

/*
 * A stack walked in BPF (bpf/unwind.bpf.h). In the [uprobes] page the
 * walk went on from the return address at sp (a traced function's first
 * instruction, single-stepped out of line): the leaf becomes that
 * function's entry. --unwind-check unwinds the copy with libdw as well.
 */
static unsigned int kernel_user(struct daemon *d, const struct lp_sample *s, const void *mem,
				uint64_t *us, uint32_t *flags)
{
	unsigned int nu = s->n_ustack < LP_MAX_USTACK ? s->n_ustack : LP_MAX_USTACK;
	bool cut, tramp = copy_frames(us, (const uint64_t *)s->ustack, nu);

	if (d->core.opts->unwind_check && s->stack_len) {
		struct unwind_fixup fx[LP_MAX_CALLS + LP_REDZONE / 8];
		struct unwind_regs regs;
		struct unwind_input in;
		struct ustate st;

		stack_fixup__state(s, mem, at_probe_site, d, &st);
		fill_input(s, &st, &in, &regs, fx);
		if (st.kind == USTATE_PLAIN)
			check_unwind(d, s, &in, us, nu);
		else
			d->check_skipped++;
	}
	if (nu && us[0] - LP_UPROBE_TRAMP_LO < LP_UPROBE_TRAMP_HI - LP_UPROBE_TRAMP_LO) {
		uint64_t fn = 0;

		for (unsigned int i = 0; i < s->n_calls && i < LP_MAX_CALLS; i++)
			if (s->calls[i].ret_slot == s->regs.sp ||
			    s->calls[i].ret_slot == s->regs.sp + 8)
				fn = probe_entry_pc(d, s->pid, s->calls[i].probe_id);
		if (fn) {
			us[0] = fn;
			d->uprobe_page_fixed++;
		} else {
			memmove(us, us + 1, --nu * sizeof(uint64_t));
			*flags |= STACK_F_UNWIND_ERROR;
		}
	} else if (nu &&
		   s->regs.ip - LP_UPROBE_TRAMP_LO < LP_UPROBE_TRAMP_HI - LP_UPROBE_TRAMP_LO) {
		/* in the trampoline: BPF went on in the caller at the real address */
		d->uprobe_page_fixed++;
	}
	cut = (s->flags & LP_SF_UTRUNC) != 0;
	if ((s->flags & LP_SF_UNKNOWN_MAP) && cut && s->stack_len && !d->core.opts->unwind_check)
		nu = rescue_cut_walk(d, s, mem, us, nu, &cut);
	/* the rescue's frames are its own: they may hold trampolines */
	if (tramp || (s->flags & LP_SF_UNKNOWN_MAP))
		nu = fix_trampolines(d, us, nu, s, s->regs.sp);
	if (cut)
		*flags |= STACK_F_TRUNCATED;
	if ((s->flags & LP_SF_UNKNOWN_MAP) && d->utab)
		unwind_tables__unknown_pc(d->utab, (int)s->pid, lp_now_ns());
	d->unwound_kernel++;
	return nu;
}

unsigned int sample_stack__user(struct daemon *d, const struct lp_sample *s, const void *mem,
				uint64_t *us, uint32_t *flags)
{
	struct unwind_fixup fx[LP_MAX_CALLS + LP_REDZONE / 8];
	struct unwind_regs regs;
	struct unwind_input in;
	unsigned int nu = s->n_ustack < LP_MAX_USTACK ? s->n_ustack : LP_MAX_USTACK, lead = 0;
	uint64_t lead_pcs[2];
	struct ustate st;
	bool truncated = false;
	uint64_t t0;
	int n;

	if (s->flags & LP_SF_KUNWIND)
		return kernel_user(d, s, mem, us, flags);
	stack_fixup__state(s, mem, at_probe_site, d, &st);
	if (st.kind == USTATE_LOST && s->regs.ip - LP_UPROBE_TRAMP_LO < UPROBE_XOL_SLOT_BYTES) {
		/* in the trampoline, with no return address to go back to */
		*flags |= STACK_F_UNWIND_ERROR;
		return 0;
	}
	if (st.kind != USTATE_PLAIN && st.kind != USTATE_LOST)
		d->uprobe_page_fixed++;
	if (st.kind == USTATE_ENTRY) {
		uint64_t fn = probe_entry_pc(d, s->pid, st.probe_id);

		lead_pcs[lead++] = st.leaf_pc;
		/* single-stepping the function's first instruction: name it
		 * (+ 1, since callers' pcs are looked up at pc - 1) */
		if (fn && st.leaf_pc != fn)
			lead_pcs[lead++] = fn + 1;
	}
	fill_input(s, &st, &in, &regs, fx);
	if (d->core.opts->call_graph != CALL_GRAPH_FP && st.stack_len &&
	    !(s->flags & LP_SF_OFFCPU) && st.kind != USTATE_LOST) {
		memcpy(us, lead_pcs, lead * sizeof(uint64_t));
		t0 = lp_now_ns();
		n = unwinder__unwind_input(d->unwind, s->pid, &in, us + lead,
					   MAX_USER_FRAMES - lead, &truncated);
		d->unwind_ns += lp_now_ns() - t0;
		/*
		 * Only the ip, yet frame pointers know more, and not for want
		 * of stack: CFI found nothing to go on. The frame-pointer chain
		 * is better only where the leaf's module keeps frame pointers;
		 * elsewhere rbp is data and the chain garbage (seen with
		 * python3.11), so keep the one true frame and say it is cut.
		 */
		if (n == 1 && !truncated && nu > 1 &&
		    unwinder__module_has_fp(d->unwind, s->pid, st.regs.ip) >= 50)
			n = 0;
		if (n > 0) {
			n += (int)lead;
			/* A full buffer also means the outermost frame is missing. */
			if (truncated || (n == 1 && nu > 1) || n == MAX_USER_FRAMES)
				*flags |= STACK_F_TRUNCATED;
			d->unwound_dwarf++;
			return (unsigned int)n;
		}
	}
	return fp_user(d, s, &st, &in, lead_pcs, lead, us, flags);
}
