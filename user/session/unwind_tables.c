// SPDX-License-Identifier: GPL-2.0
/*
 * unwind_tables.c - CFI tables for the BPF unwinder, per module and per
 * process.
 *
 * A module (one ELF file, known by build-id) is built once with
 * dwarf/cfi_table.c; its rows are copied into a free range of the
 * mmap'ed rows map, then published in unwind_tables[id]. Each process
 * gets an lp_unwind_proc entry: its executable mappings sorted by start,
 * each with its module's table id and load bias. Modules count the
 * processes that map them, and their rows and id are freed at zero.
 *
 * Publication order matters because BPF reads concurrently: rows are
 * written before the table entry that points at them, and a table entry
 * before any process entry that names it; on release the process entries
 * go first, the table entry next, and only then the rows are reused.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "dwarf/cfi_cache.h"
#include "dwarf/cfi_table.h"
#include "dwarf/elf_symtab.h"
#include "dwarf/proc_maps.h"
#include "user/util/log.h"
#include "user/session/unwind_tables.h"

#define RESCAN_MIN_NS 200000000ULL  /* unknown pcs: one rescan per 200 ms per process */
#define PROC_CHECK_NS 5000000000ULL /* how often gone processes are looked for */

struct module {
	char build_id[2 * ELF_BUILD_ID_MAX + 1];
	unsigned int dev_major, dev_minor;
	uint64_t inode;
	int table_id; /* -1: no table (frame pointers) */
	uint32_t first_row, n_rows;
	unsigned int refs; /* processes that map it */
	size_t n_loads;
	struct {
		uint64_t vaddr, offset, filesz;
	} loads[CFI_MAX_LOADS];
};

struct proc {
	int pid;
	uint64_t last_scan_ns;
	struct module **mods; /* distinct modules it maps, one ref each */
	size_t n_mods;
};

struct range {
	uint32_t start, len;
};

struct unwind_tables {
	struct unwind_maps m;
	bool verbose;
	struct module **mods;
	size_t n_mods;
	struct proc *procs;
	size_t n_procs;
	struct range *free; /* free row ranges, sorted by start, merged */
	size_t n_free;
	uint8_t *id_used; /* max_tables flags */
	uint64_t last_check_ns;
	bool warned_full, warned_maps;
	struct unwind_tables_stats st;
};

int unwind_tables__new(const struct unwind_maps *m, bool verbose, struct unwind_tables **out)
{
	struct unwind_tables *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->m = *m;
	t->verbose = verbose;
	t->free = malloc(sizeof(*t->free));
	t->id_used = calloc(m->max_tables ? m->max_tables : 1, 1);
	if (!t->free || !t->id_used) {
		unwind_tables__free(t);
		return -ENOMEM;
	}
	t->free[0] = (struct range){0, m->max_rows};
	t->n_free = m->max_rows ? 1 : 0;
	*out = t;
	return 0;
}

/* First fit; returns the first row, or -ENOSPC. */
static int64_t rows_alloc(struct unwind_tables *t, uint32_t n)
{
	for (size_t i = 0; i < t->n_free; i++) {
		struct range *r = &t->free[i];
		uint32_t at = r->start;

		if (r->len < n)
			continue;
		r->start += n;
		r->len -= n;
		if (!r->len) {
			memmove(r, r + 1, (t->n_free - i - 1) * sizeof(*r));
			t->n_free--;
		}
		return at;
	}
	return -ENOSPC;
}

static int rows_release(struct unwind_tables *t, uint32_t start, uint32_t n)
{
	size_t i = 0;
	struct range *nf;

	while (i < t->n_free && t->free[i].start < start)
		i++;
	/* merge with the neighbours where they touch */
	if (i > 0 && t->free[i - 1].start + t->free[i - 1].len == start) {
		t->free[i - 1].len += n;
		if (i < t->n_free && start + n == t->free[i].start) {
			t->free[i - 1].len += t->free[i].len;
			memmove(&t->free[i], &t->free[i + 1], (t->n_free - i - 1) * sizeof(*nf));
			t->n_free--;
		}
		return 0;
	}
	if (i < t->n_free && start + n == t->free[i].start) {
		t->free[i].start = start;
		t->free[i].len += n;
		return 0;
	}
	nf = realloc(t->free, (t->n_free + 1) * sizeof(*nf));
	if (!nf)
		return -ENOMEM; /* the rows leak, nothing breaks */
	t->free = nf;
	memmove(&nf[i + 1], &nf[i], (t->n_free - i) * sizeof(*nf));
	nf[i] = (struct range){start, n};
	t->n_free++;
	return 0;
}

