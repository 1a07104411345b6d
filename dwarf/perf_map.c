// SPDX-License-Identifier: GPL-2.0
/*
 * perf_map.c - names of JIT code from /tmp/perf-PID.map (perf_map.h).
 *
 * The file only grows while the JIT runs, so each read starts where the
 * last complete line ended. Entries are kept sorted by start; a lookup
 * takes, among the few entries before the address that cover it, the one
 * written last.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perf_map.h"
#include "user/util/util.h"

#define MAX_ENTRIES    (1u << 21) /* functions kept; the rest are not named */
#define MAX_NAME       255
#define MAX_READ       (64u << 20)	  /* bytes read per refresh */
#define REFRESH_NS     (100ull * 1000000) /* at most one read per 100 ms, */
#define REFRESH_BUDGET 20		  /* and 20 times its own length apart */
#define SCAN_BACK      64		  /* entries looked at before the address */

struct pm_entry {
	uint64_t start, end;
	uint32_t seq;  /* line number: the later line wins */
	uint32_t name; /* offset in names */
};

struct perf_map {
	int pid;
	char path[96]; /* the map in the process's /tmp, named by its own pid */
	dev_t dev;
	ino_t ino;
	off_t read_to; /* bytes of complete lines read */
	uint64_t next_try_ns;
	struct pm_entry *e;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	uint32_t seq;
	uint64_t version; /* counts the reads that changed the entries */
};

void perf_map__free(struct perf_map *pm)
{
	if (!pm)
		return;
	free(pm->e);
	free(pm->names);
	free(pm);
}

/* The process's pid in its own pid namespace (the file's name there). */
static int ns_pid(int pid)
{
	char path[64], line[256];
	int last = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return pid;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 6, *end;

		if (strncmp(line, "NSpid:", 6))
			continue;
		for (long v; (v = strtol(p, &end, 10)), end != p; p = end)
			last = (int)v;
		break;
	}
	fclose(f);
	return last;
}

struct perf_map *perf_map__new(int pid)
{
	struct perf_map *pm = calloc(1, sizeof(*pm));

	if (!pm)
		return NULL;
	pm->pid = pid;
	/* a process keeps its pid namespace: the name is found once */
	snprintf(pm->path, sizeof(pm->path), "/proc/%d/root/tmp/perf-%d.map", pid, ns_pid(pid));
	return pm;
}

/* One "START SIZE NAME" line; false if it is not one. */
static bool parse_line(char *line, uint64_t *start, uint64_t *size, char **name)
{
	char *p;

	errno = 0;
	*start = strtoull(line, &p, 16);
	if (p == line || *p != ' ' || errno)
		return false;
	line = p + 1;
	*size = strtoull(line, &p, 16);
	if (p == line || *p != ' ' || errno || !*size || *start + *size < *start)
		return false;
	*name = p + 1;
	p = *name + strcspn(*name, "\r");
	*p = '\0';
	if (p - *name > MAX_NAME)
		(*name)[MAX_NAME] = '\0';
	return **name != '\0';
}

