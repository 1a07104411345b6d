/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sym_dwarf.h - address to file:line and inline chain, with libdw, for an
 * ELF already opened by elf_symtab.
 */
#ifndef LP_DWARF_SYM_DWARF_H
#define LP_DWARF_SYM_DWARF_H

#include <stdbool.h>
#include <stdint.h>

#include "elf_symtab.h"

struct sym_line_frame {
	const char *func; /* DWARF name, NULL if unknown; owned by the Dwarf */
	const char *file; /* source path, NULL if unknown; owned by the Dwarf */
	int line;
	bool inlined;
};

/**
 * sym_dwarf__frames - the source position and inline chain of @vaddr
 * @t: the ELF; its Dwarf is opened on first use (from the file itself, or
 *     /usr/lib/debug/.build-id/xx/yyyy.debug) and kept in @t
 * @vaddr: an ELF vaddr of @t
 * @out: filled innermost first, the last entry being the concrete function
 *       (inlined == false); when the chain is longer than @max the
 *       innermost inlined frames are dropped, never the real function
 * @max: capacity of @out, at least 1
 *
 * Strings point into the Dwarf and live as long as @t.
 *
 * Return: number of frames, 0 if there is no DWARF for @vaddr.
 */
int sym_dwarf__frames(struct elf_symtab *t, uint64_t vaddr, struct sym_line_frame *out, int max);

/**
 * sym_dwarf__dwarf - the DWARF of @t, opened on first use from the file
 * itself or its /usr/lib/debug/.build-id/xx/yyyy.debug file
 *
 * Return: the Dwarf (owned by @t, ended by elf_symtab__free()), or NULL
 * if there is none.
 */
Dwarf *sym_dwarf__dwarf(struct elf_symtab *t);

/**
 * sym_dwarf__release - free the per-CU indexes kept in @t (not the Dwarf)
 */
void sym_dwarf__release(struct elf_symtab *t);

#endif /* LP_DWARF_SYM_DWARF_H */
