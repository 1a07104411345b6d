// SPDX-License-Identifier: GPL-2.0
/*
 * fetch_steps.c - types and steps of a value expression: C names of types,
 * struct members, dereferences, array elements, the final load.
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

bool fetch_die_type(Dwarf_Die *die, Dwarf_Die *type)
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
			if (!fetch_die_type(t, t))
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
		if (fetch_die_type(t, &sub))
			type_name(&sub, inner, sizeof(inner), depth + 1);
		else
			snprintf(inner, sizeof(inner), "void");
		join(buf, len, inner, " *");
		return;
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
		if (fetch_die_type(t, &sub))
			type_name(&sub, inner, sizeof(inner), depth + 1);
		else
			snprintf(inner, sizeof(inner), "void");
		join(buf, len, dwarf_tag(t) == DW_TAG_const_type ? "const " : "volatile ", inner);
		return;
	case DW_TAG_array_type:
		if (fetch_die_type(t, &sub))
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
			if (!fetch_die_type(&m, mtype))
				return -ENOENT;
			*off += (int64_t)moff;
			return 0;
		}
		if (!n) {
			Dwarf_Die sub;
			int64_t o = *off + (int64_t)moff;

			if (fetch_die_type(&m, &sub) && peel(&sub) &&
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
		ret = fetch_emit(c, FETCH_OP_DEREF, 0, 0);
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

int fetch_step_deref(struct fc *c, Dwarf_Die *t, const char *what)
{
	Dwarf_Die p = *t;

	if (!peel(&p) || dwarf_tag(&p) != DW_TAG_pointer_type) {
		lp_errf(c->err, c->errlen, "'%s' is not a pointer in '%s'", what, c->what);
		return -EINVAL;
	}
	if (!fetch_die_type(&p, t)) {
		lp_errf(c->err, c->errlen, "cannot dereference a void pointer in '%s'", c->what);
		return -EOPNOTSUPP;
	}
	return load_pointer(c);
}

int fetch_apply_step(struct fc *c, const struct probe_step *st, Dwarf_Die *t, const char *prev)
{
	Dwarf_Die p = *t, mtype;
	int64_t off = 0, esize;
	int ret;

	switch (st->kind) {
	case PROBE_STEP_ARROW:
		ret = fetch_step_deref(c, t, prev);
		if (ret)
			return ret;
		p = *t;
		/* fall through */
	case PROBE_STEP_DOT:
		if (!peel(&p) ||
		    (dwarf_tag(&p) != DW_TAG_structure_type && dwarf_tag(&p) != DW_TAG_union_type &&
		     dwarf_tag(&p) != DW_TAG_class_type)) {
			lp_errf(c->err, c->errlen, "'%s' is not a struct in '%s'%s", prev, c->what,
				st->kind == PROBE_STEP_DOT && dwarf_tag(&p) == DW_TAG_pointer_type
					? "; use ->"
					: "");
			return -EINVAL;
		}
		if (c->mode != ACC_ADDR) {
			lp_errf(c->err, c->errlen,
				"'%s' is held in registers at 0x%llx; cannot take member '%s'",
				prev, (unsigned long long)c->addr, st->field);
			return -EOPNOTSUPP;
		}
		ret = find_member(&p, st->field, &off, &mtype, 0);
		if (ret == -EOPNOTSUPP) {
			lp_errf(c->err, c->errlen, "'%s' is a bitfield; unsupported", st->field);
			return ret;
		}
		if (ret) {
			lp_errf(c->err, c->errlen, "no member '%s' in '%s' of '%s'", st->field,
				prev, c->what);
			return -ENOENT;
		}
		*t = mtype;
		return fetch_emit(c, FETCH_OP_ADD, 0, off);
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
				lp_errf(c->err, c->errlen,
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
		if (!fetch_die_type(&p, t) || !type_size(t, &esize) || !esize) {
			lp_errf(c->err, c->errlen, "element of '%s' has no size in '%s'", prev,
				c->what);
			return -EOPNOTSUPP;
		}
		return fetch_emit(c, FETCH_OP_ADD, 0, st->index * esize);
	}
bad_index:
	lp_errf(c->err, c->errlen, "'%s' is not an array or pointer in '%s'", prev, c->what);
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

/* A pointer to, or an array of, chars: fetched as a string. */
static bool is_text(Dwarf_Die *p, int tag)
{
	Dwarf_Die sub;

	return (tag == DW_TAG_pointer_type || tag == DW_TAG_array_type) &&
	       fetch_die_type(p, &sub) && is_char_type(&sub);
}

