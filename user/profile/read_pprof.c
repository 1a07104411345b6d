// SPDX-License-Identifier: GPL-2.0
/*
 * read_pprof.c - read a gzip-compressed profile.proto (pprof) into a
 * struct profile, with a small protobuf decoder of our own.
 *
 * Only what a profile's shape needs is decoded:
 *   Profile  { 1 sample_type: ValueType, 2 sample: Sample, 4 location,
 *              5 function, 6 string_table: string }
 *   ValueType{ 1 type: int64 (string index) }
 *   Sample   { 1 location_id: uint64 (packed or not), 2 value: int64 }
 *   Location { 1 id, 4 line: Line }     Line { 1 function_id }
 *   Function { 1 id, 2 name: int64 (string index) }
 * Everything else is skipped by wire type. The file is untrusted: every
 * varint, length and index is checked, and problems become -EINVAL with a
 * message rather than a crash.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "user/profile/profile_read.h"

#include "user/profile/pb_read.h"
#include "user/util/util.h"

struct pp_str {
	const char *s;
	size_t len;
};

struct pp_func {
	uint64_t id;
	uint64_t name; /* string index */
};

struct pp_loc {
	uint64_t id;
	uint64_t address;
	struct pb lines; /* the location message, re-walked for its lines */
};

struct pp_ctx {
	struct pp_str *strs;
	size_t n_strs, cap_strs;
	struct pp_func *funcs;
	size_t n_funcs, cap_funcs;
	struct pp_loc *locs;
	size_t n_locs, cap_locs;
	uint64_t *types; /* sample_type[].type string indexes */
	size_t n_types, cap_types;
	char *err;
	size_t errsz;
};

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap;
	void *a;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	if (ncap > SIZE_MAX / elem)
		return -ENOMEM;
	a = realloc(*arr, ncap * elem);
	if (!a)
		return -ENOMEM;
	*arr = a;
	*cap = ncap;
	return 0;
}

static int parse_function(struct pp_ctx *c, struct pb m)
{
	struct pp_func f = {0};
	uint32_t field;
	struct pb sub;
	uint64_t v;
	int wt;

	while (m.p < m.end) {
		if (pb_field(&m, &field, &wt, &v, &sub))
			return -EINVAL;
		if (wt != WT_VARINT)
			continue;
		if (field == 1)
			f.id = v;
		else if (field == 2)
			f.name = v;
	}
	if (grow((void **)&c->funcs, &c->cap_funcs, c->n_funcs, sizeof(f)))
		return -ENOMEM;
	c->funcs[c->n_funcs++] = f;
	return 0;
}

static int parse_location(struct pp_ctx *c, struct pb m)
{
	struct pp_loc l = {.lines = m};
	uint32_t field;
	struct pb sub;
	uint64_t v;
	int wt;

	while (m.p < m.end) {
		if (pb_field(&m, &field, &wt, &v, &sub))
			return -EINVAL;
		if (wt == WT_VARINT && field == 1)
			l.id = v;
		else if (wt == WT_VARINT && field == 3)
			l.address = v;
	}
	if (grow((void **)&c->locs, &c->cap_locs, c->n_locs, sizeof(l)))
		return -ENOMEM;
	c->locs[c->n_locs++] = l;
	return 0;
}

static int parse_value_type(struct pp_ctx *c, struct pb m)
{
	uint64_t type = 0, v;
	uint32_t field;
	struct pb sub;
	int wt;

	while (m.p < m.end) {
		if (pb_field(&m, &field, &wt, &v, &sub))
			return -EINVAL;
		if (wt == WT_VARINT && field == 1)
			type = v;
	}
	if (grow((void **)&c->types, &c->cap_types, c->n_types, sizeof(type)))
		return -ENOMEM;
	c->types[c->n_types++] = type;
	return 0;
}

static int cmp_func(const void *a, const void *b)
{
	uint64_t x = ((const struct pp_func *)a)->id, y = ((const struct pp_func *)b)->id;

	return x < y ? -1 : x > y;
}

