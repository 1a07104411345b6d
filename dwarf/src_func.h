/* SPDX-License-Identifier: GPL-2.0 */
/*
 * src_func.h - one function as annotate and the Source view show it: its
 * instructions, each with its source line (the call line for inlined
 * code), its inlined function, its nesting of lexical blocks and inlined
 * scopes and its control flow; and its source text, wherever it is.
 */
#ifndef LP_DWARF_SRC_FUNC_H
#define LP_DWARF_SRC_FUNC_H

#include <stdbool.h>
#include <stdint.h>

#include "dwarf/debuginfo.h"
#include "dwarf/elf_symtab.h"
#include "dwarf/probe_resolve.h"

#define SRC_MAX_FUNC_BYTES (1u << 20) /* a "function" larger than this is not one */

struct src_insn {
	uint64_t vaddr;
	uint8_t len;
	uint8_t bytes[15];
	enum x86_flow flow;
	uint64_t target; /* of a relative jump or call, else 0 */
	int line;	/* in the function's own file (the call line for inlined code); 0 unknown */
	char *inl_func; /* innermost inlined function here, NULL if none */
	char *inl_file; /* and its position, NULL if none */
	int inl_line;
	int depth; /* lexical blocks and inlined scopes around it, inside the function */
};

struct src_func {
	char *name;
	uint64_t lo, hi;	/* ELF vaddrs, [lo, hi) */
	char *file;		/* the function's source file as DWARF names it, NULL without */
	char *comp_dir;		/* DW_AT_comp_dir of its unit, NULL if none */
	const char *debug_from; /* "binary", "build-id", "debuglink", "debuginfod"; NULL: none */
	char build_id[2 * ELF_BUILD_ID_MAX + 1];
	struct src_insn *insns;
	size_t n_insns;
	int first_line, last_line; /* of the instructions in its own file; 0 without DWARF */
	bool decode_error;	   /* bytes the decoder could not read end the listing */

	/* the source text, when src_func__load_source() found it */
	char *src_path;
	char where[DEBUGINFO_WHERE_MAX]; /* the places looked at */
	char *text;			 /* the file, NUL at each line end */
	char **lines;			 /* lines[i] is line i + 1 */
	int n_lines;
	bool mismatch; /* the file has fewer lines than the code refers to */
};

/**
 * src_func__open - the function of @t that holds @vaddr, decoded
 * @t: the ELF (its DWARF is opened from wherever it is, see elf_symtab.h)
 * @out: set to the new function, free with src_func__free()
 *
 * Bounds come from the symbol table (the debug file's when the binary is
 * stripped). Lines, inlined functions and scopes come from DWARF; without
 * DWARF they are 0 and NULL.
 *
 * Return: 0, -ENOENT when no symbol covers @vaddr or its bytes are not in
 * the file, -ENOMEM.
 */
int src_func__open(struct elf_symtab *t, uint64_t vaddr, struct src_func **out);

/**
 * src_func__load_source - find and read the source file of @f
 *
 * Looks where debuginfo__find_source() does and records it in f->where.
 *
 * Return: 0, -ENOENT when no place had it (or @f has no DWARF), -ENOMEM.
 */
int src_func__load_source(struct src_func *f);

/**
 * src_func__insn_at - the instruction of @f that holds @vaddr, or NULL
 */
const struct src_insn *src_func__insn_at(const struct src_func *f, uint64_t vaddr);

/**
 * src_func__format_insn - an objdump-free listing of one instruction:
 * its bytes, and for control flow what it does ("jcc -> 0x1234 (loop)")
 */
void src_func__format_insn(const struct src_func *f, const struct src_insn *in, char *buf,
			   size_t len);

/** src_func__free - free @f; NULL is a no-op */
void src_func__free(struct src_func *f);

#endif /* LP_DWARF_SRC_FUNC_H */
