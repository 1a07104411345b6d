// SPDX-License-Identifier: GPL-2.0
/*
 * stack_symbols.c - raw stacks to frame lists. Frames are interned in a
 * private frame table (a struct profile used only for its interning), so
 * a stack is a list of small ids and a profile build is a copy.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/liveprof.h"
#include "user/profile/stack_symbols.h"
#include "user/util/slab.h"
#include "user/util/util.h"

#define ADDR_CACHE_MAX (1u << 20) /* entries; past it the cache starts over */

#include "user/profile/stack_symbols_internal.h"

struct stack_symbols *stack_symbols__new(const struct stack_symbols_opts *o)
{
	struct stack_symbols *ss = calloc(1, sizeof(*ss));

	if (!ss)
		return NULL;
	ss->opts = *o;
	ss->table = profile__new("frames");
	ss->slab = lp_slab__new();
	if (!ss->table || !ss->slab) {
		profile__free(ss->table);
		lp_slab__delete(ss->slab);
		free(ss);
		return NULL;
	}
	return ss;
}

void stack_symbols__free(struct stack_symbols *ss)
{
	if (!ss)
		return;
	for (size_t i = 0; i < ss->n; i++)
		lp_slab__free(ss->slab, ss->stacks[i].packed, ss->stacks[i].len);
	lp_slab__delete(ss->slab);
	free(ss->stacks);
	free(ss->redo);
	free(ss->addr_cache);
	free(ss->remap);
	free(ss->path_hashes);
	profile__free(ss->table);
	free(ss);
}

static int push(struct stack_symbols *ss, uint32_t *ids, uint32_t *depth, const struct frame *f)
{
	int64_t id;

	if (*depth >= MAX_FRAMES)
		return 0;
	id = profile__intern_frame(ss->table, f);
	if (id < 0)
		return (int)id;
	ids[(*depth)++] = (uint32_t)id;
	return 0;
}

static int push_marker(struct stack_symbols *ss, uint32_t *ids, uint32_t *depth, const char *name)
{
	struct frame f = {.name = name, .kind = FRAME_MARKER};

	return push(ss, ids, depth, &f);
}

/* The root frame of @pid named @name (the pid rides in its addr: pprof
 * makes a "pid" label of it). */
static int push_root(struct stack_symbols *ss, uint32_t *ids, uint32_t *depth, uint32_t pid,
		     const char *name)
{
	struct frame f = {.name = name, .kind = FRAME_ROOT, .addr = pid};
	int err;

	if (ss->root.name[0] && ss->root.pid == pid && !strcmp(ss->root.name, name)) {
		ids[(*depth)++] = ss->root.id; /* the first frame: there is room */
		return 0;
	}
	err = push(ss, ids, depth, &f);
	if (!err && *depth == 1 && name[0] && strlen(name) < sizeof(ss->root.name)) {
		ss->root.pid = pid;
		ss->root.id = ids[0];
		strcpy(ss->root.name, name);
	}
	return err;
}

