/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fetch_compile.h - compile a value expression ("req->hdr.kind", "n",
 * "ret") at a probe address into a BPF fetch program (struct
 * fetch_prog of bpf/liveprof.h), from DWARF location expressions.
 *
 * Program semantics (the interpreter in BPF runs the ops in order; acc
 * starts at 0):
 *   - a program that ends in FETCH_OP_LOAD or FETCH_OP_STR reads memory at acc;
 *   - a program whose last op before FETCH_OP_END is not LOAD/STR means
 *     "the value is acc" (a variable living in a register, or "ret").
 *     acc then holds the whole 64-bit register: the daemon truncates it
 *     to fetch_type.size bytes and sign-extends when is_signed.
 * Every program ends with FETCH_OP_END, counted in n_ops, and has at most
 * FETCH_MAX_OPS ops. FETCH_OP_ADDR args are link-time addresses: BPF adds
 * the module's load bias. FETCH_OP_CFA args are offsets from the probe's sp.
 *
 * Include <linux/types.h> before this header (liveprof.h uses __u32).
 */
#ifndef LP_DWARF_FETCH_COMPILE_H
#define LP_DWARF_FETCH_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dwarf/probe_resolve.h"

/*
 * A fetch program as dwarf/ defines it. user/session translates it into
 * the BPF contract (struct lp_fetch_prog in bpf/liveprof.h), op by op, so
 * neither side includes the other's header.
 */
#define FETCH_MAX_OPS 16 /* ops in one program */
#define FETCH_STR_LEN 32 /* bytes kept of a captured C string */

enum fetch_opcode {
	FETCH_OP_END = 0,
	FETCH_OP_REG,	 /* acc = regs[reg] (DWARF register number) */
	FETCH_OP_ADD,	 /* acc += arg */
	FETCH_OP_DEREF,	 /* acc = *(u64 *)acc in the target's memory */
	FETCH_OP_ADDR,	 /* acc = arg + load bias of the probed module */
	FETCH_OP_CFA,	 /* acc = CFA at the probe (sp + arg) */
	FETCH_OP_LOAD,	 /* value = `size` bytes at acc (final) */
	FETCH_OP_STR,	 /* value = C string at acc (final, FETCH_STR_LEN) */
	FETCH_OP_RETVAL, /* acc = return value register (return sites only) */
};

struct fetch_op {
	enum fetch_opcode op;
	uint8_t size; /* LOAD: 1, 2, 4 or 8 */
	uint16_t reg; /* REG: DWARF register number */
	int64_t arg;
};

struct fetch_prog {
	uint32_t n_ops; /* including the final FETCH_OP_END */
	bool is_signed;
	struct fetch_op ops[FETCH_MAX_OPS];
};

enum fetch_kind {
	FETCH_INT = 1, /* signed integer */
	FETCH_UINT,    /* unsigned integer */
	FETCH_PTR,     /* any pointer but char *: print in hex */
	FETCH_ENUM,    /* print the enumerator name from enums[] */
	FETCH_CHAR,    /* a single char */
	FETCH_STRING,  /* char * or char[]: fetched with FETCH_OP_STR */
	FETCH_BOOL,
};

struct fetch_enumerator {
	int64_t value;
	char *name;
};

/* What a fetched value is. Owned by the caller; free with fetch_type_free(). */
struct fetch_type {
	enum fetch_kind kind;
	char name[128]; /* C spelling: "int", "struct request *", "enum color" */
	unsigned size;	/* bytes of the value: 1, 2, 4 or 8 (FETCH_STR_LEN for strings) */
	bool is_signed;
	size_t n_enums;
	struct fetch_enumerator *enums; /* FETCH_ENUM only */
};

/**
 * fetch_compile - compile @e at @probe_vaddr of @binary_path
 * @binary_path: ELF file with DWARF
 * @probe_vaddr: link-time address where the probe fires
 * @e: from probe_expr_parse()
 * @out: the program (caller's storage)
 * @type_out: the value's type; caller frees with fetch_type_free(). May be
 *            NULL.
 * @err: message on failure
 * @errlen: size of @err
 *
 * The variable is looked up in the scopes at @probe_vaddr (lexical blocks
 * and inlined instances first, then the function, then CU globals), and
 * its location taken at that address (location lists included).
 * Supported locations: DW_OP_reg*, DW_OP_regx, DW_OP_breg*, DW_OP_bregx,
 * DW_OP_fbreg (frame base DW_OP_call_frame_cfa via CFI, DW_OP_breg*,
 * DW_OP_reg*), DW_OP_addr, DW_OP_deref, DW_OP_plus_uconst and a final
 * DW_OP_stack_value. "ret" compiles to FETCH_OP_RETVAL (uretprobes and ret
 * instruction sites only).
 *
 * Return: 0; -ENODATA (no DWARF, or the variable is optimized out at
 * @probe_vaddr), -ENOENT (no such variable or member), -EOPNOTSUPP
 * (unsupported location or type), -E2BIG (program too long), -ENOMEM,
 * or -errno from opening the file. The message is in @err.
 */
int fetch_compile(const char *binary_path, uint64_t probe_vaddr, const struct probe_expr *e,
		  struct fetch_prog *out, struct fetch_type *type_out, char *err, size_t errlen);

/**
 * fetch_type_free - release a fetch_type's enumerator table
 * @t: the type; NULL is fine
 */
void fetch_type_free(struct fetch_type *t);

#endif /* LP_DWARF_FETCH_COMPILE_H */
