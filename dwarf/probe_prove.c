// SPDX-License-Identifier: GPL-2.0
/*
 * probe_prove.c - instruction boundaries and function entries, proven by
 * decoding forward from a trusted start (see probe_prove.h).
 *
 * .eh_frame is parsed here rather than through libdw because libdw tells
 * the range of one CFI row, not where the FDE (the function) starts. Only
 * the CIE augmentation needed to read an FDE's address range is decoded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <gelf.h>

#include "dwarf_aux.h"
#include "probe_prove.h"
#include "probe_resolve.h"

#define MAX_DECODE_SPAN	  (16 << 20) /* a function larger than this is not code */
#define MAX_SYMBOL_NEST	  64	     /* symbols that may start before and cover an address */
#define X86_RSP_DWARF_REG 7
#define MAX_INSN_BYTES	  15

struct range {
	uint64_t start, end; /* [start, end) */
	bool entry_cfa;	     /* FDEs: at start the CFA is rsp + 8 ([rsp] is the return address) */
};

struct probe_prover {
	Elf *elf;
	Dwarf *dbg;
	struct range *fdes;
	size_t n_fdes;
	struct range *syms;
	size_t n_syms;
	/* a boundary reached from an anchor: sites sorted by address decode once */
	uint64_t memo_anchor, memo_pos;
};

/* ---- a byte reader that never leaves its buffer ---- */

struct rd {
	const uint8_t *p;
	size_t pos, end;
	uint64_t vaddr; /* of p[0] */
	bool bad;
};

static uint64_t rd_fixed(struct rd *r, size_t n)
{
	uint64_t v = 0;

	if (r->bad || n > 8 || r->end - r->pos < n) {
		r->bad = true;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)r->p[r->pos + i] << (8 * i);
	r->pos += n;
	return v;
}

static uint64_t rd_leb(struct rd *r, bool is_signed)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (r->bad || r->pos >= r->end || shift >= 64) {
			r->bad = true;
			return 0;
		}
		b = r->p[r->pos++];
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (is_signed && shift < 64 && (b & 0x40))
		v |= ~0ULL << shift;
	return v;
}

/* A DW_EH_PE_* encoded pointer; pcrel is relative to the field itself. */
static uint64_t rd_encoded(struct rd *r, uint8_t enc)
{
	uint64_t field = r->vaddr + r->pos, v;

	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect)) {
		r->bad = true;
		return 0;
	}
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		v = rd_fixed(r, 8);
		break;
	case DW_EH_PE_uleb128:
		v = rd_leb(r, false);
		break;
	case DW_EH_PE_sleb128:
		v = rd_leb(r, true);
		break;
	case DW_EH_PE_udata2:
		v = rd_fixed(r, 2);
		break;
	case DW_EH_PE_sdata2:
		v = (uint64_t)(int64_t)(int16_t)rd_fixed(r, 2);
		break;
	case DW_EH_PE_udata4:
		v = rd_fixed(r, 4);
		break;
	case DW_EH_PE_sdata4:
		v = (uint64_t)(int64_t)(int32_t)rd_fixed(r, 4);
		break;
	default:
		r->bad = true;
		return 0;
	}
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		return v;
	case DW_EH_PE_pcrel:
		return v + field;
	default: /* textrel, datarel, funcrel, aligned: not used in .eh_frame FDEs */
		r->bad = true;
		return 0;
	}
}

/* ---- .eh_frame ---- */

struct cie {
	int enc;		 /* FDE pointer encoding, -1: the CIE cannot be read */
	bool z;			 /* FDEs carry augmentation data */
	int64_t data_align;	 /* factor of the *_sf offsets */
	size_t insns, insns_end; /* initial instructions */
};

/* The CIE at @off; c->enc < 0 when it cannot be read (unknown augmentation). */
static void cie_read(const uint8_t *buf, size_t size, size_t off, struct cie *c)
{
	struct rd r = {.p = buf, .pos = off, .end = size};
	uint64_t len = rd_fixed(&r, 4), id;
	const char *aug;
	uint8_t version;

	memset(c, 0, sizeof(*c));
	c->enc = -1;
	if (r.bad || len == 0 || len == 0xffffffff || len > size - r.pos)
		return;
	r.end = r.pos + len;
	id = rd_fixed(&r, 4);
	version = (uint8_t)rd_fixed(&r, 1);
	if (r.bad || id != 0)
		return;
	aug = (const char *)buf + r.pos;
	while (r.pos < r.end && buf[r.pos])
		r.pos++;
	if (r.pos >= r.end)
		return;
	r.pos++;
	rd_leb(&r, false); /* code alignment */
	c->data_align = (int64_t)rd_leb(&r, true);
	if (version == 1)
		rd_fixed(&r, 1);
	else
		rd_leb(&r, false); /* return address register */
	if (aug[0] && aug[0] != 'z')
		return;
	c->z = aug[0] == 'z';
	c->enc = DW_EH_PE_absptr;
	if (c->z) {
		uint64_t alen = rd_leb(&r, false);
		size_t data_end = r.pos + alen;

		if (alen > r.end - r.pos)
			r.bad = true;
		for (const char *a = aug + 1; *a && !r.bad; a++) {
			if (*a == 'R')
				c->enc = (uint8_t)rd_fixed(&r, 1);
			else if (*a == 'L')
				rd_fixed(&r, 1);
			else if (*a == 'P')
				/* only its size matters: read it without relocating */
				rd_encoded(&r, (uint8_t)rd_fixed(&r, 1) & 0x0f);
			else if (*a != 'S' && *a != 'B')
				r.bad = true;
		}
		r.pos = data_end;
	}
	c->insns = r.pos;
	c->insns_end = r.end;
	if (r.bad)
		c->enc = -1;
}