/* Push the frames of one user address, outermost (real function) first. */
static int push_user_addr(struct stack_symbols *ss, struct symbolizer *sym, uint32_t pid,
			  uint64_t addr, uint32_t *ids, uint32_t *depth)
{
	struct sym_frame sf[SYM_MAX_INLINE];
	char name[320];
	int n, err;

	n = symbolizer__resolve(sym, pid, addr, sf, SYM_MAX_INLINE);
	if (n <= 0) {
		struct frame f = {.name = name, .addr = addr, .kind = FRAME_USER};

		snprintf(name, sizeof(name), "[unknown+0x%" PRIx64 "]", addr);
		return push(ss, ids, depth, &f);
	}
	for (int i = n - 1; i >= 0; i--) {
		struct frame f = {
			.name = sf[i].func,
			.module = sf[i].module,
			.path = sf[i].path,
			.build_id = sf[i].build_id,
			.file = sf[i].file,
			.line = sf[i].line,
			.addr = sf[i].offset,
			.kind = FRAME_USER,
			.inlined = sf[i].inlined,
		};

		/* --no-inline: the function that holds the address, and the
		 * line of the innermost code there, as without DWARF */
		if (sf[i].inlined && (!ss->opts.inline_frames || !sf[i].func))
			continue;
		if (!ss->opts.inline_frames && n > 1) {
			f.file = sf[0].file;
			f.line = sf[0].line;
		}
		if (!ss->opts.lines) {
			/* one frame per function: a line apart is no new frame */
			f.file = NULL;
			f.line = 0;
		} else if (f.name && f.file) {
			/* A per-line profile: the line is part of the frame's name,
			 * so folded stacks, SVGs and the top table all show it.
			 * Inlined frames are marked by the writers (frame.inlined). */
			const char *base = strrchr(f.file, '/');

			snprintf(name, sizeof(name), "%s (%s:%d)", f.name, base ? base + 1 : f.file,
				 f.line);
			f.name = name;
		}
		if (!f.name && f.module && !strcmp(f.module, "[uprobes]")) {
			/* The uprobe XOL page: an instruction displaced by a probe
			 * being single-stepped. Probe overhead, said as such. */
			f.name = "[uprobe single-step]";
			f.kind = FRAME_MARKER;
		}
		if (!f.name) {
			snprintf(name, sizeof(name), "[%s+0x%" PRIx64 "]",
				 sf[i].module ? sf[i].module : "unknown", sf[i].offset);
			f.name = name;
		}
		err = push(ss, ids, depth, &f);
		if (err)
			return err;
	}
	return 0;
}

/* One multiply, its high half folded down, rather than the full
 * lp_mix64(): every frame of every new stack is looked up here. */
static size_t addr_slot(uint32_t pid, uint64_t addr, size_t cap)
{
	uint64_t h = (addr ^ ((uint64_t)pid << 47)) * 0x9e3779b97f4a7c15ULL;

	return (h ^ (h >> 32)) & (cap - 1);
}

static struct addr_frames *addr_find(struct stack_symbols *ss, uint32_t pid, uint64_t addr)
{
	size_t mask = ss->addr_cap - 1;

	if (!ss->addr_cap)
		return NULL;
	for (size_t i = addr_slot(pid, addr, ss->addr_cap); ss->addr_cache[i].pid;
	     i = (i + 1) & mask)
		if (ss->addr_cache[i].pid == pid && ss->addr_cache[i].addr == addr)
			return &ss->addr_cache[i];
	return NULL;
}

/* Room for one more entry: the table doubles at a quarter full, so that
 * a lookup, once per frame of every new stack, seldom probes a second
 * slot (a branch mispredicted), and starts over empty at ADDR_CACHE_MAX
 * (a bound on memory, not on correctness). It starts small, 12 KB: a
 * process's stacks return to a few dozen addresses, whose entries then
 * stay in the first-level cache, where 4,096 entries spread them over
 * 192 KB. */
static int addr_room(struct stack_symbols *ss)
{
	size_t ncap = ss->addr_cap ? ss->addr_cap * 2 : 256;
	struct addr_frames *old = ss->addr_cache, *n;

	if (ss->addr_n * 4 < ss->addr_cap)
		return 0;
	if (ncap > ADDR_CACHE_MAX) {
		memset(old, 0, ss->addr_cap * sizeof(*old));
		ss->addr_n = 0;
		return 0;
	}
	n = calloc(ncap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t j = 0; j < ss->addr_cap; j++) {
		size_t i;

		if (!old[j].pid)
			continue;
		for (i = addr_slot(old[j].pid, old[j].addr, ncap); n[i].pid;
		     i = (i + 1) & (ncap - 1))
			;
		n[i] = old[j];
	}
	free(old);
	ss->addr_cache = n;
	ss->addr_cap = ncap;
	return 0;
}

