// SPDX-License-Identifier: GPL-2.0
/*
 * sym_dwarf.c - file:line and inline chains with libdw, the way
 * addr2line -i does it: the CU that holds the address, its line table,
 * then the nest of DW_TAG_inlined_subroutine scopes up to the subprogram.
 */
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dwarf/dwarf_aux.h"
#include "sym_dwarf.h"

#define MAX_CU_SCAN 1000000 /* bound the fallback walk over a corrupt unit list */

/* A stripped file may have its DWARF in the distro's build-id debug tree. */
static Dwarf *open_debug_file(struct elf_symtab *t)
{
	Elf *dbg = elf_symtab__debug_elf(t);

	return dbg ? dwarf_begin_elf(dbg, DWARF_C_READ, NULL) : NULL;
}

Dwarf *sym_dwarf__dwarf(struct elf_symtab *t)
{
	if (!t->dwarf_tried) {
		t->dwarf_tried = true;
		t->dwarf = dwarf_begin_elf(t->elf, DWARF_C_READ, NULL);
		if (!t->dwarf)
			t->dwarf = open_debug_file(t);
	}
	return t->dwarf;
}

static bool find_cu(Dwarf *dw, uint64_t vaddr, Dwarf_Die *cu)
{
	Dwarf_Off off = 0, next;
	size_t hsize, n = 0;

	if (dwarf_addrdie(dw, vaddr, cu))
		return true;
	/* no (or incomplete) .debug_aranges, as clang emits: ask each unit */
	while (n++ < MAX_CU_SCAN && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		if (dwarf_offdie(dw, off + hsize, cu) && dwarf_haspc(cu, vaddr) > 0)
			return true;
		if (next <= off)
			break;
		off = next;
	}
	return false;
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	/* inlined and out-of-line instances carry their name in the abstract origin */
	if (!dwarf_attr_integrate(die, DW_AT_name, &attr))
		return NULL;
	return dwarf_formstring(&attr);
}

static void call_site(Dwarf_Die *die, Dwarf_Files *files, size_t nfiles, const char **file,
		      int *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;

	*file = NULL;
	*line = 0;
	if (dwarf_attr(die, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &v) == 0 && files &&
	    v < nfiles)
		*file = dwarf_filesrc(files, v, NULL, NULL);
	if (dwarf_attr(die, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &v) == 0 &&
	    v <= 0x7fffffff)
		*line = (int)v;
}

/*
 * dwarf_getscopes() walks the CU's DIE tree from its root for every
 * address, tens of microseconds in a big CU. Instead each CU gets, once,
 * a sorted array of its functions' pc ranges; a lookup then descends only
 * the one function that holds the address.
 */
struct fn_range {
	uint64_t lo, hi;
	Dwarf_Off die;
};

struct sym_cu_index {
	Dwarf_Off cu;
	struct fn_range *fns;
	size_t n;
};

#define MAX_DIE_WALK 10000000 /* bound sibling walks over corrupt DIE trees */
#define MAX_DEPTH    64
#define MAX_CHAIN    64

struct collect {
	struct fn_range *fns;
	size_t n, cap;
	size_t steps;
	bool oom;
};

