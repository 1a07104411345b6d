/* SPDX-License-Identifier: GPL-2.0 */
/*
 * probe_prove.h - prove that a probe address is an instruction boundary
 * (and, for a return probe, a function entry) before a uprobe goes there.
 *
 * A uprobe writes an int3 over the first byte of what it takes to be an
 * instruction. In the middle of an instruction that byte is part of an
 * opcode, a displacement or an immediate: the target computes garbage or
 * dies. Symbol and line tables are not code and can be wrong (stripped,
 * corrupted, hand-written), so an address is only trusted once decoding
 * forward from a trusted start lands exactly on it. Trusted starts, best
 * first: the start of the .eh_frame FDE covering the address (the unwinder
 * of every C++ exception relies on it), the start of the DWARF subprogram
 * range covering it, the ELF symbol covering it. Symbols count only in a
 * file without .eh_frame: where there is one, compiled functions all have
 * FDEs, and a symbol that points outside them (or into the middle of one)
 * is wrong, not a function without CFI.
 */
#ifndef LP_DWARF_PROBE_PROVE_H
#define LP_DWARF_PROBE_PROVE_H

#include <stdbool.h>
#include <stdint.h>

#include <libelf.h>
#include <elfutils/libdw.h>

struct probe_prover;

enum prove_anchor {
	PROVE_ANCHOR_NONE = 0,
	PROVE_ANCHOR_FDE,    /* .eh_frame FDE start */
	PROVE_ANCHOR_DWARF,  /* DWARF subprogram (range) start */
	PROVE_ANCHOR_SYMBOL, /* ELF function symbol */
};

/* What a proof found, for the message when it failed. */
struct prove_result {
	enum prove_anchor anchor_kind;
	uint64_t anchor;     /* where decoding started */
	uint64_t insn_start; /* -EILSEQ: start of the instruction holding the address;
			      * -ENOEXEC: the instruction that could not be decoded */
	uint64_t func_start; /* probe_prove_entry -EILSEQ: where the function starts */
};

/**
 * probe_prover__new - index the trusted starts of one ELF file
 * @elf: the open file (must outlive the prover)
 * @dbg: its DWARF, or NULL
 * @out: the prover; free with probe_prover__free()
 *
 * Reads the FDEs of .eh_frame and the function symbols of .symtab and
 * .dynsym. Malformed tables are skipped, never trusted in part beyond the
 * entries that parse.
 *
 * Return: 0, or -ENOMEM.
 */
int probe_prover__new(Elf *elf, Dwarf *dbg, struct probe_prover **out);

/** probe_prover__free - release a prover; NULL is fine */
void probe_prover__free(struct probe_prover *p);

/**
 * probe_prover__fde - the .eh_frame FDE (one function) that covers @vaddr
 *
 * Return: 0 with [@start, @end), or -ENOENT.
 */
int probe_prover__fde(const struct probe_prover *p, uint64_t vaddr, uint64_t *start, uint64_t *end);

/**
 * probe_prove_boundary - is @vaddr the start of an instruction
 * @p: the prover
 * @vaddr: link-time address
 * @res: filled in (also on failure); may be NULL
 *
 * Decodes forward with x86_insn_length() from the best trusted start that
 * covers @vaddr.
 *
 * Return: 0 when decoding lands on @vaddr; -EILSEQ when @vaddr is inside
 * the instruction at @res->insn_start; -ENOEXEC when an instruction on the
 * way could not be decoded (@res->insn_start); -ENOENT when no trusted
 * start covers @vaddr; -ERANGE when the bytes are not in the file.
 */
int probe_prove_boundary(struct probe_prover *p, uint64_t vaddr, struct prove_result *res);

/**
 * probe_prove_entry - is @vaddr where a function starts
 * @p: the prover
 * @vaddr: link-time address (usually a symbol's value)
 * @res: filled in (also on failure); may be NULL
 *
 * A return probe is only safe where [rsp] is the return address: at the
 * first instruction of a function. @vaddr qualifies when an FDE or a DWARF
 * subprogram starts there, and the FDE's first row has the CFA at rsp + 8
 * (the cold part of a split function has an FDE too, entered by a jump).
 * In a file without .eh_frame or DWARF for @vaddr, it must be a symbol's
 * start.
 *
 * Return: 0; -EILSEQ when the FDE or subprogram covering @vaddr starts at
 * @res->func_start instead; -ENOENT when nothing knows a function there.
 */
int probe_prove_entry(struct probe_prover *p, uint64_t vaddr, struct prove_result *res);

/** probe_prove_anchor_name - "FDE", "DWARF subprogram", "symbol" or "none" */
const char *probe_prove_anchor_name(enum prove_anchor a);

#endif /* LP_DWARF_PROBE_PROVE_H */
