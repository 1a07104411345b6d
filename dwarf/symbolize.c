// SPDX-License-Identifier: GPL-2.0
/*
 * symbolize.c - the symbolizer: per-process mappings (sym_procs.c), one
 * opened ELF per build-id shared by every process that maps it, and a hash
 * table of results per (ELF, vaddr) so that a repeated address costs one
 * lookup; here are that cache and the lookups of functions, inlined frames
 * and lines behind the symbolizer__* API.
 *
 * Ownership: the symbolizer owns every string it hands out. Paths and
 * module names are interned; function names live in the elf_symtab name
 * pools and DWARF strings in the Dwarf handles, and neither is freed
 * before symbolizer__free(). That is also why files stay open: a process
 * that exits can still be symbolized in the mappings we already know.
 */
#include <inttypes.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf_symtab.h"
#include "kallsyms.h"
#include "sym_dwarf.h"
#include "symbolize.h"
#include "perf_map.h"
#include "symbolize_internal.h"
#include "user/util/util.h"

struct symbolizer *symbolizer__new(bool want_lines)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->want_lines = want_lines;
	return s;
}

void symbolizer__free(struct symbolizer *s)
{
	struct sym_obj *o, *next;

	if (!s)
		return;
	for (size_t i = 0; i < s->cache_cap; i++)
		free(s->cache[i].rest);
	free(s->cache);
	for (size_t i = 0; i < s->procs_cap; i++)
		if (s->procs[i])
			sym_proc_free(s->procs[i]);
	free(s->procs);
	for (o = s->objs; o; o = next) {
		next = o->next;
		free(o);
	}
	for (size_t i = 0; i < s->nets; i++)
		elf_symtab__free(s->ets[i]);
	free(s->ets);
	for (size_t i = 0; i < s->strs_cap; i++)
		free(s->strs[i]);
	free(s->strs);
	kallsyms__free(s->ksyms);
	free(s);
}

static size_t cache_slot(const struct symbolizer *s, const struct elf_symtab *et, uint64_t off)
{
	return lp_mix64(off ^ ((uint64_t)(uintptr_t)et * 0x9e3779b97f4a7c15ull)) &
	       (s->cache_cap - 1);
}

static struct rentry *cache_get(struct symbolizer *s, const struct elf_symtab *et, uint64_t off)
{
	size_t mask = s->cache_cap - 1, i;

	if (!s->cache_cap)
		return NULL;
	for (i = cache_slot(s, et, off); s->cache[i].et; i = (i + 1) & mask)
		if (s->cache[i].et == et && s->cache[i].off == off)
			return &s->cache[i];
	return NULL;
}

static int cache_grow(struct symbolizer *s)
{
	size_t ncap = s->cache_cap ? s->cache_cap * 2 : 4096, oldcap = s->cache_cap;
	struct rentry *old = s->cache, *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	s->cache = n;
	s->cache_cap = ncap;
	for (size_t j = 0; j < oldcap; j++) {
		size_t i;

		if (!old[j].et)
			continue;
		for (i = cache_slot(s, old[j].et, old[j].off); n[i].et; i = (i + 1) & (ncap - 1))
			;
		n[i] = old[j];
	}
	free(old);
	return 0;
}

/*
 * "[bin+0xSTART]" for code no symbol or DWARF names: one frame per
 * function (its .eh_frame FDE), not one per address; NULL without an FDE.
 */
static const char *fde_name(struct symbolizer *s, struct elf_symtab *et, uint64_t off)
{
	const char *base = et->path ? strrchr(et->path, '/') : NULL;
	uint64_t lo, hi;
	char name[300];

	if (et->fd < 0 || elf_symtab__fde_range(et, off, &lo, &hi))
		return NULL;
	snprintf(name, sizeof(name), "[%.200s+0x%" PRIx64 "]",
		 base	    ? base + 1
		 : et->path ? et->path
			    : "unknown",
		 lo);
	return sym_intern(s, name);
}

