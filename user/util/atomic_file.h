/* SPDX-License-Identifier: GPL-2.0 */
/*
 * atomic_file.h - write a file so that readers see the old or the new
 * contents, never a half-written one: write a temporary file next to the
 * target, fsync it, rename it over the target.
 */
#ifndef LP_USER_ATOMIC_FILE_H
#define LP_USER_ATOMIC_FILE_H

#include <stdio.h>

struct atomic_file {
	FILE *fp;	/* write here between open and commit/abort */
	char *path;	/* the target */
	char *tmp_path; /* the temporary file, in the target's directory */
};

/**
 * atomic_file__open - start writing @path through a temporary file
 * @af: filled in; owned by the caller until commit or abort
 * @path: the target; if it is a symlink, commit replaces the link itself
 *
 * The temporary file is created with O_CREAT|O_EXCL|O_NOFOLLOW and mode 0644
 * (less the umask), so nothing planted at its name is ever written through.
 *
 * Return: 0, or a negative errno (then @af holds nothing to release).
 */
int atomic_file__open(struct atomic_file *af, const char *path);

/**
 * atomic_file__commit - flush, fsync and rename the temporary file over the target
 *
 * Releases @af in every case; on failure the temporary file is removed and
 * the target is left as it was.
 *
 * Return: 0, or a negative errno (a write error seen on @af->fp counts).
 */
int atomic_file__commit(struct atomic_file *af);

/**
 * atomic_file__abort - drop the temporary file and release @af; the target is untouched
 */
void atomic_file__abort(struct atomic_file *af);

/**
 * atomic_file__check_writable - check, before a long run, that @path can be written
 *
 * Checks that the directory of @path exists, is a directory and is writable
 * and searchable by us, and that @path itself is not a directory.
 *
 * Return: 0, or a negative errno (-ENOENT, -ENOTDIR, -EACCES, -EISDIR, ...).
 */
int atomic_file__check_writable(const char *path);

#endif /* LP_USER_ATOMIC_FILE_H */
