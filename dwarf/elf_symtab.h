/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elf_symtab.h - one ELF file (or in-memory image such as the vdso): its
 * build-id, PT_LOAD segments and a sorted function symbol table.
 */
#ifndef LP_DWARF_ELF_SYMTAB_H
#define LP_DWARF_ELF_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <gelf.h>
#include <elfutils/libdw.h>

#define ELF_BUILD_ID_MAX 64 /* bytes; GNU ld writes 20 */

struct probe_prover;

struct elf_sym {
	uint64_t addr; /* ELF vaddr */
	uint64_t size; /* 0 only if nothing sensible bounds it: matches addr exactly */
	const char *name;
};

struct elf_load {
	uint64_t offset, vaddr, filesz, memsz;
	uint32_t flags;
};

struct elf_symtab {
	int fd;	    /* -1 for a memory image */
	char *path; /* where the file is, for .gnu_debuglink; NULL if unknown */
	Elf *elf;
	void *image;				 /* owned memory image, NULL for a file */
	char build_id[2 * ELF_BUILD_ID_MAX + 1]; /* hex, "" if none */
	struct elf_load *loads;
	size_t nloads;

	/* loaded on first lookup */
	bool syms_loaded;
	bool from_dynsym;
	struct elf_sym *syms;
	size_t nsyms;
	char *names; /* pool the names point into */

	/* DWARF, opened on first line lookup */
	bool dwarf_tried;
	Dwarf *dwarf;
	int dbg_fd; /* separate debug file, -1 if none */
	bool dbg_tried;
	const char *dbg_how; /* where it came from: "build-id", "debuglink", "debuginfod" */
	Elf *dbg_elf;
	struct sym_cu_index *cu_idx; /* per-CU function ranges, sorted by CU offset */
	size_t ncu_idx, cu_idx_cap;

	/* .eh_frame's FDEs, read on the first address no symbol covers (elf_fde.c) */
	bool fdes_tried;
	struct probe_prover *fdes;
};

/**
 * elf_symtab__open_fd - read the ELF headers, PT_LOADs and build-id of @fd
 * @fd: an open file; owned by the result on success, untouched on failure
 * @out: set to the new object, free with elf_symtab__free()
 *
 * The file is read with read(2), not mmap, so a file truncated under us
 * gives read errors rather than SIGBUS.
 *
 * Return: 0, -ENOEXEC for something that is not a usable ELF, -ENOMEM.
 */
int elf_symtab__open_fd(int fd, struct elf_symtab **out);

/**
 * elf_symtab__open_path - open @path read-only and call elf_symtab__open_fd()
 *
 * Return: 0 or a negative errno.
 */
int elf_symtab__open_path(const char *path, struct elf_symtab **out);

/**
 * elf_symtab__open_mem - like elf_symtab__open_fd() for an image in memory
 * @image: malloc'd, owned by the result on success, untouched on failure
 *
 * Return: 0 or a negative errno.
 */
int elf_symtab__open_mem(void *image, size_t size, struct elf_symtab **out);

/**
 * elf_symtab__free - close the file and free everything, NULL is a no-op
 */
void elf_symtab__free(struct elf_symtab *t);

/**
 * elf_symtab__debug_elf - the separate debug file of @t
 *
 * Looked for once, in /usr/lib/debug/.build-id, through .gnu_debuglink
 * (t->path's directory, its .debug/, /usr/lib/debug + that directory), then
 * on the debuginfod servers of DEBUGINFOD_URLS (dwarf/debuginfo.h).
 *
 * Return: the debug file's Elf (owned by @t), or NULL if there is none.
 */
Elf *elf_symtab__debug_elf(struct elf_symtab *t);

/**
 * elf_symtab__fde_range - the bounds of the function holding @vaddr, from
 * the .eh_frame FDE that covers it
 *
 * For code no symbol names (stripped binaries): the compiler emits one FDE
 * per function, so its range groups the function's addresses.
 *
 * Return: 0 with [@start, @end), or -ENOENT when no FDE covers @vaddr.
 */
int elf_symtab__fde_range(struct elf_symtab *t, uint64_t vaddr, uint64_t *start, uint64_t *end);

/**
 * elf_symtab__set_path - tell @t where its file is (copied), for .gnu_debuglink
 *
 * Return: 0, or -ENOMEM.
 */
int elf_symtab__set_path(struct elf_symtab *t, const char *path);

/**
 * elf_symtab__offset_to_vaddr - translate a file offset into an ELF vaddr
 * through the PT_LOAD that contains it
 *
 * Return: 0 with @vaddr set, or -ENOENT if no PT_LOAD holds @off.
 */
int elf_symtab__offset_to_vaddr(const struct elf_symtab *t, uint64_t off, uint64_t *vaddr);

/**
 * elf_symtab__lookup - the function symbol that covers @vaddr
 *
 * Symbols come from .symtab, or .dynsym when there is no .symtab. An
 * address past the end of the nearest symbol gives NULL, never a
 * neighbour's name. Zero-size symbols are given the size up to the next
 * symbol or the end of their section, whichever is closer.
 *
 * Return: the symbol (owned by @t), or NULL.
 */
const struct elf_sym *elf_symtab__lookup(struct elf_symtab *t, uint64_t vaddr);

/**
 * elf_symtab__find_sym - a defined symbol of any type, by exact name
 * @t: the ELF
 * @name: the symbol's name, without a @version suffix
 * @sym: filled on success (st_value is an ELF vaddr)
 *
 * Unlike elf_symtab__lookup(), which knows functions only, this finds
 * data objects too (a variable whose address or value the caller needs).
 * It scans .symtab, then .dynsym, of the file itself; undefined entries
 * are skipped.
 *
 * Return: 0, or -ENOENT if no table defines @name.
 */
int elf_symtab__find_sym(struct elf_symtab *t, const char *name, GElf_Sym *sym);

/**
 * elf_symtab__sym_data - the bytes a data symbol holds in the file
 * @t: the ELF
 * @sym: a symbol from elf_symtab__find_sym()
 * @type: ELF_T_BYTE for bytes as they are, ELF_T_WORD / ELF_T_XWORD for an
 *        integer converted to the host's byte order
 *
 * The bytes are read from the PT_LOAD that holds the whole symbol; libelf
 * checks the range against the file.
 *
 * Return: the data (d_size == sym->st_size), or NULL if no PT_LOAD holds it.
 */
Elf_Data *elf_symtab__sym_data(struct elf_symtab *t, const GElf_Sym *sym, Elf_Type type);

#endif /* LP_DWARF_ELF_SYMTAB_H */
