/*
 * fuzz_elf.c - libFuzzer harness for the ELF/DWARF symbol reader
 * (dwarf/elf_symtab.c, dwarf/sym_dwarf.c): open the input as an in-memory
 * ELF image, then look up symbols and DWARF line/inline frames at the start,
 * middle and end of every PT_LOAD and at every symbol found.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/elf_symtab.h"
#include "dwarf/sym_dwarf.h"

static void probe(struct elf_symtab *t, uint64_t vaddr)
{
	struct sym_line_frame fr[8];

	elf_symtab__lookup(t, vaddr);
	sym_dwarf__frames(t, vaddr, fr, 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_symtab *t = NULL;
	void *image = malloc(size ? size : 1);

	if (!image)
		return 0;
	memcpy(image, data, size);
	if (elf_symtab__open_mem(image, size, &t) < 0) {
		free(image);
		return 0;
	}
	for (size_t i = 0; i < t->nloads && i < 16; i++) {
		const struct elf_load *l = &t->loads[i];
		uint64_t v;

		probe(t, l->vaddr);
		probe(t, l->vaddr + l->memsz / 2);
		probe(t, l->vaddr + l->memsz);
		if (elf_symtab__offset_to_vaddr(t, l->offset + l->filesz / 3, &v) == 0)
			probe(t, v);
	}
	for (size_t i = 0; i < t->nsyms && i < 64; i++) {
		probe(t, t->syms[i].addr);
		probe(t, t->syms[i].addr + t->syms[i].size / 2);
	}
	elf_symtab__free(t);
	return 0;
}
