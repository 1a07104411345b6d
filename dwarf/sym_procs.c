// SPDX-License-Identifier: GPL-2.0
/*
 * sym_procs.c - the symbolizer's per-process side: each process's table of
 * mappings read from /proc/PID/maps (re-read on a miss, at most every
 * REFRESH_MIN_NS), the ELF each mapping's file or vdso opens as, shared by
 * (device, inode), and the interned path and module names. Address lookup
 * and the result cache are symbolize.c's.
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
#include "proc_maps.h"
#include "symbolize.h"
#include "perf_map.h"
#include "symbolize_internal.h"
#include "user/util/util.h"

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

const char *sym_intern(struct symbolizer *s, const char *str)
{
	return intern(s, str);
}

void sym_proc_free(struct sym_proc *p)
{
	free(p->maps);
	free(p->exported);
	perf_map__free(p->jit);
	free(p);
}

struct sym_proc *sym_proc_find(struct symbolizer *s, int pid)
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

void symbolizer__refresh_jit(struct symbolizer *s)
{
	for (size_t i = 0; i < s->procs_cap; i++) {
		struct perf_map *pm = s->procs[i] ? s->procs[i]->jit : NULL;

		if (pm && !s->procs[i]->dead) {
			uint64_t version = perf_map__version(pm);

			if (perf_map__refresh(pm) != version)
				s->jit_generation++;
		}
	}
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
	/* the path as the target sees it: .gnu_debuglink is relative to it */
	if (!e->deleted)
		elf_symtab__set_path(et, e->path);
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
/* The same mappings of the same files at the same places. */
static bool same_layout(const struct sym_map *a, size_t na, const struct sym_map *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (a[i].start != b[i].start || a[i].end != b[i].end ||
		    a[i].offset != b[i].offset || a[i].dev != b[i].dev || a[i].ino != b[i].ino)
			return false;
	return true;
}

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
	if (!same_layout(p->maps, p->nmaps, maps, n))
		s->maps_generation++;
	free(p->maps);
	p->maps = maps;
	p->nmaps = n;
	return 0;
}

int symbolizer__add_pid(struct symbolizer *s, int pid)
{
	struct sym_proc *p = sym_proc_find(s, pid);
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
	/* a new process may reuse a pid a cache of the old one's holds */
	s->maps_generation++;
	if (err) {
		sym_proc_free(p);
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

int sym_find_map(struct symbolizer *s, int pid, uint64_t addr, const struct sym_map **out)
{
	const struct sym_map *m;
	struct sym_proc *p;

	p = sym_proc_find(s, pid);
	if (!p) {
		int err = symbolizer__add_pid(s, pid);

		if (err)
			return err;
		p = sym_proc_find(s, pid);
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
