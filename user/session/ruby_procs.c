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
 * pc), the pc only with --lines, so a hot frame costs a hash probe per
 * sample, not a read of the target, a format and an intern.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/elf_symtab.h"
#include "dwarf/ruby_runtime.h"
#include "dwarf/symbolize.h"
#include "user/profile/rb_iseq.h"
#include "user/profile/stack_symbols.h"
#include "user/session/bpf_session.h"
#include "user/session/ruby_procs.h"
#include "user/util/log.h"
#include "user/util/util.h"

struct rb_file {
	char *path;
	int err;	   /* of ruby_runtime_find(): 0 = a CRuby we know */
	bool links_other; /* a ruby whose runtime is in the libruby it links */
	struct rb_runtime rt;
};

struct rb_proc {
	uint32_t pid; /* 0: free slot */
	char comm[LP_COMM_LEN];
	const struct rb_file *file; /* NULL: not CRuby (or not known) */
	uint64_t bias;		    /* runtime address - ELF address in file->rt.file */
	uint64_t look_again_ns;	    /* not 0: a ruby whose libruby was not mapped yet */
};

/* How often a ruby seen before ld.so mapped its libruby is looked at again. */
#define LOOK_AGAIN_NS (20 * 1000 * 1000ULL)

/* Direct-mapped: a colliding frame replaces the one there (names again). */
#define TAG_SLOTS 8192
/* Entries of a merged stack before it is cut to the caller's room. */
#define MERGED_MAX 512

struct tag_slot {
	uint32_t pid; /* 0: empty */
	uint64_t iseq, pc, tag;
};

struct ruby_procs {
	bool lines;
	struct tag_slot *tags;
	struct rb_proc *procs; /* open addressing by pid, a power of 2 */
	size_t cap, used;
	struct rb_file *files;
	size_t n_files;
	struct rb_iseq_cache *iseqs;
	struct ruby_stats stats;
};

struct ruby_procs *ruby_procs__new(bool lines)
{
	struct ruby_procs *rp = calloc(1, sizeof(*rp));

	if (!rp)
		return NULL;
	rp->lines = lines;
	rp->cap = 64;
	rp->procs = calloc(rp->cap, sizeof(*rp->procs));
	rp->iseqs = rb_iseq_cache__new();
	rp->tags = calloc(TAG_SLOTS, sizeof(*rp->tags));
	if (!rp->procs || !rp->iseqs || !rp->tags) {
		ruby_procs__free(rp);
		return NULL;
	}
	return rp;
}

void ruby_procs__free(struct ruby_procs *rp)
{
	if (!rp)
		return;
	for (size_t i = 0; i < rp->n_files; i++)
		free(rp->files[i].path);
	free(rp->files);
	free(rp->procs);
	free(rp->tags);
	rb_iseq_cache__free(rp->iseqs);
	free(rp);
}

/* The slot of @pid: its entry, or the free slot where it would go. */
static struct rb_proc *slot_of(struct rb_proc *procs, size_t cap, uint32_t pid)
{
	size_t i = lp_mix64(pid) & (cap - 1);

	while (procs[i].pid && procs[i].pid != pid)
		i = (i + 1) & (cap - 1);
	return &procs[i];
}

static int grow(struct ruby_procs *rp)
{
	size_t cap = rp->cap * 2;
	struct rb_proc *procs = calloc(cap, sizeof(*procs));

	if (!procs)
		return -ENOMEM;
	for (size_t i = 0; i < rp->cap; i++)
		if (rp->procs[i].pid)
			*slot_of(procs, cap, rp->procs[i].pid) = rp->procs[i];
	free(rp->procs);
	rp->procs = procs;
	rp->cap = cap;
	return 0;
}

static bool base_starts(const char *path, const char *prefix)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, prefix, strlen(prefix));
}

