// SPDX-License-Identifier: GPL-2.0
/*
 * fetch_compile.c - value expressions to fetch programs, from DWARF.
 *
 * The location expression of a variable at the probe address is turned
 * into a few register/offset/dereference ops (perf's
 * convert_variable_location does the same for kprobe fetch args), then
 * member offsets and element sizes from the type DIEs are appended.
 * Anything that cannot be expressed that way is refused with the exact
 * DWARF op, so the user knows to try another probe point. Locations are
 * in fetch_location.c, types and member steps in fetch_steps.c.
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
#include "dwarf/debuginfo.h"
#include "dwarf/dwarf_aux.h"
#include "dwarf/fetch_compile.h"
#include "dwarf/fetch_internal.h"
#include "user/util/util.h"

const char *fetch_op_name(unsigned atom)
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

int fetch_emit(struct fc *c, unsigned op, unsigned reg, int64_t arg)
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
		lp_errf(c->err, c->errlen, "'%s' needs more than %d fetch ops", c->what,
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

int fetch_emit_reg(struct fc *c, unsigned reg)
{
	if (reg > X86_DWARF_MAX) {
		lp_errf(c->err, c->errlen,
			"'%s' lives in DWARF register %u at 0x%llx (not a general register); "
			"unsupported",
			c->what, reg, (unsigned long long)c->addr);
		return -EOPNOTSUPP;
	}
	return fetch_emit(c, FETCH_OP_REG, reg, 0);
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

/* The innermost subprogram among @scopes, or NULL. */
static Dwarf_Die *enclosing_func(Dwarf_Die *scopes, int n)
{
	int k;

	for (k = 0; k < n; k++)
		if (dwarf_tag(&scopes[k]) == DW_TAG_subprogram)
			return &scopes[k];
	return NULL;
}

/* `$retval`: the return register, typed by @func's return type. */
static int compile_retval(struct fc *c, Dwarf_Die *func, Dwarf_Die *type)
{
	int ret;

	if (!func || !fetch_die_type(func, type)) {
		lp_errf(c->err, c->errlen, "'%s' returns nothing",
			func && dwarf_aux__die_name(func) ? dwarf_aux__die_name(func)
							  : "the function");
		return -EINVAL;
	}
	ret = fetch_emit(c, FETCH_OP_RETVAL, 0, 0);
	c->mode = ACC_VALUE;
	return ret;
}

/* A variable in scope: its location at the probe address, and its type. */
static int compile_var(struct fc *c, const char *name, Dwarf_Die *scopes, int n, Dwarf_Die *func,
		       bool at_entry, Dwarf_Die *type)
{
	Dwarf_Attribute a;
	Dwarf_Die var;
	Dwarf_Op *ops;
	size_t nops;
	int ret;

	if (!find_var(scopes, n, name, &var)) {
		lp_errf(c->err, c->errlen, "no variable '%s' in scope at 0x%llx%s%s", name,
			(unsigned long long)c->addr, func ? " in " : "",
			func && dwarf_aux__die_name(func) ? dwarf_aux__die_name(func) : "");
		return -ENOENT;
	}
	if (!fetch_die_type(&var, type)) {
		lp_errf(c->err, c->errlen, "'%s' has no type", name);
		return -EOPNOTSUPP;
	}
	if (!dwarf_attr(&var, DW_AT_location, &a)) {
		lp_errf(c->err, c->errlen, "'%s' is optimized out%s", name,
			dwarf_hasattr(&var, DW_AT_const_value) ? " (a constant)" : "");
		return -ENODATA;
	}
	ret = dwarf_getlocation_addr(&a, c->addr, &ops, &nops, 1);
	if (ret <= 0 || !nops) {
		lp_errf(c->err, c->errlen, "'%s' is optimized out at 0x%llx; try another line",
			name, (unsigned long long)c->addr);
		return -ENODATA;
	}
	return fetch_emit_location(c, ops, nops, func, at_entry, name, 0);
}

/*
 * The member, element and dereference steps after the base, then the final
 * load. Messages name the expression as far as it got.
 */
static int compile_steps(struct fc *c, const struct probe_expr *e, Dwarf_Die *type,
			 struct fetch_type *ty)
{
	char prev[PROBE_NAME_MAX * 2];
	size_t i;
	int k, ret = 0;

