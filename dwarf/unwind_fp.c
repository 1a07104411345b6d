// SPDX-License-Identifier: GPL-2.0
/*
 * unwind_fp.c - does a module keep frame pointers? Judged from the prologues
 * of a sample of its functions, once per module (--call-graph auto).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include "dwarf/unwind.h"
#include "dwarf/unwind_internal.h"

/* A function symbol worth sampling: defined, and long enough for a prologue. */
static bool fp_candidate(Dwfl_Module *mod, int i, GElf_Addr *addr)
{
	GElf_Sym sym;
	GElf_Word shndx;
	const char *name = dwfl_module_getsym_info(mod, i, &sym, addr, &shndx, NULL, NULL);

	return name && GELF_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_shndx != SHN_UNDEF &&
	       sym.st_size >= 8;
}

/*
 * Does the code at @addr set up a frame: [endbr64;] push %rbp, then
 * mov %rsp,%rbp within the next few bytes? gcc -O2 schedules other
 * instructions between the two, so they need not be adjacent.
 */
static bool has_fp_prologue(Dwfl_Module *mod, GElf_Addr addr)
{
	static const unsigned char endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
	static const unsigned char mov_rsp_rbp[3] = {0x48, 0x89, 0xe5};
	unsigned char b[24];
	size_t len = sizeof(b), i = 0;

	/* a function at the very end of its segment: settle for fewer bytes */
	while (unwind_module_read(mod, addr, b, len) != 0) {
		len /= 2;
		if (len < 4)
			return false;
	}
	if (len >= 8 && !memcmp(b, endbr64, sizeof(endbr64)))
		i = sizeof(endbr64);
	if (b[i] != 0x55) /* push %rbp */
		return false;
	for (i++; i + sizeof(mov_rsp_rbp) <= len; i++) {
		if (!memcmp(b + i, mov_rsp_rbp, sizeof(mov_rsp_rbp)))
			return true;
	}
	return false;
}

static int module_fp_percent(Dwfl_Module *mod)
{
	int nsyms = dwfl_module_getsymtab(mod);
	int cand = 0, stride, seen = 0, sampled = 0, with_fp = 0;
	GElf_Addr addr;

	if (nsyms <= 0)
		return -ENODATA;
	for (int i = 1; i < nsyms; i++)
		cand += fp_candidate(mod, i, &addr);
	if (!cand)
		return -ENODATA;
	/* spread the samples over the whole table, not its first functions */
	stride = (cand + FP_SAMPLE_FUNCS - 1) / FP_SAMPLE_FUNCS;
	for (int i = 1; i < nsyms && sampled < FP_SAMPLE_FUNCS; i++) {
		if (!fp_candidate(mod, i, &addr))
			continue;
		if (seen++ % stride)
			continue;
		sampled++;
		with_fp += has_fp_prologue(mod, addr);
	}
	return sampled ? with_fp * 100 / sampled : -ENODATA;
}

/**
 * unwinder__module_has_fp - how much of a module keeps frame pointers
 * @u: the unwinder
 * @pid: the process
 * @addr: any address inside the module
 *
 * Return: the percentage (0..100) of sampled functions with a frame
 * prologue, or a negative errno.
 */
int unwinder__module_has_fp(struct unwinder *u, int pid, uint64_t addr)
{
	Dwfl_Module *mod;
	struct proc *p;
	void **userdata;
	int err, pct;

	if (!u)
		return -EINVAL;
	err = unwind_proc_get(u, pid, addr, &p);
	if (err)
		return err;
	mod = dwfl_addrmodule(p->dwfl, addr);
	if (!mod)
		return -ENOENT;
	/*
	 * The module's userdata is ours (libdwfl's proc find_elf leaves it
	 * alone) and dies with the module, so the cache needs no freeing:
	 * 0 = not computed yet, else percentage + 1.
	 */
	if (!dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL))
		return -ENOENT;
	if (*userdata)
		return (int)(uintptr_t)*userdata - 1;
	pct = module_fp_percent(mod);
	if (pct >= 0)
		*userdata = (void *)(uintptr_t)(pct + 1);
	return pct;
}
