/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ruby_child.h - for the tests that read a live ruby child's memory: one
 * word of it, and where its libruby is and what liveprof makes of it.
 */
#ifndef LP_TESTS_UNIT_RUBY_CHILD_H
#define LP_TESTS_UNIT_RUBY_CHILD_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "dwarf/elf_symtab.h"
#include "dwarf/proc_maps.h"
#include "dwarf/ruby_runtime.h"

/* The word at @addr in @pid, 0 if it cannot be read. */
static uint64_t peek(pid_t pid, uint64_t addr)
{
	uint64_t v = 0;
	struct iovec l = {&v, sizeof(v)}, r = {(void *)(uintptr_t)addr, sizeof(v)};

	if (process_vm_readv(pid, &l, 1, &r, 1, 0) != sizeof(v))
		return 0;
	return v;
}

/* libruby as the child mapped it: its runtime and its load bias. */
static int find_libruby(pid_t pid, struct rb_runtime *rt, uint64_t *bias)
{
	struct pm_entry *m;
	size_t n;
	int ret = -ENOENT;
	char err[512];

	if (proc_maps__read(pid, false, &m, &n))
		return -ESRCH;
	for (size_t i = 0; i < n && ret; i++) {
		struct elf_symtab *t;
		uint64_t vaddr;

		if (!strstr(m[i].path, "/libruby") || elf_symtab__open_path(m[i].path, &t))
			continue;
		if (elf_symtab__offset_to_vaddr(t, m[i].offset, &vaddr) == 0 &&
		    ruby_runtime_find(m[i].path, rt, err, sizeof(err)) == 0) {
			*bias = m[i].start - vaddr;
			ret = 0;
		}
		elf_symtab__free(t);
	}
	proc_maps__free(m, n);
	return ret;
}

#endif