static void addr_put(struct stack_symbols *ss, uint32_t pid, uint64_t addr, const uint32_t *ids,
		     uint32_t n)
{
	size_t i;

	if (!pid || n > SYM_MAX_INLINE || addr_room(ss))
		return;
	for (i = addr_slot(pid, addr, ss->addr_cap); ss->addr_cache[i].pid;
	     i = (i + 1) & (ss->addr_cap - 1))
		;
	ss->addr_cache[i] = (struct addr_frames){.addr = addr, .pid = pid, .n = n};
	memcpy(ss->addr_cache[i].ids, ids, n * sizeof(*ids));
	ss->addr_n++;
}

/*
 * Empty the address cache if the symbolizer has read mappings again since
 * it was filled. The generation changes only inside the symbolizer's own
 * calls: checked before a stack's frames and after each lookup that
 * missed, the cache is never read across a change.
 */
static void addr_cache_sync(struct stack_symbols *ss, struct symbolizer *sym)
{
	uint64_t gen = symbolizer__generation(sym);

	if (gen != ss->addr_gen && ss->addr_n) {
		memset(ss->addr_cache, 0, ss->addr_cap * sizeof(*ss->addr_cache));
		ss->addr_n = 0;
	}
	ss->addr_gen = gen;
}

/* push_user_addr() through the cache of what each address interned to. */
static int push_user_addr_cached(struct stack_symbols *ss, struct symbolizer *sym, uint32_t pid,
				 uint64_t addr, uint32_t *ids, uint32_t *depth)
{
	const struct addr_frames *e = addr_find(ss, pid, addr);
	uint32_t start = *depth;
	int err;

	if (e) {
		/* most addresses are one frame: no loop to mispredict */
		if (e->n == 1 && *depth < MAX_FRAMES) {
			ids[(*depth)++] = e->ids[0];
			return 0;
		}
		for (uint32_t k = 0; k < e->n && *depth < MAX_FRAMES; k++)
			ids[(*depth)++] = e->ids[k];
		return 0;
	}
	err = push_user_addr(ss, sym, pid, addr, ids, depth);
	addr_cache_sync(ss, sym);
	/* a chain cut at MAX_FRAMES is not the address's whole chain */
	if (!err && *depth < MAX_FRAMES)
		addr_put(ss, pid, addr, ids + start, *depth - start);
	return err;
}

uint64_t stack_symbols__intern_interp(struct stack_symbols *ss, const struct frame *f)
{
	int64_t id = profile__intern_frame(ss->table, f);

	return id < 0 ? 0 : STACK_INTERP_TAG | (uint64_t)id;
}

int stack_symbols__interp_names(const struct stack_symbols *ss, const char *module,
				const char *prefix, const char **out, int max)
{
	size_t np = strlen(prefix);
	int n = 0;

	for (size_t i = 0; ss && ss->table && i < ss->table->n_frames && n < max; i++) {
		const struct frame *f = &ss->table->frames[i];

		if (f->kind == FRAME_USER && f->module && !strcmp(f->module, module) &&
		    !strncmp(f->name, prefix, np))
			out[n++] = f->name;
	}
	return n;
}

/* An interpreter frame (stack_symbols__intern_interp): its id is in the table already. */
static int push_interp(uint64_t entry, uint32_t *ids, uint32_t *depth)
{
	if (*depth < MAX_FRAMES)
		ids[(*depth)++] = (uint32_t)(entry & ~STACK_INTERP_MASK);
	return 0;
}

static int push_kernel_addr(struct stack_symbols *ss, struct symbolizer *sym, uint64_t addr,
			    uint32_t *ids, uint32_t *depth)
{
	struct sym_frame sf;
	char name[320];
	struct frame f = {.kind = FRAME_KERNEL, .module = "[kernel]"};

	if (symbolizer__resolve_kernel(sym, addr, &sf) > 0 && sf.func) {
		f.name = sf.func;
		f.module = sf.module;
		f.addr = sf.offset;
	} else {
		snprintf(name, sizeof(name), "[kernel+0x%" PRIx64 "]", addr);
		f.name = name;
		f.addr = addr;
	}
	return push(ss, ids, depth, &f);
}

