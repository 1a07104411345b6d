// SPDX-License-Identifier: GPL-2.0
/*
 * test_stack_fixup.c - samples inside the [uprobes] page and at probed
 * addresses, built by hand from the kernel's layouts (stack_fixup.c), and
 * stacks cut where a "return address" is not code, in this very process.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"
#include "user/session/stack_fixup.h"

#define SLOT 0x7ffc00001000ULL /* where the probed call's return address was */
#define RET  0x555500001234ULL /* the real return address saved at entry */
#define SITE 0x555500002000ULL /* a probed function's entry */

/* A sample with a copy of 256 bytes from @sp, one call in flight (or none). */
static struct {
	struct lp_sample s;
	uint8_t mem[LP_REDZONE + 256];
} smp;

static void sample(uint64_t ip, uint64_t sp, bool with_call)
{
	memset(&smp, 0, sizeof(smp));
	smp.s.regs.ip = ip;
	smp.s.regs.sp = sp;
	smp.s.regs.bp = 0x7ffc00002000ULL;
	smp.s.stack_len = 256;
	if (with_call) {
		smp.s.n_calls = 1;
		smp.s.calls[0].probe_id = 7;
		smp.s.calls[0].ret_addr = RET;
		smp.s.calls[0].ret_slot = SLOT;
	}
}

/* Put @v in the copy at user address @addr. */
static void poke(uint64_t addr, uint64_t v)
{
	memcpy(smp.mem + LP_REDZONE + (addr - smp.s.regs.sp), &v, 8);
}

static bool site_at(void *ctx, uint32_t pid, uint64_t addr)
{
	(void)ctx;
	(void)pid;
	return addr == SITE;
}

static void check_returned(uint64_t sp)
{
	struct ustate st;

	stack_fixup__state(&smp.s, smp.mem, site_at, NULL, &st);
	CHECK_EQ_INT(st.kind, USTATE_RETURNED);
	CHECK_EQ_INT(st.regs.ip, RET);
	CHECK_EQ_INT(st.regs.sp, SLOT + 8);
	CHECK_EQ_INT(st.regs.bp, smp.s.regs.bp);
	/* the copy now starts at the caller's sp */
	CHECK(st.stack == smp.mem + LP_REDZONE + (SLOT + 8 - sp));
	CHECK_EQ_INT(st.stack_len, 256 - (SLOT + 8 - sp));
}

UNIT_TEST(trampoline_every_offset)
{
	/* offset -> sp relative to the slot, per the 6.11+ trampoline */
	static const struct {
		uint64_t off;
		int64_t sp_minus_slot;
	} rows[] = {{0, 8},	{1, 0},	    {2, -8},   {4, -16},
		    {0xb, -16}, {0xd, -16}, {0xf, -8}, {0x10, 0}};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint64_t sp = SLOT + rows[i].sp_minus_slot;

		sample(LP_UPROBE_TRAMP_LO + rows[i].off, sp, true);
		check_returned(sp);
	}
	/* inside the syscall the kernel moved sp above the slot, ip says 0xd */
	sample(LP_UPROBE_TRAMP_LO + 0xd, SLOT + 8, true);
	check_returned(SLOT + 8);
}

UNIT_TEST(trampoline_after_the_return_program)
{
	struct ustate st;

	/* the call is no longer in flight; the syscall wrote RET to the slot */
	sample(LP_UPROBE_TRAMP_LO + 0xd, SLOT - 16, false);
	poke(SLOT, RET);
	check_returned(SLOT - 16);
	sample(LP_UPROBE_TRAMP_LO + 0xf, SLOT - 8, false);
	poke(SLOT, RET);
	check_returned(SLOT - 8);
	/* an outer call 16 bytes above is not the one returning */
	sample(LP_UPROBE_TRAMP_LO + 0x10, SLOT, false);
	smp.s.n_calls = 1;
	smp.s.calls[0].ret_addr = 0x555500009999ULL;
	smp.s.calls[0].ret_slot = SLOT + 16;
	poke(SLOT, RET);
	check_returned(SLOT);
	/* before the syscall, nothing says where to return: lost, not guessed */
	sample(LP_UPROBE_TRAMP_LO + 4, SLOT - 16, false);
	poke(SLOT, RET);
	stack_fixup__state(&smp.s, smp.mem, site_at, NULL, &st);
	CHECK_EQ_INT(st.kind, USTATE_LOST);
	/* the slot still holding the trampoline is no return address either */
	sample(LP_UPROBE_TRAMP_LO + 0x10, SLOT, false);
	poke(SLOT, LP_UPROBE_TRAMP_LO);
	stack_fixup__state(&smp.s, smp.mem, site_at, NULL, &st);
	CHECK_EQ_INT(st.kind, USTATE_LOST);
}

