// SPDX-License-Identifier: GPL-2.0
/*
 * command_libs.c - the files a launched command will map, known before it
 * runs (command_libs.h).
 *
 * A launched command is probed before it execs, when its libraries are
 * not mapped yet. What they will be is asked of the command's own dynamic
 * linker in its list mode, what ldd does: it resolves them as the run will
 * (run paths, LD_LIBRARY_PATH, LD_PRELOAD, its cache), at every depth, maps
 * them and stops, running none of their code.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dwarf/elf_needed.h"
#include "user/session/command_libs.h"
#include "user/util/util.h"

extern char **environ;

#define LIST_TIMEOUT_MS 2000	  /* the dynamic linker lists a few hundred files in ms */
#define LIST_MAX	(1 << 16) /* bytes of its listing read */

/* Read @fd into @buf (@cap bytes, NUL-terminated) until EOF or @deadline. */
static size_t read_until(int fd, char *buf, size_t cap, uint64_t deadline)
{
	size_t n = 0;

	while (n + 1 < cap) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t now = lp_now_ns();
		ssize_t got;

		if (now >= deadline || poll(&p, 1, (int)((deadline - now) / 1000000 + 1)) <= 0)
			break;
		got = read(fd, buf + n, cap - 1 - n);
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	buf[n] = 0;
	return n;
}

/* `@interp --list @path` into @buf; 0 when it listed and exited 0. */
static int list_needed(const char *interp, const char *path, char *buf, size_t cap)
{
	char *argv[] = {(char *)interp, "--list", (char *)path, NULL};
	posix_spawn_file_actions_t fa;
	int out[2], st = 0, err;
	bool done = false;
	pid_t pid;

	if (pipe2(out, O_CLOEXEC))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	err = posix_spawn(&pid, interp, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(out[1]);
	if (err) {
		close(out[0]);
		return -err;
	}
	read_until(out[0], buf, cap, lp_now_ns() + LIST_TIMEOUT_MS * 1000000ULL);
	close(out[0]);
	/* it has closed its output or run out of time: it ends now either way */
	for (int i = 0; i < 200 && !done; i++) {
		done = waitpid(pid, &st, WNOHANG) == pid;
		if (!done)
			usleep(10000);
	}
	if (!done) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	return done && WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -ENOENT;
}

/*
 * The file of a listing's line: "\tNAME => /PATH (0xADDR)", or
 * "\t/PATH (0xADDR)" for the dynamic linker; NULL for the rest (the vDSO,
 * "not found"). Cuts @line at the path's end.
 */
static const char *listed_path(char *line)
{
	char *arrow = strstr(line, " => "), *p = arrow ? arrow + 4 : line, *end;

	p += strspn(p, " \t");
	if (*p != '/')
		return NULL;
	end = strstr(p, " (0x");
	if (!end)
		return NULL;
	*end = 0;
	return p;
}

/*
 * Whether @interp is named like a dynamic linker (ld-linux-x86-64.so.2,
 * ld-musl-x86_64.so.1, ld.so): the only kind asked to --list. The exec
 * would run whatever PT_INTERP names, but with other arguments.
 */
static bool is_dynamic_linker(const char *interp)
{
	const char *base = strrchr(interp, '/');

	base = base ? base + 1 : interp;
	return !strncmp(base, "ld-", 3) || !strncmp(base, "ld.so", 5);
}

int command_libs__each(const char *cmd, int (*fn)(const char *path, void *ctx), void *ctx)
{
	char path[PATH_MAX], interp[PATH_MAX], *buf, *line, *save = NULL;
	int r = 0;

	if (lp_exec_resolve(cmd, path, sizeof(path)) ||
	    elf_path_interp(path, interp, sizeof(interp)) || !is_dynamic_linker(interp))
		return -ENOENT;
	buf = malloc(LIST_MAX);
	if (!buf)
		return -ENOMEM;
	if (list_needed(interp, path, buf, LIST_MAX)) {
		free(buf);
		return -ENOENT;
	}
	for (line = strtok_r(buf, "\n", &save); line && !r; line = strtok_r(NULL, "\n", &save)) {
		const char *lib = listed_path(line);

		if (lib)
			r = fn(lib, ctx);
	}
	free(buf);
	return r;
}
