// SPDX-License-Identifier: GPL-2.0
/*
 * annotate.c - from a profile to samples per line and per instruction of
 * its hot functions.
 *
 * Two passes over the samples: the first finds, for every frame, the
 * function (binary, symbol start) its address is in and counts each
 * function's self and total samples; the hot ones are then decoded
 * (dwarf/src_func.c) and the second pass spreads their samples over
 * their instructions and lines. Totals are counted once per sample
 * (a stamp per function, line and instruction), so recursion does not
 * count a sample twice.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/annotate.h"

#define DEFAULT_MAX_FUNCS 10
#define DEFAULT_MIN_PCT	  1.0

struct bin {
	char *path;
	struct elf_symtab *t; /* NULL: the file could not be opened */
};

/* Binaries kept open from one build to the next, with their parsed DWARF. */
struct annotate_cache {
	struct bin *bins;
	size_t n_bins;
};

struct cand {
	size_t bin;
	uint64_t sym_addr;
	const char *name; /* owned by the bin's symtab */
	uint64_t self, total;
	size_t stamp; /* sample index + 1 that last added to total */
	int sel;      /* index in the result, -1 if not annotated */
};

struct builder {
	const struct profile *p;
	const struct annotate_opts *o;
	struct annotate_cache *bc; /* the caller's, or own */
	struct annotate_cache own;
	struct cand *cands;
	size_t n_cands, cap_cands;
	int32_t *frame_cand; /* per frame id: candidate, -1 none */
};

static bool frame_usable(const struct frame *f)
{
	return f->kind == FRAME_USER && !f->inlined && f->path && f->path[0] == '/';
}

/* The binary of @path, opened once; NULL if it cannot be read. */
static struct bin *bin_get(struct builder *b, const char *path, size_t *idx)
{
	struct annotate_cache *bc = b->bc;
	struct bin *v;

	for (size_t i = 0; i < bc->n_bins; i++) {
		if (!strcmp(bc->bins[i].path, path)) {
			*idx = i;
			return bc->bins[i].t ? &bc->bins[i] : NULL;
		}
	}
	v = realloc(bc->bins, (bc->n_bins + 1) * sizeof(*v));
	if (!v)
		return NULL;
	bc->bins = v;
	v += bc->n_bins;
	if (!(v->path = strdup(path)))
		return NULL;
	if (elf_symtab__open_path(path, &v->t))
		v->t = NULL;
	*idx = bc->n_bins++;
	return v->t ? v : NULL;
}

struct annotate_cache *annotate_cache__new(void)
{
	return calloc(1, sizeof(struct annotate_cache));
}

static void cache_fini(struct annotate_cache *bc)
{
	for (size_t i = 0; i < bc->n_bins; i++) {
		elf_symtab__free(bc->bins[i].t);
		free(bc->bins[i].path);
	}
	free(bc->bins);
	memset(bc, 0, sizeof(*bc));
}

void annotate_cache__free(struct annotate_cache *bc)
{
	if (!bc)
		return;
	cache_fini(bc);
	free(bc);
}

static int cand_of_frame(struct builder *b, const struct frame *f)
{
	const struct elf_sym *sym;
	const char *name;
	uint64_t start, end;
	struct bin *bin;
	size_t bi;

	if (!frame_usable(f) || !(bin = bin_get(b, f->path, &bi)))
		return -1;
	/* the binary was rebuilt since: its code is not what was sampled */
	if (f->build_id && f->build_id[0] && strcmp(f->build_id, bin->t->build_id))
		return -1;
	sym = elf_symtab__lookup(bin->t, f->addr);
	if (sym) {
		start = sym->addr;
		name = sym->name;
	} else if (elf_symtab__fde_range(bin->t, f->addr, &start, &end) == 0) {
		name = f->name; /* "[bin+0xSTART]": the symbolizer named it from the same FDE */
	} else {
		return -1;
	}
	for (size_t i = b->n_cands; i-- > 0;)
		if (b->cands[i].bin == bi && b->cands[i].sym_addr == start)
			return (int)i;
	if (b->n_cands == b->cap_cands) {
		size_t cap = b->cap_cands ? b->cap_cands * 2 : 64;
		struct cand *v = realloc(b->cands, cap * sizeof(*v));

		if (!v)
			return -2;
		b->cands = v;
		b->cap_cands = cap;
	}
	b->cands[b->n_cands] = (struct cand){.bin = bi, .sym_addr = start, .name = name, .sel = -1};
	return (int)b->n_cands++;
}

