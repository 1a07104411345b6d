// SPDX-License-Identifier: GPL-2.0
/*
 * traces_locate.c - which file of a target a spec names, and where it is
 * mapped: the main executable, a library by name or path, or (for a spec
 * that names no binary and is not in the main executable) whichever
 * loaded module has it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "dwarf/elf_symtab.h"
#include "dwarf/probe_resolve.h"
#include "dwarf/proc_maps.h"
#include "user/session/command_libs.h"
#include "user/session/traces_internal.h"
#include "user/util/log.h"
#include "user/util/util.h"

/* ---- where to attach: the binary of the spec in a target's maps ---- */
/* Load bias: where the mapping of file offset 0 starts minus the first PT_LOAD's page. */
static uint64_t load_bias(const struct pm_entry *maps, size_t n, const char *path, const char *file)
{
	struct elf_symtab *st;
	uint64_t lowest = UINT64_MAX, start = UINT64_MAX;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(maps[i].path, path) && maps[i].start < start)
			start = maps[i].start - maps[i].offset;
	if (start == UINT64_MAX || elf_symtab__open_path(file, &st))
		return 0;
	for (size_t i = 0; i < st->nloads; i++)
		if (st->loads[i].vaddr < lowest)
			lowest = st->loads[i].vaddr - (st->loads[i].offset & ~0xfffULL) +
				 0 * st->loads[i].offset;
	elf_symtab__free(st);
	/* start maps file offset 0; the segment with offset 0 has vaddr lowest */
	return lowest == UINT64_MAX ? 0 : start - (lowest & ~0xfffULL);
}

/*
 * Find the file for @spec_binary ("" = the main executable) in @pid's
 * maps. Returns -ENOENT if it is not mapped (yet).
 */
/* A readable regular file: not a FIFO, whose open() would wait for a writer. */
static bool readable_file(const char *path)
{
	struct stat st;

	return !access(path, R_OK) && !stat(path, &st) && S_ISREG(st.st_mode);
}

int traces_locate_binary(int pid, const char *spec_binary, struct binary_loc *loc)
{
	struct pm_entry *maps = NULL;
	size_t n = 0;
	char exe[4096];
	ssize_t len;
	int err = -ENOENT;

	memset(loc, 0, sizeof(*loc));
	if (pid <= 0) {
		if (!spec_binary[0] || spec_binary[0] != '/')
			return -EINVAL;
		if (!readable_file(spec_binary))
			return -ENOENT;
		snprintf(loc->attach_path, sizeof(loc->attach_path), "%s", spec_binary);
		snprintf(loc->mapped_path, sizeof(loc->mapped_path), "%s", spec_binary);
		return 0;
	}
	if (proc_maps__read(pid, true, &maps, &n))
		return -ESRCH;
	if (!spec_binary[0]) {
		char link[64];

		snprintf(link, sizeof(link), "/proc/%d/exe", pid);
		len = readlink(link, exe, sizeof(exe) - 1);
		if (len <= 0) {
			err = -ESRCH;
			goto out;
		}
		exe[len] = 0;
		if (len > 10 && !strcmp(exe + len - 10, " (deleted)"))
			exe[len - 10] = 0;
		snprintf(loc->mapped_path, sizeof(loc->mapped_path), "%s", exe);
		/* /proc/PID/exe reaches the inode even if the file was
		 * replaced or deleted, and across mount namespaces. */
		snprintf(loc->attach_path, sizeof(loc->attach_path), "/proc/%d/exe", pid);
		loc->bias = load_bias(maps, n, loc->mapped_path, loc->attach_path);
		err = 0;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!maps[i].path[0] || maps[i].path[0] != '/')
			continue;
		if (probe_spec_binary_matches(spec_binary, maps[i].path)) {
			snprintf(loc->mapped_path, sizeof(loc->mapped_path), "%s", maps[i].path);
			snprintf(loc->attach_path, sizeof(loc->attach_path), "/proc/%d/root%s", pid,
				 maps[i].path);
			loc->bias = load_bias(maps, n, loc->mapped_path, loc->attach_path);
			err = 0;
			break;
		}
	}
	/* A path that is not mapped yet: allowed when it is a readable file
	 * (attach now, the uprobe fires once it is loaded). */
	if (err && spec_binary[0] == '/' && readable_file(spec_binary)) {
		snprintf(loc->attach_path, sizeof(loc->attach_path), "%s", spec_binary);
		snprintf(loc->mapped_path, sizeof(loc->mapped_path), "%s", spec_binary);
		err = 0;
	}
out:
	proc_maps__free(maps, n);
	return err;
}

bool traces_child_before_exec(int pid)
{
	struct stat self, child;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	return !stat("/proc/self/exe", &self) && !stat(path, &child) &&
	       self.st_dev == child.st_dev && self.st_ino == child.st_ino;
}

/*
 * A launched command is probed before it execs (main.c releases it only
 * once everything is attached), so its /proc/PID/exe is still liveprof.
 * Probe the file it is about to exec instead: @cmd searched in $PATH like
 * execvp does. Returns 0 and fills @loc, or -ENOENT.
 */
int traces_locate_command(int pid, const char *cmd, struct binary_loc *loc)
{
	int err;

	if (!traces_child_before_exec(pid))
		return -ENOENT; /* it has exec'd already */
	memset(loc, 0, sizeof(*loc));
	err = lp_path_search(cmd, loc->mapped_path, sizeof(loc->mapped_path));
	if (err)
		return err;
	snprintf(loc->attach_path, sizeof(loc->attach_path), "%s", loc->mapped_path);
	return 0;
}

