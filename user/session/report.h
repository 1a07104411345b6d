/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report.h - what liveprof writes at the end of a run (and live, per
 * --interval): output files by extension, the top table, the trace and
 * split tables, and the --json summary.
 */
#ifndef LP_USER_REPORT_H
#define LP_USER_REPORT_H

#include <stdio.h>
#include "user/profile/profile.h"

struct daemon;
struct counts;

enum output_format {
	OUT_FOLDED,
	OUT_SVG,
	OUT_PPROF,
	OUT_ANNOTATE, /* annotate.txt, *.annotate, *.annotate.txt */
};

/** report__format_of - output format from a file name, or -1 */
int report__format_of(const char *path);

/**
 * report__build_profile - symbolized profile of @c (NULL: the whole run)
 *
 * Return: a profile the caller frees, or NULL on failure.
 */
struct profile *report__build_profile(struct daemon *d, const struct counts *c);

/**
 * report__write_file - write @p to @path in the format of its extension,
 * atomically
 * Return: 0 or a negative errno (a message was printed).
 */
int report__write_file(struct daemon *d, struct profile *p, const char *path);

/**
 * report__finish - write every output, print the summary to @f
 *
 * Return: the exit status.
 */
int report__finish(struct daemon *d, FILE *f);

/** report__print_interval - the live tables printed every --interval */
void report__print_interval(struct daemon *d, FILE *f);

/**
 * write_latency_svg - a latency histogram as SVG, log-scaled x axis, with
 * the split threshold drawn as a vertical line (0: none)
 */
int write_latency_svg(const uint64_t *hist, const char *title, uint64_t threshold_ns, double pct,
		      FILE *out);

#endif