static void module_release(struct unwind_tables *t, struct module *m)
{
	if (--m->refs)
		return;
	if (m->table_id >= 0) {
		struct lp_unwind_table none = {0};
		__u32 id = (__u32)m->table_id;

		bpf_map_update_elem(t->m.tables_fd, &id, &none, BPF_ANY);
		rows_release(t, m->first_row, m->n_rows);
		t->id_used[id] = 0;
		t->st.modules--;
		t->st.rows -= m->n_rows;
	} else {
		t->st.no_table--;
	}
	for (size_t i = 0; i < t->n_mods; i++)
		if (t->mods[i] == m) {
			t->mods[i] = t->mods[--t->n_mods];
			break;
		}
	free(m);
}

static int free_table_id(struct unwind_tables *t)
{
	for (uint32_t i = 0; i < t->m.max_tables; i++)
		if (!t->id_used[i])
			return (int)i;
	return -ENOSPC;
}

/* Copy a built table into the maps; m->table_id stays -1 on failure. */
static void module_load(struct unwind_tables *t, struct module *m, const struct cfi_table *ct,
			const char *path)
{
	struct lp_unwind_table ent;
	int id = free_table_id(t);
	int64_t first = id >= 0 && ct->n_rows <= UINT32_MAX ? rows_alloc(t, ct->n_rows) : -ENOSPC;

	if (id < 0 || first < 0) {
		if (!t->warned_full)
			lp_warn("unwind tables full (%u rows, %u modules): '%s' is unwound with "
				"frame pointers",
				t->m.max_rows, t->m.max_tables, path);
		t->warned_full = true;
		return;
	}
	_Static_assert(sizeof(struct cfi_row) == sizeof(struct lp_unwind_row), "row layouts");
	for (size_t i = 0; i < ct->n_rows; i++) {
		const struct cfi_row *c = &ct->rows[i];
		struct lp_unwind_row *r = &t->m.rows[first + i];

		r->pc = c->pc;
		r->cfa_off = c->cfa_off;
		r->rbp_off = c->rbp_off;
		r->cfa_rule = c->cfa_rule; /* enum cfi_cfa_rule == enum lp_cfa_rule */
		r->rbp_rule = c->rbp_rule;
	}
	ent.first_row = (uint32_t)first;
	ent.n_rows = (uint32_t)ct->n_rows;
	if (bpf_map_update_elem(t->m.tables_fd, &id, &ent, BPF_ANY)) {
		rows_release(t, (uint32_t)first, ent.n_rows);
		return;
	}
	t->id_used[id] = 1;
	m->table_id = id;
	m->first_row = ent.first_row;
	m->n_rows = ent.n_rows;
	t->st.modules++;
	t->st.rows += m->n_rows;
}

static struct module *module_find(struct unwind_tables *t, const struct pm_entry *e,
				  const char *build_id)
{
	for (size_t i = 0; i < t->n_mods; i++) {
		struct module *m = t->mods[i];

		if (build_id ? (build_id[0] && !strcmp(m->build_id, build_id))
			     : (m->inode == e->inode && m->dev_major == e->dev_major &&
				m->dev_minor == e->dev_minor))
			return m;
	}
	return NULL;
}

/* Open @e's file, find or build its module. NULL only on ENOMEM. */
/*
 * A new module for @es (its build-id; NULL for a file that is no ELF),
 * with its table built and loaded when the CFI allows, appended to
 * t->mods. @key gives the device and inode it is found by again (NULL:
 * found by build-id only, as the [vdso]). Frees @es. NULL when out of
 * memory.
 */
/* @es's table: read back from the cache by build-id, or built and stored. */
static int table_of(struct elf_symtab *es, struct cfi_table **ct)
{
	int err;

	if (es->build_id[0] && !cfi_cache__load(es->build_id, ct))
		return 0;
	err = cfi_table__build(es->elf, ct);
	if (!err && es->build_id[0])
		cfi_cache__save(es->build_id, *ct);
	return err;
}

