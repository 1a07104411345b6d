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

#include "dwarf/python_runtime.h"
#include "dwarf/symbolize.h"
#include "user/profile/py_code.h"
#include "user/profile/stack_symbols.h"
#include "user/session/bpf_session.h"
#include "user/session/interp_procs.h"
#include "user/session/python_procs.h"
#include "user/util/log.h"
#include "user/util/util.h"

struct py_file {
	struct interp_file base; /* path, err of python_runtime_find() */
	struct py_runtime rt;
};

struct python_procs {
	bool lines;
	struct interp_table table;
	struct interp_files files;
	struct py_code_cache *codes;
	struct interp_stats stats;
};

struct python_procs *python_procs__new(bool lines)
{
	struct python_procs *pp = calloc(1, sizeof(*pp));

	if (!pp)
		return NULL;
	pp->lines = lines;
	pp->files.size = sizeof(struct py_file);
	pp->codes = py_code_cache__new();
	if (!pp->codes || interp_table__init(&pp->table)) {
		python_procs__free(pp);
		return NULL;
	}
	return pp;
}

void python_procs__free(struct python_procs *pp)
{
	if (!pp)
		return;
	interp_files__free(&pp->files);
	interp_table__free(&pp->table);
	py_code_cache__free(pp->codes);
	free(pp);
}

/* What python_runtime_find() said of @path, asked once per file. */
static const struct py_file *file_of(struct python_procs *pp, const char *path)
{
	char err[256] = "";
	bool added;
	struct py_file *f = interp_files__get(&pp->files, path, &added);

	if (!f || !added)
		return f;
	f->base.err = python_runtime_find(path, &f->rt, err, sizeof(err));
	if (f->base.err == -ENOTSUP)
		lp_warn("%s; its Python frames are not shown, only native ones", err);
	else if (f->base.err && f->base.err != -ENOENT)
		lp_warn("cannot read python binary '%s': %s", path, strerror(-f->base.err));
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
	c->code_qualname = off16(o->code_qualname);
	c->code_adaptive = off16(o->code_code_adaptive);
	c->unicode_length = off16(o->unicode_length);
	c->unicode_state = off16(o->unicode_state);
	c->unicode_ascii_data = off16(o->ascii_size);
	c->code_filename = off16(o->code_filename);
	c->code_ident = (__u16)py_code_ident_offset(o);
	c->code_flags = off16(o->code_flags);
	/* gi_frame_state lies before gi_iframe in every supported version */
	if (o->gen_iframe != PY_OFF_NONE && o->gen_frame_state < o->gen_iframe)
		c->gen_state_back = off16(o->gen_iframe - o->gen_frame_state);
	c->op_return_generator = python_op_return_generator(rt->major, rt->minor);
}

/* Find a known CPython among @pid's executable mappings; configure BPF. */
static void examine(struct python_procs *pp, struct bpf_session *bpf, struct symbolizer *sym,
		    struct interp_proc *p)
{
	const struct sym_mapping *maps;
	int n = symbolizer__mappings(sym, (int)p->pid, &maps);
	struct lp_py_cfg cfg;

	p->file = NULL;
	for (int i = 0; i < n; i++) {
		const struct py_file *f;

		if (!maps[i].path || !(interp_base_starts(maps[i].path, "python3") ||
				       interp_base_starts(maps[i].path, "libpython3")))
			continue;
		f = file_of(pp, maps[i].path);
		if (!f || f->base.err || interp_bias_of(&maps[i], &p->bias))
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
	bool look, exec;
	struct interp_proc *p = interp_table__visit(&pp->table, pid, comm, &look, &exec);

	if (!p)
		return false;
	if (!look)
		return p->file != NULL;
	if (exec) {
		pp->stats.procs--;
		py_code_cache__forget_pid(pp->codes, (pid_t)pid);
		interp_table__forget(&pp->table, pid);
	}
	symbolizer__add_pid(sym, (int)pid);
	examine(pp, bpf, sym, p);
	return p->file != NULL;
}

/* The stack entry for Python frame @f of process @p, named afresh;
 * *@named is false when its code object could not be read. */
static uint64_t name_frame(struct python_procs *pp, struct stack_symbols *ss,
			   const struct interp_proc *p, const struct lp_interp_frame *f,
			   uint64_t instr, uint16_t ident, bool *named)
{
	const struct py_file *file = p->file;
	struct py_frame_name nm;
	char name[PY_NAME_MAX + PY_FILE_MAX + 32];
	const char *base;
	struct frame fr = {.name = name, .kind = FRAME_USER, .module = "python"};

	if (py_code_resolve(pp->codes, (pid_t)p->pid, &file->rt, f->code, instr, ident, &nm)) {
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

/* What the merge of one sample needs. */
struct merge_ctx {
	struct python_procs *pp;
	struct stack_symbols *ss;
	const struct interp_proc *p;
};

/* The stack entry for Python frame @f of the sampled process, remembered. */
static uint64_t frame_tag(void *ctx, const struct lp_interp_frame *f)
{
	struct merge_ctx *m = ctx;
	uint64_t instr = m->pp->lines ? f->instr & ~LP_PYF_ENTRY : 0, tag;
	/* aux, the object's identity at the sample, is part of the key:
	 * another object at the address is another frame */
	struct interp_tag *t = interp_tag__slot(&m->pp->table, m->p->pid, f->code, instr, f->aux);
	bool named;

	m->pp->stats.frames++;
	if (t->pid == m->p->pid && t->code == f->code && t->instr == instr && t->aux == f->aux)
		return t->tag;
	tag = name_frame(m->pp, m->ss, m->p, f, instr, (uint16_t)f->aux, &named);
	/* an unreadable frame may read next time, and 0 is no memory: neither
	 * is remembered */
	if (named && tag)
		*t = (struct interp_tag){.pid = m->p->pid,
					 .code = f->code,
					 .instr = instr,
					 .aux = f->aux,
					 .tag = tag};
	return tag;
}

/* Whether @pc is in _PyEval_EvalFrameDefault. */
static bool in_eval(void *ctx, uint64_t pc)
{
	const struct interp_proc *p = ((struct merge_ctx *)ctx)->p;
	const struct py_file *f = p->file;

	return f->rt.eval_hi && pc >= f->rt.eval_lo + p->bias && pc < f->rt.eval_hi + p->bias;
}

unsigned int python_procs__merge(struct python_procs *pp, struct stack_symbols *ss,
				 const struct lp_sample *s, uint64_t *us, unsigned int n,
				 unsigned int max)
{
	static const struct interp_merge_ops ops = {.in_loop = in_eval, .frame_tag = frame_tag};
	struct merge_ctx m = {pp, ss, interp_table__find(&pp->table, s->pid)};

	if (s->flags & LP_SF_INTERP_FAULT)
		pp->stats.read_faults++;
	if (m.p->pid != s->pid || !m.p->file)
		return n;
	return interp_merge(&ops, &m, s, us, n, max, &pp->stats.samples_unmerged);
}

void python_procs__stats(const struct python_procs *pp, struct interp_stats *out)
{
	*out = pp->stats;
}
