// SPDX-License-Identifier: GPL-2.0
/*
 * ruby_procs.c - CRuby targets: recognize, configure BPF, merge.
 *
 * A process is CRuby when one of its executable mappings is a libruby*
 * that ruby_runtime_find() accepts, or, with no libruby mapped (a ruby
 * linked statically), a file named ruby* that it accepts. Only those
 * names are opened: with -a every process on the machine passes through
 * here. A process is looked at on its first sample and again after an
 * exec (its comm changes).
 *
 * The merge follows the VM loop's calls: every call of rb_vm_exec runs
 * the frames from the one it was entered with (VM_FRAME_FLAG_FINISH, which
 * the BPF walk marks LP_PYF_ENTRY) up to the next such frame, so the Ruby
 * frames split into one group per rb_vm_exec frame, in the same order,
 * innermost first. A frame's stack entry is remembered per (pid, iseq,
 * pc, method entry and iseq identity), the pc only with --lines, so a hot
 * frame costs a hash probe per sample, not a read of the target, a format
 * and an intern.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/ruby_runtime.h"
#include "dwarf/symbolize.h"
#include "user/profile/rb_class.h"
#include "user/profile/rb_iseq.h"
#include "user/profile/stack_symbols.h"
#include "user/session/bpf_session.h"
#include "user/session/interp_procs.h"
#include "user/session/ruby_procs.h"
#include "user/util/log.h"
#include "user/util/util.h"

struct rb_file {
	struct interp_file base; /* path, err of ruby_runtime_find() */
	bool links_other;	 /* a ruby whose runtime is in the libruby it links */
	struct rb_runtime rt;
};

/* How often a ruby seen before ld.so mapped its libruby is looked at again. */
#define LOOK_AGAIN_NS (20 * 1000 * 1000ULL)

struct ruby_procs {
	bool lines;
	struct interp_table table;
	struct interp_files files;
	struct rb_iseq_cache *iseqs;
	struct rb_class_cache *classes;
	struct interp_stats stats;
};

struct ruby_procs *ruby_procs__new(bool lines)
{
	struct ruby_procs *rp = calloc(1, sizeof(*rp));

	if (!rp)
		return NULL;
	rp->lines = lines;
	rp->files.size = sizeof(struct rb_file);
	rp->iseqs = rb_iseq_cache__new();
	rp->classes = rb_class_cache__new();
	if (!rp->iseqs || !rp->classes || interp_table__init(&rp->table)) {
		ruby_procs__free(rp);
		return NULL;
	}
	return rp;
}

void ruby_procs__free(struct ruby_procs *rp)
{
	if (!rp)
		return;
	interp_files__free(&rp->files);
	interp_table__free(&rp->table);
	rb_iseq_cache__free(rp->iseqs);
	rb_class_cache__free(rp->classes);
	free(rp);
}

/* What ruby_runtime_find() said of @path, asked once per file. */
static const struct rb_file *file_of(struct ruby_procs *rp, const char *path)
{
	char err[256] = "";
	bool added;
	struct rb_file *f = interp_files__get(&rp->files, path, &added);

	if (!f || !added)
		return f;
	f->base.err = ruby_runtime_find(path, &f->rt, err, sizeof(err));
	if (f->base.err == -ENOTSUP)
		lp_warn("%s; its Ruby frames are not shown, only native ones", err);
	else if (f->base.err && f->base.err != -ENOENT)
		lp_warn("cannot read ruby binary '%s': %s", path, strerror(-f->base.err));
	/* the addresses are in another file (a ruby linked to a libruby):
	 * that file's own mapping is the one to use */
	if (!f->base.err && strcmp(f->rt.file, path)) {
		f->base.err = -ENOENT;
		f->links_other = true;
	}
	return f;
}

static __u16 off16(uint32_t off)
{
	return off >= UINT16_MAX ? UINT16_MAX : (__u16)off;
}

/* Whether the frame's members BPF reads lie in the words it reads of a
 * control frame at once (LP_RB_CFP_WORDS in bpf/ruby.bpf.h). */
static bool cfp_fits(const struct rb_offsets *o)
{
	const uint32_t m[] = {o->cfp_pc, o->cfp_iseq, o->cfp_ep};

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (m[i] % 8 || m[i] >= 8 * LP_RB_CFP_WORDS)
			return false;
	return true;
}

