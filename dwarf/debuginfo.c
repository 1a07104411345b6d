// SPDX-License-Identifier: GPL-2.0
/*
 * debuginfo.c - find the separate debug file and the sources of a binary:
 * the build-id tree, .gnu_debuglink (the three directories gdb searches),
 * then debuginfod through libdebuginfod.
 *
 * libdebuginfod does the HTTP, the disk cache and its own negative cache
 * (a 404 is remembered for cache_miss_s). What it does not bound is an
 * unreachable or stalled server: DEBUGINFOD_TIMEOUT (90 s by default) is
 * per transfer and a dead address retries. So the progress callback,
 * which the client calls about once a second while a query is in flight,
 * also ends queries that run past our own time-out, and every build-id
 * that got no answer is remembered here for the rest of the run.
 *
 * libdebuginfod is opened (dlopen) on the first query, as libdwfl does:
 * linked, it brought libcurl, Kerberos, LDAP and more into every start,
 * 3.6 ms of their constructors before liveprof's first line, for a client
 * that most runs never make.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdwelf.h>

#include "dwarf/debuginfo.h"
#include "user/util/log.h"
#include "user/util/util.h"

#define BUILD_ID_MAX_BYTES 64
#define MAX_MISSES	   1024		/* build-ids remembered as absent; beyond, ask again */
#define MAX_SUFFIXES	   8		/* path components tried under --source-path */
#define SLOW_QUERY_NS	   500000000ull /* a failed query this slow is reported */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *source_path;
static int timeout_s = DEBUGINFO_TIMEOUT_S;
static debuginfo_progress_fn progress_fn;
static void *progress_ctx;
static debuginfod_client *client;
static bool client_tried;

/* The calls into libdebuginfod, resolved when it is opened. */
static struct {
	debuginfod_client *(*begin)(void);
	void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	int (*find_source)(debuginfod_client *, const unsigned char *, int, const char *, char **);
} dfd;
static char *misses[MAX_MISSES]; /* "d:<hex>" or "s:<hex>:<file>" that failed */
static size_t n_misses;

/* What the current query is, for the progress line and the time-out. */
struct query {
	const char *what;
	uint64_t start_ns;
	long last_done;
	bool shown;
};
static struct query cur;

void debuginfo__configure(const char *spath, int tmo)
{
	pthread_mutex_lock(&lock);
	free(source_path);
	source_path = spath && *spath ? strdup(spath) : NULL;
	timeout_s = tmo > 0 ? tmo : DEBUGINFO_TIMEOUT_S;
	pthread_mutex_unlock(&lock);
}

void debuginfo__set_progress(debuginfo_progress_fn fn, void *ctx)
{
	pthread_mutex_lock(&lock);
	progress_fn = fn;
	progress_ctx = ctx;
	pthread_mutex_unlock(&lock);
}

bool debuginfo__enabled(void)
{
	const char *u = getenv(DEBUGINFOD_URLS_ENV_VAR);

	return u && *u;
}

static void default_progress(const char *what, long done, long total, bool finished, double secs,
			     void *ctx)
{
	const char *cr = isatty(STDERR_FILENO) ? "\r\033[K" : "";

	(void)ctx;
	/* a log file gets the one final line, a terminal the line redrawn */
	if (!finished && !*cr)
		return;
	if (done < 0)
		fprintf(stderr, "%sliveprof: debuginfod: %s: not found (%.2f s)\n", cr, what, secs);
	else if (total > 0)
		fprintf(stderr, "%sliveprof: debuginfod: %s: %ld/%ld kB in %.2f s%s", cr, what,
			done >> 10, total >> 10, secs, finished ? "\n" : "");
	else
		fprintf(stderr, "%sliveprof: debuginfod: %s: %ld kB in %.2f s%s", cr, what,
			done >> 10, secs, finished ? "\n" : "");
}

static void report(long done, long total, bool finished)
{
	debuginfo_progress_fn fn = progress_fn ? progress_fn : default_progress;

	fn(cur.what, done, total, finished, (double)(lp_now_ns() - cur.start_ns) / 1e9,
	   progress_ctx);
}

