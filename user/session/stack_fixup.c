// SPDX-License-Identifier: GPL-2.0
/*
 * stack_fixup.c - samples taken inside the [uprobes] page, and stacks cut
 * where an unwinder's "return address" is not code.
 *
 * The [uprobes] page (LP_UPROBE_TRAMP_LO) holds the uretprobe trampoline
 * in its first slot and the instructions that probes displaced (XOL
 * slots) in the others. Neither has CFI or a symbol, and a frame-pointer
 * or CFI walk from there reads data as return addresses (seen: stack
 * addresses, 0, and a multiplier constant kept in a register).
 */
#include <string.h>

#include "user/session/stack_fixup.h"

static bool in_page(uint64_t pc)
{
	return pc >= LP_UPROBE_TRAMP_LO && pc < LP_UPROBE_TRAMP_HI;
}

/*
 * Bytes the trampoline has pushed when the thread is at offset @off of
 * it, or -1. Linux >= 6.11 (arch/x86/kernel/uprobes.c):
 *   0 push %rax; 1 push %rcx; 2 push %r11; 4 mov $NR,%rax; 0xb syscall;
 *   0xd pop %r11; 0xf pop %rcx; 0x10 ret
 * Older kernels have an int3 at offset 0, which is the first row.
 * Measured here: at 0x1, 0xd and 0xf, sp is 0, 0x10 and 8 below the slot
 * the entry probe recorded, as the table says.
 */
static int tramp_pushed(uint64_t off)
{
	if (off == 0)
		return 0;
	if (off == 1)
		return 8;
	if (off >= 2 && off < 4)
		return 16;
	if (off >= 4 && off <= 0xd)
		return 24;
	if (off == 0xf)
		return 16;
	if (off == 0x10)
		return 8;
	return -1;
}

/*
 * The call in flight that is returning through the trampoline: the one
 * whose return address was at the slot the table gives for @off. Inside
 * the uretprobe syscall (ip says 0xd) the kernel first moves sp back to
 * just above the slot, while it runs the return programs: the slot is then
 * sp - 8. Exact matches only: an outer call's slot can be 16 bytes above.
 *
 * With no such call, its return program has run. The kernel (6.18,
 * handle_trampoline) sets ip to the real return address before it runs
 * the return programs, so a sample that still shows the trampoline is
 * past the syscall's end, where it has written the real address into the
 * slot %rax was pushed to; the slot is then read from the copy.
 */
static int returning_call(const struct lp_sample *s, uint64_t off)
{
	int n = (int)(s->n_calls < LP_MAX_CALLS ? s->n_calls : LP_MAX_CALLS);
	int pushed = tramp_pushed(off);
	uint64_t sp = s->regs.sp;

	for (int i = n - 1; i >= 0; i--) {
		uint64_t slot = s->calls[i].ret_slot;

		if ((pushed >= 0 && slot == sp + (uint64_t)pushed - 8) ||
		    (off == 0xd && slot == sp - 8))
			return i;
	}
	return -1;
}

/* The copied word at user address @addr, if the copy holds it. */
static bool copy_word(const struct lp_sample *s, const uint8_t *stack, uint64_t addr, uint64_t *out)
{
	if (!s->stack_len || addr < s->regs.sp || addr + 8 > s->regs.sp + s->stack_len)
		return false;
	memcpy(out, stack + (addr - s->regs.sp), 8);
	return true;
}

/* Move @out to the caller: @ret is executing with sp just above @slot. */
static void to_caller(struct ustate *out, const struct lp_sample *s, const uint8_t *mem,
		      uint64_t ret, uint64_t slot)
{
	uint64_t delta = slot + 8 - s->regs.sp;

	out->regs.ip = ret;
	out->regs.sp = slot + 8;
	out->ret_slot = slot;
	/* the copy is contiguous from sp - LP_REDZONE: slide the window up */
	if (s->stack_len > delta) {
		out->redzone = mem + delta;
		out->stack = mem + LP_REDZONE + delta;
		out->stack_len = s->stack_len - (uint32_t)delta;
	} else {
		out->redzone = NULL;
		out->stack = NULL;
		out->stack_len = 0;
	}
}

/*
 * A thread that hit a probe's int3 has ip = site + 1 until the kernel's
 * handler puts it back on the site (seen here in 1 sample in 9 of a
 * traced function called 10^6 times a second), before or after the entry
 * program ran. The same ip is right once an emulated one-byte first
 * instruction (push %rbp) has run, and then the entry program has
 * recorded the call with its return address at sp + 8. A line probe on a
 * one-byte instruction leaves the two apart only by what ran since.
 */
static bool trapped(const struct lp_sample *s,
		    bool (*at_site)(void *ctx, uint32_t pid, uint64_t addr), void *ctx)
{
	unsigned int n = s->n_calls < LP_MAX_CALLS ? s->n_calls : LP_MAX_CALLS;

	if (!at_site || !at_site(ctx, s->pid, s->regs.ip - 1))
		return false;
	return !n || s->calls[n - 1].ret_slot != s->regs.sp + 8;
}

