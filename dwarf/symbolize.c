// SPDX-License-Identifier: GPL-2.0
/*
 * symbolize.c - the symbolizer: per-process mappings, one opened ELF per
 * build-id shared by every process that maps it, and a hash table of
 * results per (ELF, vaddr) so that a repeated address costs one lookup.
 *
 * Ownership: the symbolizer owns every string it hands out. Paths and
 * module names are interned; function names live in the elf_symtab name
 * pools and DWARF strings in the Dwarf handles, and neither is freed
 * before symbolizer__free(). That is also why files stay open: a process
 * that exits can still be symbolized in the mappings we already know.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/sysmacros.h>

#include "elf_symtab.h"
#include "kallsyms.h"
#include "proc_maps.h"
#include "sym_dwarf.h"
#include "symbolize.h"
#include "user/util/util.h"

#define REFRESH_MIN_NS (50 * 1000 * 1000ull) /* re-read maps on a miss at most this often */
#define VDSO_MAX       (1u << 20)

/* Where a mapping's file came from; several keys may share one ELF. */
struct sym_obj {
	uint64_t dev, ino; /* 0 when unknown (vdso) */
	struct elf_symtab *et;
	struct sym_obj *next;
};

struct sym_map {
	uint64_t start, end, offset;
	uint64_t dev, ino;     /* st_dev encoding (makedev), 0 for no file */
	const char *path;      /* interned */
	const char *module;    /* interned basename, or "[anon]"/"[vsyscall]"... */
	struct elf_symtab *et; /* NULL: anonymous, or the file did not open */
};

struct sym_proc {
	int pid;
	bool dead;
	uint64_t last_refresh;
	struct sym_map *maps;
	size_t nmaps;
	struct sym_mapping *exported;
};

struct rframe {
	const char *func, *file;
	int line;
	bool inlined;
};

/* A cached result: @et == NULL marks an empty slot. */
struct rentry {
	const struct elf_symtab *et;
	uint64_t off;
	uint32_t n;
	struct rframe first; /* innermost frame, stored inline for the common n == 1 */
	struct rframe *rest; /* n - 1 frames, NULL if n == 1 */
};

struct symbolizer {
	bool want_lines;

	char **strs; /* intern set, open addressing */
	size_t strs_cap, strs_n;

	struct sym_obj *objs;
	struct elf_symtab **ets; /* each opened ELF once, owned here */
	size_t nets, ets_cap;

	struct sym_proc **procs; /* open addressing by pid */
	size_t procs_cap, procs_n;
	struct sym_proc *last_proc;

	struct rentry *cache;
	size_t cache_cap, cache_n;

	struct kallsyms *ksyms;
	int ksyms_err; /* 0 = not tried yet or loaded */
	bool ksyms_tried;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

/* Intern @s (a copy is made); NULL on allocation failure. */
static const char *intern(struct symbolizer *s, const char *str)
{
	size_t mask, i;

	if (s->strs_n * 2 >= s->strs_cap) {
		size_t ncap = s->strs_cap ? s->strs_cap * 2 : 256;
		char **n = calloc(ncap, sizeof(*n));

		if (!n)
			return NULL;
		for (size_t j = 0; j < s->strs_cap; j++) {
			if (!s->strs[j])
				continue;
			i = str_hash(s->strs[j]) & (ncap - 1);
			while (n[i])
				i = (i + 1) & (ncap - 1);
			n[i] = s->strs[j];
		}
		free(s->strs);
		s->strs = n;
		s->strs_cap = ncap;
	}
	mask = s->strs_cap - 1;
	for (i = str_hash(str) & mask; s->strs[i]; i = (i + 1) & mask)
		if (!strcmp(s->strs[i], str))
			return s->strs[i];
	s->strs[i] = strdup(str);
	if (!s->strs[i])
		return NULL;
	s->strs_n++;
	return s->strs[i];
}

struct symbolizer *symbolizer__new(bool want_lines)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->want_lines = want_lines;
	return s;
}

static void proc_free(struct sym_proc *p)
{
	free(p->maps);
	free(p->exported);
	free(p);
}

