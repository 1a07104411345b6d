/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exit_codes.h - liveprof's documented exit statuses (see --help and the
 * README). Every failure path ends in exactly one of these.
 */
#ifndef LP_USER_EXIT_CODES_H
#define LP_USER_EXIT_CODES_H

enum lp_exit {
	EXIT_OK = 0,		/* profile written (also after target exit or SIGINT) */
	EXIT_RUNTIME = 1,	/* an unexpected runtime failure; validate: the check failed */
	EXIT_USAGE = 2,		/* bad command line or malformed input file */
	EXIT_NO_TARGET = 3,	/* no such process, or the command could not be started */
	EXIT_PERMISSION = 4,	/* not root / missing CAP_BPF or CAP_PERFMON */
	EXIT_UNSUPPORTED = 5,	/* kernel without BTF or without the needed perf events */
	EXIT_BPF = 6,		/* BPF program failed to load or attach (-v shows the log) */
	EXIT_OUTPUT = 7,	/* an output file cannot be written */
	EXIT_PROBE = 8,		/* a --trace/--split spec cannot be resolved */
	EXIT_KTHREAD = 9,	/* -p names a kernel thread: no user space to profile */
	EXIT_INCONCLUSIVE = 10, /* validate: too few samples to decide either way */
	EXIT_NO_PROGRESS = 11,	/* causal: the progress point never fired */
};

#endif
