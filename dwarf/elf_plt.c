// SPDX-License-Identifier: GPL-2.0
/*
 * elf_plt.c - names for the PLT stubs of an x86-64 ELF, "func@plt", as
 * perf and objdump give them. A call into a shared library passes through
 * its stub, and a sample on the stub's jump is a frame of its own: with
 * no name it would be an anonymous address in the middle of the stack.
 */
#include <stdbool.h>
#include <string.h>

#include "dwarf/elf_plt.h"
#include "dwarf/elf_section.h"

#define PLT_ENTRY 16 /* x86-64 stubs, lazy (.plt) and IBT (.plt.sec) alike */

struct plt_sections {
	Elf_Scn *rela;	  /* .rela.plt */
	GElf_Shdr rela_sh;
	GElf_Shdr plt_sh; /* .plt, or .plt.sec when there is one */
	bool have_plt, sec;
};

static void find_sections(Elf *elf, struct plt_sections *ps)
{
	memset(ps, 0, sizeof(*ps));
	ps->rela = elf_section_by_name(elf, ".rela.plt", SHT_RELA, &ps->rela_sh);
	/* IBT builds call through .plt.sec; .plt then holds the lazy-binding stubs */
	if (elf_section_by_name(elf, ".plt.sec", SHT_PROGBITS, &ps->plt_sh))
		ps->have_plt = ps->sec = true;
	else if (elf_section_by_name(elf, ".plt", SHT_PROGBITS, &ps->plt_sh))
		ps->have_plt = true;
}

int elf_plt__for_each(Elf *elf, elf_plt_fn fn, void *ctx)
{
	GElf_Ehdr eh;
	struct plt_sections ps;
	Elf_Data *rela, *dsym;
	Elf_Scn *dynsym;
	GElf_Shdr dsh;
	size_t n;

	if (!gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64)
		return 0;
	find_sections(elf, &ps);
	if (!ps.rela || !ps.have_plt || !ps.rela_sh.sh_entsize)
		return 0;
	rela = elf_getdata(ps.rela, NULL);
	dynsym = elf_getscn(elf, ps.rela_sh.sh_link);
	if (!rela || !dynsym || !gelf_getshdr(dynsym, &dsh) || !(dsym = elf_getdata(dynsym, NULL)))
		return 0;
	n = rela->d_size / ps.rela_sh.sh_entsize;
	for (size_t i = 0; i < n; i++) {
		/* the lazy .plt starts with the resolver's own stub */
		uint64_t addr = ps.plt_sh.sh_addr + (i + !ps.sec) * PLT_ENTRY;
		const char *name;
		GElf_Rela r;
		GElf_Sym sym;
		int err;

		if (addr + PLT_ENTRY > ps.plt_sh.sh_addr + ps.plt_sh.sh_size)
			break;
		if (!gelf_getrela(rela, (int)i, &r) || GELF_R_TYPE(r.r_info) != R_X86_64_JUMP_SLOT)
			continue;
		if (!gelf_getsym(dsym, (int)GELF_R_SYM(r.r_info), &sym))
			continue;
		name = elf_strptr(elf, dsh.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		err = fn(ctx, addr, PLT_ENTRY, name);
		if (err)
			return err;
	}
	return 0;
}
