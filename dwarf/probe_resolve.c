// SPDX-License-Identifier: GPL-2.0
/*
 * probe_resolve.c - resolve a --trace spec to probe sites in one ELF file: function
 * entries and return sites, with the closest names offered when nothing
 * matches. Specs are parsed in probe_spec.c, lines resolved in
 * probe_lines.c, instructions decoded in x86_decode.c.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include "dwarf/dwarf_aux.h"
#include "dwarf/probe_resolve.h"
#include "dwarf/probe_internal.h"
#include "user/util/util.h"

/* ---- closest names -------------------------------------------------- */

static unsigned edit_distance(const char *a, const char *b)
{
	unsigned row[PROBE_NAME_MAX + 1];
	size_t la = strlen(a), lb = strlen(b), i, j;

	if (la > PROBE_NAME_MAX || lb > PROBE_NAME_MAX)
		return UINT_MAX;
	for (j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (i = 1; i <= la; i++) {
		unsigned diag = row[0];

		row[0] = (unsigned)i;
		for (j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* Keep the NEAR_N closest distinct names that are plausibly a typo of @want. */
void probe_near_offer(struct near *nr, const char *want, const char *name)
{
	unsigned d, limit = (unsigned)strlen(want) / 2 + 1;
	size_t i, pos;

	if (strlen(name) >= PROBE_NAME_MAX)
		return;
	for (i = 0; i < nr->n; i++)
		if (!strcmp(nr->name[i], name))
			return;
	d = edit_distance(want, name);
	if (d > limit)
		return;
	for (pos = 0; pos < nr->n && nr->dist[pos] <= d; pos++)
		;
	if (pos >= NEAR_N)
		return;
	for (i = nr->n < NEAR_N ? nr->n : NEAR_N - 1; i > pos; i--) {
		memcpy(nr->name[i], nr->name[i - 1], PROBE_NAME_MAX);
		nr->dist[i] = nr->dist[i - 1];
	}
	strcpy(nr->name[pos], name);
	nr->dist[pos] = d;
	if (nr->n < NEAR_N)
		nr->n++;
}

void probe_near_format(const struct near *nr, char *buf, size_t len)
{
	size_t i, off = 0;

	buf[0] = '\0';
	if (!nr->n)
		return;
	off += snprintf(buf, len, "; did you mean ");
	for (i = 0; i < nr->n && off < len; i++)
		off += snprintf(buf + off, len - off, "%s'%s'", i ? ", " : "", nr->name[i]);
}

/* ---- DWARF helpers -------------------------------------------------- */

/* Basename of file @idx of @cu's line-table file list, or "?". */
static const char *cu_file_name(Dwarf_Die *cu, Dwarf_Word idx)
{
	Dwarf_Files *files;
	size_t n;
	const char *s;

	if (dwarf_getsrcfiles(cu, &files, &n) || idx >= n)
		return "?";
	s = dwarf_filesrc(files, idx, NULL, NULL);
	return s ? probe_base_name(s) : "?";
}

struct inline_scan {
	const char *want;
	Dwarf_Addr ool_entry; /* an out-of-line DWARF instance, when no symbol had it */
	bool found_any;	      /* some subprogram or instance has the name */
	size_t n_inst;
	char inst[MAX_INLINE_REPORT][PROBE_NAME_MAX + 64];
	char first_site[PROBE_NAME_MAX]; /* "x.c:12", for the suggestion */
};

static void scan_dies(Dwarf_Die *cu, Dwarf_Die *die, const char *outer, int depth,
		      struct inline_scan *sc)
{
	Dwarf_Die child;
	int r;

	if (depth > MAX_DIE_DEPTH || dwarf_child(die, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		const char *name = NULL, *inner = outer;

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
			name = dwarf_aux__die_name(&child);
			inner = name ? name : outer;
		}
		if (name && !strcmp(name, sc->want)) {
			sc->found_any = true;
			if (tag == DW_TAG_subprogram) {
				Dwarf_Addr lo;

				if (!sc->ool_entry && dwarf_lowpc(&child, &lo) == 0 && lo)
					sc->ool_entry = lo;
			} else {
				Dwarf_Attribute a;
				Dwarf_Word file = 0, line = 0;
				const char *f;

				if (dwarf_attr(&child, DW_AT_call_file, &a))
					dwarf_formudata(&a, &file);
				if (dwarf_attr(&child, DW_AT_call_line, &a))
					dwarf_formudata(&a, &line);
				f = cu_file_name(cu, file);
				if (sc->n_inst < MAX_INLINE_REPORT)
					snprintf(sc->inst[sc->n_inst], sizeof(sc->inst[0]),
						 "%s at %s:%lu", outer ? outer : "?", f,
						 (unsigned long)line);
				if (!sc->n_inst)
					snprintf(sc->first_site, sizeof(sc->first_site), "%s:%lu",
						 f, (unsigned long)line);
				sc->n_inst++;
			}
		}
		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
		    tag == DW_TAG_lexical_block || tag == DW_TAG_namespace ||
		    tag == DW_TAG_class_type || tag == DW_TAG_structure_type)
			scan_dies(cu, &child, inner, depth + 1, sc);
	} while ((r = dwarf_siblingof(&child, &child)) == 0);
}

static void scan_inlines(Dwarf *dbg, struct inline_scan *sc)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dbg, off + hsize, &cu))
			scan_dies(&cu, &cu, NULL, 0, sc);
		off = next;
	}
}