/* The frame index (root first) whose function the sample ran in, or -1. */
static int self_index(const struct profile *p, const struct profile_sample *s)
{
	for (int k = (int)s->depth - 1; k >= 0; k--) {
		const struct frame *f = &p->frames[s->frames[k]];

		if (f->kind != FRAME_USER)
			return -1; /* in the kernel, or a marker: no user code ran */
		if (!f->inlined)
			return k;
	}
	return -1;
}

static int pass_functions(struct builder *b)
{
	const struct profile *p = b->p;

	b->frame_cand = malloc((p->n_frames ? p->n_frames : 1) * sizeof(*b->frame_cand));
	if (!b->frame_cand)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_frames; i++) {
		int c = cand_of_frame(b, &p->frames[i]);

		if (c == -2)
			return -ENOMEM;
		b->frame_cand[i] = c;
	}
	for (size_t si = 0; si < p->n_samples; si++) {
		const struct profile_sample *s = &p->samples[si];
		int self = self_index(p, s);

		for (int k = 0; k < (int)s->depth; k++) {
			int c = b->frame_cand[s->frames[k]];

			if (c < 0)
				continue;
			if (b->cands[c].stamp != si + 1) {
				b->cands[c].stamp = si + 1;
				b->cands[c].total += s->count;
			}
			if (k == self)
				b->cands[c].self += s->count;
		}
	}
	return 0;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = *(const struct cand *const *)a, *y = *(const struct cand *const *)b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The candidates to annotate, hottest first; caller frees. */
static struct cand **pick(struct builder *b, size_t *n_out)
{
	int max = b->o && b->o->max_funcs > 0 ? b->o->max_funcs : DEFAULT_MAX_FUNCS;
	double pct = b->o && b->o->min_pct > 0 ? b->o->min_pct : DEFAULT_MIN_PCT;
	const char *want = b->o ? b->o->func : NULL;
	struct cand **v = calloc(b->n_cands ? b->n_cands : 1, sizeof(*v));
	size_t n = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < b->n_cands; i++) {
		struct cand *c = &b->cands[i];
		/* hot as perf annotate means it: by self samples; a caller
		 * (main: total 100%) is annotated when asked for by name */
		if (want ? strcmp(c->name, want) != 0 || !c->total
			 : 100.0 * (double)c->self < pct * (double)b->p->total_count || !c->self)
			continue;
		v[n++] = c;
	}
	qsort(v, n, sizeof(*v), cand_cmp);
	*n_out = n < (size_t)max ? n : (size_t)max;
	return v;
}

/* Lines first_line..last_line with their marks, from the instructions. */
static int make_lines(struct annot_func *af)
{
	const struct src_func *sf = af->sf;

	if (!sf->first_line)
		return 0;
	af->n_lines = sf->last_line - sf->first_line + 1;
	af->lines = calloc((size_t)af->n_lines, sizeof(*af->lines));
	if (!af->lines)
		return -ENOMEM;
	for (int i = 0; i < af->n_lines; i++)
		af->lines[i].line = sf->first_line + i;
	for (size_t i = 0; i < sf->n_insns; i++) {
		const struct src_insn *in = &sf->insns[i];
		struct annot_line *l;
		bool inside = in->target >= sf->lo && in->target < sf->hi;

		if (in->line <= 0)
			continue;
		l = &af->lines[in->line - sf->first_line];
		if (!l->has_code || in->depth < l->depth)
			l->depth = in->depth;
		l->has_code = true;
		if (inside && (in->flow == X86_FLOW_JCC || in->flow == X86_FLOW_JMP)) {
			if (in->target <= in->vaddr)
				l->loop = true;
			else if (in->flow == X86_FLOW_JCC)
				l->branch = true;
		}
		if (in->inl_func && !l->inlined)
			l->inlined = in->inl_func;
	}
	return 0;
}

static int open_selected(struct builder *b, struct cand **sel, size_t n, struct annotate *a)
{
	a->funcs = calloc(n ? n : 1, sizeof(*a->funcs));
	if (!a->funcs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct cand *c = sel[i];
		struct annot_func *af = &a->funcs[a->n];
		const struct bin *bin = &b->bc->bins[c->bin];
		const char *base = strrchr(bin->path, '/');
		int err = src_func__open(bin->t, c->sym_addr, &af->sf);

		if (err == -ENOMEM)
			return err;
		if (err)
			continue; /* no bytes for it in the file: nothing to annotate */
		af->path = strdup(bin->path);
		af->module = strdup(base ? base + 1 : bin->path);
		af->insn_self = calloc(af->sf->n_insns + 1, sizeof(uint64_t));
		af->insn_total = calloc(af->sf->n_insns + 1, sizeof(uint64_t));
		if (!af->path || !af->module || !af->insn_self || !af->insn_total ||
		    make_lines(af)) {
			a->n++;
			return -ENOMEM;
		}
		af->self = c->self;
		af->total = c->total;
		af->has_source = src_func__load_source(af->sf) == 0;
		c->sel = (int)a->n++;
	}
	return 0;
}

