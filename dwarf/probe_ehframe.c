// SPDX-License-Identifier: GPL-2.0
/*
 * probe_ehframe.c - .eh_frame's FDE ranges, and whether each starts with the
 * return address at [rsp], for the prover.
 *
 * Parsed here rather than through libdw because libdw tells the range of
 * one CFI row, not where the FDE (the function) starts; and its
 * dwarf_getcfi_elf leaks on broken files. Only the CIE augmentation needed
 * to read an FDE's address range is decoded; every read is bounded.
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

int probe_ranges_push(struct range **v, size_t *n, size_t *cap, uint64_t s, uint64_t e,
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
int probe_parse_eh_frame(struct probe_prover *p, const uint8_t *buf, size_t size, uint64_t vaddr,
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
		if (probe_ranges_push(&p->fdes, &p->n_fdes, cap, start, start + span,
				      fde_entry_cfa(buf, &c, r.pos, r.end)))
			return -ENOMEM;
	}
	return 0;
}