static int symbolize_one(struct stack_symbols *ss, const struct raw_stack *rs,
			 struct symbolizer *sym, const char *root, struct sym_stack *out)
{
	uint32_t ids[MAX_FRAMES], depth = 0;
	uint8_t packed[5 * MAX_FRAMES];
	char thread[48];
	uint16_t len;
	int err;

	err = push_root(ss, ids, &depth, rs->pid, root);
	if (!err && ss->opts.per_thread) {
		struct frame t = {.name = thread, .kind = FRAME_ROOT};

		snprintf(thread, sizeof(thread), "%.16s-%u", rs->comm, rs->tid);
		err = push(ss, ids, &depth, &t);
	}
	/* an unwind error is also a truncation: one marker, the more telling */
	if (!err && (rs->flags & STACK_F_UNWIND_ERROR))
		err = push_marker(ss, ids, &depth, "[unwind-error]");
	else if (!err && (rs->flags & STACK_F_TRUNCATED))
		err = push_marker(ss, ids, &depth, "[truncated]");
	if (!err && rs->n_user == 0 && rs->n_kernel == 0 && !(rs->flags & STACK_F_UNWIND_ERROR))
		err = push_marker(ss, ids, &depth, "[no stack]");
	addr_cache_sync(ss, sym);
	for (int i = (int)rs->n_user - 1; i >= 0 && !err; i--) {
		/* Return addresses point after the call: look up addr - 1 so a
		 * call at the end of a function is not given to the next one.
		 * The leaf (index 0) is the interrupted instruction itself. */
		uint64_t a = rs->user[i];

		if ((a & STACK_INTERP_MASK) == STACK_INTERP_TAG)
			err = push_interp(a, ids, &depth);
		else
			err = push_user_addr_cached(ss, sym, rs->pid, i ? a - 1 : a, ids, &depth);
	}
	for (int i = (int)rs->n_kernel - 1; i >= 0 && !err; i--)
		err = push_kernel_addr(ss, sym, rs->kernel[i], ids, &depth);
	if (!err && (rs->flags & STACK_F_OFFCPU))
		err = push_marker(ss, ids, &depth, "[off-cpu]");
	/* reclaim hashes every stack it folds: here the ids are in the
	 * cache, there the packed ones of a stack seconds old were not */
	if (!err)
		err = stack_symbols_path_hash_of(ss, ids, depth, &out->path_hash);
	if (err)
		return err;
	len = sym_ids_pack(ids, depth, packed);
	out->packed = lp_slab__alloc(ss->slab, len);
	if (!out->packed)
		return -ENOMEM;
	memcpy(out->packed, packed, len);
	out->depth = (uint16_t)depth;
	out->len = len;
	return 0;
}

static int symbolize_id(struct stack_symbols *ss, const struct raw_stack *rs,
			struct symbolizer *sym, const char *(*root_name)(void *, uint32_t),
			void *ctx, uint32_t id)
{
	const char *root = root_name ? root_name(ctx, rs->pid) : NULL;
	char comm[17];

	if (!root) {
		snprintf(comm, sizeof(comm), "%.16s", rs->comm);
		root = comm;
	}
	return symbolize_one(ss, rs, sym, root, &ss->stacks[id]);
}

