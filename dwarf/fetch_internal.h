/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fetch_internal.h - what the fetch_*.c files share; not an API.
 */
#ifndef LP_DWARF_FETCH_INTERNAL_H
#define LP_DWARF_FETCH_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <gelf.h>
#include <elfutils/libdw.h>

#include "dwarf/fetch_compile.h"

#define MAX_TYPE_DEPTH 32 /* typedef/const chains and nested names we follow */
#define X86_DWARF_RSP  7
#define X86_DWARF_MAX  16 /* rax..r15 and the return address; xmm is not supported */

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

int fetch_apply_step(struct fc *c, const struct probe_step *st, Dwarf_Die *t, const char *prev);
bool fetch_die_type(Dwarf_Die *die, Dwarf_Die *type);
int fetch_emit_location(struct fc *c, Dwarf_Op *ops, size_t n, Dwarf_Die *func, bool at_entry,
			const char *var, int depth);

int fetch_emit_reg(struct fc *c, unsigned reg);
int fetch_emit(struct fc *c, unsigned op, unsigned reg, int64_t arg);
int fetch_finish(struct fc *c, Dwarf_Die *t, struct fetch_type *ty);
const char *fetch_op_name(unsigned atom);
int fetch_step_deref(struct fc *c, Dwarf_Die *t, const char *what);

#endif
