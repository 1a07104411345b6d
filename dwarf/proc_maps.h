/* SPDX-License-Identifier: GPL-2.0 */
/*
 * proc_maps.h - parse /proc/PID/maps into an array of mappings.
 */
#ifndef LP_DWARF_PROC_MAPS_H
#define LP_DWARF_PROC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pm_entry {
	uint64_t start, end; /* [start, end) */
	uint64_t offset;     /* file offset of start */
	uint64_t inode;
	unsigned int dev_major, dev_minor;
	bool exec;
	bool deleted; /* the path carried a " (deleted)" suffix, now stripped */
	char *path;   /* malloc'd; "" for anonymous mappings, "[vdso]" etc. kept */
};

/**
 * proc_maps__parse_line - parse one line of /proc/PID/maps
 * @line: the text, with or without its newline
 * @e: filled on success; e->path is malloc'd and owned by the caller
 *
 * Return: 0, -EINVAL for a malformed line, -ENOMEM.
 */
int proc_maps__parse_line(const char *line, struct pm_entry *e);

/**
 * proc_maps__read - read the mappings of @pid
 * @exec_only: keep only executable mappings
 * @out: set to a malloc'd array sorted by start, free with proc_maps__free()
 * @n: set to the number of entries
 *
 * Return: 0, or a negative errno (-ESRCH if the process is gone).
 */
int proc_maps__read(int pid, bool exec_only, struct pm_entry **out, size_t *n);

/**
 * proc_maps__free - free an array returned by proc_maps__read()
 */
void proc_maps__free(struct pm_entry *e, size_t n);

#endif /* LP_DWARF_PROC_MAPS_H */
