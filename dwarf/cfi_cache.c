// SPDX-License-Identifier: GPL-2.0
/*
 * cfi_cache.c - unwind tables on disk by build-id (see cfi_cache.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "dwarf/cfi_cache.h"
#include "user/util/util.h"

#define CACHE_MAGIC    "LPCFI\0\0\1"
#define CACHE_VERSION  1
#define CACHE_MAX_ROWS (1u << 26)

/* The file: this header, then n_rows struct cfi_row. Same machine only. */
struct cache_hdr {
	char magic[8];
	uint32_t version;
	uint32_t row_size;
	uint64_t n_rows, n_fdes, n_fallback, n_bad_fdes;
	uint32_t debug_frame; /* the rows came from .debug_frame, not .eh_frame */
	uint32_t n_loads;
	struct {
		uint64_t vaddr, offset, filesz;
	} loads[CFI_MAX_LOADS];
};

/* @build_id is a path component: hex digits only, and long enough to be one. */
static bool id_ok(const char *id)
{
	size_t n = strlen(id);

	if (n < 8 || n > 128)
		return false;
	return strspn(id, "0123456789abcdef") == n;
}

/* The cache directory into @buf (created with @create), or -1. */
static int cache_dir(char *buf, size_t len, bool create)
{
	const char *env = getenv("LIVEPROF_CACHE_DIR"), *base;
	char parent[PATH_MAX];
	int n;

	if (getenv("LIVEPROF_NO_CACHE") && strcmp(getenv("LIVEPROF_NO_CACHE"), "0"))
		return -1;
	if (env && env[0]) {
		n = snprintf(buf, len, "%s", env);
	} else {
		base = getenv("XDG_CACHE_HOME");
		if (base && base[0])
			snprintf(parent, sizeof(parent), "%s/liveprof", base);
		else if ((base = getenv("HOME")) && base[0])
			snprintf(parent, sizeof(parent), "%s/.cache/liveprof", base);
		else
			return -1;
		n = snprintf(buf, len, "%s/cfi", parent);
		if (create) {
			/* the parents of a fresh home's cache, one level each */
			char *slash = strrchr(parent, '/');

			if (slash) {
				*slash = 0;
				mkdir(parent, 0700);
				*slash = '/';
			}
			mkdir(parent, 0700);
		}
	}
	if (n < 0 || (size_t)n >= len)
		return -1;
	if (create && mkdir(buf, 0700) && errno != EEXIST)
		return -1;
	return 0;
}

static bool read_all(int fd, void *p, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = read(fd, (char *)p + done, len - done);

		if (r <= 0)
			return false;
		done += (size_t)r;
	}
	return true;
}

/* The header describes a table this build can use, of @file_size bytes. */
static bool hdr_ok(const struct cache_hdr *h, off_t file_size)
{
	return !memcmp(h->magic, CACHE_MAGIC, sizeof(h->magic)) && h->version == CACHE_VERSION &&
	       h->row_size == sizeof(struct cfi_row) && h->n_rows && h->n_rows <= CACHE_MAX_ROWS &&
	       h->n_loads <= CFI_MAX_LOADS &&
	       (uint64_t)file_size == sizeof(*h) + h->n_rows * sizeof(struct cfi_row);
}

int cfi_cache__load(const char *build_id, struct cfi_table **out)
{
	uint64_t t0 = lp_now_ns();
	char dir[PATH_MAX], path[PATH_MAX + 160];
	struct cfi_table *t = NULL;
	struct cache_hdr h;
	struct stat st;
	int fd;

	*out = NULL;
	if (!id_ok(build_id) || cache_dir(dir, sizeof(dir), false))
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s", dir, build_id);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, &st) || !read_all(fd, &h, sizeof(h)) || !hdr_ok(&h, st.st_size))
		goto bad;
	t = calloc(1, sizeof(*t));
	if (!t || !(t->rows = malloc(h.n_rows * sizeof(*t->rows))) ||
	    !read_all(fd, t->rows, h.n_rows * sizeof(*t->rows)))
		goto bad;
	/* the unwinder's binary search trusts the order: check it */
	for (uint64_t i = 1; i < h.n_rows; i++)
		if (t->rows[i].pc <= t->rows[i - 1].pc)
			goto bad;
	close(fd);
	t->n_rows = h.n_rows;
	t->n_fdes = h.n_fdes;
	t->n_fallback = h.n_fallback;
	t->n_bad_fdes = h.n_bad_fdes;
	t->source = h.debug_frame ? ".debug_frame" : ".eh_frame";
	t->n_loads = h.n_loads;
	memcpy(t->loads, h.loads, sizeof(t->loads));
	t->build_ns = lp_now_ns() - t0;
	*out = t;
	return 0;
bad:
	close(fd);
	cfi_table__free(t);
	return -ENOENT;
}

void cfi_cache__save(const char *build_id, const struct cfi_table *t)
{
	char dir[PATH_MAX], path[PATH_MAX + 160], tmp[PATH_MAX + 200];
	struct cache_hdr h = {.version = CACHE_VERSION, .row_size = sizeof(struct cfi_row)};
	size_t rows = t->n_rows * sizeof(*t->rows);
	FILE *f;
	int fd;

	if (!id_ok(build_id) || !t->n_rows || t->n_rows > CACHE_MAX_ROWS ||
	    t->n_loads > CFI_MAX_LOADS || cache_dir(dir, sizeof(dir), true))
		return;
	memcpy(h.magic, CACHE_MAGIC, sizeof(h.magic));
	h.n_rows = t->n_rows;
	h.n_fdes = t->n_fdes;
	h.n_fallback = t->n_fallback;
	h.n_bad_fdes = t->n_bad_fdes;
	h.debug_frame = t->source && !strcmp(t->source, ".debug_frame");
	h.n_loads = (uint32_t)t->n_loads;
	memcpy(h.loads, t->loads, sizeof(h.loads));
	snprintf(path, sizeof(path), "%s/%s", dir, build_id);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return;
	}
	/* a reader sees the whole file or none: written aside, then renamed */
	if (fwrite(&h, sizeof(h), 1, f) != 1 || fwrite(t->rows, 1, rows, f) != rows || fclose(f) ||
	    rename(tmp, path))
		unlink(tmp);
}
