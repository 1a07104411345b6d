// SPDX-License-Identifier: GPL-2.0
/*
 * python_procs.c - CPython targets: recognize, configure BPF, merge.
 *
 * A process is CPython when one of its executable mappings is a file
 * named python3* or libpython3* that python_runtime_find() accepts. Only
 * those names are opened: with -a every process on the machine passes
 * through here, and reading the symbols of every library would cost more
 * than the profile. A process is looked at on its first sample and again
 * after an exec (its comm changes), so a command liveprof launches is
 * recognized once it has become python.
 *
 * The merge follows the evaluator's calls: the BPF walk marks the first
 * frame of each call of _PyEval_EvalFrameDefault (LP_PYF_ENTRY), so the
 * Python frames split into one group per C frame of the evaluator, in
 * the same order, innermost first. A frame's stack entry is remembered
 * per (pid, code object, instruction), so a hot frame costs a hash probe
 * per sample, not a name lookup, a format and an intern.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/elf_symtab.h"
#include "dwarf/python_runtime.h"
#include "dwarf/symbolize.h"
#include "user/profile/py_code.h"
#include "user/profile/stack_symbols.h"
#include "user/session/bpf_session.h"
#include "user/session/python_procs.h"
#include "user/util/log.h"
#include "user/util/util.h"

struct py_file {
	char *path;
	int err; /* of python_runtime_find(): 0 = a CPython we know */
	struct py_runtime rt;
};

struct py_proc {
	uint32_t pid; /* 0: free slot */
	char comm[LP_COMM_LEN];
	const struct py_file *file; /* NULL: not CPython (or not known) */
	uint64_t bias;		    /* runtime address - ELF address */
};

/* Direct-mapped: a colliding frame replaces the one there (names again). */
#define TAG_SLOTS 8192

struct tag_slot {
	uint32_t pid; /* 0: empty */
	uint64_t code, instr, tag;
};

struct python_procs {
	bool lines;
	struct tag_slot *tags;
	struct py_proc *procs; /* open addressing by pid, a power of 2 */
	size_t cap, used;
	struct py_file *files;
	size_t n_files;
	struct py_code_cache *codes;
	struct python_stats stats;
};

struct python_procs *python_procs__new(bool lines)
{
	struct python_procs *pp = calloc(1, sizeof(*pp));

	if (!pp)
		return NULL;
	pp->lines = lines;
	pp->cap = 64;
	pp->procs = calloc(pp->cap, sizeof(*pp->procs));
	pp->codes = py_code_cache__new();
	pp->tags = calloc(TAG_SLOTS, sizeof(*pp->tags));
	if (!pp->procs || !pp->codes || !pp->tags) {
		python_procs__free(pp);
		return NULL;
	}
	return pp;
}

void python_procs__free(struct python_procs *pp)
{
	if (!pp)
		return;
	for (size_t i = 0; i < pp->n_files; i++)
		free(pp->files[i].path);
	free(pp->files);
	free(pp->procs);
	free(pp->tags);
	py_code_cache__free(pp->codes);
	free(pp);
}

/* The slot of @pid: its entry, or the free slot where it would go. */
static struct py_proc *slot_of(struct py_proc *procs, size_t cap, uint32_t pid)
{
	size_t i = lp_mix64(pid) & (cap - 1);

	while (procs[i].pid && procs[i].pid != pid)
		i = (i + 1) & (cap - 1);
	return &procs[i];
}

static int grow(struct python_procs *pp)
{
	size_t cap = pp->cap * 2;
	struct py_proc *procs = calloc(cap, sizeof(*procs));

	if (!procs)
		return -ENOMEM;
	for (size_t i = 0; i < pp->cap; i++)
		if (pp->procs[i].pid)
			*slot_of(procs, cap, pp->procs[i].pid) = pp->procs[i];
	free(pp->procs);
	pp->procs = procs;
	pp->cap = cap;
	return 0;
}

static bool python_name(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "python3", 7) || !strncmp(base, "libpython3", 10);
}