/* Innermost function and inlined function at @addr; strings are DWARF's. */
void probe_addr_scopes(Dwarf *dbg, Dwarf_Addr addr, const char **func, const char **inl)
{
	Dwarf_Die *scopes = NULL;
	int i, n;

	*func = *inl = NULL;
	n = dwarf_aux__phys_scopes(dbg, addr, &scopes);
	for (i = 0; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_inlined_subroutine && !*inl)
			*inl = dwarf_aux__die_name(&scopes[i]);
		if (tag == DW_TAG_subprogram) {
			*func = dwarf_aux__die_name(&scopes[i]);
			break;
		}
	}
	free(scopes);
}

/*
 * End of the prologue: the first line row flagged prologue_end, else the
 * first statement row after the entry that starts a new line (perf's
 * rule). Falls back to the entry.
 */
static uint64_t body_addr(Dwarf *dbg, uint64_t entry, uint64_t size)
{
	Dwarf_Die cu;
	Dwarf_Lines *lines;
	size_t i, n;
	int entry_line = -1;
	uint64_t end = entry + (size ? size : 1), cand = 0;

	if (!dbg || !dwarf_addrdie(dbg, entry, &cu) || dwarf_getsrclines(&cu, &lines, &n))
		return entry;
	for (i = 0; i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr a;
		bool flag;
		int ln;

		if (!l || dwarf_lineaddr(l, &a) || a < entry || a >= end)
			continue;
		if (dwarf_lineendsequence(l, &flag) == 0 && flag)
			continue;
		if (dwarf_lineprologueend(l, &flag) == 0 && flag)
			return a;
		if (dwarf_lineno(l, &ln))
			continue;
		if (a == entry) {
			if (entry_line < 0)
				entry_line = ln;
			continue;
		}
		if (!cand && entry_line >= 0 && ln != entry_line &&
		    dwarf_linebeginstatement(l, &flag) == 0 && flag)
			cand = a;
	}
	return cand ? cand : entry;
}
/* ---- resolution ----------------------------------------------------- */

static int ctx_open(struct ctx *c, const char *path, char *err, size_t errlen)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->dbgfile.fd = -1;
	c->path = path;
	c->err = err;
	c->errlen = errlen;
	c->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c->fd < 0) {
		ret = -errno;
		lp_errf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
		return ret;
	}
	elf_version(EV_CURRENT);
	c->elf = elf_begin(c->fd, ELF_C_READ_MMAP, NULL);
	if (!c->elf || elf_kind(c->elf) != ELF_K_ELF) {
		lp_errf(err, errlen, "'%s' is not an ELF file", path);
		if (c->elf)
			elf_end(c->elf);
		close(c->fd);
		c->elf = NULL;
		c->fd = -1;
		return -ENOEXEC;
	}
	/* no DWARF is a normal case for function probes; a stripped file's
	 * may be in a debug file or on a debuginfod server */
	c->dbg = debuginfo__dwarf_begin(c->elf, path, &c->dbgfile);
	return 0;
}

static void ctx_close(struct ctx *c)
{
	probe_check_end(c);
	if (c->dbg)
		dwarf_end(c->dbg);
	debuginfo__file_close(&c->dbgfile);
	if (c->elf)
		elf_end(c->elf);
	if (c->fd >= 0)
		close(c->fd);
}

int probe_site_fill(struct probe_site *s, uint64_t vaddr, uint64_t off, const char *func,
		    const char *inl, const char *file, int line)
{
	memset(s, 0, sizeof(*s));
	s->vaddr = vaddr;
	s->file_offset = off;
	s->line = line;
	if ((func && !(s->func = strdup(func))) || (inl && !(s->inlined_from = strdup(inl))) ||
	    (file && !(s->file = strdup(file))))
		return -ENOMEM;
	return 0;
}

static void sites_free(struct probe_site *s, size_t n)
{
	size_t i;

	for (i = 0; s && i < n; i++) {
		free(s[i].func);
		free(s[i].inlined_from);
		free(s[i].file);
	}
	free(s);
}

void probe_target_free(struct probe_target *t)
{
	if (!t)
		return;
	free(t->binary_path);
	free(t->func);
	sites_free(t->sites, t->n_sites);
	sites_free(t->ret_sites, t->n_ret_sites);
	free(t->ranges);
	memset(t, 0, sizeof(*t));
}

