// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_session_uprobes.c - the session's uprobes: which kind of link the
 * function and line programs are loaded for, attaching them (classic
 * perf-event uprobes or uprobe_multi links) in numbered slots, the sites
 * they put breakpoints at, and detaching them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>

#include "user/session/bpf_session.h"
#include "user/session/bpf_session_internal.h"
#include "user/session/uprobe_multi.h"
#include "liveprof.skel.h"

/*
 * Load the function and line programs for uprobe_multi links where the
 * kernel has them (uprobe_multi.h: cheaper per call). The programs of USDT
 * pairs and of py: stay classic uprobes.
 */
void bpf_session_choose_uprobe_kind(struct bpf_session *s, const struct bpf_session_opts *o)
{
	struct bpf_program *progs[] = {s->skel->progs.lp_func_entry, s->skel->progs.lp_func_return,
				       s->skel->progs.lp_func_ret_insn, s->skel->progs.lp_line_hit};
	/* LIVEPROF_UPROBES=classic: the old kind, for side-by-side benches */
	const char *kind = getenv("LIVEPROF_UPROBES");

	s->multi = o->tracing && !(kind && !strcmp(kind, "classic")) && uprobe_multi_supported();
	if (!s->multi)
		return;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		bpf_program__set_expected_attach_type(progs[i], LP_ATTACH_UPROBE_MULTI);
}

/* A slot holds a link of either kind. */
static bool slot_busy(const struct bpf_session *s, int slot)
{
	return s->uprobe_links[slot] || s->multi_fds[slot] >= 0;
}

/* The program behind @which; NULL for a value out of the enum. */
static struct bpf_program *prog_of(const struct bpf_session *s, enum bpf_probe_prog which)
{
	switch (which) {
	case PROBE_PROG_ENTRY:
		return s->skel->progs.lp_func_entry;
	case PROBE_PROG_RETURN:
		return s->skel->progs.lp_func_return;
	case PROBE_PROG_RET_INSN:
		return s->skel->progs.lp_func_ret_insn;
	case PROBE_PROG_LINE:
		return s->skel->progs.lp_line_hit;
	case PROBE_PROG_USDT_ENTRY:
		return s->skel->progs.lp_usdt_entry;
	case PROBE_PROG_USDT_RETURN:
		return s->skel->progs.lp_usdt_return;
	case PROBE_PROG_PY_START:
		return s->skel->progs.lp_py_start;
	case PROBE_PROG_PY_RETURN:
		return s->skel->progs.lp_py_return;
	case PROBE_PROG_PY_YIELD:
		return s->skel->progs.lp_py_yield;
	}
	return NULL;
}

int bpf_session__attach_uprobe(struct bpf_session *s, enum bpf_probe_prog which, int pid,
			       const char *path, uint64_t offset, uint32_t cookie)
{
	return bpf_session__attach_uprobe_sema(s, which, pid, path, offset, 0, cookie);
}

int bpf_session__attach_uprobe_sema(struct bpf_session *s, enum bpf_probe_prog which, int pid,
				    const char *path, uint64_t offset, uint64_t sema_offset,
				    uint32_t cookie)
{
	/* The kernel raises the semaphore (a u16 in the file's writable
	 * data) in every process that maps it while the probe lives, and
	 * lowers it when the probe goes: nothing of ours writes there. */
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie, .ref_ctr_offset = sema_offset);
	struct bpf_program *prog;
	int slot;

	prog = prog_of(s, which);
	if (!prog)
		return -EINVAL;
	if (bpf_program__fd(prog) < 0)
		return -ENOEXEC; /* not loaded: see bpf_session__has_prog */
	opts.retprobe = which == PROBE_PROG_RETURN;
	for (slot = 0; slot < MAX_UPROBE_LINKS && slot_busy(s, slot); slot++)
		;
	if (slot == MAX_UPROBE_LINKS)
		return -ENOSPC;
	if (s->multi && which <= PROBE_PROG_LINE) {
		int fd = uprobe_multi_attach(bpf_program__fd(prog), pid, path, offset, sema_offset,
					     cookie, opts.retprobe);

		if (fd < 0)
			return fd;
		s->multi_fds[slot] = fd;
	} else {
		s->uprobe_links[slot] =
			bpf_program__attach_uprobe_opts(prog, pid, path, offset, &opts);
		if (!s->uprobe_links[slot])
			return errno ? -errno : -EINVAL;
	}
	s->sites[slot].ino = 0;
	if (which != PROBE_PROG_RETURN) {
		struct stat st;

		if (!stat(path, &st)) {
			s->sites[slot].dev = st.st_dev;
			s->sites[slot].ino = st.st_ino;
			s->sites[slot].offset = offset;
			s->sites[slot].cookie = cookie;
			s->sites[slot].entry = which == PROBE_PROG_ENTRY;
			if (slot >= s->sites_hw)
				s->sites_hw = slot + 1;
		}
	}
	return slot;
}

int bpf_session__entry_sites(struct bpf_session *s, uint32_t cookie, struct bpf_probe_site *out,
			     int max)
{
	int n = 0;

	for (int i = 0; i < s->sites_hw && n < max; i++) {
		if (!slot_busy(s, i) || !s->sites[i].ino || !s->sites[i].entry ||
		    s->sites[i].cookie != cookie)
			continue;
		out[n].dev = s->sites[i].dev;
		out[n].ino = s->sites[i].ino;
		out[n].offset = s->sites[i].offset;
		n++;
	}
	return n;
}

bool bpf_session__probe_site(struct bpf_session *s, uint64_t dev, uint64_t ino, uint64_t offset)
{
	for (int i = 0; i < s->sites_hw; i++)
		if (slot_busy(s, i) && s->sites[i].ino == ino && s->sites[i].offset == offset &&
		    s->sites[i].dev == dev)
			return true;
	return false;
}

void bpf_session__detach(struct bpf_session *s, int handle)
{
	if (handle < 0 || handle >= MAX_UPROBE_LINKS)
		return;
	bpf_link__destroy(s->uprobe_links[handle]);
	s->uprobe_links[handle] = NULL;
	if (s->multi_fds[handle] >= 0)
		close(s->multi_fds[handle]);
	s->multi_fds[handle] = -1;
}

bool bpf_session__has_prog(const struct bpf_session *s, enum bpf_probe_prog which)
{
	struct bpf_program *prog = prog_of(s, which);

	return prog && bpf_program__fd(prog) >= 0;
}
