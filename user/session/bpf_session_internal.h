/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bpf_session_internal.h - the session's BPF state, shared by
 * bpf_session.c (load, sampling, uprobes) and bpf_session_probes.c (the
 * probes' configuration and their in-kernel results); not an API.
 */
#ifndef LP_SESSION_BPF_SESSION_INTERNAL_H
#define LP_SESSION_BPF_SESSION_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_UPROBE_LINKS 4096

struct bpf_session {
	struct liveprof_bpf *skel;
	struct ring_buffer *rb;
	int nr_cpus;
	int *perf_fds;
	struct bpf_link **perf_links;
	struct bpf_link *uprobe_links[MAX_UPROBE_LINKS];
	/* uprobe_multi link fds (uprobe_multi.h), -1 where the slot holds none */
	int multi_fds[MAX_UPROBE_LINKS];
	bool multi; /* the function and line programs are loaded for them */
	/* where each entry-type link put its breakpoint (ino 0: a return probe) */
	struct {
		uint64_t dev, ino, offset;
		uint32_t cookie;
		bool entry;
	} sites[MAX_UPROBE_LINKS];
	int sites_hw; /* slots below this may hold a site */
	struct bpf_link *calib_link;
	void *hist_mem;
	size_t hist_len;
	void *stats_mem;
	size_t stats_len;
	void *rows_mem; /* unwind_rows, when unwinding in BPF */
	size_t rows_len;
	bool verbose;
};

struct bpf_session_opts;

/* bpf_session_uprobes.c: before the load, the kind of link the function
 * and line programs are loaded for (uprobe_multi where the kernel has it). */
void bpf_session_choose_uprobe_kind(struct bpf_session *s, const struct bpf_session_opts *o);

#endif /* LP_SESSION_BPF_SESSION_INTERNAL_H */