static int add_entry(struct perf_map *pm, uint64_t start, uint64_t size, const char *name)
{
	size_t len = strlen(name) + 1;

	if (pm->n == MAX_ENTRIES)
		return -ENOSPC;
	if (pm->n == pm->cap) {
		size_t cap = pm->cap ? pm->cap * 2 : 256;
		struct pm_entry *e = realloc(pm->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		pm->e = e;
		pm->cap = cap;
	}
	if (pm->names_len + len > pm->names_cap) {
		size_t cap = pm->names_cap ? pm->names_cap * 2 : 4096;
		char *s;

		while (cap < pm->names_len + len)
			cap *= 2;
		s = realloc(pm->names, cap);
		if (!s)
			return -ENOMEM;
		pm->names = s;
		pm->names_cap = cap;
	}
	memcpy(pm->names + pm->names_len, name, len);
	pm->e[pm->n++] = (struct pm_entry){.start = start,
					   .end = start + size,
					   .seq = pm->seq++,
					   .name = (uint32_t)pm->names_len};
	pm->names_len += len;
	return 0;
}

/* Parse the complete lines of @buf (@len bytes); returns the bytes used. */
static size_t parse_lines(struct perf_map *pm, char *buf, size_t len)
{
	size_t used = 0;

	for (char *nl; used < len && (nl = memchr(buf + used, '\n', len - used));) {
		char *line = buf + used, *name;
		uint64_t start, size;

		*nl = '\0';
		used = (size_t)(nl - buf) + 1;
		if (parse_line(line, &start, &size, &name) && add_entry(pm, start, size, name))
			break;
	}
	return used;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A file to believe: regular, reached without a symlink, owned by the
 * process's user (the owner of /proc/PID) or by root. */
static int open_checked(const struct perf_map *pm, struct stat *st)
{
	char proc_dir[32];
	struct stat proc;
	int fd;

	snprintf(proc_dir, sizeof(proc_dir), "/proc/%d", pm->pid);
	if (stat(proc_dir, &proc))
		return -errno;
	fd = open(pm->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) || !S_ISREG(st->st_mode) ||
	    (st->st_uid != 0 && st->st_uid != proc.st_uid)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* Read what the file gained since the last read (all of it if it is new). */
static void refresh(struct perf_map *pm)
{
	size_t n_before = pm->n;
	off_t from = pm->read_to;
	uint64_t now = lp_now_ns(), spent;
	struct stat st;
	size_t want;
	ssize_t got;
	char *buf;
	int fd;

	if (now < pm->next_try_ns)
		return;
	pm->next_try_ns = now + REFRESH_NS;
	fd = open_checked(pm, &st);
	if (fd < 0)
		return;
	if (st.st_dev != pm->dev || st.st_ino != pm->ino || st.st_size < pm->read_to) {
		pm->dev = st.st_dev; /* another file: start over */
		pm->ino = st.st_ino;
		pm->read_to = 0;
		pm->n = pm->names_len = 0;
	}
	want = (size_t)(st.st_size - pm->read_to);
	want = want > MAX_READ ? MAX_READ : want;
	buf = want ? malloc(want) : NULL;
	got = buf ? pread(fd, buf, want, pm->read_to) : -1;
	if (got > 0) {
		size_t used = parse_lines(pm, buf, (size_t)got);

		/* a line longer than a whole read is no line: step over it */
		pm->read_to += (off_t)(used || (size_t)got < MAX_READ ? used : (size_t)got);
		if (pm->n) /* pm->e is still NULL before the first entry */
			qsort(pm->e, pm->n, sizeof(*pm->e), cmp_entry);
	}
	free(buf);
	close(fd);
	/* entries added, or the file started over: a name seen may be another now */
	if (pm->n != n_before || pm->read_to < from)
		pm->version++;
	/* a JIT that never stops writing costs us at most 1/20 of a CPU */
	spent = lp_now_ns() - now;
	if (pm->next_try_ns < now + REFRESH_BUDGET * spent)
		pm->next_try_ns = now + REFRESH_BUDGET * spent;
}

static const char *find(const struct perf_map *pm, uint64_t addr)
{
	size_t lo = 0, hi = pm->n;
	const struct pm_entry *best = NULL;

	while (lo < hi) { /* the first entry starting after addr */
		size_t mid = lo + (hi - lo) / 2;

		if (pm->e[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, k = 0; i > 0 && k < SCAN_BACK; i--, k++) {
		const struct pm_entry *e = &pm->e[i - 1];

		if (addr < e->end && (!best || e->seq > best->seq))
			best = e;
	}
	return best ? pm->names + best->name : NULL;
}

const char *perf_map__lookup(struct perf_map *pm, uint64_t addr)
{
	const char *name = find(pm, addr);

	if (name)
		return name;
	refresh(pm);
	return find(pm, addr);
}

uint64_t perf_map__refresh(struct perf_map *pm)
{
	refresh(pm);
	return pm->version;
}

uint64_t perf_map__version(const struct perf_map *pm)
{
	return pm->version;
}
