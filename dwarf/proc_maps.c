// SPDX-License-Identifier: GPL-2.0
/*
 * proc_maps.c - parse /proc/PID/maps.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc_maps.h"

#define DELETED_SUFFIX " (deleted)"

int proc_maps__parse_line(const char *line, struct pm_entry *e)
{
	char perms[8] = "";
	int path_at = 0;
	size_t len;
	const char *p;

	memset(e, 0, sizeof(*e));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &e->start,
		   &e->end, perms, &e->offset, &e->dev_major, &e->dev_minor, &e->inode,
		   &path_at) < 7 ||
	    path_at <= 0)
		return -EINVAL;
	if (e->end <= e->start || strlen(perms) < 4)
		return -EINVAL;
	e->exec = perms[2] == 'x';

	p = line + path_at;
	len = strcspn(p, "\n");
	/* A file unlinked after mapping: map_files still opens it, show the old name */
	if (len >= sizeof(DELETED_SUFFIX) - 1 &&
	    !memcmp(p + len - (sizeof(DELETED_SUFFIX) - 1), DELETED_SUFFIX,
		    sizeof(DELETED_SUFFIX) - 1)) {
		len -= sizeof(DELETED_SUFFIX) - 1;
		e->deleted = true;
	}
	e->path = strndup(p, len);
	if (!e->path)
		return -ENOMEM;
	return 0;
}

static int pm_cmp(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;

	/* compare, don't subtract: a u64 difference does not fit an int */
	return x->start < y->start ? -1 : x->start > y->start;
}

int proc_maps__read(int pid, bool exec_only, struct pm_entry **out, size_t *n)
{
	struct pm_entry *arr = NULL, *tmp, e;
	size_t cnt = 0, cap = 0, lcap = 0;
	char path[64], *line = NULL;
	int err = 0;
	FILE *f;

	*out = NULL;
	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;

	while (getline(&line, &lcap, f) > 0) {
		err = proc_maps__parse_line(line, &e);
		if (err == -EINVAL) {
			err = 0;
			continue;
		}
		if (err)
			goto fail;
		if (exec_only && !e.exec) {
			free(e.path);
			continue;
		}
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			tmp = realloc(arr, cap * sizeof(*arr));
			if (!tmp) {
				free(e.path);
				err = -ENOMEM;
				goto fail;
			}
			arr = tmp;
		}
		arr[cnt++] = e;
	}
	/* a process that died between open and read yields an empty file */
	if (ferror(f)) {
		err = errno == ESRCH || errno == ENOENT ? -ESRCH : -EIO;
		goto fail;
	}
	fclose(f);
	free(line);
	qsort(arr, cnt, sizeof(*arr), pm_cmp);
	*out = arr;
	*n = cnt;
	return 0;
fail:
	fclose(f);
	free(line);
	proc_maps__free(arr, cnt);
	return err;
}

void proc_maps__free(struct pm_entry *e, size_t n)
{
	if (!e)
		return;
	for (size_t i = 0; i < n; i++)
		free(e[i].path);
	free(e);
}
