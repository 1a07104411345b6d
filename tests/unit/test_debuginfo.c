// SPDX-License-Identifier: GPL-2.0
/*
 * test_debuginfo.c - where a stripped binary's debug file is found:
 * .gnu_debuglink beside it and in its .debug/ directory, a debug file of
 * another build under that name refused, and no network without
 * DEBUGINFOD_URLS. The binaries are copies of this test program, split
 * with objcopy the way distributions do it.
 */
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdbool.h>
#include <unistd.h>
#include <gelf.h>

#include "unit.h"
#include "dwarf/debuginfo.h"
#include "dwarf/elf_symtab.h"
#include "dwarf/sym_dwarf.h"

static char dir[64];

static bool run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool run(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	if (rc)
		fprintf(stderr, "  command failed (%d): %s\n", rc, cmd);
	return rc == 0;
}

static bool setup(void)
{
	if (dir[0])
		return true;
	snprintf(dir, sizeof(dir), "/tmp/lp-debuginfo-XXXXXX");
	if (!mkdtemp(dir)) {
		dir[0] = 0;
		return false;
	}
	unsetenv("DEBUGINFOD_URLS");
	/* prog: stripped, debuglink to prog.debug; other.debug: another build */
	return run("cd %s && cp /proc/%d/exe full && objcopy --only-keep-debug full prog.debug && "
		   "objcopy --strip-all --add-gnu-debuglink=prog.debug full prog && "
		   "cc -g -x c -o other - <<'EOF'\nint main(void) { return 0; }\nEOF\n"
		   "objcopy --only-keep-debug other other.debug",
		   dir, getpid());
}

/* debuginfo__find_debug() on @dir/@name: the path found, "" if none. */
static const char *find(const char *name, char *out, size_t len, const char **how)
{
	char path[256];
	int fd, dfd;
	Elf *e;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	out[0] = 0;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return out;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	dfd = debuginfo__find_debug(e, path, out, len, how);
	if (dfd >= 0)
		close(dfd);
	else
		out[0] = 0;
	elf_end(e);
	close(fd);
	return out;
}

UNIT_TEST(debuglink_beside_and_in_dot_debug)
{
	char got[512], want[512];
	const char *how = NULL;

	CHECK(setup());
	snprintf(want, sizeof(want), "%s/prog.debug", dir);
	CHECK_STR(find("prog", got, sizeof(got), &how), want);
	CHECK_STR(how, "debuglink");
	/* gdb's second place: DIR/.debug/NAME */
	CHECK(run("mkdir -p %s/.debug && mv %s/prog.debug %s/.debug/", dir, dir, dir));
	snprintf(want, sizeof(want), "%s/.debug/prog.debug", dir);
	CHECK_STR(find("prog", got, sizeof(got), &how), want);
	CHECK(run("mv %s/.debug/prog.debug %s/", dir, dir));
}

UNIT_TEST(debuglink_of_another_build_refused)
{
	char got[512];

	CHECK(setup());
	CHECK(run("cd %s && mv prog.debug prog.debug.real && cp other.debug prog.debug", dir));
	CHECK_STR(find("prog", got, sizeof(got), NULL), "");
	CHECK(run("cd %s && mv prog.debug.real prog.debug", dir));
}

static int first_base(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;
}

UNIT_TEST(symbols_and_lines_through_the_debug_file)
{
	struct elf_symtab *t = NULL;
	struct sym_line_frame fr[4];
	const struct elf_sym *s;
	uintptr_t base = 0;
	char path[256];
	uint64_t vaddr;
	int n;

	CHECK(setup());
	snprintf(path, sizeof(path), "%s/prog", dir);
	CHECK(elf_symtab__open_path(path, &t) == 0);
	if (!t)
		return;
	/* the copy has the addresses of this process's own binary */
	dl_iterate_phdr(first_base, &base);
	vaddr = (uint64_t)((uintptr_t)setup - base);
	/* a static function: only the debug file's .symtab names it */
	s = elf_symtab__lookup(t, vaddr + 1);
	CHECK(s && !strcmp(s->name, "setup"));
	CHECK_STR(t->dbg_how, "debuglink");
	n = sym_dwarf__frames(t, vaddr + 1, fr, 4);
	CHECK(n >= 1 && fr[n - 1].file && strstr(fr[n - 1].file, "test_debuginfo.c"));
	elf_symtab__free(t);
}

UNIT_TEST(sources)
{
	char out[512], where[DEBUGINFO_WHERE_MAX];

	CHECK(setup());
	/* found where DWARF says */
	CHECK(debuginfo__find_source("", "/", "proc/self/exe", out, sizeof(out), where,
				     sizeof(where)) == 0);
	CHECK_STR(out, "//proc/self/exe");
	/* not found: every place is named, and debuginfod is said to be off */
	CHECK(debuginfo__find_source("abcd", "/nonexistent", "x.c", out, sizeof(out), where,
				     sizeof(where)) != 0);
	CHECK(strstr(where, "'/nonexistent/x.c' (DWARF)") != NULL);
	CHECK(strstr(where, "DEBUGINFOD_URLS not set") != NULL);
	/* --source-path: DIR + the path with fewer and fewer leading directories */
	CHECK(run("mkdir -p %s/src/b && echo 'int x;' > %s/src/b/x.c", dir, dir));
	snprintf(out, sizeof(out), "%s/src", dir);
	debuginfo__configure(out, 0);
	CHECK(debuginfo__find_source("", "/build/a", "b/x.c", out, sizeof(out), where,
				     sizeof(where)) == 0);
	CHECK(strstr(where, "(--source-path)") != NULL);
	debuginfo__configure(NULL, 0);
	run("rm -rf %s", dir);
}

UNIT_MAIN()
