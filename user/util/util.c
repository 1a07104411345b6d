// SPDX-License-Identifier: GPL-2.0
/*
 * util.c - duration formatting and the PATH search (see util.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include "user/util/util.h"

char *lp_fmt_ns(double ns, char *buf, size_t len)
{
	/* One decimal from 10 units up; below 10 us, whole nanoseconds. */
	if (ns >= 1e10)
		snprintf(buf, len, "%.1fs", ns / 1e9);
	else if (ns >= 1e7)
		snprintf(buf, len, "%.1fms", ns / 1e6);
	else if (ns >= 1e4)
		snprintf(buf, len, "%.1fus", ns / 1e3);
	else
		snprintf(buf, len, "%.0fns", ns);
	return buf;
}

int lp_path_search(const char *cmd, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	char cand[PATH_MAX];

	if (len < PATH_MAX)
		return -EINVAL; /* realpath() writes up to PATH_MAX bytes */
	if (strchr(cmd, '/'))
		return realpath(cmd, buf) ? 0 : -ENOENT;
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		if (snprintf(cand, sizeof(cand), "%.*s/%s", (int)n, n ? path : ".", cmd) <
			    (int)sizeof(cand) &&
		    !access(cand, X_OK) && realpath(cand, buf))
			return 0;
		path += n + (path[n] == ':');
	}
	return -ENOENT;
}

/* The next blank-separated word of *@p, cut off and stepped over ("" at the end). */
static char *next_word(char **p)
{
	char *w = *p + strspn(*p, " \t"), *end = w + strcspn(w, " \t");

	*p = *end ? end + 1 : end;
	*end = 0;
	return w;
}

int lp_exec_resolve(const char *cmd, char *buf, size_t len)
{
	char line[256], *p = line + 2, *interp, *arg;
	struct stat st;
	ssize_t n;
	int fd, err = lp_path_search(cmd, buf, len);

	if (err)
		return err;
	/* not blocking on a FIFO, nor reading a device: only a file is a script */
	fd = open(buf, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0; /* executable but unreadable: not a script we can follow */
	n = fstat(fd, &st) || !S_ISREG(st.st_mode) ? -1 : read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n < 3 || line[0] != '#' || line[1] != '!')
		return 0;
	line[n] = 0;
	line[strcspn(line, "\n")] = 0;
	interp = next_word(&p);
	arg = next_word(&p);
	if (interp[0] != '/')
		return -ENOENT;
	if (strcmp(strrchr(interp, '/') + 1, "env"))
		return lp_path_search(interp, buf, len);
	/* env NAME, or env -S "NAME ARGS": NAME from $PATH; other options not */
	if (!strcmp(arg, "-S"))
		arg = next_word(&p);
	return *arg && *arg != '-' ? lp_path_search(arg, buf, len) : -ENOENT;
}

void lp_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

const char *lp_proc_stat(int pid, char *buf, size_t len, const char **comm)
{
	char path[64], *open_paren, *close_paren;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	open_paren = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren)
		return NULL;
	*close_paren = 0;
	if (comm)
		*comm = open_paren + 1;
	return close_paren + 1;
}

void *lp_zalloc_written(size_t size)
{
	void *p = malloc(size);

	/* not memset(): the compiler turns malloc() + memset(0) into calloc() */
	if (p)
		explicit_bzero(p, size);
	return p;
}
