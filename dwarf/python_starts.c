// SPDX-License-Identifier: GPL-2.0
/*
 * python_starts.c - the instructions where CPython's evaluator starts a
 * frame and that the kernel emulates, for --trace py: (python_eval.c).
 *
 * Why: a uprobe on resume_frame fires at every frame start and again at
 * every resume of a caller, and its instruction (a mov) is single-stepped:
 * two traps of about 10 us each per Python call on this VM. Every start
 * reaches resume_frame through one straight-line block B (the tail of the
 * recursion check, which gcc's copies of start_frame all join), and no
 * resume enters B: resumes jump to resume_frame itself. The instructions
 * that enter B are the recursion check's conditional jumps (and plain
 * jumps to B), which the kernel emulates (about 0.5 us): probing them
 * sees each start once, and no resume.
 *
 * B = [S, resume_frame): walking back from resume_frame over instructions
 * that only fall through, up to the first that is a jump target or
 * follows a jump. Its entries: every direct jump to S, and the
 * instruction before S if it falls through. Found by decoding the whole
 * evaluator (each DWARF range from its start, as probe_prove.c decodes
 * from trusted starts), so every address returned is an instruction
 * boundary. When an entry is not a jump (a build laid out otherwise), S
 * itself is the one start point: still one trap per start, not two.
 */
#include <errno.h>
#include <stdlib.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include "dwarf/probe_resolve.h"
#include "dwarf/python_eval_internal.h"

#define MAX_EVAL_BYTES (4u << 20) /* the evaluator is about 64 KiB */

struct insn_rec {
	uint64_t addr, target; /* target: of a direct jump or call, else 0 */
	uint8_t len, flow;
};

struct sweep {
	struct insn_rec *v;
	size_t n, cap;
};

static int push(struct sweep *s, const struct insn_rec *r)
{
	if (s->n == s->cap) {
		size_t c = s->cap ? s->cap * 2 : 16384;
		struct insn_rec *nv = realloc(s->v, c * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = c;
	}
	s->v[s->n++] = *r;
	return 0;
}

/* Decode [@lo, @hi) linearly from @lo, a range start of the subprogram. */
static int sweep_range(Elf *elf, uint64_t lo, uint64_t hi, struct sweep *s)
{
	uint64_t off, end_off, len = hi - lo, i = 0;
	const uint8_t *b;
	Elf_Data *d;

	if (hi <= lo || len > MAX_EVAL_BYTES || elf_vaddr_to_offset(elf, lo, &off) ||
	    elf_vaddr_to_offset(elf, hi - 1, &end_off) || end_off - off != len - 1)
		return -ERANGE;
	d = elf_getdata_rawchunk(elf, (int64_t)off, len, ELF_T_BYTE);
	if (!d || !d->d_buf || d->d_size < len)
		return -ERANGE;
	b = d->d_buf;
	while (i < len) {
		struct x86_insn in;
		struct insn_rec r = {.addr = lo + i};
		int l = x86_insn_info(b + i, len - i, &in), err;

		if (l <= 0)
			return -EILSEQ;
		r.len = (uint8_t)l;
		r.flow = (uint8_t)in.flow;
		if (in.flow == X86_FLOW_JCC || in.flow == X86_FLOW_JMP || in.flow == X86_FLOW_CALL)
			r.target = r.addr + (uint64_t)l + (uint64_t)in.rel;
		err = push(s, &r);
		if (err)
			return err;
		i += (uint64_t)l;
	}
	return 0;
}

static int by_addr(const void *a, const void *b)
{
	const struct insn_rec *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The decoded instruction that ends at @a, or NULL. */
static const struct insn_rec *ending_at(const struct sweep *s, uint64_t a)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->v[mid].addr < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || s->v[lo - 1].addr + s->v[lo - 1].len != a)
		return NULL;
	return &s->v[lo - 1];
}

static bool is_jump_target(const struct sweep *s, uint64_t a)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].target == a && s->v[i].flow != X86_FLOW_CALL)
			return true;
	return false;
}

static bool falls_through(const struct insn_rec *r)
{
	return r->flow != X86_FLOW_JMP && r->flow != X86_FLOW_JMP_IND && r->flow != X86_FLOW_RET;
}

/* S: the start of the straight-line block that ends at @resume. */
static uint64_t block_start(const struct sweep *s, uint64_t resume)
{
	uint64_t a = resume;

	for (;;) {
		const struct insn_rec *p = ending_at(s, a);

		if (!p || !falls_through(p) || p->flow != X86_FLOW_NONE)
			return a;
		if (a != resume && is_jump_target(s, a))
			return a;
		a = p->addr;
	}
}

/* The entries of the block at @S into @out; false if one is not a jump. */
static bool entries(const struct sweep *s, uint64_t S, uint64_t *out, int *n)
{
	const struct insn_rec *p = ending_at(s, S);

	*n = 0;
	if (p && falls_through(p)) {
		if (p->flow != X86_FLOW_JCC)
			return false;
		out[(*n)++] = p->addr;
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct insn_rec *r = &s->v[i];

		if (r->target != S || r->flow == X86_FLOW_CALL)
			continue;
		if (*n == PY_MAX_STARTS)
			return false;
		out[(*n)++] = r->addr;
	}
	return *n > 0;
}

int python_eval_starts(Elf *elf, Dwarf_Die *fn, uint64_t resume, uint64_t *out, int *n)
{
	Dwarf_Addr base, lo, hi;
	struct sweep s = {0};
	ptrdiff_t off = 0;
	uint64_t S;
	int r = 0;

	*n = 0;
	while (!r && (off = dwarf_ranges(fn, off, &base, &lo, &hi)) > 0)
		r = sweep_range(elf, lo, hi, &s);
	if (!r && !s.n)
		r = -ENOENT;
	if (!r) {
		qsort(s.v, s.n, sizeof(*s.v), by_addr);
		S = block_start(&s, resume);
		if (S == resume)
			r = -ENOENT; /* starts and resumes share every entry */
		else if (!entries(&s, S, out, n)) {
			out[0] = S;
			*n = 1;
		}
	}
	free(s.v);
	return r;
}