/* What ruby_runtime_find() said of @path, asked once per file. */
static const struct rb_file *file_of(struct ruby_procs *rp, const char *path)
{
	struct rb_file *f;
	char err[256] = "";

	for (size_t i = 0; i < rp->n_files; i++)
		if (!strcmp(rp->files[i].path, path))
			return &rp->files[i];
	f = realloc(rp->files, (rp->n_files + 1) * sizeof(*f));
	if (!f)
		return NULL;
	rp->files = f;
	f = &rp->files[rp->n_files];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	rp->n_files++;
	f->err = ruby_runtime_find(path, &f->rt, err, sizeof(err));
	if (f->err == -ENOTSUP)
		lp_warn("%s; its Ruby frames are not shown, only native ones", err);
	else if (f->err && f->err != -ENOENT)
		lp_warn("cannot read ruby binary '%s': %s", path, strerror(-f->err));
	/* the addresses are in another file (a ruby linked to a libruby):
	 * that file's own mapping is the one to use */
	if (!f->err && strcmp(f->rt.file, path)) {
		f->err = -ENOENT;
		f->links_other = true;
	}
	return f;
}

static __u16 off16(uint32_t off)
{
	return off >= UINT16_MAX ? UINT16_MAX : (__u16)off;
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

/* Configure BPF for @p if the mapping @m is a CRuby liveprof knows. */
static bool try_mapping(struct ruby_procs *rp, struct bpf_session *bpf, struct rb_proc *p,
			const struct sym_mapping *m)
{
	const struct rb_file *f = file_of(rp, m->path);
	struct lp_rb_cfg cfg;

	if (f && f->links_other)
		p->look_again_ns = lp_now_ns() + LOOK_AGAIN_NS;
	if (!f || f->err || bias_of(m, &p->bias))
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
		    struct rb_proc *p)
{
	const struct sym_mapping *maps;
	int n = symbolizer__mappings(sym, (int)p->pid, &maps);
	bool libruby = false;

	p->file = NULL;
	p->look_again_ns = 0;
	for (int i = 0; i < n; i++) {
		if (!maps[i].path || !base_starts(maps[i].path, "libruby"))
			continue;
		libruby = true;
		if (try_mapping(rp, bpf, p, &maps[i]))
			return;
	}
	for (int i = 0; i < n && !libruby; i++)
		if (maps[i].path && base_starts(maps[i].path, "ruby") &&
		    try_mapping(rp, bpf, p, &maps[i]))
			return;
}

bool ruby_procs__on_sample(struct ruby_procs *rp, struct bpf_session *bpf, struct symbolizer *sym,
			   uint32_t pid, const char *comm)
{
	struct rb_proc *p;

	if ((rp->used + 1) * 2 > rp->cap && grow(rp))
		return false;
	p = slot_of(rp->procs, rp->cap, pid);
	if (p->pid == pid && !strncmp(p->comm, comm, LP_COMM_LEN) &&
	    (!p->look_again_ns || lp_now_ns() < p->look_again_ns))
		return p->file != NULL;
	if (!p->pid)
		rp->used++;
	else if (p->file && strncmp(p->comm, comm, LP_COMM_LEN)) {
		/* it exec'd: what it ran is gone */
		rp->stats.procs--;
		rb_iseq_cache__forget_pid(rp->iseqs, (pid_t)pid);
		for (size_t i = 0; i < TAG_SLOTS; i++)
			if (rp->tags[i].pid == pid)
				rp->tags[i].pid = 0;
	}
	p->pid = pid;
	memcpy(p->comm, comm, LP_COMM_LEN);
	symbolizer__add_pid(sym, (int)pid);
	examine(rp, bpf, sym, p);
	return p->file != NULL;
}

/* The stack entry for Ruby frame (@iseq, @pc) of process @p, named
 * afresh; *@named is false when its iseq could not be read. */
static uint64_t name_frame(struct ruby_procs *rp, struct stack_symbols *ss, const struct rb_proc *p,
			   uint64_t iseq, uint64_t pc, bool *named)
{
	struct rb_frame_name nm;
	char name[RB_NAME_MAX + RB_PATH_MAX + 32];
	const char *base;
	struct frame fr = {.name = name, .kind = FRAME_USER, .module = "ruby"};

	if (rb_iseq_resolve(rp->iseqs, (pid_t)p->pid, &p->file->rt, iseq, pc, &nm)) {
		rp->stats.frames_unnamed++;
		*named = false;
		fr.name = "[ruby: unreadable frame]";
		fr.kind = FRAME_MARKER;
		return stack_symbols__intern_interp(ss, &fr);
	}
	base = strrchr(nm.path, '/');
	base = base ? base + 1 : nm.path;
	snprintf(name, sizeof(name), "%s (%s:%d)", nm.label, base, nm.line);
	fr.file = nm.path;
	fr.line = nm.line;
	*named = true;
	return stack_symbols__intern_interp(ss, &fr);
}

/* The stack entry for Ruby frame @f of process @p, remembered. */
static uint64_t frame_tag(struct ruby_procs *rp, struct stack_symbols *ss, const struct rb_proc *p,
			  const struct lp_interp_frame *f)
{
	/* pc 0 names the method by its first line */
	uint64_t pc = rp->lines ? f->instr & ~LP_PYF_ENTRY : 0, tag;
	bool named;
	struct tag_slot *t = &rp->tags[lp_mix64(f->code ^ (pc * 0x9e3779b97f4a7c15ULL) ^ p->pid) &
				       (TAG_SLOTS - 1)];

	rp->stats.frames++;
	if (t->pid == p->pid && t->iseq == f->code && t->pc == pc)
		return t->tag;
	tag = name_frame(rp, ss, p, f->code, pc, &named);
	/* an unreadable frame may read next time, and 0 is no memory: neither
	 * is remembered */
	if (named && tag)
		*t = (struct tag_slot){.pid = p->pid, .iseq = f->code, .pc = pc, .tag = tag};
	return tag;
}

static bool in_vm_loop(const struct rb_proc *p, uint64_t pc)
{
	const struct rb_runtime *rt = &p->file->rt;

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
static bool is_vm_core(struct symbolizer *sym, const struct rb_proc *p, uint64_t pc)
{
	struct sym_frame f[SYM_MAX_INLINE];
	int n;

	if (p->file->rt.loop_is_core)
		return false;
	n = symbolizer__resolve(sym, (int)p->pid, pc, f, SYM_MAX_INLINE);
	return n >= 1 && !f[n - 1].func && f[n - 1].path && !strcmp(f[n - 1].path, p->file->path);
}

unsigned int ruby_procs__merge(struct ruby_procs *rp, struct stack_symbols *ss,
			       struct symbolizer *sym, const struct lp_sample *s, uint64_t *us,
			       unsigned int n, unsigned int max)
{
	const struct rb_proc *p = slot_of(rp->procs, rp->cap, s->pid);
	unsigned int ni = s->n_interp < LP_MAX_PYFRAMES ? s->n_interp : LP_MAX_PYFRAMES;
	unsigned int loops = 0, seen = 0, g = 0, out = 0, i;
	uint64_t merged[MERGED_MAX];

	if (s->flags & LP_SF_INTERP_FAULT)
		rp->stats.read_faults++;
	if (p->pid != s->pid || !p->file || !ni)
		return n;
	/* a return address points after the call: look at pc - 1 */
	for (i = 0; i < n; i++)
		loops += in_vm_loop(p, i ? us[i] - 1 : us[i]);
	if (!loops) {
		rp->stats.samples_unmerged++;
		return n;
	}
	for (i = 0; i < n && out < MERGED_MAX; i++) {
		if (!in_vm_loop(p, i ? us[i] - 1 : us[i])) {
			merged[out++] = us[i];
			continue;
		}
		if (out && merged[out - 1] == us[i - 1] &&
		    is_vm_core(sym, p, i > 1 ? us[i - 1] - 1 : us[i - 1]))
			out--;
		/* this loop call's frames, up to the one it began with; the
		 * outermost call takes whatever is left */
		seen++;
		while (g < ni && out < MERGED_MAX) {
			bool entry = s->interp[g].instr & LP_PYF_ENTRY;

			merged[out++] = frame_tag(rp, ss, p, &s->interp[g++]);
			if (entry && seen < loops)
				break;
		}
	}
	if (out > max)
		out = max;
	memcpy(us, merged, out * sizeof(*us));
	return out;
}

void ruby_procs__stats(const struct ruby_procs *rp, struct ruby_stats *out)
{
	*out = rp->stats;
}