/* Messages name the file as the user knows it, not as /proc/PID/exe. */
void traces_name_binary_in(char *err, size_t errlen, const char *proc_path, const char *path)
{
	char *at = strstr(err, proc_path), tail[1024];

	if (!at || !path[0] || !strcmp(proc_path, path))
		return;
	snprintf(tail, sizeof(tail), "%s", at + strlen(proc_path));
	snprintf(at, errlen - (size_t)(at - err), "%s%s", path, tail);
}

#define MAX_MODULES 512 /* distinct files mapped executable in one process */

struct module_hits {
	int n;			/* modules that resolved the spec */
	char names[512];	/* their base names, for messages */
	struct binary_loc loc;	/* the first one */
	struct probe_target pt; /* the first one; owned */
	char first_name[4096];	/* base name of the first one */
};

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static void hits_add(struct module_hits *h, const char *mapped)
{
	size_t len = strlen(h->names);

	snprintf(h->names + len, sizeof(h->names) - len, "%s'%s'", len ? ", " : "",
		 base_of(mapped));
	h->n++;
}

/* Resolve @spec in every file mapped executable by @pid except @skip. */
static int resolve_in_modules(int pid, const struct probe_spec *spec, const char *skip,
			      struct module_hits *h)
{
	struct pm_entry *maps = NULL;
	size_t n = 0, seen = 0;
	int r;

	if (proc_maps__read(pid, true, &maps, &n))
		return -ESRCH;
	for (size_t i = 0; i < n && seen < MAX_MODULES; i++) {
		struct binary_loc loc;
		struct probe_target pt;
		char scratch[512];
		bool dup = false;

		if (maps[i].path[0] != '/' || !strcmp(maps[i].path, skip))
			continue;
		for (size_t j = 0; j < i && !dup; j++)
			dup = !strcmp(maps[j].path, maps[i].path);
		if (dup || traces_locate_binary(pid, maps[i].path, &loc))
			continue;
		seen++;
		r = probe_resolve(loc.attach_path, spec, &pt, scratch, sizeof(scratch));
		if (r == -ENOMEM) {
			proc_maps__free(maps, n);
			return r;
		}
		if (r)
			continue;
		hits_add(h, loc.mapped_path);
		if (h->n == 1) {
			h->loc = loc;
			h->pt = pt;
			snprintf(h->first_name, sizeof(h->first_name), "%s",
				 base_of(loc.mapped_path));
		} else {
			probe_target_free(&pt);
		}
	}
	proc_maps__free(maps, n);
	return 0;
}

int traces_resolve_bare(struct trace *tr, int pid, int main_r, struct binary_loc *loc,
			struct probe_target *pt, char *err, size_t errlen)
{
	struct module_hits h = {0};
	int r;

	if (!main_r) {
		/* a line may also have code in a library: that is ambiguous */
		hits_add(&h, loc->mapped_path);
	}
	r = resolve_in_modules(pid, &tr->spec, loc->mapped_path, &h);
	if (r == -ENOMEM) {
		snprintf(err, errlen, "out of memory resolving '%s'", tr->spec_text);
		goto fail;
	}
	if (h.n == 0 && main_r == -ENOENT && !strncmp(err, "no ", 3)) {
		size_t len = strlen(err);

		snprintf(err + len, errlen - len, " (nor in any other loaded module)");
	}
	if (h.n == 0 || (h.n == 1 && !main_r))
		return main_r; /* nothing new: the main binary's answer stands */
	if (h.n > 1) {
		snprintf(err, errlen,
			 "'%s' is in several loaded modules: %s; name one, e.g. --trace %s:%s",
			 tr->spec_text, h.names, main_r ? h.first_name : base_of(loc->mapped_path),
			 tr->spec_text);
		r = -EINVAL;
		goto fail;
	}
	lp_warn("'%s' is not in '%s' but in '%s': tracing it there (--trace %s:%s names it)",
		tr->spec_text, loc->mapped_path, h.loc.mapped_path, h.first_name, tr->spec_text);
	if (!main_r)
		probe_target_free(pt);
	*loc = h.loc;
	*pt = h.pt;
	return 0;
fail:
	probe_target_free(&h.pt);
	if (!main_r)
		probe_target_free(pt);
	return r;
}

struct needed_match {
	const char *spec_binary;
	struct binary_loc *loc;
};

static int match_spec(const char *lib, void *ctx)
{
	struct needed_match *m = ctx;

	if (!probe_spec_binary_matches(m->spec_binary, lib))
		return 0;
	memset(m->loc, 0, sizeof(*m->loc));
	snprintf(m->loc->attach_path, sizeof(m->loc->attach_path), "%s", lib);
	snprintf(m->loc->mapped_path, sizeof(m->loc->mapped_path), "%s", lib);
	/* a uprobe on a file fires in the process once it maps it there;
	 * the load bias is known then, at each hit (traces_attach.c) */
	m->loc->bias_unknown = true;
	return 1;
}

int traces_locate_needed(const char *cmd, const char *spec_binary, struct binary_loc *loc)
{
	struct needed_match m = {spec_binary, loc};
	int r = command_libs__each(cmd, match_spec, &m);

	lp_debug("'%s' among the files '%s' will map: %s", spec_binary, cmd,
		 r == 1 ? loc->mapped_path : "not found");
	return r == 1 ? 0 : r == -ENOMEM ? r : -ENOENT;
}