/* What python_runtime_find() said of @path, asked once per file. */
static const struct py_file *file_of(struct python_procs *pp, const char *path)
{
	struct py_file *f;
	char err[256] = "";

	for (size_t i = 0; i < pp->n_files; i++)
		if (!strcmp(pp->files[i].path, path))
			return &pp->files[i];
	f = realloc(pp->files, (pp->n_files + 1) * sizeof(*f));
	if (!f)
		return NULL;
	pp->files = f;
	f = &pp->files[pp->n_files];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	pp->n_files++;
	f->err = python_runtime_find(path, &f->rt, err, sizeof(err));
	if (f->err == -ENOTSUP)
		lp_warn("%s; its Python frames are not shown, only native ones", err);
	else if (f->err && f->err != -ENOENT)
		lp_warn("cannot read python binary '%s': %s", path, strerror(-f->err));
	return f;
}

static __u16 off16(uint32_t off)
{
	return off == PY_OFF_NONE || off >= LP_PY_OFF_NONE ? LP_PY_OFF_NONE : (__u16)off;
}

static void fill_cfg(struct lp_py_cfg *c, const struct py_runtime *rt, uint64_t bias)
{
	const struct py_offsets *o = &rt->off;

	memset(c, 0, sizeof(*c));
	c->runtime = rt->runtime_addr + bias;
	c->runtime_interpreters_head = off16(o->runtime_interpreters_head);
	c->interp_threads_head = off16(o->interp_threads_head);
	c->tstate_next = off16(o->tstate_next);
	c->tstate_thread_id = off16(o->tstate_thread_id);
	c->tstate_cframe = off16(o->tstate_cframe);
	c->tstate_current_frame = off16(o->tstate_current_frame);
	c->cframe_current_frame = off16(o->cframe_current_frame);
	c->iframe_code = off16(o->iframe_code);
	c->iframe_previous = off16(o->iframe_previous);
	c->iframe_instr = off16(o->iframe_instr);
	c->iframe_owner = off16(o->iframe_owner);
	c->iframe_is_entry = off16(o->iframe_is_entry);
	c->minor = (__u16)rt->minor;
}

/* Runtime address - ELF address of the file mapped by @m. */
static int bias_of(const struct sym_mapping *m, uint64_t *bias)
{
	struct elf_symtab *st;
	uint64_t vaddr;
	int err = elf_symtab__open_path(m->path, &st);

	if (err)
		return err;
	err = elf_symtab__offset_to_vaddr(st, m->file_offset, &vaddr);
	elf_symtab__free(st);
	if (!err)
		*bias = m->start - vaddr;
	return err;
}

/* Find a known CPython among @pid's executable mappings; configure BPF. */
static void examine(struct python_procs *pp, struct bpf_session *bpf, struct symbolizer *sym,
		    struct py_proc *p)
{
	const struct sym_mapping *maps;
	int n = symbolizer__mappings(sym, (int)p->pid, &maps);
	struct lp_py_cfg cfg;

	p->file = NULL;
	for (int i = 0; i < n; i++) {
		const struct py_file *f;

		if (!maps[i].path || !python_name(maps[i].path))
			continue;
		f = file_of(pp, maps[i].path);
		if (!f || f->err || bias_of(&maps[i], &p->bias))
			continue;
		fill_cfg(&cfg, &f->rt, p->bias);
		if (bpf_session__set_python(bpf, p->pid, &cfg))
			continue;
		p->file = f;
		pp->stats.procs++;
		return;
	}
}

bool python_procs__on_sample(struct python_procs *pp, struct bpf_session *bpf,
			     struct symbolizer *sym, uint32_t pid, const char *comm)
{
	struct py_proc *p;

	if ((pp->used + 1) * 2 > pp->cap && grow(pp))
		return false;
	p = slot_of(pp->procs, pp->cap, pid);
	if (p->pid == pid && !strncmp(p->comm, comm, LP_COMM_LEN))
		return p->file != NULL;
	if (!p->pid)
		pp->used++;
	else if (p->file) {
		/* it exec'd: what it ran is gone */
		pp->stats.procs--;
		py_code_cache__forget_pid(pp->codes, (pid_t)pid);
		for (size_t i = 0; i < TAG_SLOTS; i++)
			if (pp->tags[i].pid == pid)
				pp->tags[i].pid = 0;
	}
	p->pid = pid;
	memcpy(p->comm, comm, LP_COMM_LEN);
	symbolizer__add_pid(sym, (int)pid);
	examine(pp, bpf, sym, p);
	return p->file != NULL;
}

