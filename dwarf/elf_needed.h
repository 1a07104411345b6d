/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elf_needed.h - the libraries an ELF file needs (DT_NEEDED), found where
 * the dynamic linker would look for them: the file's run path ($ORIGIN
 * too), then the system's library directories.
 */
#ifndef LP_DWARF_ELF_NEEDED_H
#define LP_DWARF_ELF_NEEDED_H

#include <stdbool.h>
#include <gelf.h>

/*
 * Called per DT_NEEDED entry, in order: @name as written, @found the file
 * it resolves to (NULL when none is found). Nonzero stops the walk.
 */
typedef int (*elf_needed_fn)(const char *name, const char *found, void *ctx);

/**
 * elf_needed_each - call @fn for each library @elf needs
 * @elf: the open file
 * @path: where it is (its folder is $ORIGIN)
 * @fn: the callback
 * @ctx: passed to @fn
 *
 * DT_RUNPATH is searched, else DT_RPATH; LD_LIBRARY_PATH and ld.so.cache
 * are not (the system's directories stand in for the cache). A name with
 * a '/' is taken as it is.
 *
 * Return: what @fn returned last (0 when it never stopped the walk).
 */
int elf_needed_each(Elf *elf, const char *path, elf_needed_fn fn, void *ctx);

/**
 * elf_needed_uretprobe_unsafe - does a library @elf needs (directly) make
 * the process unsafe for return probes: a C++ runtime, or a library of
 * which elf_uretprobe_unsafe() is true (libruby, with its fibers)
 * @elf: the open file
 * @path: where it is
 *
 * For a program not started yet: what it will map at its start.
 */
bool elf_needed_uretprobe_unsafe(Elf *elf, const char *path);

/**
 * elf_path_interp - the dynamic linker the file at @path names (PT_INTERP)
 * @path: an ELF executable
 * @out: the interpreter's path
 * @cap: room in @out
 *
 * Return: 0, or -ENOENT for a static or unreadable file (or a path that
 * does not fit, or does not start with '/').
 */
int elf_path_interp(const char *path, char *out, size_t cap);

#endif /* LP_DWARF_ELF_NEEDED_H */