/* Where one frame's address falls in its annotated function. */
struct spot {
	struct annot_func *af;
	size_t insn; /* index in sf->insns, or n_insns when outside every one */
	int line;    /* index in af->lines, or -1 when unplaced */
};

static bool frame_spot(struct builder *b, struct annotate *a, uint32_t fid, struct spot *sp)
{
	int c = b->frame_cand[fid];
	const struct src_insn *in;

	if (c < 0 || b->cands[c].sel < 0)
		return false;
	sp->af = &a->funcs[b->cands[c].sel];
	in = src_func__insn_at(sp->af->sf, b->p->frames[fid].addr);
	sp->insn = in ? (size_t)(in - sp->af->sf->insns) : sp->af->sf->n_insns;
	sp->line = in && in->line > 0 && sp->af->n_lines ? in->line - sp->af->sf->first_line : -1;
	return true;
}

/* Per-sample stamps of one function's instructions and lines. */
struct stamps {
	size_t *insn, *line, unplaced;
};

static void spread_one(struct spot *sp, struct stamps *st, size_t si, uint64_t count, bool self)
{
	struct annot_func *af = sp->af;

	if (self)
		af->insn_self[sp->insn] += count;
	if (st->insn[sp->insn] != si + 1) {
		st->insn[sp->insn] = si + 1;
		af->insn_total[sp->insn] += count;
	}
	if (sp->line < 0) {
		if (self)
			af->unplaced_self += count;
		if (st->unplaced != si + 1) {
			st->unplaced = si + 1;
			af->unplaced_total += count;
		}
		return;
	}
	if (self)
		af->lines[sp->line].self += count;
	if (st->line[sp->line] != si + 1) {
		st->line[sp->line] = si + 1;
		af->lines[sp->line].total += count;
	}
}

static int pass_lines(struct builder *b, struct annotate *a)
{
	struct stamps *st = calloc(a->n ? a->n : 1, sizeof(*st));
	int err = -ENOMEM;

	if (!st)
		return -ENOMEM;
	for (size_t i = 0; i < a->n; i++) {
		st[i].insn = calloc(a->funcs[i].sf->n_insns + 1, sizeof(size_t));
		st[i].line = calloc((size_t)a->funcs[i].n_lines + 1, sizeof(size_t));
		if (!st[i].insn || !st[i].line)
			goto out;
	}
	for (size_t si = 0; si < b->p->n_samples; si++) {
		const struct profile_sample *s = &b->p->samples[si];
		int self = self_index(b->p, s);

		for (int k = 0; k < (int)s->depth; k++) {
			struct spot sp;

			if (frame_spot(b, a, s->frames[k], &sp))
				spread_one(&sp, &st[sp.af - a->funcs], si, s->count, k == self);
		}
	}
	err = 0;
out:
	for (size_t i = 0; i < a->n; i++) {
		free(st[i].insn);
		free(st[i].line);
	}
	free(st);
	return err;
}

static void builder_free(struct builder *b)
{
	cache_fini(&b->own);
	free(b->cands);
	free(b->frame_cand);
}

int annotate__build(const struct profile *p, const struct annotate_opts *o, struct annotate **out)
{
	struct builder b = {.p = p, .o = o};

	b.bc = o && o->cache ? o->cache : &b.own;
	struct annotate *a = calloc(1, sizeof(*a));
	struct cand **sel = NULL;
	size_t n = 0;
	int err = -ENOMEM;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	a->total = p->total_count;
	err = pass_functions(&b);
	if (!err && !(sel = pick(&b, &n)))
		err = -ENOMEM;
	if (!err)
		err = open_selected(&b, sel, n, a);
	if (!err)
		err = pass_lines(&b, a);
	free(sel);
	builder_free(&b);
	if (err) {
		annotate__free(a);
		return err;
	}
	*out = a;
	return 0;
}

void annotate__free(struct annotate *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++) {
		struct annot_func *af = &a->funcs[i];

		src_func__free(af->sf);
		free(af->module);
		free(af->path);
		free(af->insn_self);
		free(af->insn_total);
		free(af->lines);
	}
	free(a->funcs);
	free(a);
}

const struct annot_line *annotate__line(const struct annot_func *f, int line)
{
	if (!f->n_lines || line < f->sf->first_line || line > f->sf->last_line)
		return NULL;
	return &f->lines[line - f->sf->first_line];
}