/* Called by libdebuginfod while a transfer runs: non-zero aborts it. */
static int on_progress(debuginfod_client *c, long done, long total)
{
	(void)c;
	if (lp_now_ns() - cur.start_ns > (uint64_t)timeout_s * 1000000000ull)
		return 1;
	if (done > 0) {
		cur.last_done = done;
		cur.shown = true;
		report(done, total, false);
	}
	return 0;
}

/* libdebuginfod's calls into dfd; false if it is not installed. */
static bool open_libdebuginfod(void)
{
	void *h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		lp_warn("debuginfod: %s", dlerror());
		return false;
	}
	*(void **)&dfd.begin = dlsym(h, "debuginfod_begin");
	*(void **)&dfd.set_progressfn = dlsym(h, "debuginfod_set_progressfn");
	*(void **)&dfd.find_debuginfo = dlsym(h, "debuginfod_find_debuginfo");
	*(void **)&dfd.find_source = dlsym(h, "debuginfod_find_source");
	if (dfd.begin && dfd.set_progressfn && dfd.find_debuginfo && dfd.find_source)
		return true;
	lp_warn("debuginfod: libdebuginfod.so.1 lacks the calls liveprof makes");
	dlclose(h); /* never used: nothing of it is held */
	return false;
}

/* The one client, made on first use; NULL without DEBUGINFOD_URLS. */
static debuginfod_client *get_client(void)
{
	if (!client_tried) {
		client_tried = true;
		if (debuginfo__enabled() && open_libdebuginfod()) {
			client = dfd.begin();
			if (client)
				dfd.set_progressfn(client, on_progress);
		}
	}
	return client;
}

static bool missed(const char *key)
{
	for (size_t i = 0; i < n_misses; i++)
		if (!strcmp(misses[i], key))
			return true;
	return false;
}

static void remember_miss(const char *key)
{
	if (n_misses < MAX_MISSES && (misses[n_misses] = strdup(key)))
		n_misses++;
}

int debuginfo__hex_build_id(Elf *elf, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	const void *p = NULL;
	ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &p) : -1;

	hex[0] = '\0';
	if (n <= 0 || n > BUILD_ID_MAX_BYTES || !p)
		return -ENOENT;
	for (ssize_t i = 0; i < n; i++) {
		hex[2 * i] = digits[((const unsigned char *)p)[i] >> 4];
		hex[2 * i + 1] = digits[((const unsigned char *)p)[i] & 15];
	}
	hex[2 * n] = '\0';
	return 0;
}

static uint32_t file_crc(int fd)
{
	unsigned char buf[65536];
	uLong crc = crc32(0, Z_NULL, 0);
	ssize_t n;

	for (off_t off = 0; (n = pread(fd, buf, sizeof(buf), off)) > 0; off += n)
		crc = crc32(crc, buf, (uInt)n);
	return (uint32_t)crc;
}

/*
 * Open @cand if it is the debug file of a binary with build-id @hex (or,
 * for a binary without one, whose CRC is @crc): a stale file left by an
 * older build must not lend its lines to a new binary.
 */