/* Symbolize @off of @et from scratch and remember it. */
static struct rentry *cache_fill(struct symbolizer *s, struct elf_symtab *et, uint64_t off)
{
	struct sym_line_frame lf[SYM_MAX_INLINE];
	const struct elf_sym *sym;
	struct rentry *r;
	int n = 0;
	size_t i;

	if (s->cache_n * 2 >= s->cache_cap && cache_grow(s))
		return NULL;
	sym = elf_symtab__lookup(et, off);
	if (s->want_lines)
		n = sym_dwarf__frames(et, off, lf, SYM_MAX_INLINE);
	if (n <= 0) {
		n = 1;
		lf[0].func = NULL;
		lf[0].file = NULL;
		lf[0].line = 0;
		lf[0].inlined = false;
	}
	/* the symbol table names the real function, as on the fast path (clones keep .isra) */
	if (sym)
		lf[n - 1].func = sym->name;
	else if (!lf[n - 1].func)
		lf[n - 1].func = fde_name(s, et, off);

	for (i = cache_slot(s, et, off); s->cache[i].et; i = (i + 1) & (s->cache_cap - 1))
		;
	r = &s->cache[i];
	r->rest = NULL;
	if (n > 1) {
		r->rest = calloc(n - 1, sizeof(*r->rest));
		if (!r->rest)
			return NULL;
	}
	for (int k = 0; k < n; k++) {
		struct rframe *f = k ? &r->rest[k - 1] : &r->first;

		f->func = lf[k].func;
		f->file = lf[k].file;
		f->line = lf[k].line;
		f->inlined = lf[k].inlined;
	}
	r->n = n;
	r->off = off;
	r->et = et;
	s->cache_n++;
	return r;
}

static void unknown_frame(struct sym_frame *f, const char *module, const char *path,
			  uint64_t offset)
{
	f->func = NULL;
	f->module = module;
	f->path = path;
	f->build_id = "";
	f->file = NULL;
	f->line = 0;
	f->offset = offset;
	f->inlined = false;
}

enum sym_addr_kind symbolizer__addr_kind_span(struct symbolizer *s, int pid, uint64_t addr,
					      uint64_t *start, uint64_t *end)
{
	const struct sym_map *m;

	*start = *end = 0;
	if (sym_find_map(s, pid, addr, &m))
		return SYM_ADDR_UNKNOWN;
	if (!m)
		return SYM_ADDR_NONE;
	*start = m->start;
	*end = m->end;
	if (m->path[0] == '/' || !strcmp(m->path, "[vdso]") || !strcmp(m->path, "[vsyscall]"))
		return SYM_ADDR_CODE;
	if (!m->path[0])
		return SYM_ADDR_ANON;
	if (!strcmp(m->path, "[uprobes]"))
		return SYM_ADDR_UPROBES;
	/* [stack], [stack:TID], [heap] mapped executable (execstack): data all the same */
	return SYM_ADDR_DATA;
}

enum sym_addr_kind symbolizer__addr_kind(struct symbolizer *s, int pid, uint64_t addr)
{
	uint64_t start, end;

	return symbolizer__addr_kind_span(s, pid, addr, &start, &end);
}

int symbolizer__file_pos(struct symbolizer *s, int pid, uint64_t addr, uint64_t *dev, uint64_t *ino,
			 uint64_t *file_offset)
{
	const struct sym_map *m;
	int err = sym_find_map(s, pid, addr, &m);

	if (err)
		return err;
	if (!m || !m->ino)
		return -ENOENT;
	*dev = m->dev;
	*ino = m->ino;
	*file_offset = addr - m->start + m->offset;
	return 0;
}

uint64_t symbolizer__addr_of(struct symbolizer *s, int pid, uint64_t dev, uint64_t ino,
			     uint64_t file_offset)
{
	struct sym_proc *p = sym_proc_find(s, pid);

	for (size_t i = 0; p && i < p->nmaps; i++) {
		const struct sym_map *m = &p->maps[i];

		if (m->ino == ino && m->dev == dev && file_offset >= m->offset &&
		    file_offset - m->offset < m->end - m->start)
			return m->start + (file_offset - m->offset);
	}
	return 0;
}

