/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elf_dynsym.h - for the runtime finders' tests: a symbol and its section
 * read with plain libelf from .dynsym only, independently of liveprof's
 * own ELF code, to check what it found against.
 */
#ifndef LP_TESTS_UNIT_ELF_DYNSYM_H
#define LP_TESTS_UNIT_ELF_DYNSYM_H

#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

static bool dynsym(const char *path, const char *name, GElf_Sym *out, GElf_Shdr *sec)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	bool found = false;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 1; d && i < sh.sh_size / sh.sh_entsize; i++) {
			const char *n;

			if (!gelf_getsym(d, i, out))
				break;
			n = elf_strptr(elf, sh.sh_link, out->st_name);
			if (n && !strcmp(n, name) && out->st_shndx != SHN_UNDEF) {
				found = gelf_getshdr(elf_getscn(elf, out->st_shndx), sec) != NULL;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

#endif
