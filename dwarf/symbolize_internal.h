/* SPDX-License-Identifier: GPL-2.0 */
/*
 * symbolize_internal.h - shared between symbolize.c and sym_procs.c only;
 * not an API. The symbolizer's state and its per-process mapping tables.
 */
#ifndef LP_DWARF_SYMBOLIZE_INTERNAL_H
#define LP_DWARF_SYMBOLIZE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "elf_symtab.h"
#include "kallsyms.h"
#include "symbolize.h"

#define REFRESH_MIN_NS (50 * 1000 * 1000ull) /* re-read maps on a miss at most this often */
#define VDSO_MAX       (1u << 20)

/* Where a mapping's file came from; several keys may share one ELF. */
struct sym_obj {
	uint64_t dev, ino; /* 0 when unknown (vdso) */
	struct elf_symtab *et;
	struct sym_obj *next;
};

struct sym_map {
	uint64_t start, end, offset;
	uint64_t dev, ino;     /* st_dev encoding (makedev), 0 for no file */
	const char *path;      /* interned */
	const char *module;    /* interned basename, or "[anon]"/"[vsyscall]"... */
	struct elf_symtab *et; /* NULL: anonymous, or the file did not open */
};

struct sym_proc {
	int pid;
	bool dead;
	uint64_t last_refresh;
	struct sym_map *maps;
	size_t nmaps;
	struct sym_mapping *exported;
	struct perf_map *jit; /* its JIT's names (perf_map.h), read at first need */
};

struct rframe {
	const char *func, *file;
	int line;
	bool inlined;
};

/* A cached result: @et == NULL marks an empty slot. */
struct rentry {
	const struct elf_symtab *et;
	uint64_t off;
	uint32_t n;
	struct rframe first; /* innermost frame, stored inline for the common n == 1 */
	struct rframe *rest; /* n - 1 frames, NULL if n == 1 */
};

struct symbolizer {
	bool want_lines;

	char **strs; /* intern set, open addressing */
	size_t strs_cap, strs_n;

	struct sym_obj *objs;
	struct elf_symtab **ets; /* each opened ELF once, owned here */
	size_t nets, ets_cap;

	struct sym_proc **procs; /* open addressing by pid */
	size_t procs_cap, procs_n;
	struct sym_proc *last_proc;

	struct rentry *cache;
	size_t cache_cap, cache_n;

	struct kallsyms *ksyms;
	int ksyms_err; /* 0 = not tried yet or loaded */
	bool ksyms_tried;

	uint64_t maps_generation; /* bumped when any process's mappings change */
	uint64_t jit_generation;  /* bumped when a JIT's perf map gained lines */
};

/**
 * sym_intern - @str copied once into the symbolizer's string set
 *
 * Return: the interned copy (lives as long as @s), or NULL without memory.
 */
const char *sym_intern(struct symbolizer *s, const char *str);

/**
 * sym_proc_free - free the mapping table of @p and @p itself
 */
void sym_proc_free(struct sym_proc *p);

/**
 * sym_proc_find - the known process @pid, or NULL
 */
struct sym_proc *sym_proc_find(struct symbolizer *s, int pid);

/**
 * sym_find_map - the mapping of @pid holding @addr, re-reading the maps once on a miss
 * @out: receives the mapping, or NULL when none holds @addr
 *
 * A @pid not seen before is added first (symbolizer__add_pid()).
 *
 * Return: 0, or a negative errno when @pid's maps cannot be read.
 */
int sym_find_map(struct symbolizer *s, int pid, uint64_t addr, const struct sym_map **out);

#endif
