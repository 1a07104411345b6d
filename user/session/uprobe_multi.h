/* SPDX-License-Identifier: GPL-2.0 */
/*
 * uprobe_multi.h - uprobes attached as BPF links of the uprobe_multi kind
 * (Linux 6.6+), which libbpf 1.1 cannot create.
 *
 * A classic uprobe runs its program through a perf event (trace_uprobe's
 * perf path: a perf buffer, its filter, then the program); a uprobe_multi
 * link runs it straight from the uprobe's handler. Measured side by side
 * here, that is 40-65 ns less per probed call (entry and return), about 6%
 * of a traced call. A program is loaded for one kind or the other: the
 * kernel refuses a uprobe_multi program on a perf event.
 */
#ifndef LP_SESSION_UPROBE_MULTI_H
#define LP_SESSION_UPROBE_MULTI_H

#include <stdbool.h>
#include <stdint.h>

/* The program's expected_attach_type for uprobe_multi links. */
#define LP_ATTACH_UPROBE_MULTI 48
/* ... and for uprobe_multi session links (Linux 6.13+). */
#define LP_ATTACH_UPROBE_SESSION 57

/**
 * uprobe_multi_supported - whether this kernel creates uprobe_multi links
 *
 * Probes once (a two-instruction program and a link that must fail in a
 * known way) and remembers the answer.
 *
 * Return: true if it does.
 */
bool uprobe_multi_supported(void);

/**
 * uprobe_multi_attach - attach @prog_fd at one offset of a file
 * @prog_fd: a program loaded with expected_attach_type LP_ATTACH_UPROBE_MULTI
 * @pid: the process to fire in, or -1 for every process
 * @path: the file (as for a classic uprobe)
 * @offset: file offset of an instruction boundary
 * @ref_ctr_offset: file offset of a USDT semaphore the kernel raises while
 *	the link lives (0: none)
 * @cookie: what bpf_get_attach_cookie() returns in the program
 * @retprobe: fire at the function's return instead
 *
 * Return: the link's file descriptor (closing it detaches), or -errno.
 */
int uprobe_multi_attach(int prog_fd, int pid, const char *path, uint64_t offset,
			uint64_t ref_ctr_offset, uint64_t cookie, bool retprobe);

/**
 * uprobe_multi_attach_session - attach @prog_fd at both ends of a function
 * @prog_fd: a program loaded with expected_attach_type LP_ATTACH_UPROBE_SESSION
 * @pid: the process to fire in, or -1 for every process
 * @path: the file (as for a classic uprobe)
 * @offset: file offset of the function's entry
 *
 * A session link runs one program at the entry and again at the return,
 * with a per-call cookie (bpf_session_cookie()) kept by the kernel between
 * the two. Only the benchmarks use it, to bound what a latency tracer
 * needs per call (tests/bench/latency_floor.bpf.c).
 *
 * Return: the link's file descriptor (closing it detaches), or -errno.
 */
int uprobe_multi_attach_session(int prog_fd, int pid, const char *path, uint64_t offset);

#endif /* LP_SESSION_UPROBE_MULTI_H */
