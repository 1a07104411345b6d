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

static int parse_sample(struct pp_ctx *c, struct profile *p, struct pb m, size_t value_idx,
			struct frames_buf *fb)
{
	uint64_t locs_small[256], *locs = locs_small, value = 0, v;
	size_t n_locs = 0, cap_locs = 256, n_values = 0, i;
	bool have_value = false;
	uint32_t field;
	struct pb sub;
	int wt, ret = 0;

	while (m.p < m.end) {
		if (pb_field(&m, &field, &wt, &v, &sub)) {
			ret = -EINVAL;
			goto out;
		}
		if (field == 1 || field == 2) {
			/* Both packed (WT_LEN) and one-per-field encodings are legal. */
			struct pb one = sub;
			bool packed = wt == WT_LEN;

			if (!packed && wt != WT_VARINT)
				continue;
			while (packed ? one.p < one.end : true) {
				if (packed && pb_varint(&one, &v)) {
					ret = -EINVAL;
					goto out;
				}
				if (field == 2) {
					if (n_values++ == value_idx) {
						value = v;
						have_value = true;
					}
				} else {
					if (n_locs == cap_locs) {
						uint64_t *nl;

						if (cap_locs > SIZE_MAX / 2 / sizeof(*nl)) {
							ret = -ENOMEM;
							goto out;
						}
						nl = locs == locs_small
							     ? malloc(cap_locs * 2 * sizeof(*nl))
							     : realloc(locs,
								       cap_locs * 2 * sizeof(*nl));
						if (!nl) {
							ret = -ENOMEM;
							goto out;
						}
						if (locs == locs_small)
							memcpy(nl, locs_small, sizeof(locs_small));
						locs = nl;
						cap_locs *= 2;
					}
					locs[n_locs++] = v;
				}
				if (!packed)
					break;
			}
		}
	}
	/* int64 on the wire: a "negative" value is a huge uint64. */
	if (!have_value || (int64_t)value <= 0 || n_locs == 0)
		goto out;
	fb->len = 0;
	for (i = n_locs; i-- > 0;) {
		size_t first = fb->len, a, b;

		ret = add_location(c, p, fb, locs[i]);
		if (ret)
			goto out;
		/* Lines are innermost first; we are building root first. */
		for (a = first, b = fb->len; a + 1 < b; a++, b--) {
			uint32_t t = fb->ids[a];

			fb->ids[a] = fb->ids[b - 1];
			fb->ids[b - 1] = t;
		}
	}
	if (fb->len > UINT32_MAX) {
		ret = -EINVAL;
		goto out;
	}
	ret = profile__add(p, fb->ids, (uint32_t)fb->len, value, 0, NULL, 0);
out:
	if (locs != locs_small)
		free(locs);
	return ret;
}

int read_pprof(struct profile *p, const void *data, size_t len, char *err, size_t errsz)
{
	struct pp_ctx c = {.err = err, .errsz = errsz};
	struct frames_buf fb = {0};
	size_t raw_len = 0, value_idx = 0, i, n_samples = 0;
	uint8_t *raw = NULL;
	struct pb b, sub;
	uint32_t field;
	uint64_t v;
	int wt, ret;

	if (err && errsz)
		err[0] = '\0';
	ret = pb_inflate(data, len, &raw, &raw_len, err, errsz);
	if (ret)
		return ret;

	/* Pass 1: the tables samples refer to; they may come in any order. */
	b.p = raw;
	b.end = raw + raw_len;
	while (b.p < b.end) {
		if (pb_field(&b, &field, &wt, &v, &sub)) {
			lp_errf(err, errsz,
				"not a pprof file: malformed protobuf at byte %zu of the inflated "
				"data",
				(size_t)(b.p - raw));
			ret = -EINVAL;
			goto out;
		}
		if (wt != WT_LEN)
			continue;
		ret = 0;
		switch (field) {
		case 1:
			ret = parse_value_type(&c, sub);
			break;
		case 2:
			n_samples++;
			break;
		case 4:
			ret = parse_location(&c, sub);
			break;
		case 5:
			ret = parse_function(&c, sub);
			break;
		case 6:
			ret = grow((void **)&c.strs, &c.cap_strs, c.n_strs, sizeof(*c.strs));
			if (!ret) {
				c.strs[c.n_strs].s = (const char *)sub.p;
				c.strs[c.n_strs].len = (size_t)(sub.end - sub.p);
				c.n_strs++;
			}
			break;
		}
		if (ret) {
			if (ret == -EINVAL)
				lp_errf(err, errsz,
					"not a pprof file: malformed message (field %u)", field);
			else
				lp_errf(err, errsz, "out of memory");
			goto out;
		}
	}
	if (!n_samples) {
		lp_errf(err, errsz, "not a pprof file, or an empty one: no samples");
		ret = -EINVAL;
		goto out;
	}
	/* qsort and bsearch want a real array even for zero elements. */
	if (c.n_funcs)
		qsort(c.funcs, c.n_funcs, sizeof(*c.funcs), cmp_func);
	if (c.n_locs)
		qsort(c.locs, c.n_locs, sizeof(*c.locs), cmp_loc);
	for (i = 0; i < c.n_types; i++) {
		if (str_is(&c, c.types[i], "samples")) {
			value_idx = i;
			break;
		}
		if (str_is(&c, c.types[i], "cpu"))
			value_idx = i;
	}

	/* Pass 2: the samples. */
	b.p = raw;
	while (b.p < b.end) {
		if (pb_field(&b, &field, &wt, &v, &sub))
			break; /* pass 1 walked the same bytes without error */
		if (field != 2 || wt != WT_LEN)
			continue;
		if (err && errsz)
			err[0] = '\0';
		ret = parse_sample(&c, p, sub, value_idx, &fb);
		if (ret) {
			if (ret == -ENOMEM)
				lp_errf(err, errsz, "out of memory");
			else if (err && errsz && !err[0])
				lp_errf(err, errsz, "not a pprof file: malformed sample");
			goto out;
		}
	}
out:
	free(fb.ids);
	free(fb.name);
	free(c.strs);
	free(c.funcs);
	free(c.locs);
	free(c.types);
	free(raw);
	return ret;
}