/* CU file name of a function, for ambiguity messages. */
static const char *func_cu_name(Dwarf *dbg, uint64_t addr)
{
	Dwarf_Die cu;
	const char *n;

	if (!dbg || !dwarf_addrdie(dbg, addr, &cu))
		return "?";
	n = dwarf_diename(&cu);
	return n ? probe_base_name(n) : "?";
}

static int fill_ret_sites(struct ctx *c, struct probe_target *t)
{
	uint64_t *v;
	size_t n, i;
	int ret;

	ret = probe_return_sites(c->elf, t->entry_vaddr, t->func_size, &v, &n);
	if (ret == -ENOMEM)
		return ret;
	if (ret)
		return 0; /* ret_sites_valid stays false; the caller decides */
	t->ret_sites = calloc(n ? n : 1, sizeof(*t->ret_sites));
	if (!t->ret_sites) {
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		uint64_t off = 0;

		elf_vaddr_to_offset(c->elf, v[i], &off);
		if (probe_site_fill(&t->ret_sites[i], v[i], off, t->func, NULL, NULL, 0)) {
			t->n_ret_sites = i + 1;
			free(v);
			return -ENOMEM;
		}
		t->ret_sites[i].is_return_insn = true;
	}
	t->n_ret_sites = n;
	t->ret_sites_valid = true;
	free(v);
	return 0;
}

/* Where no symbol has the function: a DWARF-only copy, or why not. */
static int func_from_dwarf(struct ctx *c, const struct probe_spec *spec, const struct symtab *st,
			   uint64_t *entry, uint64_t *size)
{
	struct inline_scan sc = {.want = spec->func};

	if (c->dbg)
		scan_inlines(c->dbg, &sc);
	if (sc.ool_entry) {
		/* a DWARF-only out-of-line copy (symbols stripped, debug kept) */
		Dwarf_Die cu, *scopes = NULL;
		int n, k;

		*entry = sc.ool_entry;
		if (dwarf_addrdie(c->dbg, *entry, &cu) &&
		    (n = dwarf_getscopes(&cu, *entry, &scopes)) > 0) {
			for (k = 0; k < n; k++) {
				Dwarf_Addr hi;

				if (dwarf_tag(&scopes[k]) == DW_TAG_subprogram &&
				    dwarf_highpc(&scopes[k], &hi) == 0 && hi > *entry) {
					*size = hi - *entry;
					break;
				}
			}
		}
		free(scopes);
		return 0;
	}
	if (sc.n_inst) {
		char list[MAX_INLINE_REPORT * (PROBE_NAME_MAX + 70)];
		size_t off = 0, j;

		for (j = 0; j < sc.n_inst && j < MAX_INLINE_REPORT; j++)
			off += snprintf(list + off, sizeof(list) - off, "%s%s", j ? ", " : "",
					sc.inst[j]);
		if (sc.n_inst > MAX_INLINE_REPORT)
			snprintf(list + off, sizeof(list) - off, ", and %zu more",
				 sc.n_inst - MAX_INLINE_REPORT);
		lp_errf(c->err, c->errlen,
			"'%s' is only inlined (into %s); probe a line instead, e.g. --trace %s",
			spec->func, list, sc.first_site);
		return -EINVAL;
	} else {
		struct near nr = {0};
		char sugg[3 * PROBE_NAME_MAX + 64];

		for (size_t i = 0; i < st->n; i++)
			probe_near_offer(&nr, spec->func, st->syms[i].name);
		probe_near_format(&nr, sugg, sizeof(sugg));
		lp_errf(c->err, c->errlen, "no function '%s' in '%s'%s%s", spec->func, c->path,
			sc.found_any ? " (declared in DWARF, but has no code)" : "", sugg);
		return -ENOENT;
	}
}

/* The function's start and size from the symbol tables, else from DWARF. */
static int find_func(struct ctx *c, const struct probe_spec *spec, uint64_t *entry, uint64_t *size)
{
	struct symtab st = {0};
	const struct fsym *hit = NULL;
	int ret;

	ret = probe_symtab_load(c->elf, &st);
	/* a stripped file's local functions are in its debug file's .symtab */
	if (!ret && c->dbgfile.elf)
		ret = probe_symtab_load(c->dbgfile.elf, &st);
	for (size_t i = 0; !ret && i < st.n; i++) {
		const struct fsym *s = &st.syms[i];

		if (strcmp(s->name, spec->func))
			continue;
		if (hit && hit->value != s->value) {
			char list[512];
			size_t off = 0, j;

			/* several static functions with the same name: name their files */
			for (j = 0; j < st.n && off < sizeof(list); j++) {
				if (strcmp(st.syms[j].name, spec->func))
					continue;
				off += snprintf(list + off, sizeof(list) - off, "%s%s at 0x%llx",
						off ? ", " : "",
						func_cu_name(c->dbg, st.syms[j].value),
						(unsigned long long)st.syms[j].value);
			}
			lp_errf(c->err, c->errlen,
				"'%s' is ambiguous in '%s': %s; probe a line instead", spec->func,
				c->path, list);
			ret = -EINVAL;
		}
		if (!hit || (!hit->size && s->size))
			hit = s;
	}
	if (!ret && hit) {
		*entry = hit->value;
		*size = hit->size;
	} else if (!ret) {
		ret = func_from_dwarf(c, spec, &st, entry, size);
	}
	free(st.syms);
	return ret;
}