static void collect_fns(Dwarf_Die *parent, int depth, struct collect *c)
{
	Dwarf_Die child;

	if (depth > 8 || dwarf_child(parent, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);

		if (++c->steps > MAX_DIE_WALK || c->oom)
			return;
		if (tag == DW_TAG_subprogram) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;

			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
				if (hi <= lo)
					continue;
				if (c->n == c->cap) {
					size_t ncap = c->cap ? c->cap * 2 : 64;
					struct fn_range *nf = realloc(c->fns, ncap * sizeof(*nf));

					if (!nf) {
						c->oom = true;
						return;
					}
					c->fns = nf;
					c->cap = ncap;
				}
				c->fns[c->n].lo = lo;
				c->fns[c->n].hi = hi;
				c->fns[c->n].die = dwarf_dieoffset(&child);
				c->n++;
			}
		} else if (tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
			   tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
			   tag == DW_TAG_module) {
			/* C++ and Fortran nest definitions in scopes */
			collect_fns(&child, depth + 1, c);
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int fn_cmp(const void *a, const void *b)
{
	const struct fn_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * The index of the CU @cu, built on first use; NULL on allocation failure.
 * @off keys it: the skeleton's offset for split DWARF, whose DIEs (@cu)
 * live in another file with offsets of their own.
 */
static struct sym_cu_index *cu_index(struct elf_symtab *t, Dwarf_Off off, Dwarf_Die *cu)
{
	size_t lo = 0, hi = t->ncu_idx;
	struct collect c = {0};
	struct sym_cu_index *ix;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->cu_idx[mid].cu < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < t->ncu_idx && t->cu_idx[lo].cu == off)
		return &t->cu_idx[lo];

	if (t->ncu_idx == t->cu_idx_cap) {
		size_t ncap = t->cu_idx_cap ? t->cu_idx_cap * 2 : 64;

		ix = realloc(t->cu_idx, ncap * sizeof(*ix));
		if (!ix)
			return NULL;
		t->cu_idx = ix;
		t->cu_idx_cap = ncap;
	}
	collect_fns(cu, 0, &c);
	if (c.oom) {
		free(c.fns);
		return NULL;
	}
	if (c.n)
		qsort(c.fns, c.n, sizeof(*c.fns), fn_cmp);
	/* sorted insert: CUs are few, lookups many */
	memmove(&t->cu_idx[lo + 1], &t->cu_idx[lo], (t->ncu_idx - lo) * sizeof(*t->cu_idx));
	t->ncu_idx++;
	ix = &t->cu_idx[lo];
	ix->cu = off;
	ix->fns = c.fns;
	ix->n = c.n;
	return ix;
}

void sym_dwarf__release(struct elf_symtab *t)
{
	for (size_t i = 0; i < t->ncu_idx; i++)
		free(t->cu_idx[i].fns);
	free(t->cu_idx);
	t->cu_idx = NULL;
	t->ncu_idx = t->cu_idx_cap = 0;
}

/* Append the inlined_subroutine DIEs holding @pc below @die, outermost first. */
static void descend(Dwarf_Die *die, uint64_t pc, Dwarf_Die *chain, int *n, int depth)
{
	Dwarf_Die child;
	size_t steps = 0;

	if (depth > MAX_DEPTH || dwarf_child(die, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);

		if (++steps > MAX_DIE_WALK)
			return;
		if ((tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block) &&
		    dwarf_haspc(&child, pc) > 0) {
			if (tag == DW_TAG_inlined_subroutine && *n < MAX_CHAIN)
				chain[(*n)++] = child;
			/* sibling scopes do not overlap: only this one can hold pc */
			descend(&child, pc, chain, n, depth + 1);
			return;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

/* Fill @chain innermost first, ending with the subprogram; 0 if not found. */
static int chain_indexed(struct elf_symtab *t, Dwarf *dw, Dwarf_Off key, Dwarf_Die *cu, uint64_t pc,
			 Dwarf_Die *chain)
{
	struct sym_cu_index *ix = cu_index(t, key, cu);
	Dwarf_Die outer[MAX_CHAIN];
	size_t lo = 0, hi;
	int n = 0, k;

	if (!ix)
		return 0;
	hi = ix->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix->fns[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = 0; k < 4 && lo > 0; k++, lo--) {
		const struct fn_range *f = &ix->fns[lo - 1];

		if (pc >= f->lo && pc < f->hi)
			break;
	}
	if (k == 4 || lo == 0 || !dwarf_offdie(dw, ix->fns[lo - 1].die, &outer[0]))
		return 0;
	n = 1;
	descend(&outer[0], pc, outer, &n, 0);
	for (k = 0; k < n; k++)
		chain[k] = outer[n - 1 - k];
	return n;
}

/* The slow general path: whatever dwarf_getscopes finds. */
static int chain_getscopes(Dwarf_Die *cu, uint64_t pc, Dwarf_Die *chain)
{
	Dwarf_Die *scopes = NULL, *dies = NULL;
	int nscopes, ndies, i, n = 0;

	nscopes = dwarf_getscopes(cu, pc, &scopes);
	for (i = 0; i < nscopes; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
			break;
	}
	/* the physical nest of DIEs from the innermost function outwards */
	ndies = i < nscopes ? dwarf_getscopes_die(&scopes[i], &dies) : -1;
	for (i = 0; i < ndies && n < MAX_CHAIN; i++) {
		int tag = dwarf_tag(&dies[i]);

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
			chain[n++] = dies[i];
		if (tag == DW_TAG_subprogram)
			break;
	}
	free(scopes);
	free(dies);
	return n;
}

int sym_dwarf__frames(struct elf_symtab *t, uint64_t vaddr, struct sym_line_frame *out, int max)
{
	Dwarf_Die cu, unit, chain[MAX_CHAIN];
	Dwarf *udw;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	const char *file = NULL;
	int line = 0, nchain, n = 0, i;
	Dwarf_Line *dl;
	Dwarf *dw;

	if (max < 1)
		return 0;
	dw = sym_dwarf__dwarf(t);
	if (!dw || !find_cu(dw, vaddr, &cu))
		return 0;
	dl = dwarf_getsrc_die(&cu, vaddr);
	if (dl) {
		file = dwarf_linesrc(dl, NULL, NULL);
		if (dwarf_lineno(dl, &line))
			line = 0;
	}

	unit = cu;
	udw = dwarf_aux__split_unit(dw, &unit);
	nchain = chain_indexed(t, udw, dwarf_dieoffset(&cu), &unit, vaddr, chain);
	if (nchain <= 0)
		nchain = chain_getscopes(&unit, vaddr, chain);
	if (nchain > 0 && dwarf_getsrcfiles(&unit, &files, &nfiles))
		files = NULL;

	for (i = 0; i < nchain; i++) {
		int tag = dwarf_tag(&chain[i]);

		if (tag == DW_TAG_subprogram) {
			out[n].func = die_name(&chain[i]);
			out[n].file = file;
			out[n].line = line;
			out[n].inlined = false;
			n++;
			break;
		}
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		/* keep the last slot for the real function */
		if (n < max - 1) {
			out[n].func = die_name(&chain[i]);
			out[n].file = file;
			out[n].line = line;
			out[n].inlined = true;
			n++;
		}
		/* the caller's position is where this copy was inlined */
		call_site(&chain[i], files, nfiles, &file, &line);
	}
	/* no subprogram around it (or no scopes): still give the line */
	if (n == 0 || out[n - 1].inlined) {
		if (n == max)
			n--;
		out[n].func = NULL;
		out[n].file = file;
		out[n].line = line;
		out[n].inlined = false;
		n++;
	}
	return n;
}
