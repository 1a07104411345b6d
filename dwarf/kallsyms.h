/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kallsyms.h - kernel text symbols from /proc/kallsyms, sorted.
 */
#ifndef LP_DWARF_KALLSYMS_H
#define LP_DWARF_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

struct ksym {
	uint64_t addr;
	const char *name;
	const char *module; /* "[kernel]" or "[modname]" */
};

struct kallsyms {
	struct ksym *syms;
	size_t n;
	char *text; /* the file's text, names point into it */
};

/**
 * kallsyms__load - read and sort the text symbols of @path
 * @path: normally "/proc/kallsyms"
 * @out: set to the table, free with kallsyms__free()
 *
 * Return: 0, -EPERM if every address reads as zero (kptr_restrict), or a
 * negative errno.
 */
int kallsyms__load(const char *path, struct kallsyms **out);

/**
 * kallsyms__lookup - the symbol at or below @addr; a symbol extends up to
 * the next one, the last one by at most one page
 *
 * Return: the symbol (owned by @k) or NULL.
 */
const struct ksym *kallsyms__lookup(const struct kallsyms *k, uint64_t addr);

/**
 * kallsyms__free - free a table, NULL is a no-op
 */
void kallsyms__free(struct kallsyms *k);

#endif /* LP_DWARF_KALLSYMS_H */
