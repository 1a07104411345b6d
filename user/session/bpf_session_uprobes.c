// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_session_uprobes.c - the session's uprobes: which kind of link the
 * function and line programs are loaded for, attaching them (classic
 * perf-event uprobes or uprobe_multi links) in numbered slots, the sites
 * they put breakpoints at, and detaching them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>

#include "user/session/bpf_session.h"
#include "user/session/bpf_session_internal.h"
#include "user/session/uprobe_multi.h"
#include "user/util/log.h"
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

/* A slot holds a link of either kind, or one waiting for its program. */
static bool slot_busy(const struct bpf_session *s, int slot)
{
	return s->uprobe_links[slot] || s->multi_fds[slot] >= 0 ||
	       (s->waiting && (s->waiting[slot].path || s->waiting[slot].failed));
}

/* The program behind @which; NULL for a value out of the enum. */
static struct bpf_program *prog_of(const struct bpf_session *s, enum bpf_probe_prog which)
{
	struct liveprof_bpf *k = bpf_session_prog_skel(s);

	switch (which) {
	case PROBE_PROG_ENTRY:
		return k->progs.lp_func_entry;
	case PROBE_PROG_RETURN:
		return k->progs.lp_func_return;
	case PROBE_PROG_RET_INSN:
		return k->progs.lp_func_ret_insn;
	case PROBE_PROG_LINE:
		return k->progs.lp_line_hit;
	case PROBE_PROG_USDT_ENTRY:
		return k->progs.lp_usdt_entry;
	case PROBE_PROG_USDT_RETURN:
		return k->progs.lp_usdt_return;
	case PROBE_PROG_PY_START:
		return k->progs.lp_py_start;
	case PROBE_PROG_PY_RETURN:
		return k->progs.lp_py_return;
	case PROBE_PROG_PY_YIELD:
		return k->progs.lp_py_yield;
	}
	return NULL;
}

int bpf_session__attach_uprobe(struct bpf_session *s, enum bpf_probe_prog which, int pid,
			       const char *path, uint64_t offset, uint32_t cookie)
{
	return bpf_session__attach_uprobe_sema(s, which, pid, path, offset, 0, cookie);
}

/*
 * Make every thread's memo of probe ids by address (tracer.bpf.h,
 * entry_probe_id) start anew: before a uprobe is attached, a new probe
 * may share an address with another, or take a detached one's place.
 */
static void forget_probe_ids(struct bpf_session *s)
{
	__atomic_add_fetch(&s->skel->bss->probe_gen, 1, __ATOMIC_SEQ_CST);
}

/* Attach @prog as slot @slot now; 0 or a negative errno. */
static int attach_slot(struct bpf_session *s, int slot, enum bpf_probe_prog which, int pid,
		       const char *path, uint64_t offset, uint64_t sema_offset, uint32_t cookie)
{
	/* The kernel raises the semaphore (a u16 in the file's writable
	 * data) in every process that maps it while the probe lives, and
	 * lowers it when the probe goes: nothing of ours writes there. */
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie, .ref_ctr_offset = sema_offset);
	struct bpf_program *prog = prog_of(s, which);

	opts.retprobe = which == PROBE_PROG_RETURN;
	forget_probe_ids(s);
	if (s->multi && which <= PROBE_PROG_LINE) {
		int fd = uprobe_multi_attach(bpf_program__fd(prog), pid, path, offset, sema_offset,
					     cookie, opts.retprobe);

		if (fd < 0)
			return fd;
		s->multi_fds[slot] = fd;
		return 0;
	}
	s->uprobe_links[slot] = bpf_program__attach_uprobe_opts(prog, pid, path, offset, &opts);
	return s->uprobe_links[slot] ? 0 : errno ? -errno : -EINVAL;
}

