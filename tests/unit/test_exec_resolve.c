// SPDX-License-Identifier: GPL-2.0
/*
 * test_exec_resolve.c - lp_exec_resolve(), the program a launched command
 * loads (command_libs.c lists that program's libraries): a binary itself,
 * a '#!' script's interpreter, `env NAME` and `env -S "NAME ARGS"` through
 * $PATH, and the lines it does not follow.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "unit.h"
#include "user/util/util.h"

static char dir[] = "/tmp/lp_exec.XXXXXX";

/* A script in dir named @name whose first line is @line; its path in @out. */
static void script(const char *name, const char *line, char *out, size_t cap)
{
	FILE *f;

	snprintf(out, cap, "%s/%s", dir, name);
	f = fopen(out, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fprintf(f, "%s\nexit 0\n", line);
	fclose(f);
	CHECK(chmod(out, 0755) == 0);
}

/* lp_exec_resolve() of a script starting with @line: its result, *@got. */
static int resolve_line(const char *line, char *got)
{
	char path[PATH_MAX];
	static int n;
	char name[32];

	snprintf(name, sizeof(name), "s%d", n++);
	script(name, line, path, sizeof(path));
	return lp_exec_resolve(path, got, PATH_MAX);
}

UNIT_TEST(test_binary_and_interpreters)
{
	char want[PATH_MAX], got[PATH_MAX], env_sh[PATH_MAX];

	CHECK(mkdtemp(dir) != NULL);
	CHECK(realpath("/bin/sh", want) != NULL);
	CHECK_EQ_INT(lp_exec_resolve("/bin/sh", got, sizeof(got)), 0);
	CHECK_STR(got, want);
	/* a path: the interpreter, its arguments dropped */
	CHECK_EQ_INT(resolve_line("#!/bin/sh -e", got), 0);
	CHECK_STR(got, want);
	CHECK_EQ_INT(resolve_line("#!  /bin/sh", got), 0);
	CHECK_STR(got, want);
	/* env NAME and env -S: NAME as $PATH finds it */
	CHECK_EQ_INT(lp_path_search("sh", env_sh, sizeof(env_sh)), 0);
	CHECK_EQ_INT(resolve_line("#!/usr/bin/env sh", got), 0);
	CHECK_STR(got, env_sh);
	CHECK_EQ_INT(resolve_line("#!/usr/bin/env -S sh -e -u", got), 0);
	CHECK_STR(got, env_sh);
	/* a file with no '#!' line is what runs */
	CHECK_EQ_INT(resolve_line("echo not a script", got), 0);
	CHECK(strstr(got, dir) == got);
}

UNIT_TEST(test_lines_not_followed)
{
	char got[PATH_MAX];

	/* a relative interpreter (the kernel takes it from the cwd), other env
	 * options, a bare env, an empty line, a missing interpreter */
	CHECK_EQ_INT(resolve_line("#!sh", got), -ENOENT);
	CHECK_EQ_INT(resolve_line("#!/usr/bin/env -i sh", got), -ENOENT);
	CHECK_EQ_INT(resolve_line("#!/usr/bin/env", got), -ENOENT);
	CHECK_EQ_INT(resolve_line("#!", got), -ENOENT);
	CHECK_EQ_INT(resolve_line("#!/nonexistent/lp-interp", got), -ENOENT);
	CHECK_EQ_INT(lp_exec_resolve("/nonexistent/lp-cmd", got, sizeof(got)), -ENOENT);
	{
		/* a FIFO is not read (an open() of it would wait for a writer):
		 * what runs is itself, and the exec will say what it thinks */
		char fifo[PATH_MAX];

		snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
		CHECK(mkfifo(fifo, 0755) == 0);
		CHECK_EQ_INT(lp_exec_resolve(fifo, got, sizeof(got)), 0);
		CHECK_STR(got, fifo);
	}
	CHECK_EQ_INT(lp_exec_resolve("/bin/sh", got, 16), -EINVAL);
	{
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CHECK(system(cmd) == 0);
	}
}

UNIT_MAIN()