static struct module *module_add(struct unwind_tables *t, struct elf_symtab *es,
				 const struct pm_entry *key, const char *name)
{
	struct module *m = calloc(1, sizeof(*m)), **nm;
	struct cfi_table *ct = NULL;
	int err;

	nm = realloc(t->mods, (t->n_mods + 1) * sizeof(*nm));
	if (!m || !nm) {
		free(m);
		elf_symtab__free(es);
		return NULL;
	}
	t->mods = nm;
	m->table_id = -1;
	m->inode = (uint64_t)-1; /* never matched by device and inode */
	if (key) {
		m->dev_major = key->dev_major;
		m->dev_minor = key->dev_minor;
		m->inode = key->inode;
	}
	err = es ? table_of(es, &ct) : -ENOENT;
	if (es)
		snprintf(m->build_id, sizeof(m->build_id), "%s", es->build_id);
	elf_symtab__free(es);
	if (err == -ENOMEM) {
		free(m);
		return NULL;
	}
	if (!err) {
		m->n_loads = ct->n_loads;
		memcpy(m->loads, ct->loads, sizeof(m->loads));
		t->st.build_ns += ct->build_ns;
		if (ct->build_ns > t->st.max_module_ns)
			t->st.max_module_ns = ct->build_ns;
		if (t->verbose)
			lp_debug("unwind table '%s': %zu rows, %zu KiB, %zu fallback, %.1f ms",
				 name, ct->n_rows, ct->n_rows * sizeof(struct cfi_row) >> 10,
				 ct->n_fallback, ct->build_ns / 1e6);
		module_load(t, m, ct, name);
		cfi_table__free(ct);
	} else if (err != -ENOENT && key) {
		lp_warn("no unwind table for '%s': %s", name,
			err == -E2BIG ? "too many rows" : "unreadable call frame information");
	}
	if (m->table_id < 0)
		t->st.no_table++;
	t->mods[t->n_mods++] = m;
	return m;
}

static struct module *module_get(struct unwind_tables *t, int pid, const struct pm_entry *e)
{
	struct module *m = module_find(t, e, NULL);
	struct elf_symtab *es = NULL;
	char path[4200];

	if (m)
		return m;
	snprintf(path, sizeof(path), "/proc/%d/root%s", pid, e->path);
	if (elf_symtab__open_path(path, &es) == 0) {
		m = module_find(t, e, es->build_id);
		if (m) {
			elf_symtab__free(es);
			return m;
		}
	}
	return module_add(t, es, e, e->path);
}

/*
 * The [vdso] image, read from the process: the same for every process of
 * a kernel, so found again by build-id. NULL if it cannot be read.
 */
static struct module *vdso_get(struct unwind_tables *t, int pid, const struct pm_entry *e)
{
	size_t len = e->end - e->start;
	struct elf_symtab *es = NULL;
	struct module *m;
	char path[64];
	void *img;
	int fd;

	if (len > (1 << 20))
		return NULL;
	img = malloc(len);
	if (!img)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || pread(fd, img, len, (off_t)e->start) != (ssize_t)len ||
	    elf_symtab__open_mem(img, len, &es)) {
		if (fd >= 0)
			close(fd);
		free(img);
		return NULL;
	}
	close(fd);
	m = module_find(t, e, es->build_id);
	if (m) {
		elf_symtab__free(es);
		return m;
	}
	return module_add(t, es, NULL, e->path);
}

static struct proc *proc_find(struct unwind_tables *t, int pid)
{
	for (size_t i = 0; i < t->n_procs; i++)
		if (t->procs[i].pid == pid)
			return &t->procs[i];
	return NULL;
}

static bool bias_of(const struct module *m, const struct pm_entry *e, uint64_t *bias)
{
	for (size_t i = 0; i < m->n_loads; i++) {
		uint64_t o = m->loads[i].offset;

		if (e->offset >= (o & ~0xfffULL) && e->offset < o + m->loads[i].filesz) {
			*bias = e->start - (m->loads[i].vaddr - o + e->offset);
			return true;
		}
	}
	return false;
}

/* Fill @up from @maps; @mods gets each distinct module once (one new ref). */
static int fill_proc(struct unwind_tables *t, int pid, const struct pm_entry *maps, size_t n,
		     struct lp_unwind_proc *up, struct module **mods, size_t *n_mods)
{
	for (size_t i = 0; i < n; i++) {
		const struct pm_entry *e = &maps[i];
		struct lp_unwind_map *um;
		struct module *m = NULL;
		uint64_t bias;
		bool seen = false;

		if (e->start >= LP_UPROBE_TRAMP_LO) /* [uprobes], [vsyscall] */
			continue;
		if (up->n_maps == LP_UNWIND_MAX_MAPS) {
			if (!t->warned_maps)
				lp_warn("process '%d' has more than %d executable mappings: the "
					"rest "
					"are unwound with frame pointers",
					pid, LP_UNWIND_MAX_MAPS);
			t->warned_maps = true;
			break;
		}
		um = &up->maps[up->n_maps++];
		um->start = e->start;
		um->end = e->end;
		um->bias = 0;
		um->table_id = LP_UNWIND_NO_TABLE;
		if (!strcmp(e->path, "[vdso]"))
			m = vdso_get(t, pid, e);
		else if (e->path[0] == '/' && !e->deleted)
			m = module_get(t, pid, e);
		else
			continue; /* anonymous (JIT): frame pointers */
		if (!m)
			continue; /* out of memory: frame pointers there */
		for (size_t k = 0; k < *n_mods; k++)
			seen |= mods[k] == m;
		if (!seen) {
			m->refs++;
			mods[(*n_mods)++] = m;
		}
		if (m->table_id >= 0 && bias_of(m, e, &bias)) {
			um->bias = bias;
			um->table_id = (uint32_t)m->table_id;
		}
	}
	return 0;
}

