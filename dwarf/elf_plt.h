/* SPDX-License-Identifier: GPL-2.0 */
/*
 * elf_plt.h - the PLT stubs of an x86-64 ELF, named "func@plt".
 */
#ifndef LP_DWARF_ELF_PLT_H
#define LP_DWARF_ELF_PLT_H

#include <gelf.h>
#include <stdint.h>

/* Called per stub: its address (a vaddr of the ELF), size and the name of
 * the function it jumps to; a non-zero return stops the walk with it. */
typedef int (*elf_plt_fn)(void *ctx, uint64_t addr, uint64_t size, const char *func);

/**
 * elf_plt__for_each - call @fn for every PLT stub of @elf
 * @elf: an x86-64 ELF with its section headers (anything else has none)
 * @fn: the callback
 * @ctx: passed to @fn
 *
 * The stubs are numbered as .rela.plt's R_X86_64_JUMP_SLOT entries: in
 * .plt.sec when the binary has one (IBT), else in .plt after its first
 * stub (the lazy-binding resolver). A stub that would lie outside its
 * section ends the walk: a hostile or broken file yields fewer names.
 *
 * Return: 0, or the first non-zero return of @fn.
 */
int elf_plt__for_each(Elf *elf, elf_plt_fn fn, void *ctx);

#endif
