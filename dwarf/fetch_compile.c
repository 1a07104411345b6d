// SPDX-License-Identifier: GPL-2.0
/*
 * fetch_compile.c - value expressions to fetch programs, from DWARF.
 *
 * The location expression of a variable at the probe address is turned
 * into a few register/offset/dereference ops (perf's
 * convert_variable_location does the same for kprobe fetch args), then
 * member offsets and element sizes from the type DIEs are appended.
 * Anything that cannot be expressed that way is refused with the exact
 * DWARF op, so the user knows to try another probe point.
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

#include "dwarf_aux.h"
#include "fetch_compile.h"

#define MAX_TYPE_DEPTH 32 /* typedef/const chains and nested names we follow */
#define X86_DWARF_RSP  7
#define X86_DWARF_MAX  16 /* rax..r15 and the return address; xmm is not supported */

static const char *op_name(unsigned atom)
{
	switch (atom) {
#define DWARF_ONE_KNOWN_DW_OP(NAME, CODE)                                                          \
	case CODE:                                                                                 \
		return #CODE;
		DWARF_ALL_KNOWN_DW_OP
#undef DWARF_ONE_KNOWN_DW_OP
	}
	return "DW_OP_unknown";
}

/* Where acc stands while the program is built. */
enum acc_mode {
	ACC_ADDR,  /* acc is the address of the value */
	ACC_VALUE, /* acc is the value itself */
};

struct fc {
	Elf *elf;
	Dwarf *dbg;
	uint64_t addr;
	const char *what; /* the expression, for messages */
	struct fetch_prog *prog;
	enum acc_mode mode;
	char *err;
	size_t errlen;
};

static int emit(struct fc *c, unsigned op, unsigned reg, int64_t arg)
{
	struct fetch_op *last = c->prog->n_ops ? &c->prog->ops[c->prog->n_ops - 1] : NULL;

	/* fold constant offsets: programs are short and BPF loops are costly */
	if (op == FETCH_OP_ADD && last &&
	    (last->op == FETCH_OP_ADD || last->op == FETCH_OP_ADDR || last->op == FETCH_OP_CFA)) {
		last->arg += arg;
		return 0;
	}
	if (op == FETCH_OP_ADD && arg == 0)
		return 0;
	/* one slot stays free for FETCH_OP_END */
	if (c->prog->n_ops + 1 >= FETCH_MAX_OPS) {
		dwarf_aux__errf(c->err, c->errlen, "'%s' needs more than %d fetch ops", c->what,
				FETCH_MAX_OPS);
		return -E2BIG;
	}
	c->prog->ops[c->prog->n_ops] = (struct fetch_op){
		.op = (enum fetch_opcode)op,
		.reg = (uint16_t)reg,
		.arg = arg,
	};
	c->prog->n_ops++;
	return 0;
}

static int emit_reg(struct fc *c, unsigned reg)
{
	if (reg > X86_DWARF_MAX) {
		dwarf_aux__errf(
			c->err, c->errlen,
			"'%s' lives in DWARF register %u at 0x%llx (not a general register); "
			"unsupported",
			c->what, reg, (unsigned long long)c->addr);
		return -EOPNOTSUPP;
	}
	return emit(c, FETCH_OP_REG, reg, 0);
}

static bool die_type(Dwarf_Die *die, Dwarf_Die *type)
{
	Dwarf_Attribute a;

	return dwarf_attr_integrate(die, DW_AT_type, &a) && dwarf_formref_die(&a, type);
}

/* Strip typedef and qualifiers. False for void or broken DWARF. */
static bool peel(Dwarf_Die *t)
{
	int i;

	for (i = 0; i < MAX_TYPE_DEPTH; i++) {
		switch (dwarf_tag(t)) {
		case DW_TAG_typedef:
		case DW_TAG_const_type:
		case DW_TAG_volatile_type:
		case DW_TAG_restrict_type:
		case DW_TAG_atomic_type:
			if (!die_type(t, t))
				return false;
			break;
		default:
			return dwarf_tag(t) > 0;
		}
	}
	return false;
}

/* buf = a b, truncated to len: type names only label values */
static void join(char *buf, size_t len, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la >= len)
		la = len - 1;
	memcpy(buf, a, la);
	if (lb >= len - la)
		lb = len - la - 1;
	memcpy(buf + la, b, lb);
	buf[la + lb] = '\0';
}

