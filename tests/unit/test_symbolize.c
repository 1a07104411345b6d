// SPDX-License-Identifier: GPL-2.0
/*
 * test_symbolize.c - dwarf/symbolize against fixture programs built here
 * at run time (PIE, non-PIE, shared library, stripped, no -g, deleted on
 * disk), run as children and symbolized through /proc/CHILD/maps.
 * Expected lines come from MARK: comments in the fixture sources.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"
#include "dwarf/elf_symtab.h"
#include "dwarf/kallsyms.h"
#include "dwarf/proc_maps.h"
#include "dwarf/sym_dwarf.h"
#include "dwarf/symbolize.h"

#define MAX_CHILDREN 16

static char tmpdir[64];
static char fixdir[4096];
static pid_t children[MAX_CHILDREN];
static int nchildren;

struct child {
	pid_t pid;
	uint64_t outer, main_fn, gap, anon, ra0, ra1, lib_static, lib_func;
};

static bool setup(void)
{
	struct stat st;

	if (tmpdir[0])
		return true;
	if (stat("tests/unit/fixtures/sym_prog.c", &st) == 0) {
		snprintf(fixdir, sizeof(fixdir), "tests/unit/fixtures");
	} else {
		/* run from elsewhere: the fixtures sit next to this source */
		snprintf(fixdir, sizeof(fixdir), "%s", __FILE__);
		char *slash = strrchr(fixdir, '/');

		if (slash)
			strcpy(slash, "/fixtures");
		else
			strcpy(fixdir, "fixtures");
	}
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/lp_symtest.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		tmpdir[0] = '\0';
		return false;
	}
	return true;
}

static bool run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool run(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "  command failed (%d): %s\n", rc, cmd);
	return rc == 0;
}

/* Build the library (once) and a program variant named @name with @flags. */
static bool build_prog(const char *name, const char *flags, bool with_lib)
{
	char libflags[256] = "";

	if (!setup())
		return false;
	if (with_lib) {
		if (!run("test -e %s/libsymfix.so || cc -O2 -g -fPIC -shared -o %s/libsymfix.so "
			 "%s/sym_lib.c",
			 tmpdir, tmpdir, fixdir))
			return false;
		snprintf(libflags, sizeof(libflags), "-DWITH_LIB -L%s -lsymfix -Wl,-rpath,%s",
			 tmpdir, tmpdir);
	}
	return run("cc %s -o %s/%s %s/sym_prog.c %s", flags, tmpdir, name, fixdir, libflags);
}

static uint64_t field(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	void *v = NULL;

	if (!p || sscanf(p + strlen(key), "%p", &v) != 1)
		return 0;
	return (uint64_t)(uintptr_t)v;
}

/* Start @path (libraries come from its rpath), read its address line. */
static bool spawn(const char *path, struct child *c)
{
	char buf[1024] = "";
	size_t len = 0;
	int fds[2];
	pid_t pid;

	memset(c, 0, sizeof(*c));
	if (pipe(fds))
		return false;
	pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	if (nchildren < MAX_CHILDREN)
		children[nchildren++] = pid;
	/* the "outer=" line comes last */
	while (len < sizeof(buf) - 1 && !strstr(buf, " r=")) {
		ssize_t r = read(fds[0], buf + len, sizeof(buf) - 1 - len);

		if (r <= 0)
			break;
		len += r;
		buf[len] = '\0';
	}
	buf[len] = '\0';
	close(fds[0]);
	c->pid = pid;
	c->outer = field(buf, "outer=");
	c->main_fn = field(buf, "main=");
	c->gap = field(buf, "gap=");
	c->anon = field(buf, "anon=");
	c->ra0 = field(buf, "ra0=");
	c->ra1 = field(buf, "ra1=");
	c->lib_static = field(buf, "lib_static=");
	c->lib_func = field(buf, "lib_func=");
	return c->outer != 0;
}

static void reap(struct child *c)
{
	if (c->pid <= 0)
		return;
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
	for (int i = 0; i < nchildren; i++)
		if (children[i] == c->pid)
			children[i] = 0;
	c->pid = 0;
}

