// SPDX-License-Identifier: GPL-2.0
/*
 * cfi_classify.c - one CFI row as libdw gives it, reduced to the few shapes
 * an in-kernel unwinder can apply (CFA from rsp or rbp, through rbp after a
 * stack realignment, the PLT's rip-dependent rule, the signal frame), or
 * marked CFI_CFA_FALLBACK.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include "dwarf/cfi_internal.h"

static bool is_plt_expr(const Dwarf_Op *o, size_t n, struct cfi_row *r)
{
	if (n != 9 || o[0].atom != DW_OP_breg7 || o[1].atom != DW_OP_breg16 || o[1].number ||
	    o[2].atom != DW_OP_lit15 || o[3].atom != DW_OP_and || o[4].atom < DW_OP_lit0 ||
	    o[4].atom > DW_OP_lit31 || o[5].atom != DW_OP_ge || o[6].atom != DW_OP_lit3 ||
	    o[7].atom != DW_OP_shl || o[8].atom != DW_OP_plus)
		return false;
	if ((int64_t)o[0].number < 0 || (int64_t)o[0].number > 4096)
		return false;
	r->cfa_rule = CFI_CFA_PLT;
	r->cfa_off = (int32_t)o[0].number;
	r->rbp_off = (int16_t)(o[4].atom - DW_OP_lit0);
	r->rbp_rule = CFI_RBP_SAME;
	return true;
}

/* A register saved by DW_CFA_expression as "at rsp + N": N, or -1. */
static int64_t at_rsp(Dwarf_Frame *f, int reg)
{
	Dwarf_Op mem[3], *ops;
	size_t n;

	if (dwarf_frame_register(f, reg, mem, &ops, &n))
		return -1;
	/* libdw pushes the CFA before a DW_CFA_expression; breg7 ignores it */
	if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa) {
		ops++;
		n--;
	}
	if (n != 1 || ops[0].atom != DW_OP_breg7)
		return -1;
	return (int64_t)ops[0].number;
}

/* __restore_rt: CFA = *(rsp + N), rip at rsp + N + 8, rbp at rsp + M. */
static bool classify_signal(Dwarf_Frame *f, const Dwarf_Op *o, size_t n, struct cfi_row *r)
{
	int64_t rbp = at_rsp(f, REG_RBP), rip = at_rsp(f, REG_RIP);

	if (n != 2 || o[0].atom != DW_OP_breg7 || o[1].atom != DW_OP_deref)
		return false;
	if ((int64_t)o[0].number < 0 || (int64_t)o[0].number > 4096 || rbp < 0 || rbp > 4096 ||
	    rip != (int64_t)o[0].number + 8)
		return false;
	r->cfa_rule = CFI_CFA_SIGNAL;
	r->cfa_off = (int32_t)o[0].number;
	r->rbp_rule = CFI_RBP_AT_CFA; /* relative to rsp here, see cfi_table.h */
	r->rbp_off = (int16_t)rbp;
	return true;
}

static bool classify_cfa(const Dwarf_Op *o, size_t n, struct cfi_row *r)
{
	int64_t off;

	if (n == 1 && o[0].atom == DW_OP_bregx) {
		off = (int64_t)o[0].number2;
		if (off < INT32_MIN || off > INT32_MAX)
			return false;
		r->cfa_off = (int32_t)off;
		if (o[0].number == REG_RSP)
			r->cfa_rule = CFI_CFA_RSP;
		else if (o[0].number == REG_RBP)
			r->cfa_rule = CFI_CFA_RBP;
		else
			return false;
		return true;
	}
	if (n == 2 && o[0].atom == DW_OP_breg6 && o[1].atom == DW_OP_deref) {
		off = (int64_t)o[0].number;
		if (off < INT16_MIN || off > INT16_MAX)
			return false;
		r->cfa_rule = CFI_CFA_DEREF_RBP;
		r->cfa_off = (int32_t)off;
		return true;
	}
	return is_plt_expr(o, n, r);
}

/* "at CFA + N" as libdw spells it: call_frame_cfa [plus_uconst N]. */
static bool cfa_offset_rule(const Dwarf_Op *o, size_t n, int64_t *off)
{
	if (n < 1 || n > 2 || o[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (n == 1) {
		*off = 0;
		return true;
	}
	if (o[1].atom != DW_OP_plus_uconst)
		return false;
	*off = (int64_t)o[1].number;
	return true;
}

/* Reduce one CFI row; anything the unwinder cannot apply is FALLBACK. */
void cfi_classify(Dwarf_Frame *f, bool signal, struct cfi_row *r)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	int64_t off;

	r->cfa_rule = CFI_CFA_FALLBACK;
	r->cfa_off = 0;
	r->rbp_rule = CFI_RBP_SAME;
	r->rbp_off = 0;
	if (dwarf_frame_cfa(f, &ops, &n) || !n)
		return;
	if (signal) {
		if (!classify_signal(f, ops, n, r))
			r->cfa_rule = CFI_CFA_FALLBACK;
		return;
	}
	if (!classify_cfa(ops, n, r)) {
		r->cfa_rule = CFI_CFA_FALLBACK;
		return;
	}
	if (dwarf_frame_register(f, REG_RIP, mem, &ops, &n))
		goto fallback;
	if (n == 0 && ops == mem) {
		r->cfa_rule = CFI_CFA_END; /* undefined rip: the outermost frame */
		r->cfa_off = 0;
		return;
	}
	if (!cfa_offset_rule(ops, n, &off) || off != -8)
		goto fallback;
	if (r->cfa_rule == CFI_CFA_PLT)
		return;
	if (dwarf_frame_register(f, REG_RBP, mem, &ops, &n))
		goto fallback;
	if (n == 0) {
		r->rbp_rule = ops ? CFI_RBP_UNDEF : CFI_RBP_SAME;
		return;
	}
	if (!cfa_offset_rule(ops, n, &off) || off < INT16_MIN || off > INT16_MAX)
		goto fallback;
	r->rbp_rule = CFI_RBP_AT_CFA;
	r->rbp_off = (int16_t)off;
	return;
fallback:
	r->cfa_rule = CFI_CFA_FALLBACK;
	r->cfa_off = 0;
	r->rbp_rule = CFI_RBP_SAME;
	r->rbp_off = 0;
}