void symbolizer__free(struct symbolizer *s)
{
	struct sym_obj *o, *next;

	if (!s)
		return;
	for (size_t i = 0; i < s->cache_cap; i++)
		free(s->cache[i].rest);
	free(s->cache);
	for (size_t i = 0; i < s->procs_cap; i++)
		if (s->procs[i])
			proc_free(s->procs[i]);
	free(s->procs);
	for (o = s->objs; o; o = next) {
		next = o->next;
		free(o);
	}
	for (size_t i = 0; i < s->nets; i++)
		elf_symtab__free(s->ets[i]);
	free(s->ets);
	for (size_t i = 0; i < s->strs_cap; i++)
		free(s->strs[i]);
	free(s->strs);
	kallsyms__free(s->ksyms);
	free(s);
}

static struct sym_proc *proc_find(struct symbolizer *s, int pid)
{
	size_t mask, i;

	if (s->last_proc && s->last_proc->pid == pid)
		return s->last_proc;
	if (!s->procs_cap)
		return NULL;
	mask = s->procs_cap - 1;
	for (i = lp_mix64(pid) & mask; s->procs[i]; i = (i + 1) & mask) {
		if (s->procs[i]->pid == pid) {
			s->last_proc = s->procs[i];
			return s->procs[i];
		}
	}
	return NULL;
}

