// SPDX-License-Identifier: GPL-2.0
/*
 * daemon_targets.c - the processes a daemon follows: adding one (its BPF
 * filter, unwind tables, maps, name and interpreter), its name as the
 * root frame, and whether any is still alive.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "dwarf/unwind.h"
#include "user/session/alloc.h"
#include "user/session/bpf_session.h"
#include "user/session/daemon.h"
#include "user/session/python_procs.h"
#include "user/session/ruby_procs.h"
#include "user/session/traces.h"
#include "user/session/unwind_tables.h"
#include "user/util/log.h"
#include "user/util/util.h"

const char *daemon__process_name(void *ctx, uint32_t pid)
{
	struct daemon *d = ctx;

	for (int i = 0; i < d->core.n_procs; i++)
		if (d->core.procs[i].pid == (int)pid && d->core.procs[i].name[0])
			return d->core.procs[i].name;
	return NULL;
}

static char *read_maps(int pid, size_t *len);

static void read_comm(int pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

int daemon__add_target(struct daemon *d, int pid)
{
	struct target_proc *p;
	int err;

	if (d->core.n_procs == MAX_PIDS)
		return -E2BIG;
	p = &d->core.procs[d->core.n_procs];
	p->pid = pid;
	p->alive = true;
	/* Its exit is then one poll() per check, where /proc/PID/stat (open,
	 * read, close) was 40% of an idle session's CPU time. */
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pid == d->core.child && d->child_exe) {
		/* Not exec'd yet (it waits for us): name it after its command. */
		const char *b = strrchr(d->child_exe, '/');

		snprintf(p->name, sizeof(p->name), "%.15s", b ? b + 1 : d->child_exe);
	} else {
		read_comm(pid, p->name, sizeof(p->name));
	}
	/* Tables first: samples walked before them would be cut short (and
	 * their rescue by libdw fails in PLT stubs: test_kunwind.py's PLT
	 * test saw cut stacks when they were built after the attach). A
	 * launched command has not exec'd yet: its first samples find no
	 * tables and trigger the scan of what it became. */
	/* The text the readers below see: the tick's refresh 2 s from now is
	 * then skipped if nothing was mapped in between (a launched command
	 * has not exec'd yet: its maps will change). */
	p->maps = pid != d->core.child ? read_maps(pid, &p->maps_len) : NULL;
	if (d->utab && pid != d->core.child)
		unwind_tables__scan(d->utab, pid, lp_now_ns());
	err = bpf_session__add_pid(d->core.bpf, pid);
	if (err) {
		if (p->pidfd >= 0)
			close(p->pidfd);
		free(p->maps);
		p->maps = NULL;
		return err;
	}
	/* Failing to read the maps now is not fatal: the process may be
	 * exec'ing; the tick retries. */
	err = symbolizer__add_pid(d->sym, pid);
	err |= unwinder__add_pid(d->unwind, pid);
	if (err || (d->utab && !unwind_tables__has_pid(d->utab, pid))) {
		free(p->maps); /* not all of them saw it: the tick refreshes */
		p->maps = NULL;
	}
	/* before its first sample, so that every sample has its interpreter frames */
	if (d->py && pid != d->core.child) {
		char comm[LP_COMM_LEN] = "";

		read_comm(pid, comm, sizeof(comm));
		python_procs__on_sample(d->py, d->core.bpf, d->sym, (uint32_t)pid, comm);
		ruby_procs__on_sample(d->rb, d->core.bpf, d->sym, (uint32_t)pid, comm);
	}
	d->core.n_procs++;
	d->maps_reads = daemon__maps_reads(d);
	if (d->alloc) {
		char msg[256];

		err = alloc__attach(d->alloc, pid, msg, sizeof(msg));
		if (err < 0)
			lp_warn("%s", msg);
	}
	return 0;
}

/* An exited process that its parent has not reaped yet still answers kill(0). */
static bool is_zombie(int pid)
{
	char buf[256];
	const char *rest = lp_proc_stat(pid, buf, sizeof(buf), NULL);

	return rest && rest[0] == ' ' && (rest[1] == 'Z' || rest[1] == 'X');
}

/*
 * Whether @p has exited. A pidfd is readable once the whole process has
 * exited, zombie or reaped, which is what is asked; without one (a kernel
 * before 5.3), kill(0) and the state in /proc/PID/stat tell the same.
 */
static bool has_exited(struct target_proc *p)
{
	struct pollfd pfd = {.fd = p->pidfd, .events = POLLIN};
	int seen = p->exit_seen;

	/* the daemon's last wait polled it (once: later calls poll again) */
	p->exit_seen = 0;
	if (p->pidfd >= 0 && seen)
		return seen == 2;
	if (p->pidfd >= 0)
		return poll(&pfd, 1, 0) == 1;
	return (kill(p->pid, 0) && errno == ESRCH) || is_zombie(p->pid);
}

bool daemon__targets_alive(struct daemon *d)
{
	bool any = false;

	if (d->core.opts->all)
		return true;
	if (d->core.child) {
		int st;
		pid_t r = waitpid(d->core.child, &st, WNOHANG);

		if (r == d->core.child) {
			d->child_exited = true;
			d->child_status = st;
		}
	}
	for (int i = 0; i < d->core.n_procs; i++) {
		struct target_proc *p = &d->core.procs[i];

		if (!p->alive)
			continue;
		if (p->pid == d->core.child && d->child_exited)
			p->alive = false;
		else if (has_exited(p))
			p->alive = false;
		any |= p->alive;
	}
	return any;
}

/* All of /proc/@pid/maps into a malloc'd buffer (*@len bytes); NULL if it cannot be read. */
static char *read_maps(int pid, size_t *len)
{
	size_t cap = 16384, n = 0;
	char path[64], *buf = malloc(cap);
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!buf || fd < 0)
		goto fail;
	while ((r = read(fd, buf + n, cap - n)) > 0) {
		n += (size_t)r;
		if (n == cap) {
			char *b = realloc(buf, cap * 2);

			if (!b)
				goto fail;
			buf = b;
			cap *= 2;
		}
	}
	if (r < 0)
		goto fail;
	close(fd);
	*len = n;
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

uint64_t daemon__maps_reads(struct daemon *d)
{
	struct unwind_tables_stats st = {0};

	if (d->utab)
		unwind_tables__stats(d->utab, &st);
	return symbolizer__maps_generation(d->sym) + unwinder__reports(d->unwind) + st.scans;
}

void daemon__refresh_maps(struct daemon *d, struct target_proc *p, uint64_t now, bool force)
{
	size_t len = 0;
	char *text = read_maps(p->pid, &len);
	int err;

	/*
	 * Each reader below reads the maps again, and the symbolizer and the
	 * tables read the [vdso] image out of the process and parse it, every
	 * time: most of what an idle session cost per second. The same text
	 * gives each of them the state it has, so one read decides; a refresh
	 * that failed in any of them is retried, as it always was, and so is
	 * one after any of them read the maps on its own (a pc it did not
	 * know): what it saw then may have gone since.
	 */
	if (!force && text && p->maps && len == p->maps_len && !memcmp(text, p->maps, len)) {
		free(text);
		return;
	}
	err = symbolizer__add_pid(d->sym, p->pid);
	err |= unwinder__add_pid(d->unwind, p->pid);
	/* dlclose: a module's rows go with its last mapping */
	if (d->utab)
		err |= unwind_tables__scan(d->utab, p->pid, now);
	if (d->traces)
		traces__maps_changed(d->traces, p->pid);
	free(p->maps);
	p->maps = err ? NULL : text;
	p->maps_len = err ? 0 : len;
	if (err)
		free(text);
}
