// SPDX-License-Identifier: GPL-2.0
/*
 * traces_unwinds.c - may a process unwind its stack through a traced
 * function, so that a return probe there would abort it?
 *
 * A return probe replaces the call's return address with the [uprobes]
 * trampoline until the call returns. A C++ exception (or a Rust panic)
 * thrown in a callee is unwound by libgcc's unwinder, which reads that
 * address to find the caller's unwind table: the trampoline has none, and
 * the process ends in std::terminate() (measured here: `--trace` on a
 * function that an exception passed through aborted the target at the
 * first throw). Writing the real address back before the unwinder runs
 * needs bpf_probe_write_user(), which a kernel in lockdown refuses (this
 * one is, as Debian's kernels are under Secure Boot). So in such a
 * process a function's returns are probed where Go's are: on its `ret`
 * instructions, which leave the stack alone. An exception that passes
 * through then skips them, and the call is counted untimed when its frame
 * is found stale, as after a longjmp.
 *
 * C programs are not such processes: glibc's pthread_exit() unwinds with
 * libgcc too, but stops cleanly where it finds no table (it then runs the
 * remaining cleanup handlers itself).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <gelf.h>

#include "dwarf/probe_resolve.h"
#include "dwarf/proc_maps.h"
#include "user/session/bpf_session.h"
#include "user/session/session_core.h"
#include "user/session/traces.h"
#include "user/session/traces_internal.h"
#include "user/util/log.h"

/* elf_unwinds() of the file at @path; false if it cannot be read. */
static bool file_unwinds(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool yes = false;
	Elf *elf;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	yes = elf && elf_unwinds(elf);
	if (elf)
		elf_end(elf);
	close(fd);
	return yes;
}

/* A C++ runtime among @pid's mappings (a plugin may have brought it). */
static bool maps_cxx_runtime(int pid)
{
	struct pm_entry *maps = NULL;
	size_t n = 0;
	bool yes = false;

	if (proc_maps__read(pid, true, &maps, &n))
		return false;
	for (size_t i = 0; i < n && !yes; i++)
		yes = maps[i].path[0] == '/' && lib_is_cxx_runtime(maps[i].path);
	proc_maps__free(maps, n);
	return yes;
}

bool traces_process_unwinds(struct traces *t, int pid, const char *module)
{
	struct binary_loc exe;
	int r = -ENOENT;

	if (pid <= 0)
		return true; /* -a: any process may run the code, C++ ones too */
	if (module && file_unwinds(module))
		return true;
	if (maps_cxx_runtime(pid))
		return true;
	/* before its exec, a launched command's maps are still liveprof's */
	if (pid == t->c->child && t->c->opts->command)
		r = traces_locate_command(pid, t->c->opts->command[0], &exe);
	if (r)
		r = traces_locate_binary(pid, "", &exe);
	return !r && file_unwinds(exe.attach_path);
}

/* @tr has return probes that rewrite return addresses (not `ret` ones). */
static bool hijacks_returns(const struct trace *tr)
{
	return tr->info.kind == TRACE_FUNC && !tr->usdt && !tr->ret_insn && !tr->info.detached &&
	       tr->n_links;
}

void traces__maps_changed(struct traces *t, int pid)
{
	bool any = false;

	for (int i = 0; i < t->n && !any; i++)
		any = hijacks_returns(t->v[i]);
	/* a process that loaded a C++ runtime since (a plugin) may throw
	 * through them: the target first */
	if (!any || !traces_process_unwinds(t, pid, NULL))
		return;
	for (int i = 0; i < t->n; i++) {
		struct trace *tr = t->v[i];

		if (!hijacks_returns(tr))
			continue;
		for (int k = 0; k < tr->n_links; k++)
			bpf_session__detach(t->c->bpf, tr->links[k]);
		tr->n_links = 0;
		tr->info.detached = true;
		/* said once it is done: the probes are off when this is read */
		lp_warn("detached '%s': process %d loaded a C++ runtime, and an exception thrown "
			"through its return probe would abort it (trace it again: its returns are "
			"then probed on its ret instructions)",
			tr->spec_text, pid);
	}
}
