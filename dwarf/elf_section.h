/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elf_section.h - find an ELF section by its name.
 */
#ifndef LP_DWARF_ELF_SECTION_H
#define LP_DWARF_ELF_SECTION_H

#include <gelf.h>

/* Any section type, for elf_section_by_name(). */
#define ELF_SECTION_ANY_TYPE ((GElf_Word)-1)

/**
 * elf_section_by_name - the first section called @name of type @type
 * @elf: the file
 * @name: e.g. ".eh_frame"
 * @type: SHT_* or ELF_SECTION_ANY_TYPE; a section of that name and another
 *	type (a hostile or odd file) is passed over
 * @sh: receives its header when found; may be NULL
 *
 * Return: the section, or NULL.
 */
Elf_Scn *elf_section_by_name(Elf *elf, const char *name, GElf_Word type, GElf_Shdr *sh);

#endif /* LP_DWARF_ELF_SECTION_H */
