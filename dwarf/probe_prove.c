// SPDX-License-Identifier: GPL-2.0
/*
 * probe_prove.c - instruction boundaries and function entries, proven by
 * decoding forward from a trusted start (see probe_prove.h): the .eh_frame
 * FDE covering an address (probe_ehframe.c), else its DWARF subprogram,
 * else its symbol in a file without .eh_frame.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include <gelf.h>
#include "dwarf/dwarf_aux.h"
#include "dwarf/probe_prove.h"
#include "dwarf/probe_resolve.h"
#include "dwarf/probe_prove_internal.h"

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

static int load_tables(struct probe_prover *p)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, fcap = 0, scap = 0;

	if (elf_getshdrstrndx(p->elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(p->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(p->elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame")) {
			/* bytes, never converted: only a byte-typed section can be one */
			if ((sh.sh_type == SHT_PROGBITS || sh.sh_type == SHT_X86_64_UNWIND) &&
			    (d = elf_getdata(scn, NULL)) && d->d_buf &&
			    probe_parse_eh_frame(p, d->d_buf, d->d_size, sh.sh_addr, &fcap))
				return -ENOMEM;
			continue;
		}
		if ((sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < d->d_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			int type;

			if (!gelf_getsym(d, (int)i, &s))
				break;
			type = GELF_ST_TYPE(s.st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
			    s.st_shndx == SHN_UNDEF || !s.st_value || s.st_size > MAX_DECODE_SPAN ||
			    s.st_value + s.st_size < s.st_value)
				continue;
			if (probe_ranges_push(&p->syms, &p->n_syms, &scap, s.st_value,
					      s.st_value + s.st_size, false))
				return -ENOMEM;
		}
	}
	if (p->n_fdes)
		qsort(p->fdes, p->n_fdes, sizeof(*p->fdes), cmp_range);
	if (p->n_syms)
		qsort(p->syms, p->n_syms, sizeof(*p->syms), cmp_range);
	return 0;
}

