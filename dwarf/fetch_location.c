// SPDX-License-Identifier: GPL-2.0
/*
 * fetch_location.c - a variable's DWARF location at the probe address as fetch ops:
 * registers, frame base (CFA through CFI), static addresses.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include <elfutils/known-dwarf.h>
#include "dwarf/dwarf_aux.h"
#include "dwarf/fetch_compile.h"
#include "dwarf/fetch_internal.h"
#include "user/util/util.h"

/* ---- locations ------------------------------------------------------ */

static int emit_cfa(struct fc *c, bool at_entry)
{
	Dwarf_CFI *cfis[2] = {NULL, NULL};
	int i, ret = -EOPNOTSUPP;

	/* before the first instruction runs, only the return address is on the stack */
	if (at_entry)
		return fetch_emit(c, FETCH_OP_CFA, 0, 8);

	cfis[0] = dwarf_getcfi_elf(c->elf); /* .eh_frame: ours to end */
	cfis[1] = dwarf_getcfi(c->dbg);	    /* .debug_frame: owned by dbg */
	for (i = 0; i < 2 && ret == -EOPNOTSUPP; i++) {
		Dwarf_Frame *frame = NULL;
		Dwarf_Op *ops;
		size_t nops;

		if (!cfis[i] || dwarf_cfi_addrframe(cfis[i], c->addr, &frame) != 0)
			continue;
		/* libdw spells a reg+offset rule as DW_OP_bregx (or DW_OP_bregN) */
		if (dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1 &&
		    ((ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) ||
		     ops[0].atom == DW_OP_bregx)) {
			bool x = ops[0].atom == DW_OP_bregx;
			unsigned reg =
				x ? (unsigned)ops[0].number : (unsigned)(ops[0].atom - DW_OP_breg0);
			int64_t off = (int64_t)(x ? ops[0].number2 : ops[0].number);

			if (reg == X86_DWARF_RSP) {
				ret = fetch_emit(c, FETCH_OP_CFA, 0, off);
			} else {
				ret = fetch_emit_reg(c, reg);
				if (!ret)
					ret = fetch_emit(c, FETCH_OP_ADD, 0, off);
			}
		}
		free(frame);
	}
	if (cfis[0])
		dwarf_cfi_end(cfis[0]);
	if (ret == -EOPNOTSUPP)
		lp_errf(c->err, c->errlen,
			"no usable CFA rule at 0x%llx for '%s' (needs .eh_frame or .debug_frame)",
			(unsigned long long)c->addr, c->what);
	return ret;
}

static int unsupported_op(struct fc *c, const char *var, unsigned atom)
{
	lp_errf(c->err, c->errlen,
		"unsupported DWARF location (%s) for '%s' at 0x%llx; try a line probe where it "
		"lives in a register",
		fetch_op_name(atom), var, (unsigned long long)c->addr);
	return -EOPNOTSUPP;
}

/* DW_AT_frame_base of @func at the probe address, as the acc value. */
static int emit_frame_base(struct fc *c, Dwarf_Die *func, bool at_entry, const char *var, int depth)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t n;
	int ret;

	if (!func || depth > 1 || !dwarf_attr(func, DW_AT_frame_base, &a)) {
		lp_errf(c->err, c->errlen, "no frame base for '%s' at 0x%llx", var,
			(unsigned long long)c->addr);
		return -EOPNOTSUPP;
	}
	ret = dwarf_getlocation_addr(&a, c->addr, &ops, &n, 1);
	if (ret <= 0 || !n) {
		lp_errf(c->err, c->errlen, "no frame base for '%s' at 0x%llx", var,
			(unsigned long long)c->addr);
		return -EOPNOTSUPP;
	}
	ret = fetch_emit_location(c, ops, n, func, at_entry, var, depth + 1);
	if (ret)
		return ret;
	/* DW_OP_regN as a frame base means the register's contents are the base */
	c->mode = ACC_ADDR;
	return 0;
}

int fetch_emit_location(struct fc *c, Dwarf_Op *ops, size_t n, Dwarf_Die *func, bool at_entry,
			const char *var, int depth)
{
	size_t i;
	int ret = 0;

	c->mode = ACC_ADDR;
	for (i = 0; i < n && !ret; i++) {
		unsigned atom = ops[i].atom;

		if (c->mode == ACC_VALUE && atom != DW_OP_stack_value)
			return unsupported_op(c, var, atom); /* only a lone register is a value */
		if (atom >= DW_OP_reg0 && atom <= DW_OP_reg31) {
			if (n != 1)
				return unsupported_op(c, var, ops[n - 1].atom);
			ret = fetch_emit_reg(c, atom - DW_OP_reg0);
			c->mode = ACC_VALUE;
		} else if (atom == DW_OP_regx) {
			if (n != 1)
				return unsupported_op(c, var, ops[n - 1].atom);
			ret = fetch_emit_reg(c, (unsigned)ops[i].number);
			c->mode = ACC_VALUE;
		} else if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
			if (i != 0)
				return unsupported_op(c, var, atom);
			ret = fetch_emit_reg(c, atom - DW_OP_breg0);
			if (!ret)
				ret = fetch_emit(c, FETCH_OP_ADD, 0, (int64_t)ops[i].number);
		} else if (atom == DW_OP_bregx) {
			if (i != 0)
				return unsupported_op(c, var, atom);
			ret = fetch_emit_reg(c, (unsigned)ops[i].number);
			if (!ret)
				ret = fetch_emit(c, FETCH_OP_ADD, 0, (int64_t)ops[i].number2);
		} else if (atom == DW_OP_fbreg) {
			if (i != 0)
				return unsupported_op(c, var, atom);
			ret = emit_frame_base(c, func, at_entry, var, depth);
			if (!ret)
				ret = fetch_emit(c, FETCH_OP_ADD, 0, (int64_t)ops[i].number);
		} else if (atom == DW_OP_call_frame_cfa) {
			if (i != 0)
				return unsupported_op(c, var, atom);
			ret = emit_cfa(c, at_entry);
		} else if (atom == DW_OP_addr) {
			if (i != 0)
				return unsupported_op(c, var, atom);
			ret = fetch_emit(c, FETCH_OP_ADDR, 0, (int64_t)ops[i].number);
		} else if (atom == DW_OP_deref) {
			if (i == 0)
				return unsupported_op(c, var, atom);
			ret = fetch_emit(c, FETCH_OP_DEREF, 0, 0);
		} else if (atom == DW_OP_plus_uconst) {
			if (i == 0)
				return unsupported_op(c, var, atom);
			ret = fetch_emit(c, FETCH_OP_ADD, 0, (int64_t)ops[i].number);
		} else if (atom == DW_OP_stack_value) {
			/* the computed number is the value, not its address */
			if (i == 0 || i != n - 1)
				return unsupported_op(c, var, atom);
			c->mode = ACC_VALUE;
		} else {
			return unsupported_op(c, var, atom);
		}
	}
	return ret;
}