static int marker_line(const char *src, const char *marker)
{
	char path[4200], line[512];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fixdir, src);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, marker)) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	return -1;
}

static const char *base(const char *p)
{
	const char *b = p ? strrchr(p, '/') : NULL;

	return b ? b + 1 : p;
}

/* Names, lines and the inline chain for a program built with -O2 -g. */
static void check_full(const char *name, struct child *c, bool lib)
{
	struct symbolizer *s = symbolizer__new(true);
	struct sym_frame f[SYM_MAX_INLINE], g;
	int n;

	CHECK(s);
	if (!s)
		return;
	CHECK_EQ_INT(symbolizer__add_pid(s, c->pid), 0);

	n = symbolizer__resolve(s, c->pid, c->outer, f, SYM_MAX_INLINE);
	CHECK_EQ_INT(n, 1);
	CHECK_STR(f[0].func, "sym_outer");
	CHECK_STR(f[0].module, name);
	CHECK_STR(base(f[0].file), "sym_prog.c");
	CHECK(f[0].build_id && strlen(f[0].build_id) == 40);

	n = symbolizer__resolve(s, c->pid, c->main_fn, f, SYM_MAX_INLINE);
	CHECK(n >= 1);
	CHECK_STR(f[n - 1].func, "main");

	/* a return address minus one is the call instruction */
	n = symbolizer__resolve(s, c->pid, c->ra0 - 1, f, SYM_MAX_INLINE);
	CHECK_EQ_INT(n, 1);
	CHECK_STR(f[0].func, "sym_outer");
	CHECK_EQ_INT(f[0].line, marker_line("sym_prog.c", "MARK:direct_call"));

	n = symbolizer__resolve(s, c->pid, c->ra1 - 1, f, SYM_MAX_INLINE);
	CHECK_EQ_INT(n, 2);
	if (n == 2) {
		CHECK_STR(f[0].func, "sym_helper");
		CHECK(f[0].inlined);
		CHECK_STR(base(f[0].file), "sym_prog.c");
		CHECK_EQ_INT(f[0].line, marker_line("sym_prog.c", "MARK:inl_call"));
		CHECK_STR(f[1].func, "sym_outer");
		CHECK(!f[1].inlined);
		CHECK_STR(base(f[1].file), "sym_prog.c");
		CHECK_EQ_INT(f[1].line, marker_line("sym_prog.c", "MARK:outer_call"));
	}
	/* a too small buffer keeps the real function */
	n = symbolizer__resolve(s, c->pid, c->ra1 - 1, f, 1);
	CHECK_EQ_INT(n, 1);
	CHECK_STR(f[0].func, "sym_outer");

	/* inside the mapping, past the 1-byte symbol: unknown, not a neighbour */
	CHECK_EQ_INT(symbolizer__resolve(s, c->pid, c->gap, &g, 1), 1);
	CHECK_STR(g.func, "sym_gap_fn");
	n = symbolizer__resolve(s, c->pid, c->gap + 32, f, SYM_MAX_INLINE);
	CHECK_EQ_INT(n, 1);
	CHECK(f[0].func == NULL);
	CHECK_STR(f[0].module, name);
	CHECK_EQ_INT(f[0].offset, g.offset + 32);

	n = symbolizer__resolve(s, c->pid, c->anon + 16, f, SYM_MAX_INLINE);
	CHECK_EQ_INT(n, 1);
	CHECK(f[0].func == NULL);
	CHECK_STR(f[0].module, "[anon]");
	CHECK_EQ_INT(f[0].offset, 16);

	n = symbolizer__resolve(s, c->pid, 16, f, SYM_MAX_INLINE);
	CHECK_EQ_INT(n, 1);
	CHECK(f[0].func == NULL);

	if (lib) {
		n = symbolizer__resolve(s, c->pid, c->lib_static, f, SYM_MAX_INLINE);
		CHECK_EQ_INT(n, 1);
		CHECK_STR(f[0].func, "sym_lib_static");
		CHECK_STR(f[0].module, "libsymfix.so");
		CHECK_STR(base(f[0].file), "sym_lib.c");
		n = symbolizer__resolve(s, c->pid, c->lib_func, f, SYM_MAX_INLINE);
		CHECK(n >= 1);
		CHECK_STR(f[n - 1].func, "sym_lib_func");
	}
	symbolizer__free(s);

	/* without lines: one frame, no DWARF */
	s = symbolizer__new(false);
	CHECK(s);
	if (!s)
		return;
	n = symbolizer__resolve(s, c->pid, c->ra1 - 1, f, SYM_MAX_INLINE);
	CHECK_EQ_INT(n, 1);
	CHECK_STR(f[0].func, "sym_outer");
	CHECK(f[0].file == NULL);
	CHECK_EQ_INT(f[0].line, 0);
	symbolizer__free(s);
}

