/* SPDX-License-Identifier: GPL-2.0 */
/*
 * probe_prove_internal.h - what probe_prove.c and probe_ehframe.c share; not an API.
 */
#ifndef LP_DWARF_PROBE_PROVE_INTERNAL_H
#define LP_DWARF_PROBE_PROVE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <gelf.h>
#include <elfutils/libdw.h>

#define MAX_DECODE_SPAN	  (16 << 20) /* a function larger than this is not code */
#define MAX_SYMBOL_NEST	  64	     /* symbols that may start before and cover an address */
#define X86_RSP_DWARF_REG 7
#define MAX_INSN_BYTES	  15

struct range {
	uint64_t start, end; /* [start, end) */
	bool entry_cfa;	     /* FDEs: at start the CFA is rsp + 8 ([rsp] is the return address) */
};

struct probe_prover {
	Elf *elf;
	Dwarf *dbg;
	struct range *fdes;
	size_t n_fdes;
	struct range *syms;
	size_t n_syms;
	/* a boundary reached from an anchor: sites sorted by address decode once */
	uint64_t memo_anchor, memo_pos;
};

/**
 * probe_parse_eh_frame - the FDE ranges of .eh_frame into @p->fdes
 * @buf: the section's bytes
 * @size: their length
 * @vaddr: the section's address (pc-relative encodings)
 * @cap: the capacity of @p->fdes, grown as needed
 *
 * Entries that cannot be read are skipped; a length running past the
 * section (or the terminator) ends the parse, keeping what came before.
 * Return: 0, or -ENOMEM.
 */
int probe_parse_eh_frame(struct probe_prover *p, const uint8_t *buf, size_t size, uint64_t vaddr,
			 size_t *cap);

/**
 * probe_ranges_push - append [@s, @e) to the array *@v of *@n ranges
 * @cap: its capacity, grown (doubled) as needed
 * @entry_cfa: whether the range starts with the return address at [rsp]
 *
 * Return: 0, or -ENOMEM (the array is unchanged).
 */
int probe_ranges_push(struct range **v, size_t *n, size_t *cap, uint64_t s, uint64_t e,
		      bool entry_cfa);

#endif
