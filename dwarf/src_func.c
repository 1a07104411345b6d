// SPDX-License-Identifier: GPL-2.0
/*
 * src_func.c - decode one function for annotate and the Source view.
 *
 * Each instruction gets the position perf annotate and addr2line -i give:
 * the line-table row, and when the row is inside inlined code, the line
 * of the call in the function itself (sym_dwarf__frames()), so inlined
 * code folds under its call line. The code bytes come from the binary
 * (a debug file has none), the DWARF from wherever elf_symtab found it.
 * Everything read here may be hostile: lengths are bounded, the decoder
 * stops at the first byte it cannot read.
 */
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwarf/dwarf_aux.h"
#include "dwarf/src_func.h"
#include "dwarf/sym_dwarf.h"

#define MAX_SOURCE_BYTES (64u << 20)
#define MAX_INLINE	 8

/* The file bytes of [vaddr, vaddr + size) through the PT_LOAD holding them. */
static const uint8_t *code_bytes(struct elf_symtab *t, uint64_t vaddr, uint64_t size)
{
	for (size_t i = 0; i < t->nloads; i++) {
		const struct elf_load *l = &t->loads[i];
		Elf_Data *d;

		if (vaddr < l->vaddr || vaddr - l->vaddr >= l->filesz ||
		    size > l->filesz - (vaddr - l->vaddr))
			continue;
		d = elf_getdata_rawchunk(t->elf, (int64_t)(l->offset + vaddr - l->vaddr), size,
					 ELF_T_BYTE);
		return d && d->d_buf && d->d_size >= size ? d->d_buf : NULL;
	}
	return NULL;
}

#define MAX_SCOPE_STEPS 100000 /* bound the DIE walks over hostile DWARF */

/*
 * Lexical blocks and inlined scopes between @pc and the function @sub.
 * A walk of our own, not dwarf_getscopes(): that one follows inlined
 * copies into their abstract origins (and leaks there in libdw 0.188).
 */
static int scope_depth(Dwarf_Die *sub, uint64_t pc)
{
	Dwarf_Die die = *sub, child;
	int depth = 0, steps = 0;

	while (depth < 64 && dwarf_child(&die, &child) == 0) {
		bool found = false;

		do {
			int tag = dwarf_tag(&child);

			if (++steps > MAX_SCOPE_STEPS)
				return depth;
			if ((tag == DW_TAG_lexical_block || tag == DW_TAG_inlined_subroutine) &&
			    dwarf_haspc(&child, pc) > 0) {
				found = true;
				break;
			}
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found)
			break;
		die = child;
		depth++;
	}
	return depth;
}