UNIT_TEST(test_pie_with_lib)
{
	char path[128];
	struct child c;

	CHECK(build_prog("prog_pie", "-O2 -g -pie -fPIE", true));
	snprintf(path, sizeof(path), "%s/prog_pie", tmpdir);
	CHECK(spawn(path, &c));
	if (c.outer)
		check_full("prog_pie", &c, true);
	reap(&c);
}

/* Two processes, one library: one ELF opened, names from the same table. */
UNIT_TEST(test_shared_cache)
{
	struct sym_frame f1, f2;
	struct symbolizer *s;
	struct child a, b;
	char path[128];

	CHECK(build_prog("prog_pie2", "-O2 -g -pie -fPIE", true));
	snprintf(path, sizeof(path), "%s/prog_pie2", tmpdir);
	CHECK(spawn(path, &a));
	CHECK(spawn(path, &b));
	s = symbolizer__new(false);
	CHECK(s);
	if (s && a.lib_static && b.lib_static) {
		CHECK_EQ_INT(symbolizer__resolve(s, a.pid, a.lib_static, &f1, 1), 1);
		CHECK_EQ_INT(symbolizer__resolve(s, b.pid, b.lib_static, &f2, 1), 1);
		CHECK_STR(f1.func, "sym_lib_static");
		CHECK(f1.func == f2.func);
		CHECK(f1.build_id == f2.build_id);
		CHECK_EQ_INT(f1.offset, f2.offset);
	}
	symbolizer__free(s);
	reap(&a);
	reap(&b);
}

UNIT_TEST(test_non_pie)
{
	char path[128];
	struct child c;

	CHECK(build_prog("prog_nopie", "-O2 -g -no-pie", false));
	snprintf(path, sizeof(path), "%s/prog_nopie", tmpdir);
	CHECK(spawn(path, &c));
	if (c.outer)
		check_full("prog_nopie", &c, false);
	reap(&c);
}

/* "[MODULE+0xSTART]" with START at or below the address, within a function's reach. */
static bool fde_named(const struct sym_frame *f, const char *module)
{
	char want[64];
	unsigned long long start;
	size_t n = (size_t)snprintf(want, sizeof(want), "[%s+0x", module);

	if (!f->func || strncmp(f->func, want, n) || sscanf(f->func + n, "%llx", &start) != 1)
		return false;
	return start <= f->offset && f->offset - start < 4096;
}