static int cmp_loc(const void *a, const void *b)
{
	uint64_t x = ((const struct pp_loc *)a)->id, y = ((const struct pp_loc *)b)->id;

	return x < y ? -1 : x > y;
}

static const struct pp_func *find_func(const struct pp_ctx *c, uint64_t id)
{
	struct pp_func key = {.id = id};

	if (!c->n_funcs)
		return NULL;
	return bsearch(&key, c->funcs, c->n_funcs, sizeof(key), cmp_func);
}

static const struct pp_loc *find_loc(const struct pp_ctx *c, uint64_t id)
{
	struct pp_loc key = {.id = id};

	if (!c->n_locs)
		return NULL;
	return bsearch(&key, c->locs, c->n_locs, sizeof(key), cmp_loc);
}

static bool str_is(const struct pp_ctx *c, uint64_t idx, const char *want)
{
	return idx < c->n_strs && c->strs[idx].len == strlen(want) &&
	       memcmp(c->strs[idx].s, want, c->strs[idx].len) == 0;
}

/* Frame ids of one sample, built leaf first and reversed at the end. */
struct frames_buf {
	uint32_t *ids;
	size_t len, cap;
	char *name;
	size_t name_cap;
};

static int add_frame(struct profile *p, struct frames_buf *fb, const char *s, size_t n)
{
	struct frame f = {0};
	int64_t id;

	/* Protobuf strings may hold a NUL; the name ends there, like any C string. */
	if (n == 0 || s[0] == '\0') {
		s = "[unknown]";
		n = strlen(s);
	}
	if (n + 1 > fb->name_cap) {
		char *t = realloc(fb->name, n + 1);

		if (!t)
			return -ENOMEM;
		fb->name = t;
		fb->name_cap = n + 1;
	}
	memcpy(fb->name, s, n);
	fb->name[n] = '\0';
	f.name = fb->name;
	f.kind = FRAME_USER;
	id = profile__intern_frame(p, &f);
	if (id < 0)
		return (int)id;
	if (grow((void **)&fb->ids, &fb->cap, fb->len, sizeof(*fb->ids)))
		return -ENOMEM;
	fb->ids[fb->len++] = (uint32_t)id;
	return 0;
}

/* Append the frames of location @id (innermost inlined function first). */
static int add_location(struct pp_ctx *c, struct profile *p, struct frames_buf *fb, uint64_t id)
{
	const struct pp_loc *l = find_loc(c, id);
	struct pb m, line;
	uint32_t field;
	uint64_t v;
	bool any = false;
	char hex[32];
	int wt, ret;

	if (!l) {
		lp_errf(c->err, c->errsz, "a sample refers to location %llu, which is not defined",
			(unsigned long long)id);
		return -EINVAL;
	}
	m = l->lines;
	while (m.p < m.end) {
		const struct pp_func *f = NULL;
		struct pb lm;

		if (pb_field(&m, &field, &wt, &v, &line))
			return -EINVAL;
		if (field != 4 || wt != WT_LEN)
			continue;
		lm = line;
		while (lm.p < lm.end) {
			struct pb sub;

			if (pb_field(&lm, &field, &wt, &v, &sub))
				return -EINVAL;
			if (field == 1 && wt == WT_VARINT)
				f = find_func(c, v);
		}
		if (!f) {
			lp_errf(c->err, c->errsz, "location %llu refers to an undefined function",
				(unsigned long long)id);
			return -EINVAL;
		}
		if (f->name >= c->n_strs) {
			lp_errf(c->err, c->errsz, "function %llu: name index %llu is out of range",
				(unsigned long long)f->id, (unsigned long long)f->name);
			return -EINVAL;
		}
		ret = add_frame(p, fb, c->strs[f->name].s, c->strs[f->name].len);
		if (ret)
			return ret;
		any = true;
	}
	if (!any) {
		/* Unsymbolized: keep the address so distinct locations stay distinct. */
		snprintf(hex, sizeof(hex), "[0x%llx]", (unsigned long long)l->address);
		return add_frame(p, fb, hex, strlen(hex));
	}
	return 0;
}

