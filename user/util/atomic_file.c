// SPDX-License-Identifier: GPL-2.0
/*
 * atomic_file.c - temp file + fsync + rename.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "user/util/atomic_file.h"

#define TMP_ATTEMPTS 64

/* The directory part of @path as a new string ("." when there is none). */
static char *dir_of(const char *path)
{
	char *copy = strdup(path), *dir;

	if (!copy)
		return NULL;
	dir = strdup(dirname(copy));
	free(copy);
	return dir;
}

static int fsync_dir(const char *path)
{
	char *dir = dir_of(path);
	int fd, err = 0;

	if (!dir)
		return -ENOMEM;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return -errno;
	/* Some file systems refuse fsync on directories; the rename is done. */
	if (fsync(fd) && errno != EINVAL && errno != ENOTSUP)
		err = -errno;
	close(fd);
	return err;
}

int atomic_file__open(struct atomic_file *af, const char *path)
{
	char *dir = NULL, *base_copy = NULL;
	int fd = -1, err;

	memset(af, 0, sizeof(*af));
	if (!path || !*path)
		return -EINVAL;
	af->path = strdup(path);
	dir = dir_of(path);
	base_copy = strdup(path);
	if (!af->path || !dir || !base_copy) {
		err = -ENOMEM;
		goto err;
	}
	for (int i = 0; i < TMP_ATTEMPTS; i++) {
		uint64_t rnd;

		/*
		 * An unpredictable name, and O_EXCL|O_NOFOLLOW in case someone
		 * guesses it anyway: a planted file or symlink makes open fail,
		 * never makes us write through it.
		 */
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&rnd ^ (uint64_t)i;
		free(af->tmp_path);
		af->tmp_path = NULL;
		if (asprintf(&af->tmp_path, "%s/.%s.tmp%016llx", dir, basename(base_copy),
			     (unsigned long long)rnd) < 0) {
			af->tmp_path = NULL;
			err = -ENOMEM;
			goto err;
		}
		fd = open(af->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		err = -errno;
		free(af->tmp_path);
		af->tmp_path = NULL;
		goto err;
	}
	af->fp = fdopen(fd, "w");
	if (!af->fp) {
		err = -errno;
		close(fd);
		unlink(af->tmp_path);
		goto err;
	}
	free(dir);
	free(base_copy);
	return 0;
err:
	free(dir);
	free(base_copy);
	free(af->path);
	free(af->tmp_path);
	memset(af, 0, sizeof(*af));
	return err;
}

static void release(struct atomic_file *af)
{
	free(af->path);
	free(af->tmp_path);
	memset(af, 0, sizeof(*af));
}

int atomic_file__commit(struct atomic_file *af)
{
	int err = 0;

	if (!af->fp)
		return -EINVAL;
	errno = 0;
	if (fflush(af->fp) || ferror(af->fp))
		err = errno ? -errno : -EIO;
	/* Without fsync a crash after the rename can leave an empty target. */
	if (!err && fsync(fileno(af->fp)))
		err = -errno;
	/*
	 * Whoever can write the directory could have swapped our file for a
	 * symlink since we created it; rename would then install their link.
	 */
	if (!err) {
		struct stat mine, now;

		if (fstat(fileno(af->fp), &mine) || lstat(af->tmp_path, &now))
			err = -errno;
		else if (mine.st_dev != now.st_dev || mine.st_ino != now.st_ino)
			err = -EEXIST;
	}
	if (fclose(af->fp) && !err)
		err = -errno;
	af->fp = NULL;
	if (!err && rename(af->tmp_path, af->path))
		err = -errno;
	if (err) {
		unlink(af->tmp_path);
		release(af);
		return err;
	}
	err = fsync_dir(af->path);
	release(af);
	return err;
}

void atomic_file__abort(struct atomic_file *af)
{
	if (af->fp) {
		fclose(af->fp);
		unlink(af->tmp_path);
	}
	release(af);
}

int atomic_file__check_writable(const char *path)
{
	struct stat st;
	char *dir;
	int err = 0;

	if (!path || !*path)
		return -EINVAL;
	dir = dir_of(path);
	if (!dir)
		return -ENOMEM;
	if (stat(dir, &st))
		err = -errno;
	else if (!S_ISDIR(st.st_mode))
		err = -ENOTDIR;
	else if (access(dir, W_OK | X_OK))
		err = -errno;
	else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		err = -EISDIR;
	free(dir);
	return err;
}
