/* SPDX-License-Identifier: GPL-2.0 */
/*
 * session_core.h - what the parts of a session share: the options, the
 * loaded BPF, the symbols and the target processes. The daemon owns it;
 * traces and the split get a pointer to it instead of one to the daemon,
 * so the arrows inside user/session/ point one way:
 * daemon -> {split -> traces} -> session_core.
 */
#ifndef LP_SESSION_CORE_H
#define LP_SESSION_CORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "user/session/options.h"
#include "user/session/sample_cost.h"

struct bpf_session;
struct stack_symbols;

struct target_proc {
	int pid;
	char name[64];
	bool alive;
	int pidfd; /* pidfd_open(pid), polled for its exit; -1 without one */
	/* what the daemon's last wait saw of the pidfd: 0 nothing (poll it),
	 * 1 not readable then, 2 readable (exited) */
	int exit_seen;
	/* /proc/PID/maps as read before the last refresh of its mappings
	 * that went through (daemon__maps_changed()); NULL: refresh next */
	char *maps;
	size_t maps_len;
};

struct session_core {
	struct options *opts;
	struct bpf_session *bpf;
	struct stack_symbols *symbols;
	struct target_proc procs[MAX_PIDS];
	int n_procs;
	pid_t child;			/* launched command, 0 if none */
	uint64_t start_ns;		/* CLOCK_MONOTONIC at the start of the run */
	uint64_t end_ns;		/* ... at its end, 0 while it runs */
	struct sample_cost sample_cost; /* what a sample costs a thread (calibrated) */
};

#endif