static void type_name(Dwarf_Die *t, char *buf, size_t len, int depth)
{
	Dwarf_Die sub;
	const char *n = dwarf_aux__die_name(t);
	char inner[128];

	if (depth > MAX_TYPE_DEPTH) {
		snprintf(buf, len, "?");
		return;
	}
	switch (dwarf_tag(t)) {
	case DW_TAG_pointer_type:
		if (die_type(t, &sub))
			type_name(&sub, inner, sizeof(inner), depth + 1);
		else
			snprintf(inner, sizeof(inner), "void");
		join(buf, len, inner, " *");
		return;
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
		if (die_type(t, &sub))
			type_name(&sub, inner, sizeof(inner), depth + 1);
		else
			snprintf(inner, sizeof(inner), "void");
		join(buf, len, dwarf_tag(t) == DW_TAG_const_type ? "const " : "volatile ", inner);
		return;
	case DW_TAG_array_type:
		if (die_type(t, &sub))
			type_name(&sub, inner, sizeof(inner), depth + 1);
		else
			snprintf(inner, sizeof(inner), "?");
		join(buf, len, inner, "[]");
		return;
	case DW_TAG_structure_type:
		snprintf(buf, len, "struct %s", n ? n : "<anon>");
		return;
	case DW_TAG_union_type:
		snprintf(buf, len, "union %s", n ? n : "<anon>");
		return;
	case DW_TAG_enumeration_type:
		snprintf(buf, len, "enum %s", n ? n : "<anon>");
		return;
	default:
		snprintf(buf, len, "%s", n ? n : "?");
	}
}

/* ---- locations ------------------------------------------------------ */

static int emit_cfa(struct fc *c, bool at_entry)
{
	Dwarf_CFI *cfis[2] = {NULL, NULL};
	int i, ret = -EOPNOTSUPP;

	/* before the first instruction runs, only the return address is on the stack */
	if (at_entry)
		return emit(c, FETCH_OP_CFA, 0, 8);

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
				ret = emit(c, FETCH_OP_CFA, 0, off);
			} else {
				ret = emit_reg(c, reg);
				if (!ret)
					ret = emit(c, FETCH_OP_ADD, 0, off);
			}
		}
		free(frame);
	}
	if (cfis[0])
		dwarf_cfi_end(cfis[0]);
	if (ret == -EOPNOTSUPP)
		dwarf_aux__errf(
			c->err, c->errlen,
			"no usable CFA rule at 0x%llx for '%s' (needs .eh_frame or .debug_frame)",
			(unsigned long long)c->addr, c->what);
	return ret;
}

static int unsupported_op(struct fc *c, const char *var, unsigned atom)
{
	dwarf_aux__errf(
		c->err, c->errlen,
		"unsupported DWARF location (%s) for '%s' at 0x%llx; try a line probe where it "
		"lives in a register",
		op_name(atom), var, (unsigned long long)c->addr);
	return -EOPNOTSUPP;
}

static int emit_location(struct fc *c, Dwarf_Op *ops, size_t n, Dwarf_Die *func, bool at_entry,
			 const char *var, int depth);

/* DW_AT_frame_base of @func at the probe address, as the acc value. */
static int emit_frame_base(struct fc *c, Dwarf_Die *func, bool at_entry, const char *var, int depth)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t n;
	int ret;

	if (!func || depth > 1 || !dwarf_attr(func, DW_AT_frame_base, &a)) {
		dwarf_aux__errf(c->err, c->errlen, "no frame base for '%s' at 0x%llx", var,
				(unsigned long long)c->addr);
		return -EOPNOTSUPP;
	}
	ret = dwarf_getlocation_addr(&a, c->addr, &ops, &n, 1);
	if (ret <= 0 || !n) {
		dwarf_aux__errf(c->err, c->errlen, "no frame base for '%s' at 0x%llx", var,
				(unsigned long long)c->addr);
		return -EOPNOTSUPP;
	}
	ret = emit_location(c, ops, n, func, at_entry, var, depth + 1);
	if (ret)
		return ret;
	/* DW_OP_regN as a frame base means the register's contents are the base */
	c->mode = ACC_ADDR;
	return 0;
}

