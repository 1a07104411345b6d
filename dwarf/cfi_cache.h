/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cfi_cache.h - unwind tables (cfi_table.h) kept on disk by build-id, so
 * that a module's table is built once, not at every start: libc's took
 * 8.5 ms to build and is read back in a fraction of a millisecond. The
 * directory is $LIVEPROF_CACHE_DIR, else $XDG_CACHE_HOME/liveprof/cfi, else
 * $HOME/.cache/liveprof/cfi (mode 0700); LIVEPROF_NO_CACHE=1 turns it off.
 * A build-id names the linked image, .eh_frame included; a file that does
 * not check out (magic, version, sizes, rows in order) is ignored.
 */
#ifndef LP_CFI_CACHE_H
#define LP_CFI_CACHE_H

#include "dwarf/cfi_table.h"

/**
 * cfi_cache__load - the table stored for @build_id
 * @build_id: lowercase hex
 * @out: on success set to a malloc'd table (cfi_table__free()); its
 *       build_ns is the time the read took
 *
 * Return: 0, or -ENOENT when there is none (or it is unusable).
 */
int cfi_cache__load(const char *build_id, struct cfi_table **out);

/**
 * cfi_cache__save - store @t for @build_id, best effort (atomic rename)
 * @build_id: lowercase hex
 * @t: the table built for it
 */
void cfi_cache__save(const char *build_id, const struct cfi_table *t);

#endif /* LP_CFI_CACHE_H */