/* The perf map's name for JIT code at @addr of @pid, interned; NULL: none. */
static const char *jit_name(struct symbolizer *s, int pid, uint64_t addr)
{
	struct sym_proc *p = sym_proc_find(s, pid);
	const char *name;
	uint64_t version;

	if (!p)
		return NULL;
	if (!p->jit)
		p->jit = perf_map__new(pid);
	if (!p->jit)
		return NULL;
	version = perf_map__version(p->jit);
	name = perf_map__lookup(p->jit, addr);
	/* a miss read the file again: what callers cached may be renamed */
	if (perf_map__version(p->jit) != version)
		s->jit_generation++;
	return name ? sym_intern(s, name) : NULL;
}

int symbolizer__resolve(struct symbolizer *s, int pid, uint64_t addr, struct sym_frame *out,
			int max)
{
	const struct sym_map *m;
	struct rentry *r;
	uint64_t fo, off;
	int n, skip, err;

	if (max < 1)
		return -EINVAL;
	err = sym_find_map(s, pid, addr, &m);
	if (err)
		return err;
	if (!m) {
		unknown_frame(out, "[unknown]", "", addr);
		return 1;
	}
	fo = addr - m->start + m->offset;
	if (!m->et) {
		unknown_frame(out, m->module, m->path, m->path[0] == '/' ? fo : addr - m->start);
		if (!m->path[0])
			out->func = jit_name(s, pid, addr);
		return 1;
	}
	/* file offset -> ELF vaddr through its PT_LOAD: PIE, non-PIE and load bias alike */
	if (elf_symtab__offset_to_vaddr(m->et, fo, &off))
		off = fo;
	r = cache_get(s, m->et, off);
	if (!r)
		r = cache_fill(s, m->et, off);
	if (!r) {
		unknown_frame(out, m->module, m->path, off);
		out->build_id = m->et->build_id;
		return 1;
	}
	/* too small an @out: drop innermost inlined frames, keep the real function */
	n = (int)r->n < max ? (int)r->n : max;
	skip = r->n - n;
	for (int k = 0; k < n; k++) {
		const struct rframe *f = k + skip ? &r->rest[k + skip - 1] : &r->first;
		struct sym_frame *o = &out[k];

		o->func = f->func;
		o->module = m->module;
		o->path = m->path;
		o->build_id = m->et->build_id;
		o->file = f->file;
		o->line = f->line;
		o->offset = off;
		o->inlined = f->inlined;
	}
	return n;
}

int symbolizer__resolve_kernel(struct symbolizer *s, uint64_t addr, struct sym_frame *out)
{
	const struct ksym *k;

	if (!s->ksyms_tried) {
		s->ksyms_tried = true;
		s->ksyms_err = kallsyms__load("/proc/kallsyms", &s->ksyms);
	}
	if (!s->ksyms)
		return s->ksyms_err ? s->ksyms_err : -ENOENT;
	k = kallsyms__lookup(s->ksyms, addr);
	unknown_frame(out, k ? k->module : "[kernel]", k ? k->module : "[kernel]", addr);
	if (k)
		out->func = k->name;
	return 1;
}

uint64_t symbolizer__generation(const struct symbolizer *s)
{
	return s->maps_generation + s->jit_generation;
}

uint64_t symbolizer__maps_generation(const struct symbolizer *s)
{
	return s->maps_generation;
}

int symbolizer__mappings(struct symbolizer *s, int pid, const struct sym_mapping **out)
{
	struct sym_proc *p = sym_proc_find(s, pid);
	struct sym_mapping *e;

	*out = NULL;
	if (!p)
		return -ESRCH;
	e = calloc(p->nmaps ? p->nmaps : 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < p->nmaps; i++) {
		e[i].start = p->maps[i].start;
		e[i].end = p->maps[i].end;
		e[i].file_offset = p->maps[i].offset;
		e[i].path = p->maps[i].path;
		e[i].build_id = p->maps[i].et ? p->maps[i].et->build_id : "";
	}
	free(p->exported);
	p->exported = e;
	*out = e;
	return (int)p->nmaps;
}
