/* SPDX-License-Identifier: GPL-2.0 */
/*
 * unwind_tables.h - the CFI tables of the BPF unwinder (bpf/unwind.bpf.h):
 * built per module (dwarf/cfi_table.h, cached by build-id), copied into
 * the rows map, and described per process by its executable mappings.
 * A module's rows are freed when no process maps it any more.
 */
#ifndef LP_USER_SESSION_UNWIND_TABLES_H
#define LP_USER_SESSION_UNWIND_TABLES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "bpf/liveprof.h"

/* Where the tables go: the maps of bpf/unwind.bpf.h. */
struct unwind_maps {
	struct lp_unwind_row *rows; /* the mmap'ed rows array */
	uint32_t max_rows;
	uint32_t max_tables;
	int tables_fd;
	int procs_fd;
};

struct unwind_tables_stats {
	uint64_t modules;	/* modules with a table loaded now */
	uint64_t rows;		/* rows in use */
	uint64_t build_ns;	/* time spent building tables, all modules */
	uint64_t scans;		/* /proc/PID/maps reads */
	uint64_t no_table;	/* modules without a table (no CFI, hostile, full) */
	uint64_t max_module_ns; /* slowest single build */
};

struct unwind_tables;

/**
 * unwind_tables__new - start with empty maps
 * @m: the maps; copied
 * @verbose: print one line per module built (rows, bytes, time)
 * @out: set to the new object, free with unwind_tables__free()
 *
 * Return: 0 or -ENOMEM.
 */
int unwind_tables__new(const struct unwind_maps *m, bool verbose, struct unwind_tables **out);

/**
 * unwind_tables__free - free everything; the maps are left as they are
 * @t: may be NULL
 */
void unwind_tables__free(struct unwind_tables *t);

/**
 * unwind_tables__scan - (re)read a process's executable mappings
 * @t: the tables
 * @pid: the process
 * @now_ns: CLOCK_MONOTONIC now, for rate limiting
 *
 * Builds and loads the tables of modules not seen before, writes the
 * process's mapping list, and releases modules it no longer maps.
 *
 * Return: 0, or a negative errno (-ESRCH: the process is gone, its entry
 * was removed; -ENOMEM).
 */
int unwind_tables__scan(struct unwind_tables *t, int pid, uint64_t now_ns);

/**
 * unwind_tables__has_pid - whether @pid's mappings have been scanned
 * @t: the tables
 * @pid: the process
 *
 * Return: true once unwind_tables__scan() has loaded an entry for @pid.
 */
bool unwind_tables__has_pid(struct unwind_tables *t, int pid);

/**
 * unwind_tables__unknown_pc - a sample met a pc in no known mapping
 * @t: the tables
 * @pid: its process
 * @now_ns: CLOCK_MONOTONIC now
 *
 * Rescans @pid (dlopen, a new process under -a), at most every 200 ms
 * per process.
 */
void unwind_tables__unknown_pc(struct unwind_tables *t, int pid, uint64_t now_ns);

/**
 * unwind_tables__tick - forget processes that are gone
 * @t: the tables
 * @now_ns: CLOCK_MONOTONIC now
 */
void unwind_tables__tick(struct unwind_tables *t, uint64_t now_ns);

/**
 * unwind_tables__remove_pid - drop a process and release its modules
 * @t: the tables
 * @pid: the process; unknown pids are ignored
 */
void unwind_tables__remove_pid(struct unwind_tables *t, int pid);

/**
 * unwind_tables__stats - figures for the summary and the benchmarks
 * @t: the tables
 * @out: filled
 */
void unwind_tables__stats(const struct unwind_tables *t, struct unwind_tables_stats *out);

#endif /* LP_USER_SESSION_UNWIND_TABLES_H */
