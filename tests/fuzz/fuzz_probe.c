/*
 * fuzz_probe.c - libFuzzer harness for probe resolution and the boundary
 * prover (dwarf/probe_*.c, dwarf/x86_decode.c) on mutated ELF files: the
 * input is written to a memfd and resolved like a binary of a target, with
 * specs taken from its own (mutated) symbol and line tables: FUNC,
 * FUNC+OFF and FILE:LINE. Besides crashes and sanitizer reports, it aborts
 * when the resolver hands out an address that the prover does not accept
 * as an instruction boundary, or a function entry that is not one: those
 * addresses would get a uprobe.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gelf.h>
#include <elfutils/libdw.h>

#include "dwarf/probe_prove.h"
#include "dwarf/probe_resolve.h"

#define MAX_FUNCS 12
#define MAX_LINES 12

struct names {
	char funcs[MAX_FUNCS][64];
	size_t n_funcs;
	char lines[MAX_LINES][96];
	size_t n_lines;
};

static void collect_funcs(Elf *e, struct names *nm)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn)) && nm->n_funcs < MAX_FUNCS) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < d->d_size / sh.sh_entsize && nm->n_funcs < MAX_FUNCS; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    !s.st_value)
				continue;
			n = elf_strptr(e, sh.sh_link, s.st_name);
			if (n && *n && strlen(n) < sizeof(nm->funcs[0]) && !strpbrk(n, " \t,:+()"))
				strcpy(nm->funcs[nm->n_funcs++], n);
		}
	}
}

static void collect_lines(Elf *e, struct names *nm)
{
	Dwarf *dbg = dwarf_begin_elf(e, DWARF_C_READ, NULL);
	Dwarf_Off off = 0, next;
	size_t hsize;

	if (!dbg)
		return;
	while (nm->n_lines < MAX_LINES &&
	       dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Lines *lines;
		size_t n;

		if (dwarf_offdie(dbg, off + hsize, &cu) && dwarf_getsrclines(&cu, &lines, &n) == 0)
			for (size_t i = 0; i < n && nm->n_lines < MAX_LINES; i += 1 + n / 6) {
				Dwarf_Line *l = dwarf_onesrcline(lines, i);
				const char *src = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
				const char *base = src ? strrchr(src, '/') : NULL;
				int ln;

				base = base ? base + 1 : src;
				if (base && strchr(base, '.') && !strchr(base, ':') &&
				    dwarf_lineno(l, &ln) == 0 && ln > 0 && strlen(base) < 80)
					snprintf(nm->lines[nm->n_lines++], sizeof(nm->lines[0]),
						 "%s:%d", base, ln);
			}
		off = next;
	}
	dwarf_end(dbg);
}

/* Every site the resolver hands out must be a proven boundary. */
static void check_target(struct probe_prover *pv, const struct probe_target *t, bool entry)
{
	for (size_t i = 0; i < t->n_sites; i++)
		if (probe_prove_boundary(pv, t->sites[i].vaddr, NULL) != 0)
			abort();
	for (size_t i = 0; i < t->n_ret_sites; i++)
		if (probe_prove_boundary(pv, t->ret_sites[i].vaddr, NULL) != 0)
			abort();
	if (entry && probe_prove_entry(pv, t->entry_vaddr, NULL) != 0)
		abort();
}

static void resolve(const char *path, struct probe_prover *pv, const char *text)
{
	struct probe_spec spec;
	struct probe_target t;
	char err[512];

	if (probe_spec_parse(text, &spec, err, sizeof(err)))
		return;
	if (probe_resolve(path, &spec, &t, err, sizeof(err)) == 0) {
		check_target(pv, &t, spec.kind == PROBE_SPEC_FUNC && !spec.has_offset);
		probe_target_free(&t);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct names nm = {0};
	struct probe_prover *pv = NULL;
	char path[64], spec[128];
	Elf *e;
	Dwarf *dbg;
	int fd = memfd_create("fuzz_probe", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(fd);
		return 0;
	}
	dbg = dwarf_begin_elf(e, DWARF_C_READ, NULL);
	collect_funcs(e, &nm);
	collect_lines(e, &nm);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (probe_prover__new(e, dbg, &pv) == 0) {
		for (size_t i = 0; i < nm.n_funcs; i++) {
			resolve(path, pv, nm.funcs[i]);
			for (int off = 1; off < 8; off += 3) {
				snprintf(spec, sizeof(spec), "%s+%d", nm.funcs[i], off);
				resolve(path, pv, spec);
			}
		}
		for (size_t i = 0; i < nm.n_lines; i++)
			resolve(path, pv, nm.lines[i]);
		probe_prover__free(pv);
	}
	if (dbg)
		dwarf_end(dbg);
	elf_end(e);
	close(fd);
	return 0;
}