UNIT_TEST(test_stripped)
{
	struct symbolizer *s;
	struct sym_frame f[SYM_MAX_INLINE];
	char path[128];
	struct child c;
	int n;

	CHECK(build_prog("prog_strip", "-O2 -g", true));
	/* a stripped copy of the library in its own dir, found first through rpath */
	CHECK(run("mkdir -p %s/s && cp %s/libsymfix.so %s/s/ && strip --strip-all "
		  "%s/s/libsymfix.so && cc -O2 -g -DWITH_LIB -o %s/prog_strip %s/sym_prog.c -L%s/s "
		  "-lsymfix "
		  "-Wl,-rpath,%s/s && strip --strip-all %s/prog_strip",
		  tmpdir, tmpdir, tmpdir, tmpdir, tmpdir, fixdir, tmpdir, tmpdir, tmpdir));
	snprintf(path, sizeof(path), "%s/prog_strip", tmpdir);
	CHECK(spawn(path, &c));
	s = symbolizer__new(true);
	CHECK(s);
	if (c.outer && s) {
		/* no .symtab, and the program's .dynsym lacks its functions: the
		 * function is named after its .eh_frame FDE, never a neighbour */
		n = symbolizer__resolve(s, c.pid, c.outer, f, SYM_MAX_INLINE);
		CHECK_EQ_INT(n, 1);
		CHECK(fde_named(&f[0], "prog_strip"));
		CHECK_STR(f[0].module, "prog_strip");
		/* the library's exported function is still in .dynsym */
		n = symbolizer__resolve(s, c.pid, c.lib_func, f, SYM_MAX_INLINE);
		CHECK_EQ_INT(n, 1);
		CHECK_STR(f[0].func, "sym_lib_func");
		CHECK_STR(f[0].module, "libsymfix.so");
		CHECK(f[0].file == NULL);
		/* a static function is gone with .symtab: its FDE's start, not a neighbour */
		n = symbolizer__resolve(s, c.pid, c.lib_static, f, SYM_MAX_INLINE);
		CHECK_EQ_INT(n, 1);
		CHECK(fde_named(&f[0], "libsymfix.so"));
	}
	symbolizer__free(s);
	reap(&c);
}

UNIT_TEST(test_no_debug_info)
{
	struct symbolizer *s;
	struct sym_frame f[SYM_MAX_INLINE];
	char path[128];
	struct child c;
	int n;

	CHECK(build_prog("prog_nog", "-O2", false));
	snprintf(path, sizeof(path), "%s/prog_nog", tmpdir);
	CHECK(spawn(path, &c));
	s = symbolizer__new(true);
	CHECK(s);
	if (c.outer && s) {
		n = symbolizer__resolve(s, c.pid, c.ra1 - 1, f, SYM_MAX_INLINE);
		CHECK_EQ_INT(n, 1);
		CHECK_STR(f[0].func, "sym_outer");
		CHECK(f[0].file == NULL);
		CHECK_EQ_INT(f[0].line, 0);
	}
	symbolizer__free(s);
	reap(&c);
}

UNIT_TEST(test_deleted_and_dead)
{
	struct symbolizer *s;
	struct sym_frame f[SYM_MAX_INLINE];
	char path[128];
	struct child c;
	int n;

	CHECK(build_prog("prog_del", "-O2 -g", false));
	snprintf(path, sizeof(path), "%s/prog_del", tmpdir);
	CHECK(spawn(path, &c));
	CHECK_EQ_INT(unlink(path), 0);
	s = symbolizer__new(true);
	CHECK(s);
	if (c.outer && s) {
		CHECK_EQ_INT(symbolizer__add_pid(s, c.pid), 0);
		n = symbolizer__resolve(s, c.pid, c.outer, f, SYM_MAX_INLINE);
		CHECK_EQ_INT(n, 1);
		CHECK_STR(f[0].func, "sym_outer");
		CHECK_STR(f[0].path, path);

		const struct sym_mapping *maps;
		int nm = symbolizer__mappings(s, c.pid, &maps), found = 0;

		CHECK(nm > 0);
		for (int i = 0; i < nm; i++)
			if (!strcmp(maps[i].path, path) && strlen(maps[i].build_id) == 40)
				found++;
		CHECK(found >= 1);

		/* the process exits: known mappings still resolve, lines included */
		pid_t pid = c.pid;

		reap(&c);
		n = symbolizer__resolve(s, pid, c.ra1 - 1, f, SYM_MAX_INLINE);
		CHECK_EQ_INT(n, 2);
		CHECK_STR(f[n - 1].func, "sym_outer");
		CHECK_EQ_INT(f[n - 1].line, marker_line("sym_prog.c", "MARK:outer_call"));
	}
	symbolizer__free(s);
	reap(&c);
}