int unwind_tables__scan(struct unwind_tables *t, int pid, uint64_t now_ns)
{
	struct pm_entry *maps = NULL;
	struct lp_unwind_proc *up = NULL;
	struct module **mods = NULL;
	struct proc *p, *np;
	size_t n = 0, n_mods = 0;
	__u32 key = (__u32)pid;
	int err;

	t->st.scans++;
	err = proc_maps__read(pid, true, &maps, &n);
	if (err) {
		if (err == -ESRCH || err == -ENOENT)
			unwind_tables__remove_pid(t, pid);
		return err;
	}
	up = calloc(1, sizeof(*up));
	mods = calloc(n ? n : 1, sizeof(*mods));
	err = up && mods ? fill_proc(t, pid, maps, n, up, mods, &n_mods) : -ENOMEM;
	if (!err && bpf_map_update_elem(t->m.procs_fd, &key, up, BPF_ANY))
		err = -errno;
	p = proc_find(t, pid);
	if (!err && !p) {
		np = realloc(t->procs, (t->n_procs + 1) * sizeof(*np));
		if (!np) {
			err = -ENOMEM;
		} else {
			t->procs = np;
			p = &t->procs[t->n_procs++];
			memset(p, 0, sizeof(*p));
			p->pid = pid;
		}
	}
	if (err) {
		for (size_t i = 0; i < n_mods; i++)
			module_release(t, mods[i]);
		free(mods);
	} else {
		/* the new list is published: now the old refs can go */
		for (size_t i = 0; i < p->n_mods; i++)
			module_release(t, p->mods[i]);
		free(p->mods);
		p->mods = mods;
		p->n_mods = n_mods;
		p->last_scan_ns = now_ns;
	}
	free(up);
	proc_maps__free(maps, n);
	return err;
}

bool unwind_tables__has_pid(struct unwind_tables *t, int pid)
{
	return proc_find(t, pid) != NULL;
}

void unwind_tables__unknown_pc(struct unwind_tables *t, int pid, uint64_t now_ns)
{
	struct proc *p = proc_find(t, pid);

	if (p && now_ns - p->last_scan_ns < RESCAN_MIN_NS)
		return;
	if (p)
		p->last_scan_ns = now_ns; /* also when the scan fails */
	unwind_tables__scan(t, pid, now_ns);
}

void unwind_tables__remove_pid(struct unwind_tables *t, int pid)
{
	struct proc *p = proc_find(t, pid);
	__u32 key = (__u32)pid;

	if (!p)
		return;
	bpf_map_delete_elem(t->m.procs_fd, &key);
	for (size_t i = 0; i < p->n_mods; i++)
		module_release(t, p->mods[i]);
	free(p->mods);
	*p = t->procs[--t->n_procs];
}

void unwind_tables__tick(struct unwind_tables *t, uint64_t now_ns)
{
	if (now_ns - t->last_check_ns < PROC_CHECK_NS)
		return;
	t->last_check_ns = now_ns;
	for (size_t i = 0; i < t->n_procs;) {
		int pid = t->procs[i].pid;

		if (kill(pid, 0) && errno == ESRCH)
			unwind_tables__remove_pid(t, pid); /* moves the last entry to i */
		else
			i++;
	}
}

void unwind_tables__stats(const struct unwind_tables *t, struct unwind_tables_stats *out)
{
	*out = t->st;
}

void unwind_tables__free(struct unwind_tables *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_procs; i++)
		free(t->procs[i].mods);
	for (size_t i = 0; i < t->n_mods; i++)
		free(t->mods[i]);
	free(t->mods);
	free(t->procs);
	free(t->free);
	free(t->id_used);
	free(t);
}
