/* SPDX-License-Identifier: GPL-2.0 */
/*
 * writers.h - turn a struct profile into folded stacks, SVG flamegraphs
 * (plain and differential), gzip'ed pprof and a pprof-like top table.
 *
 * Every writer takes a const profile and returns 0 or a negative errno
 * (-EIO when the FILE reports a write error). None of them closes @out.
 */
#ifndef LP_USER_WRITERS_H
#define LP_USER_WRITERS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "user/profile/profile.h"

/*
 * A sample is off-CPU (drawn in blue, counted as wall time) when its stack
 * holds a FRAME_MARKER whose name starts with WRITER_OFFCPU_MARKER, or when
 * it carries the label WRITER_LABEL_STATE=WRITER_STATE_OFFCPU.
 */
#define WRITER_OFFCPU_MARKER "[off-cpu"
#define WRITER_LABEL_STATE   "state"
#define WRITER_STATE_OFFCPU  "off-cpu"

/**
 * writer__sample_offcpu - whether sample @s of @p is an off-CPU sample (see above)
 */
bool writer__sample_offcpu(const struct profile *p, const struct profile_sample *s);

/**
 * write_folded - write @p in Brendan Gregg's collapsed format
 *
 * One line "root;child;leaf count" per distinct stack, root first, sorted
 * lexicographically; samples that differ only by labels are merged, stacks
 * with a count of 0 are left out. In names ';' becomes ':' and control
 * characters become '?'. Kernel frames get the suffix "_[k]".
 *
 * Return: 0, or a negative errno.
 */
int write_folded(const struct profile *p, FILE *out);

/**
 * write_folded_weighted - like write_folded(), with weight_ns instead of count
 *
 * For off-CPU and wall-clock profiles, where a sample's weight is time.
 */
int write_folded_weighted(const struct profile *p, FILE *out);

/**
 * writer__frame_name - the name of frame @f as the folded writer prints it
 * @buf: where the name is written, NUL-terminated, truncated to @size
 *
 * Return: strlen of the untruncated name (like snprintf).
 */
size_t writer__frame_name(const struct frame *f, char *buf, size_t size);

/**
 * writer__clean_utf8 - a copy of @s that is valid UTF-8 with no control characters
 *
 * Invalid bytes become U+FFFD and control characters '?'.
 *
 * Return: a string the caller frees, or NULL on allocation failure.
 */
char *writer__clean_utf8(const char *s);

struct svg_opts {
	const char *title;    /* NULL: "Flame Graph" */
	const char *subtitle; /* NULL: none */
	const char *unit; /* what one unit of value is: NULL: "samples" (or "ns" with use_weight) */
	bool use_weight;  /* frame widths from weight_ns instead of count */
	bool icicle;	  /* root at the top instead of the bottom */
	int width;	  /* image width in pixels, 0: 1200 */
	double min_pct;	  /* frames narrower than this % of the total are not drawn, 0: 0.1 */
	/*
	 * write_svg_diff() only: by default the colour compares shares of each
	 * profile's total; with per_call, values are divided by the number of
	 * calls of each class instead (both must then be non-zero).
	 */
	bool per_call;
	uint64_t slow_calls, fast_calls;
};

/**
 * write_svg - write @p as a self-contained interactive flamegraph
 * @o: may be NULL for the defaults
 *
 * Hover shows name, value and share, click zooms, Ctrl-F or the Search
 * button highlights matches. Names are XML-escaped and invalid UTF-8 and
 * control characters replaced, whatever the binaries contained.
 *
 * Return: 0, or a negative errno.
 */
int write_svg(const struct profile *p, FILE *out, const struct svg_opts *o);

/**
 * writer__xml_text - write @s as XML character data: invalid UTF-8 and
 * control characters replaced, markup characters escaped
 *
 * Return: 0, or -ENOMEM.
 */
int writer__xml_text(FILE *out, const char *s);

/**
 * write_svg_diff - write a differential flamegraph of @slow against @fast
 * @o: may be NULL for the defaults
 *
 * Widths come from @slow. Each frame (a path from the root) is coloured by
 * slow_share - fast_share of its inclusive value: red when it takes more of
 * the slow profile, blue when less, white when the same.
 *
 * Return: 0, or a negative errno (-EINVAL for per_call without call counts).
 */
int write_svg_diff(const struct profile *slow, const struct profile *fast, FILE *out,
		   const struct svg_opts *o);

struct pprof_opts {
	bool wall;	     /* second sample type is wall/nanoseconds instead of cpu/nanoseconds */
	uint64_t time_nanos; /* when the profile started, Unix ns; 0: now - duration */
	/*
	 * Other sample types (heap, block): with n_types > 0, types[i] =
	 * {type, unit} replace the two defaults, period_type is {type, unit}
	 * of the period, and values() gives each sample's n_types values
	 * (false: leave the sample out). Labels with key skip_label are not
	 * written (values() may use them to tell rows apart).
	 */
	int n_types;
	const char *types[4][2];
	const char *period_type[2];
	const char *default_type; /* NULL: pprof's default (the last type) */
	bool (*values)(const struct profile_sample *s, int64_t *out, void *ctx);
	void *ctx;
	const char *skip_label;
};

/**
 * write_pprof - write @p as a gzip-compressed pprof profile.proto to @out
 * @o: may be NULL for the defaults
 *
 * Sample types are samples/count and cpu/nanoseconds (wall/nanoseconds with
 * @o->wall); sample labels become pprof string labels. Kernel frames go
 * under a mapping named "[kernel]".
 *
 * Return: 0, or a negative errno.
 */
int write_pprof(const struct profile *p, FILE *out, const struct pprof_opts *o);

/**
 * write_pprof_file - write_pprof() to @path through an atomic_file
 *
 * Return: 0, or a negative errno (@path is then left as it was).
 */
int write_pprof_file(const struct profile *p, const char *path, const struct pprof_opts *o);

/**
 * write_top - write a "pprof -top"-like table of functions
 * @max_rows: rows to print, <= 0 for all
 *
 * Columns flat, flat%, sum%, cum, cum%, name; sorted by flat, then cum,
 * descending. A function is counted once per sample in cum even when it
 * recurses. Values are sample counts.
 *
 * Return: 0, or a negative errno.
 */
int write_top(const struct profile *p, FILE *out, int max_rows);

/**
 * profile__top_json - the rows of write_top() as a JSON array
 *
 * Each element is {"name", "self", "total", "self_pct", "total_pct"}.
 *
 * Return: a new reference owned by the caller, or NULL on allocation failure.
 */
json_t *profile__top_json(const struct profile *p, int max_rows);

#endif /* LP_USER_WRITERS_H */
