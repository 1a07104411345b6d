// SPDX-License-Identifier: GPL-2.0
/*
 * traces_stacks.c - may a process move its stack out from under a return
 * probe, so that one would kill it?
 *
 * A return probe replaces the call's return address with the [uprobes]
 * trampoline until the call returns, and the kernel keeps a record of the
 * call per thread. Both were measured to kill targets here:
 *   - a C++ exception (or a Rust panic) thrown in a callee is unwound by
 *     libgcc's unwinder, which reads that address to find the caller's
 *     unwind table: the trampoline has none, and the process ended in
 *     std::terminate() at the first throw;
 *   - a coroutine switch (swapcontext, boost.context) to a stack above
 *     makes the kernel drop its record of the call as dead at the thread's
 *     next return probe; when the call returns, the trampoline finds no
 *     record and the kernel kills the process with SIGILL.
 * Writing the real address back before an unwinder runs needs
 * bpf_probe_write_user(), which a kernel in lockdown refuses (this one is,
 * as Debian's kernels are under Secure Boot). So in such a process a
 * function's returns are probed where Go's are: on its `ret` instructions,
 * which leave the stack alone. A call an exception passes through skips
 * them and is counted untimed when its frame is found stale, as after a
 * longjmp.
 *
 * C programs without coroutines keep return probes: glibc's pthread_exit()
 * unwinds with libgcc too, but stops cleanly where it finds no table (it
 * then runs the remaining cleanup handlers itself).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <gelf.h>

#include "dwarf/elf_needed.h"
#include "dwarf/probe_resolve.h"
#include "dwarf/proc_maps.h"
#include "user/session/bpf_session.h"
#include "user/session/command_libs.h"
#include "user/session/session_core.h"
#include "user/session/traces.h"
#include "user/session/traces_internal.h"
#include "user/util/log.h"

/* elf_path_uretprobe_unsafe(), read once per file (by device and inode). */
static bool module_unsafe(struct traces *t, const char *path)
{
	struct module_verdict *v;
	struct stat st;

	if (stat(path, &st))
		return false;
	for (size_t i = 0; i < t->n_verdicts; i++)
		if (t->verdicts[i].dev == st.st_dev && t->verdicts[i].ino == st.st_ino)
			return t->verdicts[i].unsafe;
	if (t->n_verdicts == t->cap_verdicts) {
		size_t cap = t->cap_verdicts ? 2 * t->cap_verdicts : 64;

		v = realloc(t->verdicts, cap * sizeof(*v));
		if (!v)
			return elf_path_uretprobe_unsafe(path);
		t->verdicts = v;
		t->cap_verdicts = cap;
	}
	v = &t->verdicts[t->n_verdicts++];
	*v = (struct module_verdict){st.st_dev, st.st_ino, elf_path_uretprobe_unsafe(path)};
	return v->unsafe;
}

/* A module @pid maps executable that may move its stack (a C++ runtime, a
 * coroutine library, a plugin that throws). */
static bool maps_unsafe_module(struct traces *t, int pid)
{
	struct pm_entry *maps = NULL;
	char path[4200];
	size_t n = 0;
	bool yes = false;

	if (proc_maps__read(pid, true, &maps, &n))
		return false;
	for (size_t i = 0; i < n && !yes; i++) {
		bool dup = maps[i].path[0] != '/';

		for (size_t j = 0; j < i && !dup; j++)
			dup = !strcmp(maps[j].path, maps[i].path);
		if (dup)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/root%s", pid, maps[i].path);
		yes = lib_is_cxx_runtime(maps[i].path) || module_unsafe(t, path);
	}
	proc_maps__free(maps, n);
	return yes;
}

static int listed_unsafe(const char *path, void *ctx)
{
	return lib_is_cxx_runtime(path) || module_unsafe(ctx, path);
}

/* @path, or a library it needs (libruby, a C++ runtime at any depth), may
 * move its stack: what launched command @cmd will map, before it has. The
 * libraries its dynamic linker lists, else those @path itself needs. */
static bool file_or_needed_unsafe(struct traces *t, const char *cmd, const char *path)
{
	int fd, listed;
	Elf *elf;
	bool yes;

	if (module_unsafe(t, path))
		return true;
	/* listed once: every trace of the command asks, before its exec */
	if (!t->command_verdict) {
		listed = command_libs__each(cmd, listed_unsafe, t);
		t->command_verdict = listed < 0 ? 3 : listed ? 2 : 1;
	}
	if (t->command_verdict != 3)
		return t->command_verdict == 2;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	yes = elf && elf_kind(elf) == ELF_K_ELF && elf_needed_uretprobe_unsafe(elf, path);
	if (elf)
		elf_end(elf);
	close(fd);
	return yes;
}

bool traces_uretprobe_unsafe(struct traces *t, int pid, const char *module)
{
	struct binary_loc exe;
	int r = -ENOENT;

	if (pid <= 0)
		return true; /* -a: any process may run the code, C++ ones too */
	if (module && module_unsafe(t, module))
		return true;
	/* before its exec, a launched command's maps are still liveprof's:
	 * its own file and the libraries it needs are what there is */
	if (pid == t->c->child && t->c->opts->command)
		r = traces_locate_command(pid, t->c->opts->command[0], &exe);
	if (!r)
		return file_or_needed_unsafe(t, t->c->opts->command[0], exe.attach_path);
	return maps_unsafe_module(t, pid);
}

/* @tr has return probes that rewrite return addresses: a function's, not
 * on its `ret` instructions (USDT and py: pairs are uprobes on the code). */
static bool hijacks_returns(const struct trace *tr)
{
	return tr->info.kind == TRACE_FUNC && !tr->usdt && !tr->py_qual[0] &&
	       !tr->info.returns_on_ret && !tr->info.detached && tr->n_links;
}

void traces__maps_changed(struct traces *t, int pid)
{
	bool any = false;

	for (int i = 0; i < t->n && !any; i++)
		any = hijacks_returns(t->v[i]);
	/* a process that loaded a C++ runtime or a coroutine library since
	 * (a plugin) may move its stack under them: the target first */
	if (!any || !traces_uretprobe_unsafe(t, pid, NULL))
		return;
	for (int i = 0; i < t->n; i++) {
		struct trace *tr = t->v[i];

		if (!hijacks_returns(tr))
			continue;
		traces_detach(t, tr);
		/* said once it is done: the probes are off when this is read */
		lp_warn("detached '%s': process %d loaded code that unwinds or switches stacks "
			"(a C++ runtime, coroutines), which its return probe would abort (trace it "
			"again: its returns are then probed on its ret instructions)",
			tr->spec_text, pid);
	}
}
