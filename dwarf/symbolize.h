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

/* What a user address points into, for telling a return address from data. */
enum sym_addr_kind {
	SYM_ADDR_NONE = 0, /* no executable mapping: data, a stack, a heap, nothing */
	SYM_ADDR_CODE,	   /* an executable mapping of a file, the vdso or vsyscall */
	SYM_ADDR_ANON,	   /* executable anonymous memory (JIT code) */
	SYM_ADDR_UPROBES,  /* the kernel's [uprobes] page (trampoline, XOL slots) */
	SYM_ADDR_DATA,	   /* an executable [stack] or [heap]: still data */
	SYM_ADDR_UNKNOWN,  /* the process's maps cannot be read (gone before we looked) */
};

/**
 * symbolizer__addr_kind - which kind of executable mapping holds @addr
 * @pid: the process; its maps are read if unknown, and re-read (at most
 *       every 50 ms) when @addr is in none of them, as for resolve
 *
 * Return: the kind; SYM_ADDR_UNKNOWN when the maps cannot be read.
 */
enum sym_addr_kind symbolizer__addr_kind(struct symbolizer *s, int pid, uint64_t addr);

/**
 * symbolizer__addr_kind_span - symbolizer__addr_kind(), and the mapping's extent
 * @start: set to the first address of the mapping that holds @addr
 * @end: set to the first address past it; both 0 when no mapping holds @addr
 *
 * Every address in [@start, @end) has the same kind until the maps are
 * re-read, so a caller that judges a whole stack looks up each mapping
 * once instead of once per frame.
 *
 * Return: the kind, as symbolizer__addr_kind().
 */
enum sym_addr_kind symbolizer__addr_kind_span(struct symbolizer *s, int pid, uint64_t addr,
					      uint64_t *start, uint64_t *end);

/**
 * symbolizer__file_pos - the file behind @addr of @pid and its offset in it
 * @dev, @ino: set to the file's st_dev (makedev encoding) and st_ino
 * @file_offset: set to the offset of @addr in that file
 *
 * Return: 0, -ENOENT if @addr is in no file-backed executable mapping, or
 * a negative errno.
 */
int symbolizer__file_pos(struct symbolizer *s, int pid, uint64_t addr, uint64_t *dev, uint64_t *ino,
			 uint64_t *file_offset);

/**
 * symbolizer__addr_of - the address where @pid maps @file_offset of the
 * file (@dev, @ino), in its executable mappings known so far
 *
 * Return: the address, or 0 if no known mapping holds it.
 */
uint64_t symbolizer__addr_of(struct symbolizer *s, int pid, uint64_t dev, uint64_t ino,
			     uint64_t file_offset);

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

/**
 * symbolizer__generation - a number that changes whenever the mappings of
 * any known process change, a process is added, or a JIT's perf map gained
 * lines (the names of its code may have changed): what a caller cached per
 * (pid, address) is valid while it stays the same
 */
uint64_t symbolizer__generation(const struct symbolizer *s);

/**
 * symbolizer__maps_generation - as symbolizer__generation(), for the
 * mappings alone: it changes only when mappings were read and differed,
 * or a process was added
 */
uint64_t symbolizer__maps_generation(const struct symbolizer *s);

/**
 * symbolizer__refresh_jit - read what the perf maps of known processes
 * gained since they were last read (perf_map__refresh())
 *
 * A name looked up once is cached by callers until the generation
 * changes, and a lookup that finds a name reads the map no further: this
 * is what shows them a JIT's later lines for addresses it reused, or the
 * first line of code sampled before its line was written.
 */
void symbolizer__refresh_jit(struct symbolizer *s);

#endif /* LP_DWARF_SYMBOLIZE_H */
