// SPDX-License-Identifier: GPL-2.0
/*
 * alloc_site.c - where an entry-only allocator probe (free) goes.
 *
 * The kernel emulates a few instructions under a uprobe (a push of a
 * register, relative jumps and calls, conditional ones) and single-steps
 * the others out of line, which takes a second trap. glibc's free()
 * starts "test %rdi,%rdi; je": probed at its entry, every free paid the
 * single step, 12 us of the 14 us its probe cost on this VM (the alloc
 * probe-cost rounds: free 13.1-13.9 us, malloc's entry and return probes
 * together 1.4-4.2 us, both at pushes). The test writes only the flags,
 * and the jump after it runs on every call with the same registers, so
 * the probe goes on the jump. Only for a probe without a return probe
 * (those go on entries) and whose program reads only argument registers.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwarf/probe_prove.h"
#include "dwarf/probe_resolve.h"
#include "user/session/alloc_internal.h"

/* The link-time address of function @name in @elf's symbol tables, or 0. */
static uint64_t func_vaddr(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(data, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    !s.st_value || s.st_shndx == SHN_UNDEF)
				continue;
			n = elf_strptr(elf, sh.sh_link, s.st_name);
			if (n && !strcmp(n, name))
				return s.st_value;
		}
	}
	return 0;
}

/* Is @p (@len bytes long) "test r,r": 85 /r, register to register, REX.W or not? */
static bool is_test_reg_reg(const uint8_t *p, int len)
{
	int rex = (p[0] & 0xf0) == 0x40;

	return len == rex + 2 && p[rex] == 0x85 && (p[rex + 1] & 0xc0) == 0xc0;
}

/* The offset in @elf's function at @vaddr of a conditional jump right
 * after a leading "test r,r", proven an instruction boundary; else 0. */
static uint64_t jump_after_test(Elf *elf, int fd, uint64_t vaddr)
{
	struct probe_prover *pp = NULL;
	struct x86_insn first, second;
	uint8_t code[32];
	uint64_t off, at = 0;

	if (elf_vaddr_to_offset(elf, vaddr, &off) ||
	    pread(fd, code, sizeof(code), (off_t)off) != (ssize_t)sizeof(code) ||
	    x86_insn_info(code, sizeof(code), &first) < 0 || !is_test_reg_reg(code, first.len) ||
	    x86_insn_info(code + first.len, sizeof(code) - (size_t)first.len, &second) < 0 ||
	    second.flow != X86_FLOW_JCC)
		return 0;
	/* decoded from the function's FDE, not from the symbol alone */
	if (!probe_prover__new(elf, NULL, &pp) && !probe_prove_entry(pp, vaddr, NULL) &&
	    !probe_prove_boundary(pp, vaddr + (uint64_t)first.len, NULL))
		at = (uint64_t)first.len;
	probe_prover__free(pp);
	return at;
}

uint64_t alloc_entry_offset(const char *libc, const char *func)
{
	uint64_t vaddr, at = 0;
	int fd = open(libc, O_RDONLY | O_CLOEXEC);
	Elf *elf;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && (vaddr = func_vaddr(elf, func)))
		at = jump_after_test(elf, fd, vaddr);
	elf_end(elf);
	close(fd);
	return at;
}

uint64_t alloc_site_at(struct alloc_prof *a, const char *libc, const char *func)
{
	struct alloc_site *e;
	struct stat st;

	if (stat(libc, &st))
		return 0;
	for (int i = 0; i < a->n_sites; i++) {
		e = &a->sites[i];
		if (e->dev == (uint64_t)st.st_dev && e->ino == (uint64_t)st.st_ino &&
		    !strcmp(e->func, func))
			return e->at;
	}
	if (a->n_sites < ALLOC_SITES)
		e = &a->sites[a->n_sites++];
	else
		e = &a->sites[a->next_site++ % ALLOC_SITES];
	*e = (struct alloc_site){.dev = (uint64_t)st.st_dev,
				 .ino = (uint64_t)st.st_ino,
				 .at = alloc_entry_offset(libc, func),
				 .func = func};
	return e->at;
}