/* Keep the attach of slot @slot until the programs are loaded. */
static int wait_slot(struct bpf_session *s, int slot, enum bpf_probe_prog which, int pid,
		     const char *path, uint64_t offset, uint64_t sema_offset, uint32_t cookie)
{
	struct bpf_waiting_attach *w;

	if (!s->waiting && !(s->waiting = calloc(MAX_UPROBE_LINKS, sizeof(*s->waiting))))
		return -ENOMEM;
	w = &s->waiting[slot];
	w->path = strdup(path);
	if (!w->path)
		return -ENOMEM;
	w->offset = offset;
	w->sema_offset = sema_offset;
	w->pid = pid;
	w->cookie = cookie;
	w->which = which;
	w->failed = false;
	return 0;
}

/* Where slot @slot puts its breakpoint, if it is not a return probe. */
static void note_site(struct bpf_session *s, int slot, enum bpf_probe_prog which, const char *path,
		      uint64_t offset, uint32_t cookie)
{
	struct stat st;

	s->sites[slot].ino = 0;
	if (which == PROBE_PROG_RETURN || stat(path, &st))
		return;
	s->sites[slot].dev = st.st_dev;
	s->sites[slot].ino = st.st_ino;
	s->sites[slot].offset = offset;
	s->sites[slot].cookie = cookie;
	s->sites[slot].entry = which == PROBE_PROG_ENTRY;
	if (slot >= s->sites_hw)
		s->sites_hw = slot + 1;
}

int bpf_session__attach_uprobe_sema(struct bpf_session *s, enum bpf_probe_prog which, int pid,
				    const char *path, uint64_t offset, uint64_t sema_offset,
				    uint32_t cookie)
{
	struct bpf_program *prog = prog_of(s, which);
	bool loading = bpf_session_loading(s);
	int slot, err;

	if (!prog)
		return -EINVAL;
	if (!bpf_session__has_prog(s, which))
		return -ENOEXEC;
	for (slot = 0; slot < MAX_UPROBE_LINKS && slot_busy(s, slot); slot++)
		;
	if (slot == MAX_UPROBE_LINKS)
		return -ENOSPC;
	err = loading ? wait_slot(s, slot, which, pid, path, offset, sema_offset, cookie)
		      : attach_slot(s, slot, which, pid, path, offset, sema_offset, cookie);
	if (err)
		return err;
	note_site(s, slot, which, path, offset, cookie);
	return slot;
}

void bpf_session_attach_waiting(struct bpf_session *s, int load_err)
{
	for (int slot = 0; s->waiting && slot < MAX_UPROBE_LINKS; slot++) {
		struct bpf_waiting_attach *w = &s->waiting[slot];
		int err = load_err;

		if (!w->path)
			continue;
		if (!err)
			err = attach_slot(s, slot, w->which, w->pid, w->path, w->offset,
					  w->sema_offset, w->cookie);
		if (err && !load_err)
			lp_err("cannot attach the probe at offset 0x%" PRIx64 " of '%s': %s",
			       w->offset, w->path, strerror(-err));
		/* a failed one keeps its slot (no site): its owner's handle
		 * must not detach a probe attached there later */
		w->failed = err != 0;
		if (err)
			s->sites[slot].ino = 0;
		free(w->path);
		w->path = NULL;
	}
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
	if (s->waiting) {
		free(s->waiting[handle].path);
		s->waiting[handle].path = NULL;
		s->waiting[handle].failed = false;
	}
	bpf_link__destroy(s->uprobe_links[handle]);
	s->uprobe_links[handle] = NULL;
	if (s->multi_fds[handle] >= 0)
		close(s->multi_fds[handle]);
	s->multi_fds[handle] = -1;
	forget_probe_ids(s);
}

bool bpf_session__has_prog(const struct bpf_session *s, enum bpf_probe_prog which)
{
	struct bpf_program *prog = prog_of(s, which);

	/* while the load runs: whether it was given the program */
	if (prog && bpf_session_loading(s))
		return bpf_program__autoload(prog);
	return prog && bpf_program__fd(prog) >= 0;
}