	snprintf(prev, sizeof(prev), "%s", e->base);
	for (i = 0; i < e->n_steps && !ret; i++) {
		size_t l = strlen(prev);

		ret = fetch_apply_step(c, &e->steps[i], type, prev);
		if (e->steps[i].kind == PROBE_STEP_INDEX)
			snprintf(prev + l, sizeof(prev) - l, "[%lld]",
				 (long long)e->steps[i].index);
		else
			snprintf(prev + l, sizeof(prev) - l, "%s%s",
				 e->steps[i].kind == PROBE_STEP_ARROW ? "->" : ".",
				 e->steps[i].field);
	}
	for (k = 0; k < e->n_deref && !ret; k++)
		ret = fetch_step_deref(c, type, prev);
	if (!ret)
		ret = fetch_finish(c, type, ty);
	if (!ret)
		ret = fetch_emit(c, FETCH_OP_END, 0, 0);
	return ret;
}

/*
 * A bare `ret` without DWARF: the return value is in rax whatever the
 * type (bpftrace's retval works on stripped code the same way), so it is
 * read as an unsigned 64-bit integer. Anything more needs the type.
 */
static int compile_bare_retval(struct fc *c, const struct probe_expr *e, struct fetch_type *ty)
{
	int ret;

	if (!e->is_ret || e->n_steps || e->n_deref)
		return -ENODATA;
	ret = fetch_emit(c, FETCH_OP_RETVAL, 0, 0);
	if (!ret)
		ret = fetch_emit(c, FETCH_OP_END, 0, 0);
	ty->kind = FETCH_UINT;
	ty->size = 8;
	ty->is_signed = false;
	snprintf(ty->name, sizeof(ty->name), "unsigned long (rax, no DWARF)");
	c->prog->is_signed = false;
	return ret;
}

static int compile(struct fc *c, const struct probe_expr *e, struct fetch_type *ty)
{
	Dwarf_Die *scopes = NULL, *func, type;
	Dwarf_Addr lo = 0;
	bool at_entry = false;
	int n, ret;

	n = dwarf_aux__phys_scopes(c->dbg, c->addr, &scopes);
	if (n <= 0) {
		lp_errf(c->err, c->errlen, "no DWARF scope covers 0x%llx",
			(unsigned long long)c->addr);
		return -ENODATA;
	}
	func = enclosing_func(scopes, n);
	if (func && (dwarf_entrypc(func, &lo) == 0 || dwarf_lowpc(func, &lo) == 0))
		at_entry = lo == c->addr;
	if (e->is_ret)
		ret = compile_retval(c, func, &type);
	else
		ret = compile_var(c, e->base, scopes, n, func, at_entry, &type);
	if (!ret)
		ret = compile_steps(c, e, &type, ty);
	free(scopes);
	return ret;
}

int fetch_compile(const char *binary_path, uint64_t probe_vaddr, const struct probe_expr *e,
		  struct fetch_prog *out, struct fetch_type *type_out, char *err, size_t errlen)
{
	struct fetch_type local = {0};
	struct fetch_type *ty = type_out ? type_out : &local;
	struct fc c = {0};
	struct debuginfo_file dbgfile = {.fd = -1};
	int fd, ret;

	memset(out, 0, sizeof(*out));
	memset(ty, 0, sizeof(*ty));
	if (!binary_path || !e) {
		lp_errf(err, errlen, "no binary or expression");
		return -EINVAL;
	}
	fd = open(binary_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		lp_errf(err, errlen, "cannot open '%s': %s", binary_path, strerror(errno));
		return ret;
	}
	elf_version(EV_CURRENT);
	c.elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!c.elf || elf_kind(c.elf) != ELF_K_ELF) {
		lp_errf(err, errlen, "'%s' is not an ELF file", binary_path);
		ret = -ENOEXEC;
		goto out;
	}
	/* a stripped binary's DWARF may be in a debug file or on debuginfod */
	c.dbg = debuginfo__dwarf_begin(c.elf, binary_path, &dbgfile);
	if (!c.dbg) {
		c.prog = out;
		c.what = e->text;
		c.err = err;
		c.errlen = errlen;
		ret = compile_bare_retval(&c, e, ty);
		if (ret != -ENODATA)
			goto out;
		lp_errf(err, errlen, "'%s' has no DWARF; build with -g to read '%s'", binary_path,
			e->text);
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
	debuginfo__file_close(&dbgfile);
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
