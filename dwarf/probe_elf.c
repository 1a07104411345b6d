// SPDX-License-Identifier: GPL-2.0
/*
 * probe_elf.c - ELF helpers for probe resolution: vaddr to file offset, the
 * function symbols of .symtab/.dynsym, Go detection.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include "dwarf/dwarf_aux.h"
#include "dwarf/elf_section.h"
#include "dwarf/probe_resolve.h"
#include "dwarf/probe_internal.h"

/* ---- ELF helpers --------------------------------------------------- */

int elf_vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *offset)
{
	size_t i, n;

	if (elf_getphdrnum(elf, &n))
		return -ENOENT;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) {
			*offset = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

static int symtab_add(struct symtab *t, const char *name, uint64_t value, uint64_t size)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct fsym *s = realloc(t->syms, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		t->syms = s;
		t->cap = cap;
	}
	t->syms[t->n++] = (struct fsym){name, value, size};
	return 0;
}

/*
 * Call @fn for every named symbol of .symtab and .dynsym until it returns
 * non-zero; that value is returned (0 when every symbol was seen).
 */
static int for_each_symbol(Elf *elf, int (*fn)(const GElf_Sym *sym, const char *name, void *arg),
			   void *arg)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		n = data->d_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;
			int r;

			if (!gelf_getsym(data, (int)i, &sym))
				break;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			r = fn(&sym, name, arg);
			if (r)
				return r;
		}
	}
	return 0;
}

static int add_function(const GElf_Sym *sym, const char *name, void *arg)
{
	int type = GELF_ST_TYPE(sym->st_info);

	if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym->st_shndx == SHN_UNDEF ||
	    !sym->st_value)
		return 0;
	return symtab_add(arg, name, sym->st_value, sym->st_size) ? -ENOMEM : 0;
}

/* Defined functions of .symtab and .dynsym. */
int probe_symtab_load(Elf *elf, struct symtab *t)
{
	return for_each_symbol(elf, add_function, t);
}

static int is_named(const GElf_Sym *sym, const char *name, void *want)
{
	(void)sym;
	return strcmp(name, want) == 0;
}

static bool has_symbol(Elf *elf, const char *want)
{
	return for_each_symbol(elf, is_named, (void *)want) == 1;
}

bool elf_is_go(Elf *elf)
{
	if (!elf)
		return false;
	if (elf_section_by_name(elf, ".go.buildinfo", ELF_SECTION_ANY_TYPE, NULL) ||
	    elf_section_by_name(elf, ".note.go.buildid", ELF_SECTION_ANY_TYPE, NULL))
		return true;
	return has_symbol(elf, "runtime.main");
}

bool elf_is_program(Elf *elf)
{
	GElf_Ehdr eh;
	size_t i, n;

	if (!elf || !gelf_getehdr(elf, &eh))
		return false;
	if (eh.e_type == ET_EXEC)
		return true;
	if (eh.e_type != ET_DYN || elf_getphdrnum(elf, &n))
		return false;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		GElf_Dyn dyn;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_DYNAMIC)
			continue;
		d = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz, ELF_T_DYN);
		for (int k = 0; d && gelf_getdyn(d, k, &dyn) && dyn.d_tag != DT_NULL; k++)
			if (dyn.d_tag == DT_FLAGS_1)
				return (dyn.d_un.d_val & DF_1_PIE) != 0;
	}
	return false;
}

/*
 * What code that unwinds a thread's stack (a C++ throw, a Rust panic) or
 * switches it (coroutines: ucontext, boost.context, libco, Ruby's fibers)
 * imports, or,
 * for a runtime of its own, defines. libc defines swapcontext and
 * libgcc_s _Unwind_RaiseException for every C program that maps them: a
 * definition of those counts only in a static executable (which has them
 * only when it uses them).
 */
struct stack_movers {
	bool is_static;
};

static int names_stack_mover(const GElf_Sym *sym, const char *name, void *arg)
{
	static const char *const runtime[] = {"__cxa_throw",   "__gxx_personality_v0",
					      "jump_fcontext", "ontop_fcontext",
					      "coctx_swap",    "coroutine_transfer"};
	static const char *const libc_provided[] = {"_Unwind_RaiseException", "swapcontext",
						    "setcontext"};
	const struct stack_movers *m = arg;
	bool imported = sym->st_shndx == SHN_UNDEF;

	for (size_t i = 0; i < sizeof(runtime) / sizeof(runtime[0]); i++)
		if (!strcmp(name, runtime[i]))
			return 1;
	for (size_t i = 0; i < sizeof(libc_provided) / sizeof(libc_provided[0]); i++)
		if (!strcmp(name, libc_provided[i]) && (imported || m->is_static))
			return 1;
	return 0;
}

/* A DT_NEEDED entry of @elf names a C++ runtime; *@any: it has one at all. */
static bool needs_cxx_runtime(Elf *elf, bool *any)
{
	Elf_Scn *scn = NULL;

	*any = false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Dyn dyn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < data->d_size / sh.sh_entsize; i++) {
			const char *lib;

			if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag != DT_NEEDED)
				continue;
			*any = true;
			lib = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (lib && lib_is_cxx_runtime(lib))
				return true;
		}
	}
	return false;
}

bool lib_is_cxx_runtime(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libstdc++.so", 12) || !strncmp(base, "libc++.so", 9);
}

bool elf_uretprobe_unsafe(Elf *elf)
{
	struct stack_movers m;
	bool needs_libs;

	if (!elf || elf_kind(elf) != ELF_K_ELF)
		return false;
	if (needs_cxx_runtime(elf, &needs_libs))
		return true;
	/* no loader and no libraries: everything it runs is in it */
	m.is_static =
		!needs_libs && !elf_section_by_name(elf, ".interp", ELF_SECTION_ANY_TYPE, NULL);
	return for_each_symbol(elf, names_stack_mover, &m) == 1;
}

bool elf_path_uretprobe_unsafe(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool yes;
	Elf *elf;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	yes = elf && elf_uretprobe_unsafe(elf);
	if (elf)
		elf_end(elf);
	close(fd);
	return yes;
}