UNIT_TEST(entry_single_step_and_probed_address)
{
	struct ustate st;

	/* stepping the first instruction in an XOL slot, return address at sp */
	sample(LP_UPROBE_TRAMP_LO + 2 * UPROBE_XOL_SLOT_BYTES + 3, SLOT, true);
	stack_fixup__state(&smp.s, smp.mem, site_at, NULL, &st);
	CHECK_EQ_INT(st.kind, USTATE_ENTRY);
	CHECK_EQ_INT(st.leaf_pc, smp.s.regs.ip);
	CHECK_EQ_INT(st.probe_id, 7);
	CHECK_EQ_INT(st.regs.ip, RET);
	CHECK_EQ_INT(st.regs.sp, SLOT + 8);
	/* an emulated push done, ip not yet past it */
	sample(SITE, SLOT - 8, true);
	stack_fixup__state(&smp.s, smp.mem, site_at, NULL, &st);
	CHECK_EQ_INT(st.kind, USTATE_ENTRY);
	CHECK_EQ_INT(st.leaf_pc, SITE);
	/* an XOL slot elsewhere (a line probe): frame pointers only */
	sample(LP_UPROBE_TRAMP_LO + 2 * UPROBE_XOL_SLOT_BYTES, SLOT - 0x40, true);
	stack_fixup__state(&smp.s, smp.mem, site_at, NULL, &st);
	CHECK_EQ_INT(st.kind, USTATE_LOST);
}

UNIT_TEST(one_past_the_breakpoint)
{
	struct ustate st;

	/* trapped, the handler has not run: back onto the probed address */
	sample(SITE + 1, SLOT, false);
	stack_fixup__state(&smp.s, smp.mem, site_at, NULL, &st);
	CHECK_EQ_INT(st.kind, USTATE_TRAPPED);
	CHECK_EQ_INT(st.regs.ip, SITE);
	CHECK_EQ_INT(st.regs.sp, SLOT);
	/* the entry program ran, ip not yet moved back */
	sample(SITE + 1, SLOT, true);
	stack_fixup__state(&smp.s, smp.mem, site_at, NULL, &st);
	CHECK_EQ_INT(st.kind, USTATE_TRAPPED);
	/* a one-byte push emulated: right as it is */
	sample(SITE + 1, SLOT - 8, true);
	stack_fixup__state(&smp.s, smp.mem, site_at, NULL, &st);
	CHECK_EQ_INT(st.kind, USTATE_PLAIN);
	CHECK_EQ_INT(st.regs.ip, SITE + 1);
	/* no probe there: nothing to do */
	sample(SITE + 0x41, SLOT, false);
	stack_fixup__state(&smp.s, smp.mem, site_at, NULL, &st);
	CHECK_EQ_INT(st.kind, USTATE_PLAIN);
	CHECK_EQ_INT(st.regs.ip, SITE + 0x41);
}

UNIT_TEST(cut_where_not_code)
{
	struct symbolizer *sym = symbolizer__new(false);
	uint64_t local = 0;
	uint64_t code = (uint64_t)(uintptr_t)&cut_where_not_code;
	uint64_t lib = (uint64_t)(uintptr_t)&memcpy;
	uint64_t pcs[4] = {code, lib, (uint64_t)(uintptr_t)&local, code};
	uint64_t mult[3] = {code, lib, 0x5851f42d4c957f2dULL};
	uint64_t heap[2] = {code, (uint64_t)(uintptr_t)sym};
	struct code_spans spans = {0};

	CHECK(sym != NULL);
	if (!sym)
		return;
	CHECK_EQ_INT(symbolizer__add_pid(sym, getpid()), 0);
	CHECK_EQ_INT(stack_fixup__cut(sym, &spans, getpid(), pcs, 2), 2);
	CHECK_EQ_INT(stack_fixup__cut(sym, &spans, getpid(), pcs, 4), 2); /* a stack address */
	CHECK_EQ_INT(stack_fixup__cut(sym, &spans, getpid(), mult, 3), 2);
	CHECK_EQ_INT(stack_fixup__cut(sym, &spans, getpid(), heap, 2), 1);
	/* a process whose maps cannot be read: nothing to judge by, nothing cut */
	CHECK_EQ_INT(stack_fixup__cut(sym, &spans, 0x3fffffff, mult, 3), 3);
	symbolizer__free(sym);
}

/* The code mappings found are kept, and answer as the lookups did. */
UNIT_TEST(cut_remembers_code_spans)
{
	struct symbolizer *sym = symbolizer__new(false);
	uint64_t local = 0, code = (uint64_t)(uintptr_t)&cut_where_not_code;
	uint64_t lib = (uint64_t)(uintptr_t)&memcpy;
	uint64_t pcs[4] = {code, lib, (uint64_t)(uintptr_t)&local, code};
	struct code_spans spans = {0};
	int kept = 0;

	CHECK(sym != NULL);
	if (!sym)
		return;
	CHECK_EQ_INT(symbolizer__add_pid(sym, getpid()), 0);
	CHECK_EQ_INT(stack_fixup__cut(sym, &spans, getpid(), pcs, 4), 2);
	for (int k = 0; k < CODE_SPANS; k++)
		kept += spans.pid[k] == (uint32_t)getpid() &&
			code - spans.lo[k] < spans.hi[k] - spans.lo[k];
	CHECK_EQ_INT(kept, 1);
	CHECK_EQ_INT(spans.gen, symbolizer__generation(sym));
	/* answered from the spans: the same cut */
	CHECK_EQ_INT(stack_fixup__cut(sym, &spans, getpid(), pcs, 4), 2);
	CHECK_EQ_INT(stack_fixup__cut(sym, &spans, getpid(), pcs, 2), 2);
	/* spans of another generation of the mappings are not used */
	spans.gen++;
	spans.lo[0] = 0;
	spans.hi[0] = UINT64_MAX;
	spans.pid[0] = (uint32_t)getpid();
	CHECK_EQ_INT(stack_fixup__cut(sym, &spans, getpid(), pcs, 4), 2);
	symbolizer__free(sym);
}

UNIT_MAIN()
