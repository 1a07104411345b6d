// SPDX-License-Identifier: GPL-2.0
/*
 * elf_section.c - find an ELF section by its name.
 */
#include <string.h>

#include "dwarf/elf_section.h"

Elf_Scn *elf_section_by_name(Elf *elf, const char *name, GElf_Word type, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || (type != ELF_SECTION_ANY_TYPE && sh.sh_type != type))
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && !strcmp(n, name)) {
			if (out)
				*out = sh;
			return scn;
		}
	}
	return NULL;
}
