/* SPDX-License-Identifier: GPL-2.0 */
/*
 * profile_read.h - read profiles written by other tools (and by liveprof)
 * back into a struct profile: folded stacks and gzip-compressed pprof.
 *
 * Every reader treats its input as hostile: it bounds-checks every length
 * and index, never crashes on malformed data, and reports the first problem
 * as a one-line message (without the "liveprof: " prefix) in @err.
 */
#ifndef LP_USER_PROFILE_READ_H
#define LP_USER_PROFILE_READ_H

#include <stddef.h>

#include "user/profile/profile.h"

/* Enough for a message that quotes a path and a position. */
#define PROFILE_READ_ERRSZ 512

/* Refuse to inflate a pprof beyond this: a gzip bomb must not eat the host. */
#define PPROF_MAX_INFLATED (512UL << 20)

/**
 * read_folded - add folded stacks ("root;...;leaf count" per line) to @p
 * @p: the profile to add to
 * @buf: the text, need not be NUL-terminated
 * @len: its length in bytes
 * @err: receives a message such as "bad folded line 12, column 30: expected
 *       a count after the last space" on failure; may be NULL
 * @errsz: size of @err
 *
 * Blank lines are skipped; "\r\n" line ends are accepted. Lines and columns
 * are counted from 1, columns in bytes.
 *
 * Return: 0, -EINVAL for malformed input, -ENOMEM.
 */
int read_folded(struct profile *p, const char *buf, size_t len, char *err, size_t errsz);

/**
 * read_pprof - add the samples of a gzip-compressed profile.proto to @p
 * @p: the profile to add to
 * @buf: the compressed file contents
 * @len: its length in bytes
 * @err: receives a message on failure; may be NULL
 * @errsz: size of @err
 *
 * The sample value used is the one whose type is "samples", else "cpu",
 * else the first. Inlined functions (several lines in one location) become
 * several frames. Samples with a value <= 0 are skipped.
 *
 * Return: 0, -EINVAL for input that is not gzip or not a profile, -EFBIG
 * when it inflates beyond PPROF_MAX_INFLATED, -ENOMEM.
 */
int read_pprof(struct profile *p, const void *buf, size_t len, char *err, size_t errsz);

/**
 * profile_read_file - read a folded or pprof file into a new profile
 * @path: the file; gzip data is read as pprof, anything else as folded
 * @out: receives the profile, owned by the caller (profile__free())
 * @err: receives a message on failure, quoting @path; may be NULL
 * @errsz: size of @err
 *
 * Return: 0, or a negative errno (with *@out untouched).
 */
int profile_read_file(const char *path, struct profile **out, char *err, size_t errsz);

#endif /* LP_USER_PROFILE_READ_H */