static int proc_insert(struct symbolizer *s, struct sym_proc *p)
{
	size_t mask, i;

	if (s->procs_n * 2 >= s->procs_cap) {
		size_t ncap = s->procs_cap ? s->procs_cap * 2 : 64;
		struct sym_proc **n = calloc(ncap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (size_t j = 0; j < s->procs_cap; j++) {
			if (!s->procs[j])
				continue;
			i = lp_mix64(s->procs[j]->pid) & (ncap - 1);
			while (n[i])
				i = (i + 1) & (ncap - 1);
			n[i] = s->procs[j];
		}
		free(s->procs);
		s->procs = n;
		s->procs_cap = ncap;
	}
	mask = s->procs_cap - 1;
	for (i = lp_mix64(p->pid) & mask; s->procs[i]; i = (i + 1) & mask)
		;
	s->procs[i] = p;
	s->procs_n++;
	return 0;
}

static int own_et(struct symbolizer *s, struct elf_symtab *et)
{
	if (s->nets == s->ets_cap) {
		size_t ncap = s->ets_cap ? s->ets_cap * 2 : 32;
		struct elf_symtab **n = realloc(s->ets, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->ets = n;
		s->ets_cap = ncap;
	}
	s->ets[s->nets++] = et;
	return 0;
}

/*
 * Make @et known under (dev, ino). If an ELF with the same build-id is
 * already open, that one is used and @et is freed: the symbol table of a
 * library mapped by a hundred processes is sorted once.
 */
static struct elf_symtab *obj_register(struct symbolizer *s, struct elf_symtab *et, uint64_t dev,
				       uint64_t ino)
{
	struct elf_symtab *use = NULL;
	struct sym_obj *o;

	if (et->build_id[0]) {
		for (size_t i = 0; i < s->nets; i++) {
			if (!strcmp(s->ets[i]->build_id, et->build_id)) {
				use = s->ets[i];
				break;
			}
		}
	}
	if (use) {
		elf_symtab__free(et);
	} else {
		if (own_et(s, et)) {
			elf_symtab__free(et);
			return NULL;
		}
		use = et;
	}
	if (ino) {
		o = calloc(1, sizeof(*o));
		if (!o)
			return use; /* only the fast path is lost */
		o->dev = dev;
		o->ino = ino;
		o->et = use;
		o->next = s->objs;
		s->objs = o;
	}
	return use;
}

static struct elf_symtab *obj_by_inode(struct symbolizer *s, uint64_t dev, uint64_t ino)
{
	for (struct sym_obj *o = s->objs; o; o = o->next)
		if (o->ino == ino && o->dev == dev)
			return o->et;
	return NULL;
}

static int open_mapped_file(int pid, const struct pm_entry *e)
{
	char path[PATH_MAX + 64];
	int fd;

	/* map_files reaches the mapped inode itself: deleted files, other mount ns */
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, e->start,
		 e->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 || e->deleted)
		return fd;
	/* the target's root: the right file when it runs in a container */
	snprintf(path, sizeof(path), "/proc/%d/root%s", pid, e->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	return open(e->path, O_RDONLY | O_CLOEXEC);
}

static struct elf_symtab *open_file_map(struct symbolizer *s, int pid, const struct pm_entry *e)
{
	uint64_t dev = ((uint64_t)e->dev_major << 32) | e->dev_minor;
	struct elf_symtab *et;
	int fd;

	et = e->inode ? obj_by_inode(s, dev, e->inode) : NULL;
	if (et)
		return et;
	fd = open_mapped_file(pid, e);
	if (fd < 0)
		return NULL;
	if (elf_symtab__open_fd(fd, &et)) {
		close(fd);
		return NULL;
	}
	return obj_register(s, et, dev, e->inode);
}

/* The vdso has no file: read its image out of the target. */
static struct elf_symtab *open_vdso(struct symbolizer *s, int pid, const struct pm_entry *e)
{
	uint64_t len = e->end - e->start;
	struct elf_symtab *et;
	char path[64];
	void *buf;
	ssize_t r;
	int fd;

	if (len > VDSO_MAX)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(len);
	if (!buf) {
		close(fd);
		return NULL;
	}
	r = pread(fd, buf, len, (off_t)e->start);
	close(fd);
	if (r != (ssize_t)len || elf_symtab__open_mem(buf, len, &et)) {
		free(buf);
		return NULL;
	}
	return obj_register(s, et, 0, 0);
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* Read the maps of @p->pid and replace its mapping array. */
static int proc_refresh(struct symbolizer *s, struct sym_proc *p)
{
	struct pm_entry *e;
	struct sym_map *maps;
	size_t n;
	int err;

	p->last_refresh = now_ns();
	err = proc_maps__read(p->pid, true, &e, &n);
	if (err) {
		/* keep the old mappings: a dead process is still symbolized */
		if (err == -ESRCH)
			p->dead = true;
		return err;
	}
	maps = calloc(n ? n : 1, sizeof(*maps));
	if (!maps) {
		proc_maps__free(e, n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct sym_map *m = &maps[i];
		const char *name = e[i].path;

		m->start = e[i].start;
		m->end = e[i].end;
		m->offset = e[i].offset;
		m->dev = makedev(e[i].dev_major, e[i].dev_minor);
		m->ino = e[i].inode;
		if (name[0] == '/') {
			m->et = open_file_map(s, p->pid, &e[i]);
			m->path = intern(s, name);
			m->module = intern(s, base_name(name));
		} else {
			if (!strcmp(name, "[vdso]"))
				m->et = open_vdso(s, p->pid, &e[i]);
			m->path = intern(s, name);
			m->module = intern(s, name[0] ? name : "[anon]");
		}
		if (!m->path || !m->module) {
			free(maps);
			proc_maps__free(e, n);
			return -ENOMEM;
		}
	}
	proc_maps__free(e, n);
	free(p->maps);
	p->maps = maps;
	p->nmaps = n;
	return 0;
}

int symbolizer__add_pid(struct symbolizer *s, int pid)
{
	struct sym_proc *p = proc_find(s, pid);
	int err;

	if (p) {
		p->dead = false;
		return proc_refresh(s, p);
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	err = proc_refresh(s, p);
	if (!err)
		err = proc_insert(s, p);
	if (err) {
		proc_free(p);
		return err;
	}
	return 0;
}

static const struct sym_map *map_find(const struct sym_proc *p, uint64_t addr)
{
	/* the last mapping with start <= addr; start itself belongs to it */
	size_t lo = lp_upper_bound(p->maps, p->nmaps, sizeof(*p->maps),
				   offsetof(struct sym_map, start), addr);

	if (lo && addr < p->maps[lo - 1].end)
		return &p->maps[lo - 1];
	return NULL;
}

static size_t cache_slot(const struct symbolizer *s, const struct elf_symtab *et, uint64_t off)
{
	return lp_mix64(off ^ ((uint64_t)(uintptr_t)et * 0x9e3779b97f4a7c15ull)) &
	       (s->cache_cap - 1);
}

static struct rentry *cache_get(struct symbolizer *s, const struct elf_symtab *et, uint64_t off)
{
	size_t mask = s->cache_cap - 1, i;

	if (!s->cache_cap)
		return NULL;
	for (i = cache_slot(s, et, off); s->cache[i].et; i = (i + 1) & mask)
		if (s->cache[i].et == et && s->cache[i].off == off)
			return &s->cache[i];
	return NULL;
}

static int cache_grow(struct symbolizer *s)
{
	size_t ncap = s->cache_cap ? s->cache_cap * 2 : 4096, oldcap = s->cache_cap;
	struct rentry *old = s->cache, *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	s->cache = n;
	s->cache_cap = ncap;
	for (size_t j = 0; j < oldcap; j++) {
		size_t i;

		if (!old[j].et)
			continue;
		for (i = cache_slot(s, old[j].et, old[j].off); n[i].et; i = (i + 1) & (ncap - 1))
			;
		n[i] = old[j];
	}
	free(old);
	return 0;
}

/* Symbolize @off of @et from scratch and remember it. */
static struct rentry *cache_fill(struct symbolizer *s, struct elf_symtab *et, uint64_t off)
{
	struct sym_line_frame lf[SYM_MAX_INLINE];
	const struct elf_sym *sym;
	struct rentry *r;
	int n = 0;
	size_t i;

	if (s->cache_n * 2 >= s->cache_cap && cache_grow(s))
		return NULL;
	sym = elf_symtab__lookup(et, off);
	if (s->want_lines)
		n = sym_dwarf__frames(et, off, lf, SYM_MAX_INLINE);
	if (n <= 0) {
		n = 1;
		lf[0].func = NULL;
		lf[0].file = NULL;
		lf[0].line = 0;
		lf[0].inlined = false;
	}
	/* the symbol table names the real function, as on the fast path (clones keep .isra) */
	if (sym)
		lf[n - 1].func = sym->name;

	for (i = cache_slot(s, et, off); s->cache[i].et; i = (i + 1) & (s->cache_cap - 1))
		;
	r = &s->cache[i];
	r->rest = NULL;
	if (n > 1) {
		r->rest = calloc(n - 1, sizeof(*r->rest));
		if (!r->rest)
			return NULL;
	}
	for (int k = 0; k < n; k++) {
		struct rframe *f = k ? &r->rest[k - 1] : &r->first;

		f->func = lf[k].func;
		f->file = lf[k].file;
		f->line = lf[k].line;
		f->inlined = lf[k].inlined;
	}
	r->n = n;
	r->off = off;
	r->et = et;
	s->cache_n++;
	return r;
}

static void unknown_frame(struct sym_frame *f, const char *module, const char *path,
			  uint64_t offset)
{
	f->func = NULL;
	f->module = module;
	f->path = path;
	f->build_id = "";
	f->file = NULL;
	f->line = 0;
	f->offset = offset;
	f->inlined = false;
}

/* The mapping of @pid holding @addr, re-reading the maps once on a miss. */
static int find_map(struct symbolizer *s, int pid, uint64_t addr, const struct sym_map **out)
{
	const struct sym_map *m;
	struct sym_proc *p;

	p = proc_find(s, pid);
	if (!p) {
		int err = symbolizer__add_pid(s, pid);

		if (err)
			return err;
		p = proc_find(s, pid);
		if (!p)
			return -ESRCH;
	}
	m = map_find(p, addr);
	if (!m && !p->dead && now_ns() - p->last_refresh >= REFRESH_MIN_NS) {
		/* maybe a library dlopen()ed since we last looked */
		if (proc_refresh(s, p) == 0)
			m = map_find(p, addr);
	}
	*out = m;
	return 0;
}

enum sym_addr_kind symbolizer__addr_kind(struct symbolizer *s, int pid, uint64_t addr)
{
	const struct sym_map *m;

	if (find_map(s, pid, addr, &m))
		return SYM_ADDR_UNKNOWN;
	if (!m)
		return SYM_ADDR_NONE;
	if (m->path[0] == '/' || !strcmp(m->path, "[vdso]") || !strcmp(m->path, "[vsyscall]"))
		return SYM_ADDR_CODE;
	if (!m->path[0])
		return SYM_ADDR_ANON;
	if (!strcmp(m->path, "[uprobes]"))
		return SYM_ADDR_UPROBES;
	/* [stack], [stack:TID], [heap] mapped executable (execstack): data all the same */
	return SYM_ADDR_DATA;
}

int symbolizer__file_pos(struct symbolizer *s, int pid, uint64_t addr, uint64_t *dev, uint64_t *ino,
			 uint64_t *file_offset)
{
	const struct sym_map *m;
	int err = find_map(s, pid, addr, &m);

	if (err)
		return err;
	if (!m || !m->ino)
		return -ENOENT;
	*dev = m->dev;
	*ino = m->ino;
	*file_offset = addr - m->start + m->offset;
	return 0;
}

uint64_t symbolizer__addr_of(struct symbolizer *s, int pid, uint64_t dev, uint64_t ino,
			     uint64_t file_offset)
{
	struct sym_proc *p = proc_find(s, pid);

	for (size_t i = 0; p && i < p->nmaps; i++) {
		const struct sym_map *m = &p->maps[i];

		if (m->ino == ino && m->dev == dev && file_offset >= m->offset &&
		    file_offset - m->offset < m->end - m->start)
			return m->start + (file_offset - m->offset);
	}
	return 0;
}

int symbolizer__resolve(struct symbolizer *s, int pid, uint64_t addr, struct sym_frame *out,
			int max)
{
	const struct sym_map *m;
	struct rentry *r;
	uint64_t fo, off;
	int n, skip, err;

	if (max < 1)
		return -EINVAL;
	err = find_map(s, pid, addr, &m);
	if (err)
		return err;
	if (!m) {
		unknown_frame(out, "[unknown]", "", addr);
		return 1;
	}
	fo = addr - m->start + m->offset;
	if (!m->et) {
		unknown_frame(out, m->module, m->path, m->path[0] == '/' ? fo : addr - m->start);
		return 1;
	}
	/* file offset -> ELF vaddr through its PT_LOAD: PIE, non-PIE and load bias alike */
	if (elf_symtab__offset_to_vaddr(m->et, fo, &off))
		off = fo;
	r = cache_get(s, m->et, off);
	if (!r)
		r = cache_fill(s, m->et, off);
	if (!r) {
		unknown_frame(out, m->module, m->path, off);
		out->build_id = m->et->build_id;
		return 1;
	}
	/* too small an @out: drop innermost inlined frames, keep the real function */
	n = (int)r->n < max ? (int)r->n : max;
	skip = r->n - n;
	for (int k = 0; k < n; k++) {
		const struct rframe *f = k + skip ? &r->rest[k + skip - 1] : &r->first;
		struct sym_frame *o = &out[k];

		o->func = f->func;
		o->module = m->module;
		o->path = m->path;
		o->build_id = m->et->build_id;
		o->file = f->file;
		o->line = f->line;
		o->offset = off;
		o->inlined = f->inlined;
	}
	return n;
}

int symbolizer__resolve_kernel(struct symbolizer *s, uint64_t addr, struct sym_frame *out)
{
	const struct ksym *k;

	if (!s->ksyms_tried) {
		s->ksyms_tried = true;
		s->ksyms_err = kallsyms__load("/proc/kallsyms", &s->ksyms);
	}
	if (!s->ksyms)
		return s->ksyms_err ? s->ksyms_err : -ENOENT;
	k = kallsyms__lookup(s->ksyms, addr);
	unknown_frame(out, k ? k->module : "[kernel]", k ? k->module : "[kernel]", addr);
	if (k)
		out->func = k->name;
	return 1;
}

int symbolizer__mappings(struct symbolizer *s, int pid, const struct sym_mapping **out)
{
	struct sym_proc *p = proc_find(s, pid);
	struct sym_mapping *e;

	*out = NULL;
	if (!p)
		return -ESRCH;
	e = calloc(p->nmaps ? p->nmaps : 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < p->nmaps; i++) {
		e[i].start = p->maps[i].start;
		e[i].end = p->maps[i].end;
		e[i].file_offset = p->maps[i].offset;
		e[i].path = p->maps[i].path;
		e[i].build_id = p->maps[i].et ? p->maps[i].et->build_id : "";
	}
	free(p->exported);
	p->exported = e;
	*out = e;
	return (int)p->nmaps;
}