struct cfa {
	uint64_t reg;
	int64_t off;
};

/*
 * Run CFA instructions up to the first advance (the row at the start):
 * only the CFA rule is kept. False when an instruction is unknown.
 */
static bool cfa_run(struct rd *r, int64_t data_align, struct cfa *cfa)
{
	while (r->pos < r->end && !r->bad) {
		uint8_t op = (uint8_t)rd_fixed(r, 1);

		switch (op >> 6) {
		case 1: /* advance_loc: the first row ends */
			return true;
		case 2: /* offset */
			rd_leb(r, false);
			continue;
		case 3: /* restore */
			continue;
		}
		switch (op) {
		case DW_CFA_nop:
		case DW_CFA_remember_state:
		case DW_CFA_restore_state:
			break;
		case DW_CFA_set_loc:
		case DW_CFA_advance_loc1:
		case DW_CFA_advance_loc2:
		case DW_CFA_advance_loc4:
			return true;
		case DW_CFA_def_cfa:
			cfa->reg = rd_leb(r, false);
			cfa->off = (int64_t)rd_leb(r, false);
			break;
		case DW_CFA_def_cfa_sf:
			cfa->reg = rd_leb(r, false);
			cfa->off = (int64_t)rd_leb(r, true) * data_align;
			break;
		case DW_CFA_def_cfa_register:
			cfa->reg = rd_leb(r, false);
			break;
		case DW_CFA_def_cfa_offset:
			cfa->off = (int64_t)rd_leb(r, false);
			break;
		case DW_CFA_def_cfa_offset_sf:
			cfa->off = (int64_t)rd_leb(r, true) * data_align;
			break;
		case DW_CFA_def_cfa_expression:
			return false; /* not "register + offset": no return address known */
		case DW_CFA_restore_extended:
		case DW_CFA_undefined:
		case DW_CFA_same_value:
		case DW_CFA_GNU_args_size:
			rd_leb(r, false);
			break;
		case DW_CFA_offset_extended:
		case DW_CFA_register:
		case DW_CFA_val_offset:
		case DW_CFA_GNU_negative_offset_extended:
			rd_leb(r, false);
			rd_leb(r, false);
			break;
		case DW_CFA_offset_extended_sf:
		case DW_CFA_val_offset_sf:
			rd_leb(r, false);
			rd_leb(r, true);
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression: {
			uint64_t n;

			rd_leb(r, false);
			n = rd_leb(r, false);
			if (n > r->end - r->pos)
				return false;
			r->pos += n;
			break;
		}
		default:
			return false;
		}
	}
	return !r->bad;
}

/* Is the CFA rsp + 8 at the FDE's start (CIE rules, then the FDE's first)? */
static bool fde_entry_cfa(const uint8_t *buf, const struct cie *c, size_t fde_insns, size_t fde_end)
{
	struct cfa cfa = {.reg = UINT64_MAX};
	struct rd ci = {.p = buf, .pos = c->insns, .end = c->insns_end};
	struct rd fi = {.p = buf, .pos = fde_insns, .end = fde_end};

	if (!cfa_run(&ci, c->data_align, &cfa) || !cfa_run(&fi, c->data_align, &cfa))
		return false;
	return cfa.reg == X86_RSP_DWARF_REG && cfa.off == 8;
}

static int ranges_push(struct range **v, size_t *n, size_t *cap, uint64_t s, uint64_t e,
		       bool entry_cfa)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct range *nv = realloc(*v, c * sizeof(**v));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = (struct range){s, e, entry_cfa};
	return 0;
}

/* Append the FDE ranges of one .eh_frame image to the prover's list. */
static int parse_eh_frame(struct probe_prover *p, const uint8_t *buf, size_t size, uint64_t vaddr,
			  size_t *cap)
{
	size_t pos = 0, last_cie = SIZE_MAX;
	struct cie c = {.enc = -1};

	while (size - pos >= 8) {
		struct rd r = {.p = buf, .pos = pos, .end = size, .vaddr = vaddr};
		uint64_t len = rd_fixed(&r, 4), id, start, span;
		size_t id_pos, cie;

		if (len == 0 || len == 0xffffffff || len > size - r.pos)
			break; /* terminator, 64-bit DWARF (never in .eh_frame), or garbage */
		r.end = r.pos + len;
		id_pos = r.pos;
		id = rd_fixed(&r, 4);
		pos = r.end;
		if (r.bad || id == 0 || id > id_pos)
			continue; /* a CIE, or an FDE whose CIE would lie outside */
		cie = id_pos - (size_t)id;
		if (cie != last_cie) {
			last_cie = cie;
			cie_read(buf, size, cie, &c);
		}
		if (c.enc < 0)
			continue;
		start = rd_encoded(&r, (uint8_t)c.enc);
		span = rd_encoded(&r, (uint8_t)c.enc & 0x0f);
		if (c.z) {
			uint64_t alen = rd_leb(&r, false);

			if (alen > r.end - r.pos)
				continue;
			r.pos += alen;
		}
		if (r.bad || !start || !span || span > MAX_DECODE_SPAN || start + span < start)
			continue;
		if (ranges_push(&p->fdes, &p->n_fdes, cap, start, start + span,
				fde_entry_cfa(buf, &c, r.pos, r.end)))
			return -ENOMEM;
	}
	return 0;
}

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
			    parse_eh_frame(p, d->d_buf, d->d_size, sh.sh_addr, &fcap))
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
			if (ranges_push(&p->syms, &p->n_syms, &scap, s.st_value,
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
