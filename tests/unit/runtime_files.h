/* SPDX-License-Identifier: GPL-2.0 */
/*
 * runtime_files.h - for the runtime finders' tests (CPython, CRuby):
 * whether an installed file is there, a scratch directory, and truncated
 * or garbled copies of a library to feed the finders.
 */
#ifndef LP_TESTS_UNIT_RUNTIME_FILES_H
#define LP_TESTS_UNIT_RUNTIME_FILES_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[64];

/* Is @path installed? If not, say the test that needs it is skipped. */
static bool present(const char *path)
{
	if (access(path, R_OK) == 0)
		return true;
	fprintf(stderr, "  skip: %s is not installed\n", path);
	return false;
}

/* tmpdir, made once: /tmp/@prefix.XXXXXX */
static bool make_tmpdir_named(const char *prefix)
{
	if (tmpdir[0])
		return true;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/%s.XXXXXX", prefix);
	if (!mkdtemp(tmpdir)) {
		tmpdir[0] = '\0';
		return false;
	}
	return true;
}

/* Remove tmpdir and what the tests left in it (0, or system()'s status). */
static int remove_tmpdir(void)
{
	char cmd[128];

	if (!tmpdir[0])
		return 0;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd);
}

/*
 * Copy the first @len bytes of @src to @dst; with @garble set, overwrite
 * 64-byte runs at every 97th byte of the copy's [@lo, @hi) with chance
 * 1 in @one_in (xorshift from @garble).
 */
static bool copy_prefix(const char *src, const char *dst, size_t len, uint64_t garble, size_t lo,
			size_t hi, unsigned int one_in)
{
	int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	static char buf[1 << 16];
	size_t done = 0;
	bool ok = in >= 0 && out >= 0;

	while (ok && done < len) {
		ssize_t n = read(in, buf, sizeof(buf) < len - done ? sizeof(buf) : len - done);

		if (n <= 0)
			break;
		for (ssize_t i = 0; garble && i < n; i += 97) {
			garble ^= garble << 13, garble ^= garble >> 7, garble ^= garble << 17;
			if (done + i >= lo && done + i < hi && garble % one_in == 0)
				memset(buf + i, (int)(garble >> 32), n - i < 64 ? n - i : 64);
		}
		ok = write(out, buf, n) == n;
		done += n;
	}
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ok;
}

#endif