static int finish_text(struct fc *c, int tag, struct fetch_type *ty)
{
	int ret;

	if (tag == DW_TAG_array_type && c->mode != ACC_ADDR) {
		lp_errf(c->err, c->errlen, "char array '%s' is not in memory", c->what);
		return -EOPNOTSUPP;
	}
	ty->kind = FETCH_STRING;
	ty->size = FETCH_STR_LEN;
	if (tag == DW_TAG_pointer_type) {
		ret = load_pointer(c);
		if (ret)
			return ret;
	}
	return fetch_emit(c, FETCH_OP_STR, 0, 0);
}

/* An enum's kind, size and names; its underlying type says if it is signed. */
static int enum_kind(Dwarf_Die *p, struct fetch_type *ty, Dwarf_Word *size)
{
	Dwarf_Word enc = 0;
	Dwarf_Attribute a;
	Dwarf_Die sub;

	ty->kind = FETCH_ENUM;
	if (dwarf_aggregate_size(p, size))
		*size = 4;
	if (fetch_die_type(p, &sub) && peel(&sub) && dwarf_attr(&sub, DW_AT_encoding, &a))
		dwarf_formudata(&a, &enc);
	ty->is_signed = enc == DW_ATE_signed || enc == DW_ATE_signed_char;
	return fill_enums(p, ty);
}

/* A base type's kind and size, from its encoding; floating point is refused. */
static int base_kind(struct fc *c, Dwarf_Die *p, struct fetch_type *ty, Dwarf_Word *size)
{
	Dwarf_Attribute a;
	Dwarf_Word enc;

	if (!dwarf_attr(p, DW_AT_encoding, &a) || dwarf_formudata(&a, &enc) ||
	    dwarf_aggregate_size(p, size)) {
		lp_errf(c->err, c->errlen, "broken base type for '%s'", c->what);
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
		lp_errf(c->err, c->errlen,
			"'%s' has type '%s' (floating point or other); "
			"unsupported",
			c->what, ty->name);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* The kind and size of a scalar of (peeled) type @p with tag @tag. */
static int scalar_kind(struct fc *c, Dwarf_Die *p, int tag, struct fetch_type *ty, Dwarf_Word *size)
{
	switch (tag) {
	case DW_TAG_pointer_type:
		ty->kind = FETCH_PTR;
		*size = 8;
		return 0;
	case DW_TAG_enumeration_type:
		return enum_kind(p, ty, size);
	case DW_TAG_base_type:
		return base_kind(c, p, ty, size);
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_class_type:
		lp_errf(c->err, c->errlen, "'%s' is a %s; pick a member with -> or .", c->what,
			ty->name);
		return -EOPNOTSUPP;
	case DW_TAG_array_type:
		lp_errf(c->err, c->errlen, "'%s' is an array; pick an element with [N]", c->what);
		return -EOPNOTSUPP;
	default:
		lp_errf(c->err, c->errlen, "'%s' has unsupported type '%s'", c->what, ty->name);
		return -EOPNOTSUPP;
	}
}

/* Final op from the type of the value; fills @ty. */
int fetch_finish(struct fc *c, Dwarf_Die *t, struct fetch_type *ty)
{
	Dwarf_Word size = 0;
	Dwarf_Die p = *t;
	int ret, tag;

	type_name(t, ty->name, sizeof(ty->name), 0);
	if (!peel(&p)) {
		lp_errf(c->err, c->errlen, "'%s' has type void", c->what);
		return -EOPNOTSUPP;
	}
	tag = dwarf_tag(&p);
	if (is_text(&p, tag))
		return finish_text(c, tag, ty);
	ret = scalar_kind(c, &p, tag, ty, &size);
	if (ret)
		return ret;
	if (size != 1 && size != 2 && size != 4 && size != 8) {
		lp_errf(c->err, c->errlen, "'%s' is %llu bytes; only 1, 2, 4 or 8 can be fetched",
			c->what, (unsigned long long)size);
		return -EOPNOTSUPP;
	}
	ty->size = (unsigned)size;
	c->prog->is_signed = ty->is_signed;
	if (c->mode == ACC_VALUE)
		return 0; /* the value is acc: see the header */
	ret = fetch_emit(c, FETCH_OP_LOAD, 0, 0);
	if (!ret)
		c->prog->ops[c->prog->n_ops - 1].size = (uint8_t)size;
	return ret;
}