static int emit_location(struct fc *c, Dwarf_Op *ops, size_t n, Dwarf_Die *func, bool at_entry,
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
			ret = emit_reg(c, atom - DW_OP_reg0);
			c->mode = ACC_VALUE;
		} else if (atom == DW_OP_regx) {
			if (n != 1)
				return unsupported_op(c, var, ops[n - 1].atom);
			ret = emit_reg(c, (unsigned)ops[i].number);
			c->mode = ACC_VALUE;
		} else if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
			if (i != 0)
				return unsupported_op(c, var, atom);
			ret = emit_reg(c, atom - DW_OP_breg0);
			if (!ret)
				ret = emit(c, FETCH_OP_ADD, 0, (int64_t)ops[i].number);
		} else if (atom == DW_OP_bregx) {
			if (i != 0)
				return unsupported_op(c, var, atom);
			ret = emit_reg(c, (unsigned)ops[i].number);
			if (!ret)
				ret = emit(c, FETCH_OP_ADD, 0, (int64_t)ops[i].number2);
		} else if (atom == DW_OP_fbreg) {
			if (i != 0)
				return unsupported_op(c, var, atom);
			ret = emit_frame_base(c, func, at_entry, var, depth);
			if (!ret)
				ret = emit(c, FETCH_OP_ADD, 0, (int64_t)ops[i].number);
		} else if (atom == DW_OP_call_frame_cfa) {
			if (i != 0)
				return unsupported_op(c, var, atom);
			ret = emit_cfa(c, at_entry);
		} else if (atom == DW_OP_addr) {
			if (i != 0)
				return unsupported_op(c, var, atom);
			ret = emit(c, FETCH_OP_ADDR, 0, (int64_t)ops[i].number);
		} else if (atom == DW_OP_deref) {
			if (i == 0)
				return unsupported_op(c, var, atom);
			ret = emit(c, FETCH_OP_DEREF, 0, 0);
		} else if (atom == DW_OP_plus_uconst) {
			if (i == 0)
				return unsupported_op(c, var, atom);
			ret = emit(c, FETCH_OP_ADD, 0, (int64_t)ops[i].number);
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

/* ---- types and steps ------------------------------------------------ */

/*
 * Find member @name of struct/union @t, looking into anonymous members;
 * adds its offset to *off and sets *mtype.
 */
static int find_member(Dwarf_Die *t, const char *name, int64_t *off, Dwarf_Die *mtype, int depth)
{
	Dwarf_Die m;

	if (depth > MAX_TYPE_DEPTH || dwarf_child(t, &m) != 0)
		return -ENOENT;
	do {
		Dwarf_Attribute a;
		Dwarf_Word moff = 0;
		const char *n;

		if (dwarf_tag(&m) != DW_TAG_member)
			continue;
		if (dwarf_attr(&m, DW_AT_data_member_location, &a)) {
			if (dwarf_formudata(&a, &moff) != 0) {
				/* DWARF 2 style: DW_OP_plus_uconst N */
				Dwarf_Op *ops;
				size_t nops;

				if (dwarf_getlocation(&a, &ops, &nops) != 0 || nops != 1 ||
				    ops[0].atom != DW_OP_plus_uconst)
					continue;
				moff = ops[0].number;
			}
		}
		n = dwarf_aux__die_name(&m);
		if (n && !strcmp(n, name)) {
			if (dwarf_hasattr(&m, DW_AT_bit_size))
				return -EOPNOTSUPP;
			if (!die_type(&m, mtype))
				return -ENOENT;
			*off += (int64_t)moff;
			return 0;
		}
		if (!n) {
			Dwarf_Die sub;
			int64_t o = *off + (int64_t)moff;

			if (die_type(&m, &sub) && peel(&sub) &&
			    (dwarf_tag(&sub) == DW_TAG_structure_type ||
			     dwarf_tag(&sub) == DW_TAG_union_type) &&
			    find_member(&sub, name, &o, mtype, depth + 1) == 0) {
				*off = o;
				return 0;
			}
		}
	} while (dwarf_siblingof(&m, &m) == 0);
	return -ENOENT;
}

/* acc = the pointer value, whether it was in memory or in a register. */
static int load_pointer(struct fc *c)
{
	int ret = 0;

	if (c->mode == ACC_ADDR)
		ret = emit(c, FETCH_OP_DEREF, 0, 0);
	c->mode = ACC_ADDR; /* acc now addresses the pointee */
	return ret;
}

static bool type_size(Dwarf_Die *t, int64_t *size)
{
	Dwarf_Word w;

	if (dwarf_aggregate_size(t, &w) != 0 || w > (1u << 30))
		return false;
	*size = (int64_t)w;
	return true;
}

static int step_deref(struct fc *c, Dwarf_Die *t, const char *what)
{
	Dwarf_Die p = *t;

	if (!peel(&p) || dwarf_tag(&p) != DW_TAG_pointer_type) {
		dwarf_aux__errf(c->err, c->errlen, "'%s' is not a pointer in '%s'", what, c->what);
		return -EINVAL;
	}
	if (!die_type(&p, t)) {
		dwarf_aux__errf(c->err, c->errlen, "cannot dereference a void pointer in '%s'",
				c->what);
		return -EOPNOTSUPP;
	}
	return load_pointer(c);
}

static int apply_step(struct fc *c, const struct probe_step *st, Dwarf_Die *t, const char *prev)
{
	Dwarf_Die p = *t, mtype;
	int64_t off = 0, esize;
	int ret;

	switch (st->kind) {
	case PROBE_STEP_ARROW:
		ret = step_deref(c, t, prev);
		if (ret)
			return ret;
		p = *t;
		/* fall through */
	case PROBE_STEP_DOT:
		if (!peel(&p) ||
		    (dwarf_tag(&p) != DW_TAG_structure_type && dwarf_tag(&p) != DW_TAG_union_type &&
		     dwarf_tag(&p) != DW_TAG_class_type)) {
			dwarf_aux__errf(
				c->err, c->errlen, "'%s' is not a struct in '%s'%s", prev, c->what,
				st->kind == PROBE_STEP_DOT && dwarf_tag(&p) == DW_TAG_pointer_type
					? "; use ->"
					: "");
			return -EINVAL;
		}
		if (c->mode != ACC_ADDR) {
			dwarf_aux__errf(
				c->err, c->errlen,
				"'%s' is held in registers at 0x%llx; cannot take member '%s'",
				prev, (unsigned long long)c->addr, st->field);
			return -EOPNOTSUPP;
		}
		ret = find_member(&p, st->field, &off, &mtype, 0);
		if (ret == -EOPNOTSUPP) {
			dwarf_aux__errf(c->err, c->errlen, "'%s' is a bitfield; unsupported",
					st->field);
			return ret;
		}
		if (ret) {
			dwarf_aux__errf(c->err, c->errlen, "no member '%s' in '%s' of '%s'",
					st->field, prev, c->what);
			return -ENOENT;
		}
		*t = mtype;
		return emit(c, FETCH_OP_ADD, 0, off);
	case PROBE_STEP_INDEX:
		if (!peel(&p))
			goto bad_index;
		if (dwarf_tag(&p) == DW_TAG_array_type) {
			Dwarf_Die sub;
			int nsub = 0;

			if (dwarf_child(&p, &sub) == 0) {
				do {
					nsub += dwarf_tag(&sub) == DW_TAG_subrange_type;
				} while (dwarf_siblingof(&sub, &sub) == 0);
			}
			if (nsub > 1) {
				dwarf_aux__errf(
					c->err, c->errlen,
					"multi-dimensional array '%s' is unsupported in '%s'", prev,
					c->what);
				return -EOPNOTSUPP;
			}
			if (c->mode != ACC_ADDR)
				goto bad_index;
		} else if (dwarf_tag(&p) == DW_TAG_pointer_type) {
			ret = load_pointer(c);
			if (ret)
				return ret;
		} else {
			goto bad_index;
		}
		if (!die_type(&p, t) || !type_size(t, &esize) || !esize) {
			dwarf_aux__errf(c->err, c->errlen, "element of '%s' has no size in '%s'",
					prev, c->what);
			return -EOPNOTSUPP;
		}
		return emit(c, FETCH_OP_ADD, 0, st->index * esize);
	}
bad_index:
	dwarf_aux__errf(c->err, c->errlen, "'%s' is not an array or pointer in '%s'", prev,
			c->what);
	return -EINVAL;
}

static int fill_enums(Dwarf_Die *t, struct fetch_type *ty)
{
	Dwarf_Die e;
	size_t n = 0, cap = 0;

	if (dwarf_child(t, &e) != 0)
		return 0;
	do {
		Dwarf_Attribute a;
		Dwarf_Sword v;
		const char *name;
		struct fetch_enumerator *ne;

		if (dwarf_tag(&e) != DW_TAG_enumerator || !(name = dwarf_aux__die_name(&e)) ||
		    !dwarf_attr(&e, DW_AT_const_value, &a) || dwarf_formsdata(&a, &v) != 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			ne = realloc(ty->enums, cap * sizeof(*ne));
			if (!ne)
				return -ENOMEM;
			ty->enums = ne;
		}
		ty->enums[n].value = v;
		ty->enums[n].name = strdup(name);
		if (!ty->enums[n].name)
			return -ENOMEM;
		ty->n_enums = ++n;
	} while (dwarf_siblingof(&e, &e) == 0);
	return 0;
}

static bool is_char_type(Dwarf_Die *t)
{
	Dwarf_Die p = *t;
	Dwarf_Attribute a;
	Dwarf_Word enc, size;

	if (!peel(&p) || dwarf_tag(&p) != DW_TAG_base_type || !dwarf_attr(&p, DW_AT_encoding, &a) ||
	    dwarf_formudata(&a, &enc) || dwarf_aggregate_size(&p, &size) || size != 1)
		return false;
	return enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char;
}

/* Final op from the type of the value; fills @ty. */
static int finish(struct fc *c, Dwarf_Die *t, struct fetch_type *ty)
{
	Dwarf_Die p = *t, sub;
	Dwarf_Attribute a;
	Dwarf_Word enc = 0, size = 0;
	int ret, tag;

	type_name(t, ty->name, sizeof(ty->name), 0);
	if (!peel(&p)) {
		dwarf_aux__errf(c->err, c->errlen, "'%s' has type void", c->what);
		return -EOPNOTSUPP;
	}
	tag = dwarf_tag(&p);
	if (tag == DW_TAG_pointer_type && die_type(&p, &sub) && is_char_type(&sub)) {
		ty->kind = FETCH_STRING;
		ty->size = FETCH_STR_LEN;
		ret = load_pointer(c);
		return ret ? ret : emit(c, FETCH_OP_STR, 0, 0);
	}
	if (tag == DW_TAG_array_type && die_type(&p, &sub) && is_char_type(&sub)) {
		if (c->mode != ACC_ADDR) {
			dwarf_aux__errf(c->err, c->errlen, "char array '%s' is not in memory",
					c->what);
			return -EOPNOTSUPP;
		}
		ty->kind = FETCH_STRING;
		ty->size = FETCH_STR_LEN;
		return emit(c, FETCH_OP_STR, 0, 0);
	}
	switch (tag) {
	case DW_TAG_pointer_type:
		ty->kind = FETCH_PTR;
		size = 8;
		break;
	case DW_TAG_enumeration_type:
		ty->kind = FETCH_ENUM;
		if (dwarf_aggregate_size(&p, &size))
			size = 4;
		/* the underlying type, when given, says whether it is signed */
		if (die_type(&p, &sub) && peel(&sub) && dwarf_attr(&sub, DW_AT_encoding, &a))
			dwarf_formudata(&a, &enc);
		ty->is_signed = enc == DW_ATE_signed || enc == DW_ATE_signed_char;
		ret = fill_enums(&p, ty);
		if (ret)
			return ret;
		break;
	case DW_TAG_base_type:
		if (!dwarf_attr(&p, DW_AT_encoding, &a) || dwarf_formudata(&a, &enc) ||
		    dwarf_aggregate_size(&p, &size)) {
			dwarf_aux__errf(c->err, c->errlen, "broken base type for '%s'", c->what);
			return -EOPNOTSUPP;
		}
		switch (enc) {
		case DW_ATE_signed:
			ty->kind = FETCH_INT;
			ty->is_signed = true;
			break;
		case DW_ATE_unsigned:
			ty->kind = FETCH_UINT;
			break;
		case DW_ATE_signed_char:
			ty->kind = FETCH_CHAR;
			ty->is_signed = true;
			break;
		case DW_ATE_unsigned_char:
		case DW_ATE_UTF:
			ty->kind = FETCH_CHAR;
			break;
		case DW_ATE_boolean:
			ty->kind = FETCH_BOOL;
			break;
		default:
			dwarf_aux__errf(c->err, c->errlen,
					"'%s' has type '%s' (floating point or other); "
					"unsupported",
					c->what, ty->name);
			return -EOPNOTSUPP;
		}
		break;
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_class_type:
		dwarf_aux__errf(c->err, c->errlen, "'%s' is a %s; pick a member with -> or .",
				c->what, ty->name);
		return -EOPNOTSUPP;
	case DW_TAG_array_type:
		dwarf_aux__errf(c->err, c->errlen, "'%s' is an array; pick an element with [N]",
				c->what);
		return -EOPNOTSUPP;
	default:
		dwarf_aux__errf(c->err, c->errlen, "'%s' has unsupported type '%s'", c->what,
				ty->name);
		return -EOPNOTSUPP;
	}
	if (size != 1 && size != 2 && size != 4 && size != 8) {
		dwarf_aux__errf(c->err, c->errlen,
				"'%s' is %llu bytes; only 1, 2, 4 or 8 can be fetched", c->what,
				(unsigned long long)size);
		return -EOPNOTSUPP;
	}
	ty->size = (unsigned)size;
	c->prog->is_signed = ty->is_signed;
	if (c->mode == ACC_VALUE)
		return 0; /* the value is acc: see the header */
	ret = emit(c, FETCH_OP_LOAD, 0, 0);
	if (!ret)
		c->prog->ops[c->prog->n_ops - 1].size = (uint8_t)size;
	return ret;
}

/* ---- lookup --------------------------------------------------------- */

static bool find_var(Dwarf_Die *scopes, int n, const char *name, Dwarf_Die *var)
{
	int i;

	for (i = 0; i < n; i++) {
		Dwarf_Die child;

		if (dwarf_child(&scopes[i], &child) != 0)
			continue;
		do {
			int tag = dwarf_tag(&child);
			const char *cn;

			if (tag != DW_TAG_formal_parameter && tag != DW_TAG_variable)
				continue;
			cn = dwarf_aux__die_name(&child);
			if (cn && !strcmp(cn, name)) {
				*var = child;
				return true;
			}
		} while (dwarf_siblingof(&child, &child) == 0);
	}
	return false;
}

static int compile(struct fc *c, const struct probe_expr *e, struct fetch_type *ty)
{
	Dwarf_Die *scopes = NULL, *func = NULL, var, type;
	Dwarf_Attribute a;
	Dwarf_Addr lo = 0;
	Dwarf_Op *ops;
	size_t nops, i;
	bool at_entry = false;
	char prev[PROBE_NAME_MAX * 2];
	int n, k, ret;

	n = dwarf_aux__phys_scopes(c->dbg, c->addr, &scopes);
	if (n <= 0) {
		dwarf_aux__errf(c->err, c->errlen, "no DWARF scope covers 0x%llx",
				(unsigned long long)c->addr);
		return -ENODATA;
	}
	for (k = 0; k < n; k++) {
		if (dwarf_tag(&scopes[k]) == DW_TAG_subprogram) {
			func = &scopes[k];
			break;
		}
	}
	if (func && (dwarf_entrypc(func, &lo) == 0 || dwarf_lowpc(func, &lo) == 0))
		at_entry = lo == c->addr;

	if (e->is_ret) {
		if (!func || !die_type(func, &type)) {
			dwarf_aux__errf(c->err, c->errlen, "'%s' returns nothing",
					func && dwarf_aux__die_name(func)
						? dwarf_aux__die_name(func)
						: "the function");
			ret = -EINVAL;
			goto out;
		}
		ret = emit(c, FETCH_OP_RETVAL, 0, 0);
		c->mode = ACC_VALUE;
	} else {
		if (!find_var(scopes, n, e->base, &var)) {
			dwarf_aux__errf(
				c->err, c->errlen, "no variable '%s' in scope at 0x%llx%s%s",
				e->base, (unsigned long long)c->addr, func ? " in " : "",
				func && dwarf_aux__die_name(func) ? dwarf_aux__die_name(func) : "");
			ret = -ENOENT;
			goto out;
		}
		if (!die_type(&var, &type)) {
			dwarf_aux__errf(c->err, c->errlen, "'%s' has no type", e->base);
			ret = -EOPNOTSUPP;
			goto out;
		}
		if (!dwarf_attr(&var, DW_AT_location, &a)) {
			dwarf_aux__errf(c->err, c->errlen, "'%s' is optimized out%s", e->base,
					dwarf_hasattr(&var, DW_AT_const_value) ? " (a constant)"
									       : "");
			ret = -ENODATA;
			goto out;
		}
		ret = dwarf_getlocation_addr(&a, c->addr, &ops, &nops, 1);
		if (ret <= 0 || !nops) {
			dwarf_aux__errf(c->err, c->errlen,
					"'%s' is optimized out at 0x%llx; try another line",
					e->base, (unsigned long long)c->addr);
			ret = -ENODATA;
			goto out;
		}
		ret = emit_location(c, ops, nops, func, at_entry, e->base, 0);
	}
	if (ret)
		goto out;

	snprintf(prev, sizeof(prev), "%s", e->base);
	for (i = 0; i < e->n_steps && !ret; i++) {
		size_t l = strlen(prev);

		ret = apply_step(c, &e->steps[i], &type, prev);
		if (e->steps[i].kind == PROBE_STEP_INDEX)
			snprintf(prev + l, sizeof(prev) - l, "[%lld]",
				 (long long)e->steps[i].index);
		else
			snprintf(prev + l, sizeof(prev) - l, "%s%s",
				 e->steps[i].kind == PROBE_STEP_ARROW ? "->" : ".",
				 e->steps[i].field);
	}
	for (k = 0; k < e->n_deref && !ret; k++)
		ret = step_deref(c, &type, prev);
	if (!ret)
		ret = finish(c, &type, ty);
	if (!ret)
		ret = emit(c, FETCH_OP_END, 0, 0);
out:
	free(scopes);
	return ret;
}

int fetch_compile(const char *binary_path, uint64_t probe_vaddr, const struct probe_expr *e,
		  struct fetch_prog *out, struct fetch_type *type_out, char *err, size_t errlen)
{
	struct fetch_type local = {0};
	struct fetch_type *ty = type_out ? type_out : &local;
	struct fc c = {0};
	int fd, ret;

	memset(out, 0, sizeof(*out));
	memset(ty, 0, sizeof(*ty));
	if (!binary_path || !e) {
		dwarf_aux__errf(err, errlen, "no binary or expression");
		return -EINVAL;
	}
	fd = open(binary_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		dwarf_aux__errf(err, errlen, "cannot open '%s': %s", binary_path, strerror(errno));
		return ret;
	}
	elf_version(EV_CURRENT);
	c.elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!c.elf || elf_kind(c.elf) != ELF_K_ELF) {
		dwarf_aux__errf(err, errlen, "'%s' is not an ELF file", binary_path);
		ret = -ENOEXEC;
		goto out;
	}
	c.dbg = dwarf_begin_elf(c.elf, DWARF_C_READ, NULL);
	if (!c.dbg) {
		dwarf_aux__errf(err, errlen, "'%s' has no DWARF; build with -g to read '%s'",
				binary_path, e->text);
		ret = -ENODATA;
		goto out;
	}
	c.addr = probe_vaddr;
	c.what = e->text;
	c.prog = out;
	c.err = err;
	c.errlen = errlen;
	ret = compile(&c, e, ty);
out:
	if (ret) {
		memset(out, 0, sizeof(*out));
		fetch_type_free(ty);
	}
	fetch_type_free(&local);
	if (c.dbg)
		dwarf_end(c.dbg);
	if (c.elf)
		elf_end(c.elf);
	close(fd);
	return ret;
}

void fetch_type_free(struct fetch_type *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->n_enums; i++)
		free(t->enums[i].name);
	free(t->enums);
	t->enums = NULL;
	t->n_enums = 0;
}
