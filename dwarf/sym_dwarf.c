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

#include "sym_dwarf.h"

#define MAX_CU_SCAN 1000000 /* bound the fallback walk over a corrupt unit list */

/* A stripped file may have its DWARF in the distro's build-id debug tree. */
static Dwarf *open_debug_file(struct elf_symtab *t)
{
	char path[sizeof(t->build_id) + 64];
	Dwarf *dw;

	if (strlen(t->build_id) < 4)
		return NULL;
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", t->build_id,
		 t->build_id + 2);
	t->dbg_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (t->dbg_fd < 0)
		return NULL;
	t->dbg_elf = elf_begin(t->dbg_fd, ELF_C_READ, NULL);
	if (!t->dbg_elf)
		return NULL;
	dw = dwarf_begin_elf(t->dbg_elf, DWARF_C_READ, NULL);
	return dw;
}

static Dwarf *get_dwarf(struct elf_symtab *t)
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

int sym_dwarf__frames(struct elf_symtab *t, uint64_t vaddr, struct sym_line_frame *out, int max)
{
	Dwarf_Die cu, *scopes = NULL, *chain = NULL;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	const char *file = NULL;
	int line = 0, nscopes, nchain, n = 0, i;
	Dwarf_Line *dl;
	Dwarf *dw;

	if (max < 1)
		return 0;
	dw = get_dwarf(t);
	if (!dw || !find_cu(dw, vaddr, &cu))
		return 0;
	dl = dwarf_getsrc_die(&cu, vaddr);
	if (dl) {
		file = dwarf_linesrc(dl, NULL, NULL);
		if (dwarf_lineno(dl, &line))
			line = 0;
	}

	nscopes = dwarf_getscopes(&cu, vaddr, &scopes);
	for (i = 0; i < nscopes; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
			break;
	}
	/* the physical nest of DIEs from the innermost function outwards */
	nchain = i < nscopes ? dwarf_getscopes_die(&scopes[i], &chain) : -1;
	if (nchain > 0 && dwarf_getsrcfiles(&cu, &files, &nfiles))
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
	free(scopes);
	free(chain);
	return n;
}