/* "bin:func+0xOFF" as the user wrote it, for messages. */
static void func_label(const struct probe_spec *spec, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%s%s", spec->binary, spec->binary[0] ? ":" : "", spec->func);

	if (spec->has_offset && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "+0x%llx", (unsigned long long)spec->offset);
}

/*
 * The function's start must be proven a function entry (a corrupt symbol
 * must not put a return probe mid-function), and an offset an instruction
 * boundary decoded from that start.
 */
static int prove_func(struct ctx *c, const struct probe_spec *spec, uint64_t entry, uint64_t size)
{
	char what[PROBE_PATH_MAX + PROBE_NAME_MAX + 24];
	int ret;

	func_label(spec, what, sizeof(what));
	if (spec->has_offset && spec->offset >= size && !(size == 0 && spec->offset == 0)) {
		lp_errf(c->err, c->errlen, "offset %llu is outside '%s' (size %llu)",
			(unsigned long long)spec->offset, spec->func, (unsigned long long)size);
		return -EINVAL;
	}
	ret = probe_check_entry(c, what, entry, spec->func, !spec->has_offset);
	if (!ret && spec->has_offset)
		ret = probe_check_site(c, what, entry + spec->offset, spec->func);
	return ret;
}

static int resolve_func(struct ctx *c, const struct probe_spec *spec, struct probe_target *t)
{
	uint64_t entry = 0, size = 0;
	int ret;

	ret = find_func(c, spec, &entry, &size);
	if (!ret)
		ret = prove_func(c, spec, entry, size);
	if (ret)
		return ret;
	t->func = strdup(spec->func);
	t->sites = calloc(1, sizeof(*t->sites));
	if (!t->func || !t->sites)
		return -ENOMEM;
	t->func_size = size;
	t->entry_vaddr = entry;
	if (elf_vaddr_to_offset(c->elf, entry, &t->entry_offset)) {
		lp_errf(c->err, c->errlen, "'%s' at 0x%llx is not in a loaded segment of '%s'",
			spec->func, (unsigned long long)entry, c->path);
		return -ENOENT;
	}
	t->body_vaddr = body_addr(c->dbg, entry, size);
	if (elf_vaddr_to_offset(c->elf, t->body_vaddr, &t->body_offset)) {
		t->body_vaddr = entry;
		t->body_offset = t->entry_offset;
	}
	if (spec->has_offset) {
		/* a hit counter at one instruction: no return sites, no latency */
		t->is_offset = true;
		t->entry_vaddr += spec->offset;
		t->entry_offset += spec->offset;
		t->body_vaddr = t->entry_vaddr;
		t->body_offset = t->entry_offset;
	} else if (size) {
		/* decoded from the proven entry, so each ret is a boundary too */
		ret = fill_ret_sites(c, t);
		if (ret)
			return ret;
	}
	t->n_sites = 1;
	return probe_site_fill(&t->sites[0], t->entry_vaddr, t->entry_offset, t->func, NULL, NULL,
			       0);
}

int probe_resolve(const char *binary_path, const struct probe_spec *spec, struct probe_target *out,
		  char *err, size_t errlen)
{
	struct ctx c;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!binary_path || !spec) {
		lp_errf(err, errlen, "no binary or spec");
		return -EINVAL;
	}
	ret = ctx_open(&c, binary_path, err, errlen);
	if (ret)
		return ret;
	out->binary_path = strdup(binary_path);
	if (!out->binary_path) {
		ret = -ENOMEM;
		goto out;
	}
	out->is_go = elf_is_go(c.elf);
	out->is_program = elf_is_program(c.elf);
	if (spec->kind == PROBE_SPEC_LINE)
		ret = probe_resolve_line(&c, spec, out);
	else if (spec->kind == PROBE_SPEC_FUNC)
		ret = resolve_func(&c, spec, out);
	else
		ret = -EINVAL;
out:
	if (ret == -ENOMEM)
		lp_errf(err, errlen, "out of memory resolving probe in '%s'", binary_path);
	if (ret)
		probe_target_free(out);
	ctx_close(&c);
	return ret;
}
