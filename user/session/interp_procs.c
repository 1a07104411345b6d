// SPDX-License-Identifier: GPL-2.0
/*
 * interp_procs.c - the parts of the Python and Ruby support that do not
 * depend on the language: the process table, the file table, the frame
 * cache and the merge. See interp_procs.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/elf_symtab.h"
#include "dwarf/symbolize.h"
#include "user/session/interp_procs.h"
#include "user/util/util.h"

/* Entries of a merged stack before it is cut to the caller's room. */
#define MERGED_MAX 512

int interp_table__init(struct interp_table *t)
{
	memset(t, 0, sizeof(*t));
	t->cap = 64;
	t->procs = calloc(t->cap, sizeof(*t->procs));
	t->tags = calloc(INTERP_TAG_SLOTS, sizeof(*t->tags));
	if (t->procs && t->tags)
		return 0;
	interp_table__free(t);
	return -ENOMEM;
}

void interp_table__free(struct interp_table *t)
{
	free(t->procs);
	free(t->tags);
	memset(t, 0, sizeof(*t));
}

static struct interp_proc *slot_in(struct interp_proc *procs, size_t cap, uint32_t pid)
{
	size_t i = lp_mix64(pid) & (cap - 1);

	while (procs[i].pid && procs[i].pid != pid)
		i = (i + 1) & (cap - 1);
	return &procs[i];
}

struct interp_proc *interp_table__find(const struct interp_table *t, uint32_t pid)
{
	return slot_in(t->procs, t->cap, pid);
}

static int grow(struct interp_table *t)
{
	size_t cap = t->cap * 2;
	struct interp_proc *procs = calloc(cap, sizeof(*procs));

	if (!procs)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++)
		if (t->procs[i].pid)
			*slot_in(procs, cap, t->procs[i].pid) = t->procs[i];
	free(t->procs);
	t->procs = procs;
	t->cap = cap;
	return 0;
}

struct interp_proc *interp_table__visit(struct interp_table *t, uint32_t pid, const char *comm,
					bool *look, bool *exec)
{
	struct interp_proc *p;
	bool same_comm;

	*look = *exec = false;
	if ((t->used + 1) * 2 > t->cap && grow(t))
		return NULL;
	p = slot_in(t->procs, t->cap, pid);
	same_comm = p->pid == pid && !strncmp(p->comm, comm, LP_COMM_LEN);
	if (same_comm && (!p->look_again_ns || lp_now_ns() < p->look_again_ns))
		return p;
	*look = true;
	if (!p->pid)
		t->used++;
	else if (p->file && !same_comm)
		*exec = true; /* what it ran is gone */
	p->pid = pid;
	memcpy(p->comm, comm, LP_COMM_LEN);
	return p;
}

void interp_table__forget(struct interp_table *t, uint32_t pid)
{
	for (size_t i = 0; i < INTERP_TAG_SLOTS; i++)
		if (t->tags[i].pid == pid)
			t->tags[i].pid = 0;
}

struct interp_tag *interp_tag__slot(const struct interp_table *t, uint32_t pid, uint64_t code,
				    uint64_t instr, uint64_t aux)
{
	return &t->tags[lp_mix64(code ^ (instr * 0x9e3779b97f4a7c15ULL) ^ lp_mix64(aux) ^ pid) &
			(INTERP_TAG_SLOTS - 1)];
}

void *interp_files__get(struct interp_files *fs, const char *path, bool *added)
{
	struct interp_file *f;
	char *items;

	*added = false;
	for (size_t i = 0; i < fs->n; i++) {
		f = (struct interp_file *)((char *)fs->items + i * fs->size);
		if (!strcmp(f->path, path))
			return f;
	}
	items = realloc(fs->items, (fs->n + 1) * fs->size);
	if (!items)
		return NULL;
	fs->items = items;
	f = (struct interp_file *)(items + fs->n * fs->size);
	memset(f, 0, fs->size);
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	fs->n++;
	*added = true;
	return f;
}

void interp_files__free(struct interp_files *fs)
{
	for (size_t i = 0; i < fs->n; i++)
		free(((struct interp_file *)((char *)fs->items + i * fs->size))->path);
	free(fs->items);
	fs->items = NULL;
	fs->n = 0;
}

bool interp_base_starts(const char *path, const char *prefix)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, prefix, strlen(prefix));
}

int interp_bias_of(const struct sym_mapping *m, uint64_t *bias)
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

/* A return address points after its call: look at the call, pc - 1. */
static uint64_t call_pc(const uint64_t *us, unsigned int i)
{
	return i ? us[i] - 1 : us[i];
}

unsigned int interp_merge(const struct interp_merge_ops *ops, void *ctx, const struct lp_sample *s,
			  uint64_t *us, unsigned int n, unsigned int max, uint64_t *unmerged)
{
	unsigned int ni = s->n_interp < LP_MAX_PYFRAMES ? s->n_interp : LP_MAX_PYFRAMES;
	unsigned int loops = 0, seen = 0, g = 0, out = 0, extra = 0, i;
	uint64_t merged[MERGED_MAX];

	if (!ni)
		return n;
	for (i = 0; i < n; i++)
		loops += ops->in_loop(ctx, call_pc(us, i));
	if (!loops) {
		(*unmerged)++;
		return n;
	}
	/*
	 * More evaluator calls in the interpreter's frames than loop frames
	 * on the native stack: the innermost ones were pushed by the native
	 * code at the leaf (a C method yielding to a block) and their loop has
	 * not begun yet, or has returned before the frame was popped. They are
	 * the newest: they go at the leaf, not on the next loop frame up.
	 */
	for (i = 0; i < ni; i++)
		extra += !!(s->interp[i].instr & LP_PYF_ENTRY);
	extra = extra > loops ? extra - loops : 0;
	while (extra && g < ni && out < MERGED_MAX) {
		extra -= !!(s->interp[g].instr & LP_PYF_ENTRY);
		merged[out++] = ops->frame_tag(ctx, &s->interp[g++]);
	}
	for (i = 0; i < n && out < MERGED_MAX; i++) {
		if (!ops->in_loop(ctx, call_pc(us, i))) {
			merged[out++] = us[i];
			continue;
		}
		if (ops->part_of_loop && i && out && merged[out - 1] == us[i - 1] &&
		    ops->part_of_loop(ctx, call_pc(us, i - 1)))
			out--;
		/* this loop call's frames, up to the one it began with */
		seen++;
		while (g < ni && out < MERGED_MAX) {
			bool entry = s->interp[g].instr & LP_PYF_ENTRY;

			merged[out++] = ops->frame_tag(ctx, &s->interp[g++]);
			if (entry && seen < loops)
				break;
		}
	}
	if (out > max)
		out = max;
	memcpy(us, merged, out * sizeof(*us));
	return out;
}