static int open_matching(const char *cand, const char *hex, bool check_crc, uint32_t crc)
{
	char got[2 * BUILD_ID_MAX_BYTES + 1];
	int fd = open(cand, O_RDONLY | O_CLOEXEC);
	Elf *e;
	bool ok;

	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	ok = e && elf_kind(e) == ELF_K_ELF;
	if (ok && *hex)
		ok = debuginfo__hex_build_id(e, got) == 0 && !strcmp(got, hex);
	else if (ok && check_crc)
		ok = file_crc(fd) == crc;
	if (e)
		elf_end(e);
	if (!ok) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

/* The three places gdb looks for a .gnu_debuglink name. */
static int find_debuglink(Elf *elf, const char *path, const char *hex, char *out, size_t len)
{
	GElf_Word crc = 0;
	const char *name = dwelf_elf_gnu_debuglink(elf, &crc);
	char dir[4096], cand[4096 + 300];
	const char *slash;

	if (!name || !*name || strchr(name, '/') || !path || !(slash = strrchr(path, '/')))
		return -ENOENT;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	for (int i = 0; i < 3; i++) {
		int fd;

		if (i == 0)
			snprintf(cand, sizeof(cand), "%s/%s", dir, name);
		else if (i == 1)
			snprintf(cand, sizeof(cand), "%s/.debug/%s", dir, name);
		else
			snprintf(cand, sizeof(cand), "/usr/lib/debug%s/%s", dir, name);
		/* the binary itself may carry its own name as debuglink */
		if (!strcmp(cand, path))
			continue;
		fd = open_matching(cand, hex, true, crc);
		if (fd >= 0) {
			if (out)
				snprintf(out, len, "%s", cand);
			return fd;
		}
	}
	return -ENOENT;
}

/*
 * Whether libdebuginfod has @hex's debuginfo in its cache already, where
 * 0.188 puts it: $DEBUGINFOD_CACHE_PATH, $XDG_CACHE_HOME/debuginfod_client
 * or ~/.cache/debuginfod_client (a legacy ~/.debuginfod_client_cache is not
 * looked at: a hit there is then reported as a download, nothing worse).
 */
static bool in_cache(const char *hex)
{
	const char *p = getenv(DEBUGINFOD_CACHE_PATH_ENV_VAR), *x = getenv("XDG_CACHE_HOME");
	const char *h = getenv("HOME");
	char path[4096];

	if (p && *p)
		snprintf(path, sizeof(path), "%s/%s/debuginfo", p, hex);
	else if (x && *x)
		snprintf(path, sizeof(path), "%s/debuginfod_client/%s/debuginfo", x, hex);
	else if (h && *h)
		snprintf(path, sizeof(path), "%s/.cache/debuginfod_client/%s/debuginfo", h, hex);
	else
		return false;
	return access(path, F_OK) == 0;
}

/* One debuginfod query under the lock; the fd, or a negative errno. */
static int ask_debuginfod(const char *hex, const char *file, const char *what, char *out,
			  size_t len)
{
	char key[5000], *got = NULL;
	debuginfod_client *c;
	struct stat st;
	bool cached;
	int fd;

	snprintf(key, sizeof(key), "%s:%s:%s", file ? "s" : "d", hex, file ? file : "");
	c = get_client();
	if (!c || !*hex)
		return -ENOENT;
	if (missed(key))
		return -ENOENT;
	cached = !file && in_cache(hex);
	cur = (struct query){.what = what, .start_ns = lp_now_ns()};
	if (file)
		fd = dfd.find_source(c, (const unsigned char *)hex, 0, file, &got);
	else
		fd = dfd.find_debuginfo(c, (const unsigned char *)hex, 0, &got);
	/* a small file can be whole before the client calls us with a byte of it */
	if (fd >= 0 && !cached && !fstat(fd, &st)) {
		cur.shown = true;
		if (st.st_size > cur.last_done)
			cur.last_done = (long)st.st_size;
	}
	/* a download, or a wait long enough to be noticed, is said once */
	if (cur.shown || lp_now_ns() - cur.start_ns > SLOW_QUERY_NS)
		report(fd >= 0 ? cur.last_done : -1, cur.last_done, true);
	if (fd < 0) {
		remember_miss(key);
		return fd;
	}
	if (out)
		snprintf(out, len, "%s", got ? got : "");
	free(got);
	return fd;
}

int debuginfo__find_debug(Elf *elf, const char *path, char *out_path, size_t path_len,
			  const char **how)
{
	char hex[2 * BUILD_ID_MAX_BYTES + 1], cand[2 * BUILD_ID_MAX_BYTES + 64], what[600];
	const char *base = path ? strrchr(path, '/') : NULL;
	int fd = -ENOENT;

	debuginfo__hex_build_id(elf, hex);
	if (strlen(hex) >= 4) {
		snprintf(cand, sizeof(cand), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex,
			 hex + 2);
		fd = open_matching(cand, hex, false, 0);
		if (fd >= 0) {
			if (out_path)
				snprintf(out_path, path_len, "%s", cand);
			if (how)
				*how = "build-id";
			return fd;
		}
	}
	fd = find_debuglink(elf, path, hex, out_path, path_len);
	if (fd >= 0) {
		if (how)
			*how = "debuglink";
		return fd;
	}
	snprintf(what, sizeof(what), "debuginfo of '%.500s'", base ? base + 1 : path ? path : hex);
	pthread_mutex_lock(&lock);
	fd = ask_debuginfod(hex, NULL, what, out_path, path_len);
	pthread_mutex_unlock(&lock);
	if (fd >= 0 && how)
		*how = "debuginfod";
	return fd >= 0 ? fd : -ENOENT;
}

static void where_add(char *where, size_t len, const char *fmt, const char *a, const char *b)
{
	size_t n = strlen(where);

	if (n + 1 >= len)
		return;
	snprintf(where + n, len - n, fmt, n ? ", " : "", a, b);
}

static bool readable(const char *p)
{
	return access(p, R_OK) == 0;
}

/* --source-path DIR: DIR/file, then DIR/ with fewer and fewer leading components. */
static int try_source_path(const char *full, char *out, size_t len, char *where, size_t wlen)
{
	const char *p = full;

	for (int i = 0; i < MAX_SUFFIXES && p && *p; i++) {
		while (*p == '/')
			p++;
		snprintf(out, len, "%s/%s", source_path, p);
		if (readable(out))
			return 0;
		if (i == 0)
			where_add(where, wlen, "%s'%s' (--source-path%s)", out, "");
		p = strchr(p, '/');
	}
	return -ENOENT;
}

int debuginfo__find_source(const char *build_id, const char *comp_dir, const char *file, char *out,
			   size_t out_len, char *where, size_t where_len)
{
	char full[4096], what[600];
	const char *base;
	int fd;

	where[0] = '\0';
	if (!file || !*file)
		return -ENOENT;
	if (file[0] == '/' || !comp_dir || !*comp_dir)
		snprintf(full, sizeof(full), "%s", file);
	else
		snprintf(full, sizeof(full), "%s/%s", comp_dir, file);
	snprintf(out, out_len, "%s", full);
	if (readable(out)) {
		snprintf(where, where_len, "'%s' (DWARF)", out);
		return 0;
	}
	where_add(where, where_len, "%s'%s' (DWARF%s)", full, "");
	pthread_mutex_lock(&lock);
	if (source_path && try_source_path(full, out, out_len, where, where_len) == 0) {
		pthread_mutex_unlock(&lock);
		where[0] = '\0';
		where_add(where, where_len, "%s'%s' (--source-path%s)", out, "");
		return 0;
	}
	if (!source_path)
		where_add(where, where_len, "%sno --source-path%s%s", "", "");
	base = strrchr(full, '/');
	snprintf(what, sizeof(what), "source '%.500s'", base ? base + 1 : full);
	fd = build_id && *build_id && get_client()
		     ? ask_debuginfod(build_id, full, what, out, out_len)
		     : -ENOENT;
	pthread_mutex_unlock(&lock);
	if (fd >= 0) {
		close(fd);
		where[0] = '\0';
		where_add(where, where_len, "%s'%s' (debuginfod%s)", out, "");
		return 0;
	}
	where_add(where, where_len, "%sdebuginfod: %s%s",
		  !debuginfo__enabled() ? "DEBUGINFOD_URLS not set" : "not found", "");
	return -ENOENT;
}

Dwarf *debuginfo__dwarf_begin(Elf *elf, const char *path, struct debuginfo_file *dbg)
{
	Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);

	dbg->fd = -1;
	dbg->elf = NULL;
	if (dw)
		return dw;
	dbg->fd = debuginfo__find_debug(elf, path, NULL, 0, NULL);
	if (dbg->fd < 0) {
		dbg->fd = -1;
		return NULL;
	}
	dbg->elf = elf_begin(dbg->fd, ELF_C_READ_MMAP, NULL);
	dw = dbg->elf ? dwarf_begin_elf(dbg->elf, DWARF_C_READ, NULL) : NULL;
	if (!dw)
		debuginfo__file_close(dbg);
	return dw;
}

void debuginfo__file_close(struct debuginfo_file *dbg)
{
	if (dbg->elf)
		elf_end(dbg->elf);
	if (dbg->fd >= 0)
		close(dbg->fd);
	dbg->elf = NULL;
	dbg->fd = -1;
}