int probe_prover__new(Elf *elf, Dwarf *dbg, struct probe_prover **out)
{
	struct probe_prover *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->elf = elf;
	p->dbg = dbg;
	if (load_tables(p)) {
		probe_prover__free(p);
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

void probe_prover__free(struct probe_prover *p)
{
	if (!p)
		return;
	free(p->fdes);
	free(p->syms);
	free(p);
}

/* ---- lookups ---- */

/*
 * A range of @v (sorted by start) that holds @a, preferring the one that
 * starts last (the innermost of nested symbols). NULL if none.
 */
static const struct range *covering(const struct range *v, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: first range starting after a; walk back over those starting before */
	for (size_t k = 0; k < MAX_SYMBOL_NEST && lo > 0; k++, lo--)
		if (a < v[lo - 1].end)
			return &v[lo - 1];
	return NULL;
}

int probe_prover__fde(const struct probe_prover *p, uint64_t vaddr, uint64_t *start, uint64_t *end)
{
	const struct range *r = covering(p->fdes, p->n_fdes, vaddr);

	if (!r)
		return -ENOENT;
	*start = r->start;
	*end = r->end;
	return 0;
}

/* Does a function symbol start at @a? */
static bool symbol_starts(const struct probe_prover *p, uint64_t a)
{
	size_t lo = 0, hi = p->n_syms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->syms[mid].start < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->n_syms && p->syms[lo].start == a;
}

/* Start of the DWARF subprogram range holding @a, and its entry; false if none. */
static bool dwarf_covering(Dwarf *dbg, uint64_t a, uint64_t *range_start, uint64_t *entry)
{
	Dwarf_Die *scopes = NULL;
	bool found = false;
	int n;

	if (!dbg)
		return false;
	n = dwarf_aux__phys_scopes(dbg, a, &scopes);
	for (int i = 0; i < n && !found; i++) {
		Dwarf_Addr base, lo, hi, e;
		ptrdiff_t off = 0;

		if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
			continue;
		while ((off = dwarf_ranges(&scopes[i], off, &base, &lo, &hi)) > 0) {
			if (lo <= a && a < hi) {
				*range_start = lo;
				found = true;
				break;
			}
		}
		if (!found)
			break; /* the innermost subprogram does not hold a: hostile DWARF */
		if (dwarf_entrypc(&scopes[i], &e) == 0)
			*entry = e;
		else
			*entry = *range_start;
	}
	free(scopes);
	return found;
}

/* Bytes [@a, @a + @len) of the file, or NULL if a segment does not hold them. */
static const uint8_t *code_bytes(Elf *elf, uint64_t a, uint64_t len)
{
	uint64_t off, end_off;
	Elf_Data *d;

	if (!len || a + len < a || elf_vaddr_to_offset(elf, a, &off) ||
	    elf_vaddr_to_offset(elf, a + len - 1, &end_off) || end_off - off != len - 1)
		return NULL;
	d = elf_getdata_rawchunk(elf, (int64_t)off, len, ELF_T_BYTE);
	return d && d->d_buf && d->d_size >= len ? d->d_buf : NULL;
}

/* Decode from @from to @to (both in one range that ends at @end). */
static int decode_to(Elf *elf, uint64_t from, uint64_t to, uint64_t end, uint64_t *insn)
{
	uint64_t span, i = 0;
	const uint8_t *b;

	*insn = from;
	if (to < from || to - from > MAX_DECODE_SPAN)
		return -ERANGE;
	/* the instruction at @to must be in the bytes too, but not past @end */
	span = to - from + MAX_INSN_BYTES;
	if (end > to && end - from < span)
		span = end - from;
	b = code_bytes(elf, from, span);
	if (!b && span > to - from + 1)
		b = code_bytes(elf, from, span = to - from + 1);
	if (!b)
		return -ERANGE;
	while (i < to - from) {
		int len = x86_insn_length(b + i, span - i);

		if (len <= 0)
			return -ENOEXEC;
		*insn = from + i;
		i += (uint64_t)len;
	}
	if (i != to - from)
		return -EILSEQ;
	*insn = to;
	return 0;
}

int probe_prove_boundary(struct probe_prover *p, uint64_t vaddr, struct prove_result *res)
{
	struct prove_result tmp;
	const struct range *r;
	uint64_t start, entry, end = 0, from;
	int ret;

	if (!res)
		res = &tmp;
	memset(res, 0, sizeof(*res));
	if ((r = covering(p->fdes, p->n_fdes, vaddr))) {
		res->anchor_kind = PROVE_ANCHOR_FDE;
		res->anchor = r->start;
		end = r->end;
	} else if (dwarf_covering(p->dbg, vaddr, &start, &entry)) {
		res->anchor_kind = PROVE_ANCHOR_DWARF;
		res->anchor = start;
	} else if (!p->n_fdes && (r = covering(p->syms, p->n_syms, vaddr))) {
		res->anchor_kind = PROVE_ANCHOR_SYMBOL;
		res->anchor = r->start;
		end = r->end;
	} else if (!p->n_fdes && symbol_starts(p, vaddr)) {
		/* a symbol without a size (crt code): only its first byte is known */
		res->anchor_kind = PROVE_ANCHOR_SYMBOL;
		res->anchor = res->insn_start = vaddr;
		return code_bytes(p->elf, vaddr, 1) ? 0 : -ERANGE;
	} else {
		return -ENOENT;
	}
	from = res->anchor;
	if (p->memo_anchor == res->anchor && p->memo_pos > from && p->memo_pos <= vaddr)
		from = p->memo_pos;
	ret = decode_to(p->elf, from, vaddr, end, &res->insn_start);
	if (ret == 0 || ret == -EILSEQ) {
		p->memo_anchor = res->anchor;
		p->memo_pos = res->insn_start;
	}
	return ret;
}

int probe_prove_entry(struct probe_prover *p, uint64_t vaddr, struct prove_result *res)
{
	struct prove_result tmp;
	const struct range *r;
	uint64_t start, entry;

	if (!res)
		res = &tmp;
	memset(res, 0, sizeof(*res));
	if ((r = covering(p->fdes, p->n_fdes, vaddr))) {
		res->anchor_kind = PROVE_ANCHOR_FDE;
		res->anchor = res->func_start = r->start;
		if (r->start != vaddr)
			return -EILSEQ;
		/* an FDE also starts the cold part of a split function */
		return r->entry_cfa ? 0 : -EILSEQ;
	}
	if (dwarf_covering(p->dbg, vaddr, &start, &entry)) {
		res->anchor_kind = PROVE_ANCHOR_DWARF;
		res->anchor = start;
		res->func_start = entry;
		return entry == vaddr ? 0 : -EILSEQ;
	}
	/* code nothing but a symbol describes: it must start there */
	if (!p->n_fdes && symbol_starts(p, vaddr)) {
		res->anchor_kind = PROVE_ANCHOR_SYMBOL;
		res->anchor = res->func_start = vaddr;
		return code_bytes(p->elf, vaddr, 1) ? 0 : -ERANGE;
	}
	return -ENOENT;
}

const char *probe_prove_anchor_name(enum prove_anchor a)
{
	switch (a) {
	case PROVE_ANCHOR_FDE:
		return ".eh_frame";
	case PROVE_ANCHOR_DWARF:
		return "DWARF";
	case PROVE_ANCHOR_SYMBOL:
		return "symbol";
	default:
		return "none";
	}
}