static void fill_cfg(struct lp_rb_cfg *c, const struct rb_runtime *rt, uint64_t bias)
{
	const struct rb_offsets *o = &rt->off;

	memset(c, 0, sizeof(*c));
	c->vm_ptr = rt->vm_ptr_addr + bias;
	c->vm_main_ractor = off16(o->vm_main_ractor);
	c->ractor_threads_set = off16(o->ractor_threads_set);
	c->thread_lt_node = off16(o->thread_lt_node);
	c->thread_ec = off16(o->thread_ec);
	c->thread_native_id = off16(o->thread_native_id);
	c->ec_vm_stack = off16(o->ec_vm_stack);
	c->ec_vm_stack_size = off16(o->ec_vm_stack_size);
	c->ec_cfp = off16(o->ec_cfp);
	c->cfp_pc = off16(o->cfp_pc);
	c->cfp_iseq = off16(o->cfp_iseq);
	c->cfp_ep = off16(o->cfp_ep);
	c->cfp_size = off16(o->cfp_size);
	c->iseq_body = (__u16)rb_iseq_ident_offset(o);
}

/* Configure BPF for @p if the mapping @m is a CRuby liveprof knows. */
static bool try_mapping(struct ruby_procs *rp, struct bpf_session *bpf, struct interp_proc *p,
			const struct sym_mapping *m)
{
	const struct rb_file *f = file_of(rp, m->path);
	struct lp_rb_cfg cfg;

	if (f && f->links_other)
		p->look_again_ns = lp_now_ns() + LOOK_AGAIN_NS;
	if (!f || f->base.err || !cfp_fits(&f->rt.off) || interp_bias_of(m, &p->bias))
		return false;
	fill_cfg(&cfg, &f->rt, p->bias);
	if (bpf_session__set_ruby(bpf, p->pid, &cfg))
		return false;
	p->file = f;
	rp->stats.procs++;
	return true;
}

/*
 * Find a known CRuby among @p's executable mappings: a libruby first, a
 * static ruby only without one (its executable names the libruby it
 * links, and would warn a second time for an unknown version). A ruby
 * that links a libruby not mapped yet (a command liveprof launched, seen
 * while ld.so loads its libraries) is looked at again a little later.
 */
static void examine(struct ruby_procs *rp, struct bpf_session *bpf, struct symbolizer *sym,
		    struct interp_proc *p)
{
	const struct sym_mapping *maps;
	int n = symbolizer__mappings(sym, (int)p->pid, &maps);
	bool libruby = false;

	p->file = NULL;
	p->look_again_ns = 0;
	for (int i = 0; i < n; i++) {
		if (!maps[i].path || !interp_base_starts(maps[i].path, "libruby"))
			continue;
		libruby = true;
		if (try_mapping(rp, bpf, p, &maps[i]))
			return;
	}
	for (int i = 0; i < n && !libruby; i++)
		if (maps[i].path && interp_base_starts(maps[i].path, "ruby") &&
		    try_mapping(rp, bpf, p, &maps[i]))
			return;
}

bool ruby_procs__on_sample(struct ruby_procs *rp, struct bpf_session *bpf, struct symbolizer *sym,
			   uint32_t pid, const char *comm)
{
	bool look, exec;
	struct interp_proc *p = interp_table__visit(&rp->table, pid, comm, &look, &exec);

	if (!p)
		return false;
	if (!look)
		return p->file != NULL;
	if (exec) {
		rp->stats.procs--;
		rb_iseq_cache__forget_pid(rp->iseqs, (pid_t)pid);
		rb_class_cache__forget_pid(rp->classes, (pid_t)pid);
		interp_table__forget(&rp->table, pid);
	} else if (p->file) {
		rp->stats.procs--; /* looked at again below */
	}
	symbolizer__add_pid(sym, (int)pid);
	examine(rp, bpf, sym, p);
	return p->file != NULL;
}

/*
 * @nm's label qualified by the class of the method the frame runs in
 * (@aux, see rb_class.h), or left as it is: at the top level, in a class
 * body, or when the class cannot be read (counted).
 * Return: false in that last case.
 */
static bool qualify(struct ruby_procs *rp, const struct interp_proc *p, uint64_t aux,
		    struct rb_frame_name *nm)
{
	const struct rb_file *file = p->file;
	char owner[RB_CLASS_MAX], label[RB_NAME_MAX];
	bool singleton = false;
	int err;

	err = rb_method_owner(rp->classes, (pid_t)p->pid, &file->rt,
			      file->rt.cobject_addr ? file->rt.cobject_addr + p->bias : 0, aux,
			      owner, sizeof(owner), &singleton);
	if (err == -ENOENT)
		return true;
	if (err || !rb_qualify_label(nm, owner, singleton, label, sizeof(label))) {
		rp->stats.frames_unqualified++;
		return false;
	}
	memcpy(nm->label, label, sizeof(nm->label));
	return true;
}

/* The stack entry for Ruby frame (@iseq, @pc, @aux) of process @p, named
 * afresh; *@named is false when its iseq or its class could not be read
 * (it may read next time), or the iseq there is not the one sampled
 * (never will). */