/* A sample's location ids, on the stack until there are more than 256. */
struct loc_list {
	uint64_t small[256];
	uint64_t *v;
	size_t n, cap;
};

static int loc_list__push(struct loc_list *l, uint64_t id)
{
	uint64_t *nl;

	if (l->n == l->cap) {
		if (l->cap > SIZE_MAX / 2 / sizeof(*nl))
			return -ENOMEM;
		nl = l->v == l->small ? malloc(l->cap * 2 * sizeof(*nl))
				      : realloc(l->v, l->cap * 2 * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		if (l->v == l->small)
			memcpy(nl, l->small, sizeof(l->small));
		l->v = nl;
		l->cap *= 2;
	}
	l->v[l->n++] = id;
	return 0;
}

/*
 * Walk a Sample message: collect its location ids into @locs and the
 * @value_idx'th value into *@value (*@have_value says whether there was one).
 */
static int sample_fields(struct pb m, size_t value_idx, struct loc_list *locs, uint64_t *value,
			 bool *have_value)
{
	size_t n_values = 0;
	uint32_t field;
	struct pb sub;
	uint64_t v;
	int wt;

	while (m.p < m.end) {
		if (pb_field(&m, &field, &wt, &v, &sub))
			return -EINVAL;
		if (field == 1 || field == 2) {
			/* Both packed (WT_LEN) and one-per-field encodings are legal. */
			struct pb one = sub;
			bool packed = wt == WT_LEN;

			if (!packed && wt != WT_VARINT)
				continue;
			while (packed ? one.p < one.end : true) {
				if (packed && pb_varint(&one, &v))
					return -EINVAL;
				if (field == 2) {
					if (n_values++ == value_idx) {
						*value = v;
						*have_value = true;
					}
				} else if (loc_list__push(locs, v)) {
					return -ENOMEM;
				}
				if (!packed)
					break;
			}
		}
	}
	return 0;
}

/* Turn a sample's location ids (leaf first) into root-first frames in @fb. */
static int sample_frames(struct pp_ctx *c, struct profile *p, const struct loc_list *locs,
			 struct frames_buf *fb)
{
	size_t i;
	int ret;

	fb->len = 0;
	for (i = locs->n; i-- > 0;) {
		size_t first = fb->len, a, b;

		ret = add_location(c, p, fb, locs->v[i]);
		if (ret)
			return ret;
		/* Lines are innermost first; we are building root first. */
		for (a = first, b = fb->len; a + 1 < b; a++, b--) {
			uint32_t t = fb->ids[a];

			fb->ids[a] = fb->ids[b - 1];
			fb->ids[b - 1] = t;
		}
	}
	if (fb->len > UINT32_MAX)
		return -EINVAL;
	return 0;
}

static int parse_sample(struct pp_ctx *c, struct profile *p, struct pb m, size_t value_idx,
			struct frames_buf *fb)
{
	struct loc_list locs = {.n = 0, .cap = 256};
	bool have_value = false;
	uint64_t value = 0;
	int ret;

	locs.v = locs.small;
	ret = sample_fields(m, value_idx, &locs, &value, &have_value);
	if (ret)
		goto out;
	/* int64 on the wire: a "negative" value is a huge uint64. */
	if (!have_value || (int64_t)value <= 0 || locs.n == 0)
		goto out;
	ret = sample_frames(c, p, &locs, fb);
	if (ret)
		goto out;
	ret = profile__add(p, fb->ids, (uint32_t)fb->len, value, 0, NULL, 0);
out:
	if (locs.v != locs.small)
		free(locs.v);
	return ret;
}

static int add_string(struct pp_ctx *c, struct pb s)
{
	int ret = grow((void **)&c->strs, &c->cap_strs, c->n_strs, sizeof(*c->strs));

	if (ret)
		return ret;
	c->strs[c->n_strs].s = (const char *)s.p;
	c->strs[c->n_strs].len = (size_t)(s.end - s.p);
	c->n_strs++;
	return 0;
}

/*
 * Pass 1: the tables samples refer to (they may come in any order), and a
 * count of the samples. Sorts the tables for lookup.
 */
static int read_tables(struct pp_ctx *c, const uint8_t *raw, size_t raw_len, size_t *n_samples)
{
	struct pb b = {.p = raw, .end = raw + raw_len}, sub;
	uint32_t field;
	uint64_t v;
	int wt, ret;

	while (b.p < b.end) {
		if (pb_field(&b, &field, &wt, &v, &sub)) {
			lp_errf(c->err, c->errsz,
				"not a pprof file: malformed protobuf at byte %zu of the inflated "
				"data",
				(size_t)(b.p - raw));
			return -EINVAL;
		}
		if (wt != WT_LEN)
			continue;
		ret = 0;
		switch (field) {
		case 1:
			ret = parse_value_type(c, sub);
			break;
		case 2:
			(*n_samples)++;
			break;
		case 4:
			ret = parse_location(c, sub);
			break;
		case 5:
			ret = parse_function(c, sub);
			break;
		case 6:
			ret = add_string(c, sub);
			break;
		}
		if (ret) {
			if (ret == -EINVAL)
				lp_errf(c->err, c->errsz,
					"not a pprof file: malformed message (field %u)", field);
			else
				lp_errf(c->err, c->errsz, "out of memory");
			return ret;
		}
	}
	/* qsort and bsearch want a real array even for zero elements. */
	if (c->n_funcs)
		qsort(c->funcs, c->n_funcs, sizeof(*c->funcs), cmp_func);
	if (c->n_locs)
		qsort(c->locs, c->n_locs, sizeof(*c->locs), cmp_loc);
	return 0;
}

/* The value to read: "samples" if present, else the last "cpu", else the first. */
static size_t pick_value_index(const struct pp_ctx *c)
{
	size_t i, value_idx = 0;

	for (i = 0; i < c->n_types; i++) {
		if (str_is(c, c->types[i], "samples"))
			return i;
		if (str_is(c, c->types[i], "cpu"))
			value_idx = i;
	}
	return value_idx;
}

/* Pass 2: the samples, into @p. */
static int read_samples(struct pp_ctx *c, struct profile *p, const uint8_t *raw, size_t raw_len,
			size_t value_idx)
{
	struct pb b = {.p = raw, .end = raw + raw_len}, sub;
	struct frames_buf fb = {0};
	uint32_t field;
	uint64_t v;
	int wt, ret = 0;

	while (b.p < b.end) {
		if (pb_field(&b, &field, &wt, &v, &sub))
			break; /* pass 1 walked the same bytes without error */
		if (field != 2 || wt != WT_LEN)
			continue;
		if (c->err && c->errsz)
			c->err[0] = '\0';
		ret = parse_sample(c, p, sub, value_idx, &fb);
		if (ret) {
			if (ret == -ENOMEM)
				lp_errf(c->err, c->errsz, "out of memory");
			else if (c->err && c->errsz && !c->err[0])
				lp_errf(c->err, c->errsz, "not a pprof file: malformed sample");
			break;
		}
	}
	free(fb.ids);
	free(fb.name);
	return ret;
}

int read_pprof(struct profile *p, const void *data, size_t len, char *err, size_t errsz)
{
	struct pp_ctx c = {.err = err, .errsz = errsz};
	size_t raw_len = 0, n_samples = 0;
	uint8_t *raw = NULL;
	int ret;

	if (err && errsz)
		err[0] = '\0';
	ret = pb_inflate(data, len, &raw, &raw_len, err, errsz);
	if (ret)
		return ret;
	ret = read_tables(&c, raw, raw_len, &n_samples);
	if (ret)
		goto out;
	if (!n_samples) {
		lp_errf(err, errsz, "not a pprof file, or an empty one: no samples");
		ret = -EINVAL;
		goto out;
	}
	ret = read_samples(&c, p, raw, raw_len, pick_value_index(&c));
out:
	free(c.strs);
	free(c.funcs);
	free(c.locs);
	free(c.types);
	free(raw);
	return ret;
}
