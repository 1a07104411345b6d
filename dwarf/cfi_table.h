/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cfi_table.h - compact unwind tables from DWARF CFI (.eh_frame, else
 * .debug_frame), one per ELF file, for an unwinder that has only the
 * registers rip, rsp and rbp and can read user memory.
 *
 * A table is a sorted array of rows. Row i covers the ELF virtual
 * addresses [rows[i].pc, rows[i + 1].pc); the last row ends the last FDE
 * and is always CFI_CFA_NONE. Every row says how to find the canonical
 * frame address (CFA) and the caller's rbp; on x86-64 the return address
 * is always at CFA - 8 (rows where CFI says otherwise are
 * CFI_CFA_FALLBACK). Addresses no FDE covers are CFI_CFA_NONE: the
 * unwinder then uses frame pointers there.
 *
 * Only libdw's types; nothing here knows about BPF. x86-64 only.
 */
#ifndef LP_DWARF_CFI_TABLE_H
#define LP_DWARF_CFI_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <gelf.h>

enum cfi_cfa_rule {
	CFI_CFA_NONE = 0,  /* no FDE here: use frame pointers */
	CFI_CFA_RSP,	   /* CFA = rsp + cfa_off */
	CFI_CFA_RBP,	   /* CFA = rbp + cfa_off */
	CFI_CFA_DEREF_RBP, /* CFA = *(rbp + cfa_off) (gcc's stack realignment in main) */
	/*
	 * A PLT entry: CFA = rsp + cfa_off, plus 8 once rip & 15 >= rbp_off
	 * (the push in the middle of each 16-byte stub; the threshold is 11
	 * in .plt and 10 in some linkers' layouts).
	 */
	CFI_CFA_PLT,
	/*
	 * A signal trampoline (__restore_rt): rsp points at the ucontext;
	 * the interrupted rsp is at rsp + cfa_off, its rip 8 bytes above,
	 * its rbp at rsp + rbp_off. The next pc is exact, not a return
	 * address.
	 */
	CFI_CFA_SIGNAL,
	CFI_CFA_END,	  /* the return address is undefined: outermost frame (_start, clone) */
	CFI_CFA_FALLBACK, /* CFI that is none of the above: do not trust a table here */
};

enum cfi_rbp_rule {
	CFI_RBP_SAME = 0, /* the caller's rbp is the current rbp */
	CFI_RBP_AT_CFA,	  /* saved at CFA + rbp_off */
	CFI_RBP_UNDEF,	  /* clobbered: unknown in the caller */
};

/* One row: 12 bytes, so a table of a few hundred thousand rows fits a map. */
struct cfi_row {
	uint32_t pc;	  /* first ELF virtual address of the row */
	int32_t cfa_off;  /* see enum cfi_cfa_rule */
	int16_t rbp_off;  /* CFI_RBP_AT_CFA: offset from the CFA; PLT: threshold */
	uint8_t cfa_rule; /* enum cfi_cfa_rule */
	uint8_t rbp_rule; /* enum cfi_rbp_rule */
};

#define CFI_MAX_LOADS 16

struct cfi_table {
	struct cfi_row *rows;
	size_t n_rows;
	size_t n_fdes;	    /* FDEs read */
	size_t n_fallback;  /* rows marked CFI_CFA_FALLBACK */
	size_t n_bad_fdes;  /* FDEs skipped (bad encoding, range, rules) */
	uint64_t build_ns;  /* CLOCK_MONOTONIC time taken to build */
	const char *source; /* ".eh_frame" or ".debug_frame" */
	/* PT_LOAD segments, to turn a mapping's file offset into a vaddr */
	size_t n_loads;
	struct {
		uint64_t vaddr, offset, filesz;
	} loads[CFI_MAX_LOADS];
};

/**
 * cfi_table__build - build the unwind table of an ELF image
 * @elf: an open ELF handle (file or memory); not consumed
 * @out: on success set to a malloc'd table, free with cfi_table__free()
 *
 * Reads .eh_frame (with .eh_frame_hdr if present), or .debug_frame if
 * there is no .eh_frame. FDEs with encodings or ranges that make no
 * sense are skipped and counted, never trusted.
 *
 * Return: 0, or a negative errno: -ENOENT (no CFI at all), -EINVAL (not
 * an x86-64 ELF, or CFI that libdw cannot read), -E2BIG (more rows than
 * a table may hold), -ENOMEM.
 */
int cfi_table__build(Elf *elf, struct cfi_table **out);

/**
 * cfi_table__build_path - cfi_table__build() for the ELF file at @path
 * @path: file to open
 * @out: as cfi_table__build()
 *
 * Return: as cfi_table__build(), or the -errno of open().
 */
int cfi_table__build_path(const char *path, struct cfi_table **out);

/**
 * cfi_table__free - free a table; NULL is fine
 * @t: the table
 */
void cfi_table__free(struct cfi_table *t);

/**
 * cfi_table__lookup - the row that covers an ELF virtual address
 * @t: the table
 * @vaddr: the address
 *
 * Return: the row, or NULL when @vaddr is below the first row or past the
 * last (the caller treats NULL as CFI_CFA_NONE).
 */
const struct cfi_row *cfi_table__lookup(const struct cfi_table *t, uint64_t vaddr);

/**
 * cfi_table__offset_to_vaddr - ELF virtual address of a file offset
 * @t: the table (its PT_LOAD list)
 * @offset: offset in the file, e.g. a mapping's offset
 * @vaddr: set on success
 *
 * Return: 0, or -ENOENT when no PT_LOAD holds @offset.
 */
int cfi_table__offset_to_vaddr(const struct cfi_table *t, uint64_t offset, uint64_t *vaddr);

#endif /* LP_DWARF_CFI_TABLE_H */