UNIT_TEST(test_vdso)
{
	struct symbolizer *s = symbolizer__new(false);
	const struct sym_mapping *maps;
	struct sym_frame f;
	int nm, named = 0;

	CHECK(s);
	if (!s)
		return;
	CHECK_EQ_INT(symbolizer__add_pid(s, getpid()), 0);
	nm = symbolizer__mappings(s, getpid(), &maps);
	CHECK(nm > 0);
	for (int i = 0; i < nm; i++) {
		if (strcmp(maps[i].path, "[vdso]"))
			continue;
		CHECK(strlen(maps[i].build_id) > 0);
		for (uint64_t a = maps[i].start; a < maps[i].end; a += 4) {
			CHECK_EQ_INT(symbolizer__resolve(s, getpid(), a, &f, 1), 1);
			CHECK_STR(f.module, "[vdso]");
			if (f.func && strstr(f.func, "clock_gettime"))
				named++;
		}
	}
	CHECK(named > 0);
	symbolizer__free(s);
}

/* Truncated, garbled and random copies of a real ELF: errors, never crashes. */
UNIT_TEST(test_corrupt_elf)
{
	static const size_t cuts[] = {0, 4, 16, 52, 64, 100, 500, 1000, 4096, 8192, 12000};
	char src[128], dst[160];
	struct sym_line_frame lf[SYM_MAX_INLINE];
	unsigned int seed = 12345;
	struct stat st;

	CHECK(build_prog("prog_fuzz", "-O2 -g", false));
	snprintf(src, sizeof(src), "%s/prog_fuzz", tmpdir);
	snprintf(dst, sizeof(dst), "%s/prog_fuzz.bad", tmpdir);
	if (stat(src, &st))
		return;
	for (int iter = 0; iter < 300; iter++) {
		struct elf_symtab *t = NULL;
		char cmd[512];

		if (iter < (int)(sizeof(cuts) / sizeof(cuts[0])))
			snprintf(cmd, sizeof(cmd), "head -c %zu %s > %s", cuts[iter], src, dst);
		else if (iter < 40)
			snprintf(cmd, sizeof(cmd), "head -c %lld %s > %s",
				 (long long)(st.st_size * (iter - 10) / 30), src, dst);
		else
			snprintf(cmd, sizeof(cmd), "cp %s %s", src, dst);
		CHECK(system(cmd) == 0);
		if (iter >= 40) {
			/* flip bytes; headers are where parsers die, so hit them often */
			int fd = open(dst, O_WRONLY);

			for (int k = 0; fd >= 0 && k < 8; k++) {
				unsigned char b = rand_r(&seed);
				off_t at = k < 4 ? rand_r(&seed) % 256 : rand_r(&seed) % st.st_size;

				if (pwrite(fd, &b, 1, at) != 1)
					break;
			}
			if (fd >= 0)
				close(fd);
		}
		if (elf_symtab__open_path(dst, &t) == 0) {
			uint64_t v;

			for (uint64_t a = 0; a < 0x3000; a += 7) {
				elf_symtab__lookup(t, a);
				elf_symtab__offset_to_vaddr(t, a, &v);
				sym_dwarf__frames(t, a + 0x1000, lf, SYM_MAX_INLINE);
			}
			elf_symtab__free(t);
		}
	}
	/* and one file truncated under an open symtab: read errors, no SIGBUS */
	{
		struct elf_symtab *t = NULL;

		CHECK(run("cp %s %s", src, dst));
		CHECK_EQ_INT(elf_symtab__open_path(dst, &t), 0);
		CHECK_EQ_INT(truncate(dst, 100), 0);
		if (t) {
			for (uint64_t a = 0; a < 0x3000; a += 3) {
				elf_symtab__lookup(t, a);
				sym_dwarf__frames(t, a, lf, SYM_MAX_INLINE);
			}
			elf_symtab__free(t);
		}
	}
	CHECK(elf_symtab__open_path("/nonexistent/x", &(struct elf_symtab *){NULL}) < 0);
}