static int redo_push(struct stack_symbols *ss, uint32_t id)
{
	if (ss->n_redo == ss->cap_redo) {
		size_t cap = ss->cap_redo ? ss->cap_redo * 2 : 1024;
		uint32_t *r = realloc(ss->redo, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		ss->redo = r;
		ss->cap_redo = cap;
	}
	ss->redo[ss->n_redo++] = id;
	return 0;
}

/* The released ids that the store has handed out again. */
static int update_redo(struct stack_symbols *ss, const struct stack_store *store,
		       struct symbolizer *sym, const char *(*root_name)(void *, uint32_t),
		       void *ctx)
{
	uint64_t addrs[STACK_STORE_MAX_ADDRS];
	struct raw_stack rs;
	size_t kept = 0;
	int err = 0;

	for (size_t i = 0; i < ss->n_redo; i++) {
		uint32_t id = ss->redo[i];

		if (ss->stacks[id].packed)
			continue; /* taken by stack_symbols__add_new() */
		if (!stack_store__read(store, id, &rs, addrs) || err ||
		    (err = symbolize_id(ss, &rs, sym, root_name, ctx, id)))
			ss->redo[kept++] = id;
	}
	ss->n_redo = kept;
	return err;
}

/* Room in ss->stacks for ids below @total. */
static int reserve_stacks(struct stack_symbols *ss, size_t total)
{
	size_t cap;
	struct sym_stack *s;

	if (total <= ss->cap)
		return 0;
	cap = total + total / 2 + 64;
	s = realloc(ss->stacks, cap * sizeof(*s));
	if (!s)
		return -ENOMEM;
	ss->stacks = s;
	ss->cap = cap;
	return 0;
}

int stack_symbols__add_new(struct stack_symbols *ss, uint32_t id, const struct raw_stack *rs,
			   struct symbolizer *sym, const char *(*root_name)(void *, uint32_t),
			   void *ctx)
{
	int err;

	/* A released id handed out again waits in the redo queue, which
	 * drops it once it has frames. */
	if (id < ss->n && !ss->stacks[id].packed)
		return symbolize_id(ss, rs, sym, root_name, ctx, id) ?: 1;
	if (id != ss->n)
		return 0;
	err = reserve_stacks(ss, (size_t)id + 1);
	if (err)
		return err;
	ss->stacks[id] = (struct sym_stack){0};
	err = symbolize_id(ss, rs, sym, root_name, ctx, id);
	if (err)
		return err;
	ss->n++;
	return 1;
}

int stack_symbols__update(struct stack_symbols *ss, const struct stack_store *store,
			  struct symbolizer *sym, const char *(*root_name)(void *, uint32_t),
			  void *ctx)
{
	size_t total = stack_store__id_bound(store);
	uint64_t addrs[STACK_STORE_MAX_ADDRS];
	struct raw_stack rs;

	if (reserve_stacks(ss, total))
		return -ENOMEM;
	if (ss->n_redo) {
		int err = update_redo(ss, store, sym, root_name, ctx);

		if (err)
			return err;
	}
	for (; ss->n < total; ss->n++) {
		int err;

		/* stacks a second old are out of the cache by now: load the
		 * next one while this one is symbolized */
		if (ss->n + 1 < total)
			stack_store__prefetch(store, (uint32_t)ss->n + 1);
		ss->stacks[ss->n] = (struct sym_stack){0};
		if (!stack_store__read(store, (uint32_t)ss->n, &rs, addrs)) {
			/* released before it was symbolized (not by reclaim,
			 * which waits for the frames): redo when reused */
			if (redo_push(ss, (uint32_t)ss->n))
				return -ENOMEM;
			continue;
		}
		err = symbolize_id(ss, &rs, sym, root_name, ctx, (uint32_t)ss->n);
		if (err)
			return err;
	}
	return 0;
}

int stack_symbols__forget(struct stack_symbols *ss, uint32_t id)
{
	if (id >= ss->n)
		return 0; /* never symbolized: the next update takes it as new */
	if (!ss->stacks[id].packed)
		return 0; /* already waiting for its reuse */
	/* queued first: a stack without frames is always in the queue */
	if (redo_push(ss, id))
		return -ENOMEM;
	lp_slab__free(ss->slab, ss->stacks[id].packed, ss->stacks[id].len);
	ss->stacks[id] = (struct sym_stack){0};
	return 0;
}
