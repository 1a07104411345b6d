// SPDX-License-Identifier: GPL-2.0
/*
 * cfi_table.c - compact unwind tables from DWARF CFI with libdw.
 *
 * The FDEs are enumerated with dwarf_next_cfi (their address ranges are
 * decoded here, from the CIE's pointer encoding), then every row of every
 * FDE is read back through libdw's own CFI interpreter
 * (dwarf_cfi_addrframe, dwarf_frame_info for the row's [start, end),
 * dwarf_frame_cfa and dwarf_frame_register) and reduced to a struct
 * cfi_row when it is one of the few shapes an in-kernel unwinder can
 * apply, or marked CFI_CFA_FALLBACK. Nothing of the CFI bytes is trusted
 * beyond what libdw validates: ranges are clamped, overlaps are cut, and
 * a table never grows past CFI_MAX_ROWS.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include "dwarf/cfi_internal.h"
#include "dwarf/elf_section.h"
#include "user/util/util.h"

#define CFI_MAX_ROWS (8u << 20) /* 96 MiB of rows: more is a hostile file */

struct fde_range {
	uint64_t lo, hi;
};

struct builder {
	Elf *elf;
	Elf_Data *data;	   /* the CFI section */
	uint64_t sec_addr; /* its sh_addr, for pc-relative pointers */
	bool eh_frame;
	struct fde_range *fdes;
	size_t n_fdes, cap_fdes;
	struct cfi_table *t;
	size_t cap_rows;
};

/* Size of a pointer in encoding @enc, 0 for variable-length or unknown. */
static int enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return 8;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return 2;
	default:
		return 0;
	}
}

/*
 * Read an encoded pointer at *@p. Only what x86-64 toolchains write:
 * absolute or pc-relative, 2/4/8 bytes. @value_only skips the
 * application (address_range is a plain size in the same format).
 */
static int read_encoded(struct builder *b, uint8_t enc, const uint8_t **p, const uint8_t *end,
			bool value_only, uint64_t *out)
{
	int size = enc_size(enc);
	uint64_t field = b->sec_addr + (uint64_t)(*p - (const uint8_t *)b->data->d_buf);
	uint64_t v = 0;

	if (!size || end - *p < size || (enc & DW_EH_PE_indirect))
		return -EINVAL;
	memcpy(&v, *p, size);		/* x86-64: little-endian host and file */
	if (size < 8 && (enc & 0x08)) { /* signed formats: sign-extend */
		unsigned int sh = 64 - 8 * size;

		v = (uint64_t)((int64_t)(v << sh) >> sh);
	}
	*p += size;
	if (value_only)
		*out = v;
	else if ((enc & 0x70) == DW_EH_PE_absptr)
		*out = v;
	else if ((enc & 0x70) == DW_EH_PE_pcrel)
		*out = field + v;
	else
		return -EINVAL;
	return 0;
}

/* The FDE pointer encoding of a CIE: 'R' in a "z..." augmentation. */
static int cie_fde_encoding(struct builder *b, const Dwarf_CIE *cie, uint8_t *enc)
{
	const char *aug = cie->augmentation;
	const uint8_t *p = cie->augmentation_data;
	const uint8_t *end = p ? p + cie->augmentation_data_size : NULL;

	*enc = DW_EH_PE_absptr;
	if (!aug || !aug[0])
		return 0;
	if (aug[0] != 'z' || !p)
		return -EINVAL;
	for (aug++; *aug; aug++) {
		uint64_t skip;

		switch (*aug) {
		case 'R':
			if (p >= end)
				return -EINVAL;
			*enc = *p++;
			break;
		case 'L':
			if (p >= end)
				return -EINVAL;
			p++;
			break;
		case 'P': {
			uint8_t penc;

			if (p >= end)
				return -EINVAL;
			penc = *p++;
			if (read_encoded(b, penc & ~DW_EH_PE_indirect, &p, end, true, &skip))
				return -EINVAL;
			break;
		}
		case 'S':
		case 'B':
			break;
		default:
			return -EINVAL;
		}
	}
	return 0;
}

