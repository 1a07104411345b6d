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

struct bpf_deferred;

/* A uprobe asked for while its program is still being verified. */
struct bpf_waiting_attach {
	char *path; /* NULL: the slot holds none */
	uint64_t offset, sema_offset;
	int pid;
	uint32_t cookie;
	int which;   /* enum bpf_probe_prog */
	bool failed; /* its attach failed: the slot stays taken until detached */
};

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
	/* bpf_session_deferred.c: the programs loaded in the background */
	struct bpf_deferred *def;
	/* [MAX_UPROBE_LINKS], allocated when a first uprobe has to wait */
	struct bpf_waiting_attach *waiting;
};

struct bpf_session_opts;

/* bpf_session_uprobes.c: before the load, the kind of link the function
 * and line programs are loaded for (uprobe_multi where the kernel has it). */
void bpf_session_choose_uprobe_kind(struct bpf_session *s, const struct bpf_session_opts *o);

/*
 * bpf_session_deferred.c. defer_open: a second instance of the object
 * (from @open) takes the programs @s does not need to sample, before @s is
 * loaded; defer_start: once @s is loaded, it shares @s's maps and a thread
 * loads it; the join runs @hook(@s, @hook_ctx). Both return 0 or a negative
 * errno.
 */
int bpf_session_defer_open(struct bpf_session *s, struct liveprof_bpf *(*open)(int *btf_fd),
			   void (*hook)(struct bpf_session *, void *), void *hook_ctx);
int bpf_session_defer_start(struct bpf_session *s);
void bpf_session_defer_close(struct bpf_session *s);
/* Whether the deferred programs are still being loaded (not joined yet). */
bool bpf_session_loading(const struct bpf_session *s);
/* The instance whose uprobe and causal programs are used. */
struct liveprof_bpf *bpf_session_prog_skel(const struct bpf_session *s);

/* bpf_session_uprobes.c: attach the uprobes that waited for the load, or
 * with @load_err < 0 (the load failed) mark them failed. */
void bpf_session_attach_waiting(struct bpf_session *s, int load_err);

#endif /* LP_SESSION_BPF_SESSION_INTERNAL_H */