void stack_fixup__state(const struct lp_sample *s, const void *mem,
			bool (*at_site)(void *ctx, uint32_t pid, uint64_t addr), void *ctx,
			struct ustate *out)
{
	int n = (int)(s->n_calls < LP_MAX_CALLS ? s->n_calls : LP_MAX_CALLS), c;
	const struct lp_call_tag *top = n ? &s->calls[n - 1] : NULL;
	const uint8_t *m = mem;
	uint64_t sp = s->regs.sp, off, slot, ret;

	memset(out, 0, sizeof(*out));
	out->regs = s->regs;
	if (s->stack_len) {
		out->redzone = m;
		out->stack = m + LP_REDZONE;
		out->stack_len = s->stack_len;
	}
	if (in_page(s->regs.ip) && s->regs.ip - LP_UPROBE_TRAMP_LO < UPROBE_XOL_SLOT_BYTES) {
		out->kind = USTATE_LOST;
		off = s->regs.ip - LP_UPROBE_TRAMP_LO;
		c = returning_call(s, off);
		if (c >= 0) {
			out->kind = USTATE_RETURNED;
			to_caller(out, s, m, s->calls[c].ret_addr, s->calls[c].ret_slot);
		} else if (off >= 0xd && tramp_pushed(off) > 0) {
			slot = sp + (uint64_t)tramp_pushed(off) - 8;
			if (!copy_word(s, out->stack, slot, &ret) || in_page(ret))
				return;
			out->kind = USTATE_RETURNED;
			to_caller(out, s, m, ret, slot);
		}
		return;
	}
	/*
	 * At a traced function's entry, in an XOL slot or on the probed
	 * address itself: the entry program recorded the call, its return
	 * address at sp (or at sp + 8 when the kernel has emulated a push
	 * and not yet moved ip past it). The caller's state is known, and
	 * the function has no frame yet.
	 */
	if (top && (top->ret_slot == sp || top->ret_slot == sp + 8) &&
	    (in_page(s->regs.ip) || (at_site && at_site(ctx, s->pid, s->regs.ip)))) {
		out->kind = USTATE_ENTRY;
		out->leaf_pc = s->regs.ip;
		out->probe_id = top->probe_id;
		to_caller(out, s, m, top->ret_addr, top->ret_slot);
		return;
	}
	/* Anywhere else in an XOL slot (a line probe): frame pointers only. */
	if (in_page(s->regs.ip)) {
		out->kind = USTATE_LOST;
		return;
	}
	if (trapped(s, at_site, ctx)) {
		out->kind = USTATE_TRAPPED;
		out->regs.ip--;
	}
}

/* Whether @pc lies in a code mapping of @pid that @c holds; *@lo, *@hi get it. */
static bool span_known(const struct code_spans *c, uint32_t pid, uint64_t pc, uint64_t *lo,
		       uint64_t *hi)
{
	for (int k = 0; k < CODE_SPANS; k++) {
		if (c->pid[k] == pid && pc - c->lo[k] < c->hi[k] - c->lo[k]) {
			*lo = c->lo[k];
			*hi = c->hi[k];
			return true;
		}
	}
	return false;
}

/* What the symbolizer said of mappings it has read again since is void. */
static void spans_sync(struct code_spans *c, struct symbolizer *sym)
{
	uint64_t gen = symbolizer__generation(sym);

	if (c->gen != gen) {
		memset(c, 0, sizeof(*c));
		c->gen = gen;
	}
}

static void span_add(struct code_spans *c, uint32_t pid, uint64_t lo, uint64_t hi)
{
	c->pid[c->next] = pid;
	c->lo[c->next] = lo;
	c->hi[c->next] = hi;
	c->next = (c->next + 1) % CODE_SPANS;
}

unsigned int stack_fixup__cut(struct symbolizer *sym, struct code_spans *spans, uint32_t pid,
			      const uint64_t *pcs, unsigned int n)
{
	/* the code mapping the last frame was in: a stack stays in a few
	 * modules, so most frames need no lookup (one per frame was a
	 * fifth of the daemon's CPU at 5 kHz) */
	uint64_t lo = 0, hi = 0;

	spans_sync(spans, sym);
	for (unsigned int i = 0; i < n; i++) {
		enum sym_addr_kind k;
		uint64_t start, end;

		if (pcs[i] - lo < hi - lo || span_known(spans, pid, pcs[i], &lo, &hi))
			continue;
		k = symbolizer__addr_kind_span(sym, (int)pid, pcs[i], &start, &end);
		/* the lookup may have read the maps again */
		spans_sync(spans, sym);
		if (k == SYM_ADDR_CODE) {
			lo = start;
			hi = end;
			span_add(spans, pid, lo, hi);
			continue;
		}
		/* no maps to judge by (a process gone before we saw it): keep */
		if (k == SYM_ADDR_UNKNOWN)
			continue;
		/* JIT code is code: a caller there was reached by its frame
		 * pointer, which JITs keep. The leaf is where the thread runs,
		 * whatever it is, the single-step page included. */
		if (k == SYM_ADDR_ANON || (i == 0 && k == SYM_ADDR_UPROBES))
			continue;
		return i;
	}
	return n;
}