static int add_fde(struct builder *b, uint64_t lo, uint64_t hi)
{
	if (b->n_fdes == b->cap_fdes) {
		size_t cap = b->cap_fdes ? 2 * b->cap_fdes : 256;
		struct fde_range *n = realloc(b->fdes, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		b->fdes = n;
		b->cap_fdes = cap;
	}
	b->fdes[b->n_fdes++] = (struct fde_range){lo, hi};
	return 0;
}

/* Enumerate the FDEs of the section and collect their address ranges. */
static int collect_fdes(struct builder *b)
{
	unsigned char *ident = (unsigned char *)elf_getident(b->elf, NULL);
	Dwarf_Off off = 0, next;
	size_t guard = 0;

	if (!ident)
		return -EINVAL;
	while (off != (Dwarf_Off)-1 && guard++ < CFI_MAX_ROWS) {
		Dwarf_CFI_Entry e, cie;
		Dwarf_Off cnext;
		const uint8_t *p, *end = (const uint8_t *)b->data->d_buf + b->data->d_size;
		uint64_t lo, len;
		uint8_t enc;
		int r = dwarf_next_cfi(ident, b->data, b->eh_frame, off, &next, &e);

		if (r == 1)
			break;
		if (r < 0 || next <= off)
			return b->n_fdes ? 0 : -EINVAL; /* keep what came before */
		off = next;
		if (dwarf_cfi_cie_p(&e))
			continue;
		b->t->n_fdes++;
		if (dwarf_next_cfi(ident, b->data, b->eh_frame, e.fde.CIE_pointer, &cnext, &cie) ||
		    !dwarf_cfi_cie_p(&cie) || cie_fde_encoding(b, &cie.cie, &enc)) {
			b->t->n_bad_fdes++;
			continue;
		}
		p = e.fde.start;
		if (read_encoded(b, enc, &p, end, false, &lo) ||
		    read_encoded(b, enc, &p, end, true, &len)) {
			b->t->n_bad_fdes++;
			continue;
		}
		if (!len)
			continue;
		if (len > UINT32_MAX || lo >= UINT32_MAX || lo + len > UINT32_MAX) {
			b->t->n_bad_fdes++;
			continue;
		}
		if (add_fde(b, lo, lo + len))
			return -ENOMEM;
	}
	return 0;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int push_row(struct builder *b, const struct cfi_row *r)
{
	struct cfi_table *t = b->t;

	if (t->n_rows) {
		struct cfi_row *last = &t->rows[t->n_rows - 1];

		/* Same rule as the row before: that row just covers more. */
		if (last->cfa_rule == r->cfa_rule && last->cfa_off == r->cfa_off &&
		    last->rbp_rule == r->rbp_rule && last->rbp_off == r->rbp_off)
			return 0;
		if (last->pc == r->pc) {
			*last = *r;
			return 0;
		}
	}
	if (t->n_rows == b->cap_rows) {
		size_t cap = b->cap_rows ? 2 * b->cap_rows : 1024;
		struct cfi_row *n;

		if (cap > CFI_MAX_ROWS)
			return -E2BIG;
		n = realloc(t->rows, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->rows = n;
		b->cap_rows = cap;
	}
	t->rows[t->n_rows++] = *r;
	return 0;
}

/* Every row of one FDE, clamped to [lo, hi). */
static int fde_rows(struct builder *b, Dwarf_CFI *cfi, uint64_t lo, uint64_t hi)
{
	uint64_t pc = lo;
	int err;

	while (pc < hi) {
		Dwarf_Frame *f = NULL;
		Dwarf_Addr start, end;
		struct cfi_row r = {.pc = (uint32_t)pc};
		bool signal = false;

		if (dwarf_cfi_addrframe(cfi, pc, &f) || !f) {
			r.cfa_rule = CFI_CFA_FALLBACK;
			b->t->n_fallback++;
			return push_row(b, &r);
		}
		/* it returns the return address column: rip on x86-64 */
		if (dwarf_frame_info(f, &start, &end, &signal) != REG_RIP || end <= pc ||
		    start > pc) {
			free(f);
			r.cfa_rule = CFI_CFA_FALLBACK;
			b->t->n_fallback++;
			return push_row(b, &r);
		}
		cfi_classify(f, signal, &r);
		free(f);
		if (r.cfa_rule == CFI_CFA_FALLBACK)
			b->t->n_fallback++;
		err = push_row(b, &r);
		if (err)
			return err;
		pc = end < hi ? end : hi;
	}
	return 0;
}

static int build_rows(struct builder *b, Dwarf_CFI *cfi)
{
	struct cfi_row none = {0};
	int err;

	qsort(b->fdes, b->n_fdes, sizeof(*b->fdes), cmp_fde);
	for (size_t i = 0; i < b->n_fdes; i++) {
		uint64_t lo = b->fdes[i].lo, hi = b->fdes[i].hi;

		/* Overlapping FDEs: the later start wins, the earlier is cut. */
		if (i + 1 < b->n_fdes && b->fdes[i + 1].lo < hi)
			hi = b->fdes[i + 1].lo;
		if (b->t->n_rows && lo < b->t->rows[b->t->n_rows - 1].pc)
			continue;
		if (lo >= hi)
			continue;
		err = fde_rows(b, cfi, lo, hi);
		if (err)
			return err;
		if (i + 1 == b->n_fdes || b->fdes[i + 1].lo > hi) {
			none.pc = (uint32_t)hi;
			err = push_row(b, &none);
			if (err)
				return err;
		}
	}
	return 0;
}

static void read_loads(Elf *elf, struct cfi_table *t)
{
	size_t phnum;

	if (elf_getphdrnum(elf, &phnum))
		return;
	for (size_t i = 0; i < phnum && t->n_loads < CFI_MAX_LOADS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		t->loads[t->n_loads].vaddr = ph.p_vaddr;
		t->loads[t->n_loads].offset = ph.p_offset;
		t->loads[t->n_loads].filesz = ph.p_filesz;
		t->n_loads++;
	}
}

/* The CFI section and libdw's reader of it: .eh_frame first. */
static int open_cfi(struct builder *b, Dwarf **dw, Dwarf_CFI **cfi)
{
	Elf_Scn *scn = elf_section_by_name(b->elf, ".eh_frame", SHT_PROGBITS, NULL);
	GElf_Shdr sh;

	*dw = NULL;
	*cfi = NULL;
	b->eh_frame = scn != NULL;
	if (!scn)
		scn = elf_section_by_name(b->elf, ".debug_frame", SHT_PROGBITS, NULL);
	if (!scn || !gelf_getshdr(scn, &sh))
		return -ENOENT;
	b->data = elf_getdata(scn, NULL);
	if (!b->data || !b->data->d_buf || !b->data->d_size)
		return -ENOENT;
	b->sec_addr = sh.sh_addr;
	if (b->eh_frame) {
		b->t->source = ".eh_frame";
		*cfi = dwarf_getcfi_elf(b->elf);
	} else {
		b->t->source = ".debug_frame";
		*dw = dwarf_begin_elf(b->elf, DWARF_C_READ, NULL);
		*cfi = *dw ? dwarf_getcfi(*dw) : NULL;
	}
	return *cfi ? 0 : -EINVAL;
}

int cfi_table__build(Elf *elf, struct cfi_table **out)
{
	struct builder b = {.elf = elf};
	GElf_Ehdr eh;
	Dwarf *dw = NULL;
	Dwarf_CFI *cfi = NULL;
	uint64_t t0 = lp_now_ns();
	int err;

	*out = NULL;
	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    gelf_getclass(elf) != ELFCLASS64)
		return -EINVAL;
	b.t = calloc(1, sizeof(*b.t));
	if (!b.t)
		return -ENOMEM;
	read_loads(elf, b.t);
	err = open_cfi(&b, &dw, &cfi);
	if (!err)
		err = collect_fdes(&b);
	if (!err && !b.n_fdes)
		err = -ENOENT;
	if (!err)
		err = build_rows(&b, cfi);
	if (!err && !b.t->n_rows)
		err = -ENOENT;
	if (cfi && b.eh_frame)
		dwarf_cfi_end(cfi);
	if (dw)
		dwarf_end(dw);
	free(b.fdes);
	if (err) {
		cfi_table__free(b.t);
		return err;
	}
	b.t->build_ns = lp_now_ns() - t0;
	*out = b.t;
	return 0;
}

int cfi_table__build_path(const char *path, struct cfi_table **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;
	Elf *elf;

	*out = NULL;
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		close(fd);
		return -EINVAL;
	}
	err = cfi_table__build(elf, out);
	elf_end(elf);
	close(fd);
	return err;
}

void cfi_table__free(struct cfi_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}

const struct cfi_row *cfi_table__lookup(const struct cfi_table *t, uint64_t vaddr)
{
	size_t lo = 0, hi = t->n_rows;

	if (!t->n_rows || vaddr < t->rows[0].pc || vaddr >= t->rows[t->n_rows - 1].pc)
		return NULL;
	/* the last row with pc <= vaddr */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	return &t->rows[lo];
}

int cfi_table__offset_to_vaddr(const struct cfi_table *t, uint64_t offset, uint64_t *vaddr)
{
	for (size_t i = 0; i < t->n_loads; i++) {
		uint64_t o = t->loads[i].offset;

		/* A mapping starts at the page holding the segment's first byte. */
		if (offset >= (o & ~0xfffULL) && offset < o + t->loads[i].filesz) {
			*vaddr = t->loads[i].vaddr - o + offset;
			return 0;
		}
	}
	return -ENOENT;
}
