// SPDX-License-Identifier: GPL-2.0
/*
 * elf_fde.c - function bounds from .eh_frame for code without symbols.
 *
 * A stripped binary has no .symtab and its .dynsym names only exported
 * functions; every other address would be a frame of its own. Compilers
 * emit one FDE per function (the unwinder needs it), so the FDE holding an
 * address gives the function's start and end, as perf and the OpenTelemetry
 * profiler group stripped code. The FDEs are those the probe prover reads
 * (probe_ehframe.c, bounded): libdw's CFI API gives one row's range, not
 * the FDE's, and leaks on broken files.
 */
#include <errno.h>
#include <stdlib.h>

#include "dwarf/elf_symtab.h"
#include "dwarf/probe_prove.h"

int elf_symtab__fde_range(struct elf_symtab *t, uint64_t vaddr, uint64_t *start, uint64_t *end)
{
	if (!t->fdes_tried) {
		t->fdes_tried = true;
		if (probe_prover__new(t->elf, NULL, &t->fdes))
			t->fdes = NULL;
	}
	if (!t->fdes)
		return -ENOENT;
	return probe_prover__fde(t->fdes, vaddr, start, end);
}