/* The DW_TAG_subprogram of the function at @lo, from the unit's top level. */
static bool find_subprogram(Dwarf *dw, uint64_t lo, Dwarf_Die *out)
{
	Dwarf_Die cu, child;
	int steps = 0;

	if (!dw || !dwarf_addrdie(dw, lo, &cu))
		return false;
	dwarf_aux__split_unit(dw, &cu);
	if (dwarf_child(&cu, &child) != 0)
		return false;
	do {
		if (++steps > MAX_SCOPE_STEPS)
			return false;
		if (dwarf_tag(&child) == DW_TAG_subprogram && dwarf_haspc(&child, lo) > 0) {
			*out = child;
			return true;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

static bool same_file(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* Line, inlined function and depth of one instruction. */
static int place_insn(struct elf_symtab *t, Dwarf *dw, Dwarf_Die *sub, struct src_func *f,
		      struct src_insn *in)
{
	struct sym_line_frame fr[MAX_INLINE];
	int n = dw ? sym_dwarf__frames(t, in->vaddr, fr, MAX_INLINE) : 0;

	if (n <= 0)
		return 0;
	if (!f->file && fr[n - 1].file && !(f->file = strdup(fr[n - 1].file)))
		return -ENOMEM;
	if (same_file(fr[n - 1].file, f->file))
		in->line = fr[n - 1].line;
	if (n > 1 && fr[0].inlined) {
		in->inl_func = fr[0].func ? strdup(fr[0].func) : NULL;
		in->inl_file = fr[0].file ? strdup(fr[0].file) : NULL;
		in->inl_line = fr[0].line;
		if ((fr[0].func && !in->inl_func) || (fr[0].file && !in->inl_file))
			return -ENOMEM;
	}
	in->depth = sub ? scope_depth(sub, in->vaddr) : 0;
	if (in->line > 0) {
		if (!f->first_line || in->line < f->first_line)
			f->first_line = in->line;
		if (in->line > f->last_line)
			f->last_line = in->line;
	}
	return 0;
}

static int decode_all(struct elf_symtab *t, Dwarf *dw, struct src_func *f, const uint8_t *p)
{
	uint64_t size = f->hi - f->lo, i = 0;
	Dwarf_Die subd, *sub = find_subprogram(dw, f->lo, &subd) ? &subd : NULL;
	size_t cap = 0;
	int err;

	while (i < size) {
		struct x86_insn xi;
		struct src_insn *in;

		if (x86_insn_info(p + i, size - i, &xi) <= 0) {
			f->decode_error = true;
			break;
		}
		if (f->n_insns == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct src_insn *v = realloc(f->insns, ncap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			f->insns = v;
			cap = ncap;
		}
		in = &f->insns[f->n_insns++];
		memset(in, 0, sizeof(*in));
		in->vaddr = f->lo + i;
		in->len = (uint8_t)xi.len;
		memcpy(in->bytes, p + i, (size_t)xi.len);
		in->flow = xi.flow;
		if (xi.flow == X86_FLOW_JCC || xi.flow == X86_FLOW_JMP || xi.flow == X86_FLOW_CALL)
			in->target = in->vaddr + (uint64_t)xi.len + (uint64_t)xi.rel;
		err = place_insn(t, dw, sub, f, in);
		if (err)
			return err;
		i += (uint64_t)xi.len;
	}
	return 0;
}

static void unit_info(Dwarf *dw, uint64_t vaddr, struct src_func *f)
{
	Dwarf_Attribute attr;
	Dwarf_Die cu;
	const char *s;

	if (!dw || !dwarf_addrdie(dw, vaddr, &cu))
		return;
	if (dwarf_attr(&cu, DW_AT_comp_dir, &attr) && (s = dwarf_formstring(&attr)))
		f->comp_dir = strdup(s);
}

/* Bounds and name of the function at @vaddr: its symbol, else its FDE. */
static int func_bounds(struct elf_symtab *t, uint64_t vaddr, uint64_t *lo, uint64_t *hi, char *name,
		       size_t len)
{
	const struct elf_sym *sym = elf_symtab__lookup(t, vaddr);
	const char *base = t->path ? strrchr(t->path, '/') : NULL;

	if (sym && sym->size) {
		*lo = sym->addr;
		*hi = sym->addr + sym->size;
		snprintf(name, len, "%s", sym->name);
		return 0;
	}
	if (sym || elf_symtab__fde_range(t, vaddr, lo, hi))
		return -ENOENT;
	/* named as the symbolizer names it */
	snprintf(name, len, "[%.200s+0x%" PRIx64 "]",
		 base	   ? base + 1
		 : t->path ? t->path
			   : "unknown",
		 *lo);
	return 0;
}

int src_func__open(struct elf_symtab *t, uint64_t vaddr, struct src_func **out)
{
	struct src_func *f;
	const uint8_t *p;
	uint64_t lo, hi;
	char name[512];
	Dwarf *dw;
	int err;

	*out = NULL;
	if (func_bounds(t, vaddr, &lo, &hi, name, sizeof(name)) || hi - lo > SRC_MAX_FUNC_BYTES)
		return -ENOENT;
	p = code_bytes(t, lo, hi - lo);
	if (!p)
		return -ENOENT;
	f = calloc(1, sizeof(*f));
	if (!f || !(f->name = strdup(name))) {
		free(f);
		return -ENOMEM;
	}
	f->lo = lo;
	f->hi = hi;
	snprintf(f->build_id, sizeof(f->build_id), "%s", t->build_id);
	dw = sym_dwarf__dwarf(t);
	if (dw)
		f->debug_from =
			t->dbg_elf && dwarf_getelf(dw) == t->dbg_elf ? t->dbg_how : "binary";
	unit_info(dw, f->lo, f);
	err = decode_all(t, dw, f, p);
	if (err) {
		src_func__free(f);
		return err;
	}
	*out = f;
	return 0;
}

static int split_lines(struct src_func *f, size_t size)
{
	int cap = 0;
	char *s = f->text, *end = f->text + size;

	while (s < end) {
		char *nl = memchr(s, '\n', (size_t)(end - s));

		if (f->n_lines == cap) {
			int ncap = cap ? cap * 2 : 256;
			char **v = realloc(f->lines, (size_t)ncap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			f->lines = v;
			cap = ncap;
		}
		f->lines[f->n_lines++] = s;
		if (!nl)
			break;
		*nl = '\0';
		s = nl + 1;
	}
	return 0;
}

int src_func__load_source(struct src_func *f)
{
	char path[4096];
	struct stat st;
	ssize_t got;
	int fd, err;

	if (f->text)
		return 0;
	if (!f->file) {
		snprintf(f->where, sizeof(f->where), "no DWARF line table for '%s'", f->name);
		return -ENOENT;
	}
	if (debuginfo__find_source(f->build_id, f->comp_dir, f->file, path, sizeof(path), f->where,
				   sizeof(f->where)))
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_SOURCE_BYTES) {
		close(fd);
		return -ENOENT;
	}
	f->text = malloc((size_t)st.st_size + 1);
	f->src_path = strdup(path);
	if (!f->text || !f->src_path) {
		close(fd);
		return -ENOMEM;
	}
	got = read(fd, f->text, (size_t)st.st_size);
	close(fd);
	if (got < 0)
		got = 0;
	f->text[got] = '\0';
	err = split_lines(f, (size_t)got);
	if (err)
		return err;
	/* an edited or other version of the file: say so, never show it as if it matched */
	f->mismatch = f->n_lines < f->last_line;
	return 0;
}

const struct src_insn *src_func__insn_at(const struct src_func *f, uint64_t vaddr)
{
	size_t lo = 0, hi = f->n_insns;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct src_insn *in = &f->insns[mid];

		if (vaddr < in->vaddr)
			hi = mid;
		else if (vaddr >= in->vaddr + in->len)
			lo = mid + 1;
		else
			return in;
	}
	return NULL;
}

void src_func__format_insn(const struct src_func *f, const struct src_insn *in, char *buf,
			   size_t len)
{
	static const char *const what[] = {
		[X86_FLOW_JCC] = "jcc",		[X86_FLOW_JMP] = "jmp",
		[X86_FLOW_JMP_IND] = "jmp *",	[X86_FLOW_CALL] = "call",
		[X86_FLOW_CALL_IND] = "call *", [X86_FLOW_RET] = "ret",
	};
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < in->len && i < 10 && off + 4 < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%02x ", in->bytes[i]);
	if (in->len > 10 && off + 4 < len)
		off += (size_t)snprintf(buf + off, len - off, ".. ");
	while (off < 31 && off + 1 < len)
		buf[off++] = ' ';
	buf[off] = '\0';
	if (in->flow == X86_FLOW_NONE || off + 1 >= len)
		return;
	if (in->target && in->target >= f->lo && in->target < f->hi) {
		/* the two marks the Source view shows: a backward jump closes a loop */
		const char *mark = in->target <= in->vaddr    ? "  (loop)"
				   : in->flow == X86_FLOW_JCC ? "  (branch)"
							      : "";

		snprintf(buf + off, len - off, "%s %s+0x%" PRIx64 "%s", what[in->flow], f->name,
			 in->target - f->lo, mark);
		return;
	}
	if (in->target) {
		snprintf(buf + off, len - off, "%s 0x%" PRIx64, what[in->flow], in->target);
		return;
	}
	snprintf(buf + off, len - off, "%s", what[in->flow]);
}

void src_func__free(struct src_func *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n_insns; i++) {
		free(f->insns[i].inl_func);
		free(f->insns[i].inl_file);
	}
	free(f->insns);
	free(f->name);
	free(f->file);
	free(f->comp_dir);
	free(f->src_path);
	free(f->text);
	free(f->lines);
	free(f);
}
