// SPDX-License-Identifier: GPL-2.0
/*
 * probe_lines.c - resolve FILE:LINE to the is_stmt addresses of the line table.
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

static bool file_matches(const char *path, const char *want)
{
	size_t lp, lw;

	if (!path)
		return false;
	while (want[0] == '.' && want[1] == '/')
		want += 2;
	lp = strlen(path);
	lw = strlen(want);
	if (lw > lp)
		return false;
	if (lw == lp)
		return strcmp(path, want) == 0;
	return path[lp - lw - 1] == '/' && strcmp(path + lp - lw, want) == 0;
}

struct line_scan {
	uint64_t *addrs;
	size_t n, cap;
	struct probe_range *ranges; /* every row of the line: [its address, the next row's) */
	size_t n_ranges, cap_ranges;
	bool file_seen;
	bool any_lines;	  /* some CU had a line table */
	bool merged;	  /* the line had rows, all folded into code of other lines */
	int below, above; /* nearest lines with code around the wanted one */
	char matched_file[PROBE_PATH_MAX];
	struct near near_files;
};

static int addr_push(struct line_scan *ls, uint64_t a)
{
	size_t i;

	for (i = 0; i < ls->n; i++)
		if (ls->addrs[i] == a)
			return 0;
	if (ls->n >= PROBE_MAX_SITES)
		return 0;
	if (ls->n == ls->cap) {
		size_t cap = ls->cap ? ls->cap * 2 : 16;
		uint64_t *v = realloc(ls->addrs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ls->addrs = v;
		ls->cap = cap;
	}
	ls->addrs[ls->n++] = a;
	return 0;
}

/* Add [lo, hi) to the line's ranges, merged with the last one if they touch. */
static int range_push(struct line_scan *ls, uint64_t lo, uint64_t hi)
{
	if (ls->n_ranges && ls->ranges[ls->n_ranges - 1].hi == lo) {
		ls->ranges[ls->n_ranges - 1].hi = hi;
		return 0;
	}
	if (ls->n_ranges >= PROBE_MAX_RANGES)
		return 0;
	if (ls->n_ranges == ls->cap_ranges) {
		size_t cap = ls->cap_ranges ? ls->cap_ranges * 2 : 16;
		struct probe_range *v = realloc(ls->ranges, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ls->ranges = v;
		ls->cap_ranges = cap;
	}
	ls->ranges[ls->n_ranges++] = (struct probe_range){lo, hi};
	return 0;
}

/*
 * The instructions a row stands for: up to the next row's address, the
 * way a sampled address is given its line (the last row at or below it).
 */
static int row_range(Dwarf_Lines *lines, size_t i, size_t n, Dwarf_Addr a, struct line_scan *ls)
{
	Dwarf_Line *l = i + 1 < n ? dwarf_onesrcline(lines, i + 1) : NULL;
	Dwarf_Addr next;

	if (!l || dwarf_lineaddr(l, &next) || next <= a)
		return 0;
	return range_push(ls, a, next);
}

/*
 * Several rows at one address are "views": the instruction there belongs
 * to the last of them (as addr2line reports it). A row whose address ends
 * on another line would put the probe on that line, not on this one.
 */
static bool empty_view(Dwarf_Lines *lines, size_t i, size_t n, Dwarf_Addr a, int line)
{
	size_t j, last = i;

	for (j = i + 1; j < n; j++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, j);
		Dwarf_Addr na;
		bool end = false;

		if (!l || dwarf_lineaddr(l, &na) || na != a)
			break;
		dwarf_lineendsequence(l, &end);
		if (end)
			break;
		last = j;
	}
	if (last != i) {
		Dwarf_Line *l = dwarf_onesrcline(lines, last);
		int ln;

		return !l || dwarf_lineno(l, &ln) || ln != line;
	}
	return false;
}

static int scan_cu_lines(Dwarf_Die *cu, const char *want, int line, struct line_scan *ls)
{
	Dwarf_Lines *lines;
	Dwarf_Files *files;
	size_t i, n, nf;
	bool run = false; /* inside a run of rows of the wanted line, begun by a statement */

	if (dwarf_getsrclines(cu, &lines, &n) || !n)
		return 0;
	ls->any_lines = true;
	if (dwarf_getsrcfiles(cu, &files, &nf) == 0) {
		bool hit = false;

		for (i = 0; i < nf && !hit; i++)
			hit = file_matches(dwarf_filesrc(files, i, NULL, NULL), want);
		if (!hit) {
			/* remember near misses for the error, then skip this CU */
			for (i = 0; i < nf; i++) {
				const char *f = dwarf_filesrc(files, i, NULL, NULL);

				if (f)
					probe_near_offer(&ls->near_files, probe_base_name(want),
							 probe_base_name(f));
			}
			return 0;
		}
	}
	for (i = 0; i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		const char *src;
		Dwarf_Addr a;
		bool end = false, stmt = false;
		int ln;

		if (!l || dwarf_lineaddr(l, &a) || dwarf_lineno(l, &ln))
			continue;
		dwarf_lineendsequence(l, &end);
		dwarf_linebeginstatement(l, &stmt);
		src = dwarf_linesrc(l, NULL, NULL);
		if (end || !src) {
			run = false;
			continue;
		}
		if (ln != line || !file_matches(src, want))
			run = false;
		if (ln == line && file_matches(src, want)) {
			int ret = row_range(lines, i, n, a, ls);

			if (ret)
				return ret;
		}
		if (file_matches(src, want)) {
			if (!ls->file_seen)
				snprintf(ls->matched_file, sizeof(ls->matched_file), "%s", src);
			ls->file_seen = true;
			/* suggest only lines a probe would really land on */
			if (stmt && ln < line && ln > ls->below && !empty_view(lines, i, n, a, ln))
				ls->below = ln;
			if (stmt && ln > line && (!ls->above || ln < ls->above) &&
			    !empty_view(lines, i, n, a, ln))
				ls->above = ln;
			/*
			 * Only where the line starts: further rows of the same
			 * line in a run (column changes, views) would fire a
			 * probe several times for one execution of the line.
			 * A run begins at a statement row: rows of the line
			 * before it (code hoisted out of a loop, say) are not
			 * statements, and must not hide the one that is.
			 */
			if (stmt && ln == line && !run) {
				int ret = 0;

				if (empty_view(lines, i, n, a, line)) {
					ls->merged = true;
				} else {
					ret = addr_push(ls, a);
					run = true;
				}
				if (ret)
					return ret;
			}
		}
	}
	return 0;
}

/* The error for a line with no instruction, naming the nearest lines that have some. */
static void no_code_error(struct ctx *c, const struct probe_spec *spec, const struct line_scan *ls)
{
	const char *f = probe_base_name(ls->matched_file);

	if (ls->merged)
		lp_errf(c->err, c->errlen,
			"%s:%d has no instruction of its own (the compiler merged it into "
			"neighbouring lines); nearest lines with code: %s:%d, %s:%d",
			spec->file, spec->line, f, ls->below, f, ls->above);
	else if (ls->below && ls->above)
		lp_errf(c->err, c->errlen,
			"no code at %s:%d; nearest lines with code: %s:%d, %s:%d", spec->file,
			spec->line, f, ls->below, f, ls->above);
	else if (ls->below || ls->above)
		lp_errf(c->err, c->errlen, "no code at %s:%d; nearest line with code: %s:%d",
			spec->file, spec->line, f, ls->below ? ls->below : ls->above);
	else
		lp_errf(c->err, c->errlen, "no code at %s:%d", spec->file, spec->line);
}

int probe_resolve_line(struct ctx *c, const struct probe_spec *spec, struct probe_target *t)
{
	struct line_scan ls = {0};
	Dwarf_Off off = 0, next;
	size_t hsize, i, k = 0;
	char what[2 * PROBE_PATH_MAX + 16];
	int ret = 0;

	t->is_line = true;
	snprintf(what, sizeof(what), "%s%s%s:%d", spec->binary, spec->binary[0] ? ":" : "",
		 spec->file, spec->line);
	if (!c->dbg) {
		lp_errf(c->err, c->errlen, "'%s' has no DWARF line info; build with -g", c->path);
		return -ENODATA;
	}
	while (dwarf_nextcu(c->dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(c->dbg, off + hsize, &cu)) {
			ret = scan_cu_lines(&cu, spec->file, spec->line, &ls);
			if (ret)
				goto out;
		}
		off = next;
	}
	if (!ls.any_lines) {
		lp_errf(c->err, c->errlen, "'%s' has no DWARF line info; build with -g", c->path);
		ret = -ENODATA;
		goto out;
	}
	if (!ls.file_seen) {
		char sugg[3 * PROBE_NAME_MAX + 64];

		probe_near_format(&ls.near_files, sugg, sizeof(sugg));
		lp_errf(c->err, c->errlen, "no source file '%s' in the line info of '%s'%s",
			spec->file, c->path, sugg);
		ret = -ENOENT;
		goto out;
	}
	if (!ls.n) {
		no_code_error(c, spec, &ls);
		ret = -ENOENT;
		goto out;
	}
	qsort(ls.addrs, ls.n, sizeof(*ls.addrs), lp_cmp_u64);
	t->sites = calloc(ls.n, sizeof(*t->sites));
	if (!t->sites) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < ls.n; i++) {
		const char *func, *inl;
		uint64_t foff;

		/* rows outside any loaded segment (discarded sections) cannot be probed */
		if (elf_vaddr_to_offset(c->elf, ls.addrs[i], &foff))
			continue;
		probe_addr_scopes(c->dbg, ls.addrs[i], &func, &inl);
		ret = probe_check_site(c, what, ls.addrs[i], func);
		if (ret)
			goto out;
		ret = probe_site_fill(&t->sites[k], ls.addrs[i], foff, func, inl, ls.matched_file,
				      spec->line);
		t->n_sites = ++k;
		if (ret)
			goto out;
	}
	if (!k) {
		lp_errf(c->err, c->errlen, "%s:%d has no address in a loaded segment of '%s'",
			spec->file, spec->line, c->path);
		ret = -ENOENT;
	}
	/* rows outside any loaded segment (discarded sections) never run */
	for (i = 0; i < ls.n_ranges; i++) {
		uint64_t foff;

		if (!elf_vaddr_to_offset(c->elf, ls.ranges[i].lo, &foff))
			ls.ranges[t->n_ranges++] = ls.ranges[i];
	}
	t->ranges = ls.ranges;
	ls.ranges = NULL;
out:
	free(ls.addrs);
	free(ls.ranges);
	return ret;
}