/* The stack entry for Python frame @f of process @p, named afresh;
 * *@named is false when its code object could not be read. */
static uint64_t name_frame(struct python_procs *pp, struct stack_symbols *ss,
			   const struct py_proc *p, const struct lp_interp_frame *f, uint64_t instr,
			   bool *named)
{
	struct py_frame_name nm;
	char name[PY_NAME_MAX + PY_FILE_MAX + 32];
	const char *base;
	struct frame fr = {.name = name, .kind = FRAME_USER, .module = "python"};

	if (py_code_resolve(pp->codes, (pid_t)p->pid, &p->file->rt, f->code, instr, &nm)) {
		pp->stats.frames_unnamed++;
		*named = false;
		fr.name = "[python: unreadable frame]";
		fr.kind = FRAME_MARKER;
		return stack_symbols__intern_interp(ss, &fr);
	}
	base = strrchr(nm.filename, '/');
	base = base ? base + 1 : nm.filename;
	snprintf(name, sizeof(name), "%s (%s:%d)", nm.qualname, base, nm.line);
	fr.file = nm.filename;
	fr.line = nm.line;
	*named = true;
	return stack_symbols__intern_interp(ss, &fr);
}

/* The stack entry for Python frame @f of process @p, remembered. */
static uint64_t frame_tag(struct python_procs *pp, struct stack_symbols *ss,
			  const struct py_proc *p, const struct lp_interp_frame *f)
{
	uint64_t instr = pp->lines ? f->instr & ~LP_PYF_ENTRY : 0, tag;
	bool named;
	struct tag_slot *t =
		&pp->tags[lp_mix64(f->code ^ (instr * 0x9e3779b97f4a7c15ULL) ^ p->pid) &
			  (TAG_SLOTS - 1)];

	pp->stats.frames++;
	if (t->pid == p->pid && t->code == f->code && t->instr == instr)
		return t->tag;
	tag = name_frame(pp, ss, p, f, instr, &named);
	/* an unreadable frame may read next time, and 0 is no memory: neither
	 * is remembered */
	if (named && tag)
		*t = (struct tag_slot){.pid = p->pid, .code = f->code, .instr = instr, .tag = tag};
	return tag;
}

static bool in_eval(const struct py_proc *p, uint64_t pc)
{
	uint64_t lo = p->file->rt.eval_lo + p->bias, hi = p->file->rt.eval_hi + p->bias;

	return p->file->rt.eval_hi && pc >= lo && pc < hi;
}

unsigned int python_procs__merge(struct python_procs *pp, struct stack_symbols *ss,
				 const struct lp_sample *s, uint64_t *us, unsigned int n,
				 unsigned int max)
{
	const struct py_proc *p = slot_of(pp->procs, pp->cap, s->pid);
	unsigned int ni = s->n_interp < LP_MAX_PYFRAMES ? s->n_interp : LP_MAX_PYFRAMES;
	unsigned int evals = 0, seen = 0, g = 0, out = 0, i;
	uint64_t merged[512];

	if (s->flags & LP_SF_INTERP_FAULT)
		pp->stats.read_faults++;
	if (p->pid != s->pid || !p->file || !ni)
		return n;
	/* a return address points after the call: look at pc - 1 */
	for (i = 0; i < n; i++)
		evals += in_eval(p, i ? us[i] - 1 : us[i]);
	if (!evals) {
		pp->stats.samples_unmerged++;
		return n;
	}
	for (i = 0; i < n && out < sizeof(merged) / sizeof(merged[0]); i++) {
		if (!in_eval(p, i ? us[i] - 1 : us[i])) {
			merged[out++] = us[i];
			continue;
		}
		/* this evaluator call's frames, up to its entry frame; the
		 * outermost evaluator frame takes whatever is left */
		seen++;
		while (g < ni && out < sizeof(merged) / sizeof(merged[0])) {
			bool entry = s->interp[g].instr & LP_PYF_ENTRY;

			merged[out++] = frame_tag(pp, ss, p, &s->interp[g++]);
			if (entry && seen < evals)
				break;
		}
	}
	if (out > max)
		out = max;
	memcpy(us, merged, out * sizeof(*us));
	return out;
}

void python_procs__stats(const struct python_procs *pp, struct python_stats *out)
{
	*out = pp->stats;
}
