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

#include "dwarf/cfi_table.h"

#define CFI_MAX_ROWS (8u << 20) /* 96 MiB of rows: more is a hostile file */
#define REG_RBP	     6
#define REG_RSP	     7
#define REG_RIP	     16

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

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

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

static bool is_plt_expr(const Dwarf_Op *o, size_t n, struct cfi_row *r)
{
	if (n != 9 || o[0].atom != DW_OP_breg7 || o[1].atom != DW_OP_breg16 || o[1].number ||
	    o[2].atom != DW_OP_lit15 || o[3].atom != DW_OP_and || o[4].atom < DW_OP_lit0 ||
	    o[4].atom > DW_OP_lit31 || o[5].atom != DW_OP_ge || o[6].atom != DW_OP_lit3 ||
	    o[7].atom != DW_OP_shl || o[8].atom != DW_OP_plus)
		return false;
	if ((int64_t)o[0].number < 0 || (int64_t)o[0].number > 4096)
		return false;
	r->cfa_rule = CFI_CFA_PLT;
	r->cfa_off = (int32_t)o[0].number;
	r->rbp_off = (int16_t)(o[4].atom - DW_OP_lit0);
	r->rbp_rule = CFI_RBP_SAME;
	return true;
}

/* A register saved by DW_CFA_expression as "at rsp + N": N, or -1. */
static int64_t at_rsp(Dwarf_Frame *f, int reg)
{
	Dwarf_Op mem[3], *ops;
	size_t n;

	if (dwarf_frame_register(f, reg, mem, &ops, &n))
		return -1;
	/* libdw pushes the CFA before a DW_CFA_expression; breg7 ignores it */
	if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa) {
		ops++;
		n--;
	}
	if (n != 1 || ops[0].atom != DW_OP_breg7)
		return -1;
	return (int64_t)ops[0].number;
}

/* __restore_rt: CFA = *(rsp + N), rip at rsp + N + 8, rbp at rsp + M. */
static bool classify_signal(Dwarf_Frame *f, const Dwarf_Op *o, size_t n, struct cfi_row *r)
{
	int64_t rbp = at_rsp(f, REG_RBP), rip = at_rsp(f, REG_RIP);

	if (n != 2 || o[0].atom != DW_OP_breg7 || o[1].atom != DW_OP_deref)
		return false;
	if ((int64_t)o[0].number < 0 || (int64_t)o[0].number > 4096 || rbp < 0 || rbp > 4096 ||
	    rip != (int64_t)o[0].number + 8)
		return false;
	r->cfa_rule = CFI_CFA_SIGNAL;
	r->cfa_off = (int32_t)o[0].number;
	r->rbp_rule = CFI_RBP_AT_CFA; /* relative to rsp here, see cfi_table.h */
	r->rbp_off = (int16_t)rbp;
	return true;
}

static bool classify_cfa(const Dwarf_Op *o, size_t n, struct cfi_row *r)
{
	int64_t off;

	if (n == 1 && o[0].atom == DW_OP_bregx) {
		off = (int64_t)o[0].number2;
		if (off < INT32_MIN || off > INT32_MAX)
			return false;
		r->cfa_off = (int32_t)off;
		if (o[0].number == REG_RSP)
			r->cfa_rule = CFI_CFA_RSP;
		else if (o[0].number == REG_RBP)
			r->cfa_rule = CFI_CFA_RBP;
		else
			return false;
		return true;
	}
	if (n == 2 && o[0].atom == DW_OP_breg6 && o[1].atom == DW_OP_deref) {
		off = (int64_t)o[0].number;
		if (off < INT16_MIN || off > INT16_MAX)
			return false;
		r->cfa_rule = CFI_CFA_DEREF_RBP;
		r->cfa_off = (int32_t)off;
		return true;
	}
	return is_plt_expr(o, n, r);
}

/* "at CFA + N" as libdw spells it: call_frame_cfa [plus_uconst N]. */
static bool cfa_offset_rule(const Dwarf_Op *o, size_t n, int64_t *off)
{
	if (n < 1 || n > 2 || o[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (n == 1) {
		*off = 0;
		return true;
	}
	if (o[1].atom != DW_OP_plus_uconst)
		return false;
	*off = (int64_t)o[1].number;
	return true;
}

/* Reduce one CFI row; anything the unwinder cannot apply is FALLBACK. */
static void classify(Dwarf_Frame *f, bool signal, struct cfi_row *r)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	int64_t off;

	r->cfa_rule = CFI_CFA_FALLBACK;
	r->cfa_off = 0;
	r->rbp_rule = CFI_RBP_SAME;
	r->rbp_off = 0;
	if (dwarf_frame_cfa(f, &ops, &n) || !n)
		return;
	if (signal) {
		if (!classify_signal(f, ops, n, r))
			r->cfa_rule = CFI_CFA_FALLBACK;
		return;
	}
	if (!classify_cfa(ops, n, r)) {
		r->cfa_rule = CFI_CFA_FALLBACK;
		return;
	}
	if (dwarf_frame_register(f, REG_RIP, mem, &ops, &n))
		goto fallback;
	if (n == 0 && ops == mem) {
		r->cfa_rule = CFI_CFA_END; /* undefined rip: the outermost frame */
		r->cfa_off = 0;
		return;
	}
	if (!cfa_offset_rule(ops, n, &off) || off != -8)
		goto fallback;
	if (r->cfa_rule == CFI_CFA_PLT)
		return;
	if (dwarf_frame_register(f, REG_RBP, mem, &ops, &n))
		goto fallback;
	if (n == 0) {
		r->rbp_rule = ops ? CFI_RBP_UNDEF : CFI_RBP_SAME;
		return;
	}
	if (!cfa_offset_rule(ops, n, &off) || off < INT16_MIN || off > INT16_MAX)
		goto fallback;
	r->rbp_rule = CFI_RBP_AT_CFA;
	r->rbp_off = (int16_t)off;
	return;
fallback:
	r->cfa_rule = CFI_CFA_FALLBACK;
	r->cfa_off = 0;
	r->rbp_rule = CFI_RBP_SAME;
	r->rbp_off = 0;
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
		classify(f, signal, &r);
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

static Elf_Scn *find_section(Elf *elf, const char *name)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
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
	Elf_Scn *scn = find_section(b->elf, ".eh_frame");
	GElf_Shdr sh;

	*dw = NULL;
	*cfi = NULL;
	b->eh_frame = scn != NULL;
	if (!scn)
		scn = find_section(b->elf, ".debug_frame");
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
	uint64_t t0 = now_ns();
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
	b.t->build_ns = now_ns() - t0;
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
