/*
 * fuzz_cfi.c - libFuzzer harness for the unwind-table builder
 * (dwarf/cfi_table.c): open the input as an in-memory ELF image, build
 * its table from .eh_frame or .debug_frame, and check what every
 * consumer relies on: rows strictly sorted, the last one CFI_CFA_NONE,
 * lookups that land on the row covering the address.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <gelf.h>

#include "dwarf/cfi_table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfi_table *t = NULL;
	void *image = malloc(size ? size : 1);
	Elf *elf;

	if (!image)
		return 0;
	memcpy(image, data, size);
	elf_version(EV_CURRENT);
	elf = elf_memory(image, size);
	if (elf && cfi_table__build(elf, &t) == 0) {
		if (t->rows[t->n_rows - 1].cfa_rule != CFI_CFA_NONE)
			abort();
		for (size_t i = 1; i < t->n_rows; i++)
			if (t->rows[i - 1].pc >= t->rows[i].pc)
				abort();
		for (size_t i = 0; i + 1 < t->n_rows && i < 4096; i++)
			if (cfi_table__lookup(t, t->rows[i].pc) != &t->rows[i])
				abort();
		for (size_t i = 0; i < t->n_loads; i++) {
			uint64_t v;

			cfi_table__offset_to_vaddr(t, t->loads[i].offset, &v);
		}
		cfi_table__free(t);
	}
	if (elf)
		elf_end(elf);
	free(image);
	return 0;
}
