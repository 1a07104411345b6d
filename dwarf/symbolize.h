/* SPDX-License-Identifier: GPL-2.0 */
/*
 * symbolize.h - addresses of a live process to function, file:line and
 * inline chain, with libelf/libdw. Knows nothing of BPF.
 *
 * A struct symbolizer tracks the mappings of any number of processes
 * (read from /proc/PID/maps) and opens each mapped file once per
 * build-id (through /proc/PID/map_files or /proc/PID/root, so deleted and
 * containerized binaries still resolve). Results are cached per
 * (build-id, file offset); nothing re-reads DWARF for a repeated address.
 *
 * Callers pass return addresses minus one for non-leaf frames, so that the
 * call instruction, not the next line, is symbolized. Function symbols
 * whose st_size is 0 are taken to run up to the next symbol or the end of
 * their section. A symbolizer is not thread-safe: lock around it.
 */
#ifndef LP_DWARF_SYMBOLIZE_H
#define LP_DWARF_SYMBOLIZE_H

#include <stdint.h>
#include <stdbool.h>

#define SYM_MAX_INLINE 8 /* frames returned for one address, inline chain included */

/*
 * One frame of a symbolized address. All strings are owned by the
 * symbolizer and live as long as it does.
 */
struct sym_frame {
	const char *func;     /* demangled-if-possible function name, NULL if unknown */
	const char *module;   /* basename of the mapped file ("libc.so.6", "[vdso]", "[kernel]") */
	const char *path;     /* full path of the mapped file as seen in maps */
	const char *build_id; /* hex build-id, "" if none */
	const char *file;     /* source file (DWARF), NULL if unknown or not asked */
	int line;	      /* source line, 0 if unknown */
	uint64_t offset;      /* address relative to the module (ELF vaddr space) */
	bool inlined;	      /* an inlined frame (all but the last in a chain) */
};

/* One mapping of a process, as exported for pprof's mapping table. */
struct sym_mapping {
	uint64_t start, end, file_offset;
	const char *path;
	const char *build_id;
};

struct symbolizer;

/**
 * symbolizer__new - create an empty symbolizer
 * @want_lines: also resolve DWARF file:line and inline chains
 *
 * Return: the symbolizer, or NULL with errno set on allocation failure.
 */
struct symbolizer *symbolizer__new(bool want_lines);

/**
 * symbolizer__free - close every file and free every cached string
 */
void symbolizer__free(struct symbolizer *s);

/**
 * symbolizer__add_pid - read /proc/PID/maps and open the mapped files
 * @pid: the process; calling it again for a known pid re-reads its maps
 *
 * Return: 0, or a negative errno (-ESRCH if the process is gone).
 */
int symbolizer__add_pid(struct symbolizer *s, int pid);

/**
 * symbolizer__resolve - symbolize one user address of @pid
 * @out: filled innermost first; the last entry is the real (outermost)
 *       function, the ones before it are inlined into it
 * @max: capacity of @out (SYM_MAX_INLINE is enough)
 *
 * An address in no mapping, or in a mapping with no symbol covering it,
 * gives one frame with func == NULL; callers print it as
 * "[module+0xoffset]". If the address is in no known mapping the maps are
 * re-read once (a library loaded since).
 *
 * Return: number of frames written (>= 1), or a negative errno.
 */
int symbolizer__resolve(struct symbolizer *s, int pid, uint64_t addr, struct sym_frame *out,
			int max);

/**
 * symbolizer__resolve_kernel - symbolize a kernel address from /proc/kallsyms
 *
 * Return: 1 with @out filled (func NULL if unknown), or a negative errno.
 */
int symbolizer__resolve_kernel(struct symbolizer *s, uint64_t addr, struct sym_frame *out);

/**
 * symbolizer__mappings - the executable mappings known for @pid
 * @out: set to an array owned by the symbolizer, valid until the next call
 *
 * Return: number of mappings, or a negative errno.
 */
int symbolizer__mappings(struct symbolizer *s, int pid, const struct sym_mapping **out);

#endif /* LP_DWARF_SYMBOLIZE_H */