static uint64_t name_frame(struct ruby_procs *rp, struct stack_symbols *ss,
			   const struct interp_proc *p, const struct lp_interp_frame *f,
			   uint64_t pc, bool *named)
{
	const struct rb_file *file = p->file;
	struct rb_frame_name nm;
	char name[RB_NAME_MAX + RB_PATH_MAX + 32];
	const char *base;
	struct frame fr = {.name = name, .kind = FRAME_USER, .module = "ruby"};

	if (rb_iseq_resolve(rp->iseqs, (pid_t)p->pid, &file->rt, f->code, pc,
			    (uint16_t)(f->aux >> LP_RBF_IDENT_SHIFT), &nm)) {
		rp->stats.frames_unnamed++;
		*named = false;
		fr.name = "[ruby: unreadable frame]";
		fr.kind = FRAME_MARKER;
		return stack_symbols__intern_interp(ss, &fr);
	}
	*named = qualify(rp, p, f->aux & LP_RBF_ME_MASK, &nm);
	base = strrchr(nm.path, '/');
	base = base ? base + 1 : nm.path;
	snprintf(name, sizeof(name), "%s (%s:%d)", nm.label, base, nm.line);
	fr.file = nm.path;
	fr.line = nm.line;
	return stack_symbols__intern_interp(ss, &fr);
}

/* What the merge of one sample needs. */
struct merge_ctx {
	struct ruby_procs *rp;
	struct stack_symbols *ss;
	struct symbolizer *sym;
	const struct interp_proc *p;
};

/* The stack entry for Ruby frame @f of the sampled process, remembered. */
static uint64_t frame_tag(void *ctx, const struct lp_interp_frame *f)
{
	struct merge_ctx *m = ctx;
	/* pc 0 names the method by its first line; aux holds the iseq's
	 * identity too: another iseq at the address is another frame */
	uint64_t pc = m->rp->lines ? f->instr & ~LP_PYF_ENTRY : 0, tag;
	struct interp_tag *t = interp_tag__slot(&m->rp->table, m->p->pid, f->code, pc, f->aux);
	bool named;

	m->rp->stats.frames++;
	if (t->pid == m->p->pid && t->code == f->code && t->instr == pc && t->aux == f->aux)
		return t->tag;
	tag = name_frame(m->rp, m->ss, m->p, f, pc, &named);
	/* an unreadable frame may read next time, and 0 is no memory: neither
	 * is remembered */
	if (named && tag)
		*t = (struct interp_tag){
			.pid = m->p->pid, .code = f->code, .instr = pc, .aux = f->aux, .tag = tag};
	return tag;
}

/* Whether @pc is in rb_vm_exec (or vm_exec_core, when it has a symbol). */
static bool in_vm_loop(void *ctx, uint64_t pc)
{
	const struct interp_proc *p = ((struct merge_ctx *)ctx)->p;
	const struct rb_runtime *rt = &((const struct rb_file *)p->file)->rt;

	return rt->loop_hi && pc >= rt->loop_lo + p->bias && pc < rt->loop_hi + p->bias;
}

/*
 * Whether @pc, in the frame just leafward of rb_vm_exec's, is in
 * vm_exec_core: the function that runs the instructions, which only
 * rb_vm_exec calls and which a stripped libruby has no symbol for. Its
 * frame is the VM loop's as much as rb_vm_exec's is, and goes with it;
 * an unnamed frame of libruby there is taken to be it (rb_vm_exec's
 * other static callees handle exceptions: rare, and only their frame is
 * lost).
 */
static bool is_vm_core(void *ctx, uint64_t pc)
{
	const struct merge_ctx *m = ctx;
	const struct rb_file *file = m->p->file;
	struct sym_frame f[SYM_MAX_INLINE];
	int n;

	if (file->rt.loop_is_core)
		return false;
	n = symbolizer__resolve(m->sym, (int)m->p->pid, pc, f, SYM_MAX_INLINE);
	return n >= 1 && !f[n - 1].func && f[n - 1].path && !strcmp(f[n - 1].path, file->base.path);
}

unsigned int ruby_procs__merge(struct ruby_procs *rp, struct stack_symbols *ss,
			       struct symbolizer *sym, const struct lp_sample *s, uint64_t *us,
			       unsigned int n, unsigned int max)
{
	static const struct interp_merge_ops ops = {
		.in_loop = in_vm_loop, .frame_tag = frame_tag, .part_of_loop = is_vm_core};
	struct merge_ctx m = {rp, ss, sym, interp_table__find(&rp->table, s->pid)};

	if (s->flags & LP_SF_INTERP_FAULT)
		rp->stats.read_faults++;
	if (m.p->pid != s->pid || !m.p->file)
		return n;
	return interp_merge(&ops, &m, s, us, n, max, &rp->stats.samples_unmerged);
}

void ruby_procs__stats(const struct ruby_procs *rp, struct interp_stats *out)
{
	*out = rp->stats;
}
