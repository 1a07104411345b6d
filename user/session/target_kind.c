// SPDX-License-Identifier: GPL-2.0
/*
 * target_kind.c - is a target Go, may it move its stack out from under a
 * return probe (C++, coroutines), is it CPython (see target_kind.h).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <gelf.h>

#include "dwarf/elf_needed.h"
#include "dwarf/probe_resolve.h"
#include "user/session/command_libs.h"
#include "user/session/interp_procs.h"
#include "user/session/target_kind.h"

struct kind {
	bool go, moves_stacks, python;
};

/* @name's path as execvp would find it, into @buf; false if none. */
static bool find_in_path(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH"), *p, *colon;

	if (strchr(name, '/'))
		return snprintf(buf, len, "%s", name) < (int)len && !access(buf, X_OK);
	for (p = path ? path : "/usr/bin:/bin";; p = colon + 1) {
		int n;

		colon = strchrnul(p, ':');
		n = (int)(colon - p);
		/* an empty element is the current directory */
		if (snprintf(buf, len, "%.*s/%s", n ? n : 1, n ? p : ".", name) < (int)len &&
		    !access(buf, X_OK))
			return true;
		if (!*colon)
			return false;
	}
}

/* A '#!' script: its interpreter line names python (env python3, too). */
static bool script_is_python(int fd)
{
	char line[256];
	ssize_t n = pread(fd, line, sizeof(line) - 1, 0);

	if (n < 2 || line[0] != '#' || line[1] != '!')
		return false;
	line[n] = 0;
	line[strcspn(line, "\n")] = 0;
	return strstr(line, "python") != NULL;
}

/*
 * What the executable at @path is, named @name (the link's target for
 * /proc/PID/exe, which is opened as is: it works for a deleted file and in
 * another mount namespace); false when it cannot be read.
 */
static bool classify_file(const char *path, const char *name, struct kind *k)
{
	/* a FIFO would block the open until a writer came: only files are read */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	Elf *elf;

	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return false;
	}
	if (interp_base_starts(name, "python") || script_is_python(fd))
		k->python = true;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && elf_is_go(elf))
		k->go = true;
	if (elf && elf_kind(elf) == ELF_K_ELF &&
	    (elf_uretprobe_unsafe(elf) || elf_needed_uretprobe_unsafe(elf, path)))
		k->moves_stacks = true;
	if (elf)
		elf_end(elf);
	close(fd);
	return true;
}

/* An embedded CPython (uwsgi, a C program linking libpython), and a C++
 * runtime loaded with a library (a plugin). */
static void classify_maps(int pid, struct kind *k)
{
	char path[64], line[4400];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/');

		if (!file)
			continue;
		file[strcspn(file, "\n")] = 0;
		k->python |= strstr(file, "/libpython") != NULL;
		k->moves_stacks |= lib_is_cxx_runtime(file);
	}
	fclose(f);
}

/* A file a launched command will map that may move its stack (a C++
 * runtime two libraries down, libruby): command_libs__each()'s callback. */
static int lib_moves_stacks(const char *path, void *ctx)
{
	(void)ctx;
	return lib_is_cxx_runtime(path) || elf_path_uretprobe_unsafe(path);
}

void target_kind__needs(const struct options *o, bool *ret_insn, bool *python)
{
	struct kind k = {false, false, false};
	char path[PATH_MAX];
	bool known = !o->all;

	for (int i = 0; i < o->n_traces; i++)
		if (!strncmp(o->traces[i], "py:", 3))
			k.python = true;
	if (o->split_spec && !strncmp(o->split_spec, "py:", 3))
		k.python = true;
	for (int i = 0; known && i < o->n_pids; i++) {
		char name[PATH_MAX];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%d/exe", o->pids[i]);
		n = readlink(path, name, sizeof(name) - 1);
		name[n > 0 ? n : 0] = 0;
		known = classify_file(path, name, &k);
		classify_maps(o->pids[i], &k);
	}
	if (known && o->command && o->command[0]) {
		known = find_in_path(o->command[0], path, sizeof(path)) &&
			classify_file(path, path, &k);
		if (!k.moves_stacks)
			k.moves_stacks =
				command_libs__each(o->command[0], lib_moves_stacks, NULL) > 0;
	}
	*ret_insn = !known || k.go || k.moves_stacks;
	*python = !known || k.python;
}
