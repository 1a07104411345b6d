// SPDX-License-Identifier: GPL-2.0
/*
 * write_top.c - a "pprof -top" table: flat and cumulative counts per function.
 *
 * A function is identified by its printed name (as in the folded output), so
 * the frames of one function at different lines or addresses add up.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/writers.h"

struct top_row {
	const char *name;
	uint64_t flat, cum;
	size_t last_sample; /* sample index + 1 that last added to cum */
};

struct top {
	struct top_row *rows;
	size_t n;
	char *names; /* storage of every row name */
	uint64_t total;
};

struct name_ref {
	const char *name;
	uint32_t frame;
};

static int name_ref_cmp(const void *a, const void *b)
{
	return strcmp(((const struct name_ref *)a)->name, ((const struct name_ref *)b)->name);
}

static int row_cmp(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	if (x->flat != y->flat)
		return x->flat > y->flat ? -1 : 1;
	if (x->cum != y->cum)
		return x->cum > y->cum ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void top_free(struct top *t)
{
	free(t->rows);
	free(t->names);
}

static int top_build(const struct profile *p, struct top *t)
{
	struct name_ref *refs = NULL;
	uint32_t *frame_row = NULL;
	size_t size = 0, i;
	int err = -ENOMEM;

	memset(t, 0, sizeof(*t));
	t->total = p->total_count;
	if (!p->n_frames)
		return 0;
	refs = calloc(p->n_frames, sizeof(*refs));
	frame_row = calloc(p->n_frames, sizeof(*frame_row));
	t->rows = calloc(p->n_frames, sizeof(*t->rows));
	if (!refs || !frame_row || !t->rows)
		goto out;
	for (i = 0; i < p->n_frames; i++)
		size += writer__frame_name(&p->frames[i], NULL, 0) + 1;
	t->names = malloc(size);
	if (!t->names)
		goto out;
	for (i = 0, size = 0; i < p->n_frames; i++) {
		refs[i].name = t->names + size;
		refs[i].frame = i;
		size += writer__frame_name(&p->frames[i], t->names + size, SIZE_MAX) + 1;
	}
	/* Frames with the same printed name become one row. */
	qsort(refs, p->n_frames, sizeof(*refs), name_ref_cmp);
	for (i = 0; i < p->n_frames; i++) {
		if (!i || strcmp(refs[i].name, refs[i - 1].name) != 0)
			t->rows[t->n++].name = refs[i].name;
		frame_row[refs[i].frame] = t->n - 1;
	}

	for (i = 0; i < p->n_samples; i++) {
		const struct profile_sample *s = &p->samples[i];

		if (!s->depth)
			continue;
		t->rows[frame_row[s->frames[s->depth - 1]]].flat += s->count;
		for (uint32_t d = 0; d < s->depth; d++) {
			struct top_row *r = &t->rows[frame_row[s->frames[d]]];

			/* Recursion must not count a sample twice in cum. */
			if (r->last_sample == i + 1)
				continue;
			r->last_sample = i + 1;
			r->cum += s->count;
		}
	}
	qsort(t->rows, t->n, sizeof(*t->rows), row_cmp);
	err = 0;
out:
	free(refs);
	free(frame_row);
	if (err)
		top_free(t);
	return err;
}

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

int write_top(const struct profile *p, FILE *out, int max_rows)
{
	uint64_t sum = 0;
	struct top t;
	size_t n;
	int err;

	err = top_build(p, &t);
	if (err)
		return err;
	n = max_rows > 0 && (size_t)max_rows < t.n ? (size_t)max_rows : t.n;
	fprintf(out, "Showing %zu of %zu functions, %llu samples total\n", n, t.n,
		(unsigned long long)t.total);
	fprintf(out, "%10s %7s %7s %10s %7s  %s\n", "flat", "flat%", "sum%", "cum", "cum%", "name");
	for (size_t i = 0; i < n; i++) {
		const struct top_row *r = &t.rows[i];

		sum += r->flat;
		fprintf(out, "%10llu %6.2f%% %6.2f%% %10llu %6.2f%%  %s\n",
			(unsigned long long)r->flat, pct(r->flat, t.total), pct(sum, t.total),
			(unsigned long long)r->cum, pct(r->cum, t.total), r->name);
	}
	top_free(&t);
	if (fflush(out) || ferror(out))
		return -EIO;
	return 0;
}

json_t *profile__top_json(const struct profile *p, int max_rows)
{
	json_t *arr;
	struct top t;
	size_t n;

	if (top_build(p, &t))
		return NULL;
	arr = json_array();
	if (!arr)
		goto err;
	n = max_rows > 0 && (size_t)max_rows < t.n ? (size_t)max_rows : t.n;
	for (size_t i = 0; i < n; i++) {
		const struct top_row *r = &t.rows[i];
		/* Names from hostile binaries may not be UTF-8: jansson refuses those. */
		char *name = writer__clean_utf8(r->name);
		json_t *o = NULL;

		if (name)
			o = json_pack("{s:s,s:I,s:I,s:f,s:f}", "name", name, "self",
				      (json_int_t)r->flat, "total", (json_int_t)r->cum, "self_pct",
				      pct(r->flat, t.total), "total_pct", pct(r->cum, t.total));
		free(name);
		if (!o || json_array_append_new(arr, o))
			goto err;
	}
	top_free(&t);
	return arr;
err:
	json_decref(arr);
	top_free(&t);
	return NULL;
}
