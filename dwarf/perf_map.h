/* SPDX-License-Identifier: GPL-2.0 */
/*
 * perf_map.h - names of JIT code from a process's perf map.
 *
 * A JIT that wants its code named by profilers appends one line per
 * function it emits to /tmp/perf-PID.map: "START SIZE NAME", hex start
 * and size (node --perf-basic-prof, the JVM with perf-map-agent, LuaJIT,
 * .NET with DOTNET_PerfMapEnabled). perf, bcc and the continuous
 * profilers read the same file. Addresses are reused as code is
 * collected and emitted again: the line written last wins.
 */
#ifndef LP_DWARF_PERF_MAP_H
#define LP_DWARF_PERF_MAP_H

#include <stdint.h>

struct perf_map;

/**
 * perf_map__new - the perf map of process @pid, read lazily
 * @pid: the process (its own view of /tmp, and its pid there)
 *
 * Opens nothing yet: the file is looked for at the first lookup, and read
 * again, from where the last read ended, when a lookup misses and the file
 * has grown (JITs append).
 *
 * Return: the map, or NULL without memory.
 */
struct perf_map *perf_map__new(int pid);

/**
 * perf_map__lookup - the name of the JIT function holding @addr
 * @pm: from perf_map__new()
 * @addr: an address in the process's anonymous executable memory
 *
 * The file is believed only if it is a regular file owned by the
 * process's user or by root, reached without following a symbolic link
 * (the name is in /tmp, where anyone may create it). Malformed lines are
 * skipped; a name is cut at 255 bytes.
 *
 * Return: the name (valid until @pm is freed), or NULL if none is known.
 */
const char *perf_map__lookup(struct perf_map *pm, uint64_t addr);

/**
 * perf_map__refresh - read what the file gained since it was last read
 * @pm: from perf_map__new()
 *
 * A lookup reads the file again only when it misses; a name found may
 * still have been replaced by a later line since (the JIT reused the
 * address). Call this now and then to see those. Reads are at most one
 * per 100 ms, and spaced at least 20 times their own length apart.
 *
 * Return: perf_map__version() after the read.
 */
uint64_t perf_map__refresh(struct perf_map *pm);

/**
 * perf_map__version - a number that changes whenever a read added lines
 * or found the file started over: a name looked up before it changed may
 * be another one now
 * @pm: from perf_map__new()
 */
uint64_t perf_map__version(const struct perf_map *pm);

/** perf_map__free - free @pm (NULL is fine) */
void perf_map__free(struct perf_map *pm);

#endif /* LP_DWARF_PERF_MAP_H */
