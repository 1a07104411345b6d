/* SPDX-License-Identifier: GPL-2.0 */
/*
 * debuginfo.h - where the debug info and the sources of a binary are:
 * the file itself, /usr/lib/debug/.build-id/xx/yyyy.debug, .gnu_debuglink,
 * and debuginfod servers (elfutils' libdebuginfod, when DEBUGINFOD_URLS is
 * set), the way gdb and perf look for them.
 *
 * debuginfod queries go through one client with its disk cache
 * ($DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client). A build-id the
 * servers did not answer for is remembered for the rest of the run, so an
 * unreachable server costs the time-out once per build-id, never once per
 * address. Thread-safe.
 */
#ifndef LP_DWARF_DEBUGINFO_H
#define LP_DWARF_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <gelf.h>
#include <elfutils/libdw.h>

#define DEBUGINFO_TIMEOUT_S 10 /* default bound on one debuginfod query, connect included */
#define DEBUGINFO_WHERE_MAX 1024

/*
 * A progress line while debuginfod downloads: @what names the file,
 * @done/@total are bytes (@total <= 0: unknown), @finished is set once,
 * on the last call of one download, with @done < 0 when it failed; @secs
 * is the time since the query began.
 */
typedef void (*debuginfo_progress_fn)(const char *what, long done, long total, bool finished,
				      double secs, void *ctx);

/**
 * debuginfo__configure - set the search options for the rest of the run
 * @source_path: a directory searched for source files (--source-path), or NULL
 * @timeout_s: bound on one debuginfod query in seconds, <= 0 for the default
 *
 * The string is copied. Call before the first lookup.
 */
void debuginfo__configure(const char *source_path, int timeout_s);

/**
 * debuginfo__set_progress - where download progress goes
 * @fn: NULL for the default (a line on stderr, redrawn in place on a tty)
 */
void debuginfo__set_progress(debuginfo_progress_fn fn, void *ctx);

/**
 * debuginfo__enabled - whether debuginfod will be asked (DEBUGINFOD_URLS set)
 */
bool debuginfo__enabled(void);

/**
 * debuginfo__find_debug - open the separate debug file of @elf
 * @elf: the binary as mapped (its build-id and .gnu_debuglink are read)
 * @path: the binary's path, for .gnu_debuglink's directories; may be NULL
 * @out_path: receives the debug file's path (may be NULL)
 * @how: receives a static string naming the source ("build-id",
 *       "debuglink", "debuginfod"); may be NULL
 *
 * A candidate whose build-id differs from @elf's is skipped, never used.
 *
 * Return: an open read-only fd the caller closes, or a negative errno
 * (-ENOENT when no place had it).
 */
int debuginfo__find_debug(Elf *elf, const char *path, char *out_path, size_t path_len,
			  const char **how);

/**
 * debuginfo__find_source - find source file @file of a binary
 * @build_id: hex build-id of the binary, "" or NULL if none
 * @comp_dir: DW_AT_comp_dir of the unit, or NULL
 * @file: the file name as the line table has it (absolute or relative)
 * @out: receives the path of a readable copy
 * @where: receives, on failure and on success, the places looked at
 *         ("'/a/b.c' (DWARF), '/src/b.c' (--source-path), debuginfod: ...")
 *
 * Return: 0, or -ENOENT when no place had it.
 */
int debuginfo__find_source(const char *build_id, const char *comp_dir, const char *file, char *out,
			   size_t out_len, char *where, size_t where_len);

/**
 * debuginfo__hex_build_id - the hex build-id of @elf into @hex
 * @hex: at least 2 * 64 + 1 bytes
 *
 * Return: 0, or -ENOENT if @elf has none.
 */
int debuginfo__hex_build_id(Elf *elf, char *hex);

/* A separate debug file held open for a Dwarf read from it. */
struct debuginfo_file {
	int fd;	  /* -1 if none */
	Elf *elf; /* NULL if none */
};

/**
 * debuginfo__dwarf_begin - the DWARF of @elf, from itself or its debug file
 * @path: the binary's path (for .gnu_debuglink), may be NULL
 * @dbg: set to the debug file that was opened (fd -1, elf NULL if the DWARF
 *       is in @elf itself or nowhere); close with debuginfo__file_close()
 *       after dwarf_end()
 *
 * Return: the Dwarf (the caller ends it), or NULL if there is none.
 */
Dwarf *debuginfo__dwarf_begin(Elf *elf, const char *path, struct debuginfo_file *dbg);

/** debuginfo__file_close - close what debuginfo__dwarf_begin() opened */
void debuginfo__file_close(struct debuginfo_file *dbg);

#endif /* LP_DWARF_DEBUGINFO_H */