UNIT_TEST(test_proc_maps_parse)
{
	struct pm_entry e;

	CHECK_EQ_INT(proc_maps__parse_line("7f00-7f10 r-xp 00001000 08:01 1234   /usr/lib/x.so "
					   "(deleted)\n",
					   &e),
		     0);
	CHECK_EQ_INT(e.start, 0x7f00);
	CHECK_EQ_INT(e.end, 0x7f10);
	CHECK_EQ_INT(e.offset, 0x1000);
	CHECK_EQ_INT(e.inode, 1234);
	CHECK(e.exec && e.deleted);
	CHECK_STR(e.path, "/usr/lib/x.so");
	free(e.path);
	CHECK_EQ_INT(proc_maps__parse_line("1000-2000 rw-p 00000000 00:00 0\n", &e), 0);
	CHECK(!e.exec);
	CHECK_STR(e.path, "");
	free(e.path);
	CHECK_EQ_INT(proc_maps__parse_line("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 "
					   "0                  [vsyscall]",
					   &e),
		     0);
	CHECK_STR(e.path, "[vsyscall]");
	free(e.path);
	CHECK_EQ_INT(proc_maps__parse_line("garbage", &e), -EINVAL);
	CHECK_EQ_INT(proc_maps__parse_line("2000-1000 r-xp 0 0:0 0 x", &e), -EINVAL);
}

UNIT_TEST(test_kernel)
{
	struct symbolizer *s = symbolizer__new(false);
	struct sym_frame f;
	char line[512], name[256];
	unsigned long long addr = 0, a;
	char type;
	FILE *kf = fopen("/proc/kallsyms", "r");

	CHECK(s && kf);
	if (!s || !kf)
		goto out;
	/* a function followed by a different address, without a module */
	while (fgets(line, sizeof(line), kf)) {
		if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 &&
		    !strcmp(name, "vfs_read") && !strchr(line, '[')) {
			addr = a;
			break;
		}
	}
	CHECK(addr != 0);
	if (addr) {
		CHECK_EQ_INT(symbolizer__resolve_kernel(s, addr + 1, &f), 1);
		CHECK_STR(f.func, "vfs_read");
		CHECK_STR(f.module, "[kernel]");
	}
out:
	if (kf)
		fclose(kf);
	symbolizer__free(s);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Not a pass/fail test: how much one resolve costs, cached and not. */
UNIT_TEST(test_bench)
{
	struct sym_frame f[SYM_MAX_INLINE];
	const struct sym_mapping *maps;
	uint64_t lo = 0, hi = 0, t0, t1, sink = 0;
	int nm, iters = 2000000, nunc = 0;
	pid_t me = getpid(); /* a syscall: keep it out of the timed loops */

	for (int lines = 0; lines < 2; lines++) {
		struct symbolizer *s = symbolizer__new(lines);

		CHECK(s);
		if (!s)
			return;
		CHECK_EQ_INT(symbolizer__add_pid(s, me), 0);
		nm = symbolizer__mappings(s, me, &maps);
		/* the biggest executable mapping: libc's text, or our own */
		for (int i = 0; i < nm; i++) {
			if (maps[i].end - maps[i].start > hi - lo && maps[i].path[0] == '/') {
				lo = maps[i].start;
				hi = maps[i].end;
			}
		}
		t0 = mono_ns();
		for (uint64_t a = lo; a < hi && nunc < 20000; a += 61, nunc++)
			sink += symbolizer__resolve(s, me, a, f, SYM_MAX_INLINE);
		t1 = mono_ns();
		printf("  uncached resolve (want_lines=%d): %.0f ns\n", lines,
		       (double)(t1 - t0) / (nunc ? nunc : 1));
		t0 = mono_ns();
		for (int i = 0; i < iters; i++)
			sink += symbolizer__resolve(s, me, lo + (uint64_t)(i & 1023) * 61, f,
						    SYM_MAX_INLINE);
		t1 = mono_ns();
		printf("  cached resolve (want_lines=%d): %.1f ns\n", lines,
		       (double)(t1 - t0) / iters);
		CHECK(sink > 0);
		nunc = 0;
		symbolizer__free(s);
	}
}

static void cleanup(void)
{
	for (int i = 0; i < nchildren; i++) {
		if (children[i] > 0) {
			kill(children[i], SIGKILL);
			waitpid(children[i], NULL, 0);
		}
	}
	if (tmpdir[0])
		run("rm -rf %s", tmpdir);
}

static void __attribute__((constructor)) register_cleanup(void)
{
	atexit(cleanup);
}

UNIT_MAIN()
