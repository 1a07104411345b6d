/*
 * fuzz_srcfunc.c - libFuzzer harness for the reader behind annotate and
 * the Source view (dwarf/src_func.c, x86_insn_info): open the input as an
 * in-memory ELF image, then decode every symbol's function with its lines,
 * inlined calls and scopes, and list each instruction. A memory image has
 * no separate debug file, so nothing here touches the disk or the network.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/elf_symtab.h"
#include "dwarf/src_func.h"

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
	/* look up once so that the symbol table is loaded */
	elf_symtab__lookup(t, 0);
	for (size_t i = 0; i < t->nsyms && i < 32; i++) {
		struct src_func *f = NULL;
		char buf[160];

		if (src_func__open(t, t->syms[i].addr, &f))
			continue;
		for (size_t k = 0; k < f->n_insns; k++) {
			src_func__format_insn(f, &f->insns[k], buf, sizeof(buf));
			src_func__insn_at(f, f->insns[k].vaddr + f->insns[k].len - 1);
		}
		src_func__free(f);
	}
	elf_symtab__free(t);
	return 0;
}
