// SPDX-License-Identifier: GPL-2.0
/*
 * test_elf_interp.c - elf_path_interp(), the dynamic linker a program
 * names (traces_needed.c asks it which libraries a launched command will
 * map): what readelf says for a system program, nothing for a file with no
 * PT_INTERP, and a refusal where the segment's bytes are not a whole
 * absolute path.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "unit.h"
#include "dwarf/elf_needed.h"

/* readelf's interpreter of @path and the file offset of PT_INTERP's bytes. */
static bool readelf_interp(const char *path, char *out, size_t cap, long *offset)
{
	char line[PATH_MAX + 64];
	bool found = false, next = false;
	FILE *p = unit_readelf("-W -l", path);

	if (!p)
		return false;
	while (fgets(line, sizeof(line), p)) {
		char *at = strstr(line, "[Requesting program interpreter: ");
		unsigned long off;

		if (next && sscanf(line, " INTERP 0x%lx", &off) == 1)
			*offset = (long)off;
		next = next || strstr(line, "Program Headers:");
		if (at && sscanf(at, "[Requesting program interpreter: %[^]]", out) == 1)
			found = strlen(out) < cap;
	}
	pclose(p);
	return found;
}

/* A copy of @src at @dst with @byte written at @off; true if done. */
static bool patched_copy(const char *src, const char *dst, long off, char byte)
{
	char cmd[2 * PATH_MAX + 16];
	int fd;
	bool ok;

	snprintf(cmd, sizeof(cmd), "cp %s %s", src, dst);
	if (system(cmd))
		return false;
	fd = open(dst, O_WRONLY);
	if (fd < 0)
		return false;
	ok = pwrite(fd, &byte, 1, off) == 1;
	close(fd);
	return ok;
}

UNIT_TEST(test_interp_as_readelf_reads_it)
{
	char want[PATH_MAX] = "", got[PATH_MAX] = "";
	long off = -1;

	CHECK(readelf_interp("/bin/ls", want, sizeof(want), &off));
	CHECK_EQ_INT(elf_path_interp("/bin/ls", got, sizeof(got)), 0);
	CHECK_STR(got, want);
	/* too little room is no path */
	CHECK_EQ_INT(elf_path_interp("/bin/ls", got, 4), -ENOENT);
}

UNIT_TEST(test_no_interp)
{
	char dir[] = "/tmp/lp_interp.XXXXXX", path[PATH_MAX], cmd[2 * PATH_MAX], got[PATH_MAX];
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	/* an object file: no program headers at all */
	snprintf(path, sizeof(path), "%s/o.c", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("int lp_unit_interp(void) { return 1; }\n", f);
		fclose(f);
	}
	snprintf(cmd, sizeof(cmd), "cc -c -o %s/o.o %s", dir, path);
	CHECK(system(cmd) == 0);
	snprintf(path, sizeof(path), "%s/o.o", dir);
	CHECK_EQ_INT(elf_path_interp(path, got, sizeof(got)), -ENOENT);
	/* not ELF, and no file */
	snprintf(path, sizeof(path), "%s/o.c", dir);
	CHECK_EQ_INT(elf_path_interp(path, got, sizeof(got)), -ENOENT);
	CHECK_EQ_INT(elf_path_interp("/nonexistent/lp", got, sizeof(got)), -ENOENT);
	/* a FIFO is refused, not waited on */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	CHECK(mkfifo(path, 0755) == 0);
	CHECK_EQ_INT(elf_path_interp(path, got, sizeof(got)), -ENOENT);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

UNIT_TEST(test_broken_interp_refused)
{
	char dir[] = "/tmp/lp_interp.XXXXXX", path[PATH_MAX], cmd[PATH_MAX + 16];
	char want[PATH_MAX] = "", got[PATH_MAX];
	long off = -1;

	CHECK(mkdtemp(dir) != NULL);
	CHECK(readelf_interp("/bin/ls", want, sizeof(want), &off) && off > 0);
	snprintf(path, sizeof(path), "%s/ls", dir);
	/* its NUL overwritten: the path runs on past the segment */
	CHECK(patched_copy("/bin/ls", path, off + (long)strlen(want), 'X'));
	CHECK_EQ_INT(elf_path_interp(path, got, sizeof(got)), -ENOENT);
	/* a relative path, which is no path the kernel takes */
	CHECK(patched_copy("/bin/ls", path, off, 'l'));
	CHECK_EQ_INT(elf_path_interp(path, got, sizeof(got)), -ENOENT);
	/* a NUL inside: shorter than its segment says */
	CHECK(patched_copy("/bin/ls", path, off + 3, '\0'));
	CHECK_EQ_INT(elf_path_interp(path, got, sizeof(got)), -ENOENT);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

UNIT_MAIN()
