// SPDX-License-Identifier: GPL-2.0
/*
 * read_folded.c - read folded stacks ("main;work;leaf 42" per line) into a
 * struct profile, and pick the right reader for a file.
 *
 * The count is what follows the LAST space of the line, because frame names
 * may contain spaces ("operator new(unsigned long)"). Errors name the line
 * and the byte column, so a user can jump straight to the problem.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/profile_read.h"
#include "user/util/util.h"

/* A profile file larger than this is certainly not something we should emit. */
#define PROFILE_MAX_FILE (1UL << 30)

/* Frame ids of the line being parsed; grows with the deepest stack seen. */
struct stack_buf {
	uint32_t *ids;
	size_t len, cap;
};

static int stack_push(struct stack_buf *s, uint32_t id)
{
	if (s->len == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		uint32_t *ids = realloc(s->ids, cap * sizeof(*ids));

		if (!ids)
			return -ENOMEM;
		s->ids = ids;
		s->cap = cap;
	}
	s->ids[s->len++] = id;
	return 0;
}

/* Intern one frame name given as a (pointer, length) slice of the input. */
static int64_t intern_name(struct profile *p, const char *s, size_t n, char **tmp, size_t *tmpcap)
{
	struct frame f = {0};

	if (n + 1 > *tmpcap) {
		char *t = realloc(*tmp, n + 1);

		if (!t)
			return -ENOMEM;
		*tmp = t;
		*tmpcap = n + 1;
	}
	memcpy(*tmp, s, n);
	(*tmp)[n] = '\0';
	f.name = *tmp;
	f.kind = FRAME_USER;
	return profile__intern_frame(p, &f);
}

/* Scratch space shared by the lines of one file. */
struct folded_ctx {
	struct profile *p;
	struct stack_buf st;
	char *tmp;
	size_t tmpcap;
	size_t lineno;
	char *err;
	size_t errsz;
};

/*
 * The count after the last space of @line[0..n): its value in @count and
 * where it starts in @sp. Return: 0 or -EINVAL with the message set.
 */
static int parse_count(struct folded_ctx *c, const char *line, size_t n, size_t *sp,
		       uint64_t *count)
{
	size_t s;

	for (s = n; s > 0 && line[s - 1] != ' '; s--)
		;
	if (s == 0 || s == n) {
		lp_errf(c->err, c->errsz,
			"bad folded line %zu, column %zu: expected a count after the last space",
			c->lineno, n + 1);
		return -EINVAL;
	}
	*count = 0;
	for (size_t i = s; i < n; i++) {
		unsigned d = (unsigned char)line[i] - '0';

		if (d > 9) {
			lp_errf(c->err, c->errsz,
				"bad folded line %zu, column %zu: the count '%.*s' is not a number",
				c->lineno, i + 1, (int)(n - s > 40 ? 40 : n - s), line + s);
			return -EINVAL;
		}
		if (*count > (UINT64_MAX - d) / 10) {
			lp_errf(c->err, c->errsz,
				"bad folded line %zu, column %zu: the count is too large",
				c->lineno, s + 1);
			return -EINVAL;
		}
		*count = *count * 10 + d;
	}
	*sp = s;
	return 0;
}

/* The frames of @line[0..n), ';'-separated, interned into c->st. */
static int parse_frames(struct folded_ctx *c, const char *line, size_t n)
{
	size_t start = 0;
	int ret;

	c->st.len = 0;
	for (size_t i = 0; i <= n; i++) {
		int64_t id;

		if (i < n && line[i] != ';')
			continue;
		if (i == start) {
			lp_errf(c->err, c->errsz,
				"bad folded line %zu, column %zu: empty frame name", c->lineno,
				i + 1);
			return -EINVAL;
		}
		id = intern_name(c->p, line + start, i - start, &c->tmp, &c->tmpcap);
		if (id < 0) {
			lp_errf(c->err, c->errsz, "cannot add a frame: %s", strerror((int)-id));
			return (int)id;
		}
		ret = stack_push(&c->st, (uint32_t)id);
		if (ret) {
			lp_errf(c->err, c->errsz, "out of memory");
			return ret;
		}
		start = i + 1;
	}
	if (c->st.len > UINT32_MAX) {
		lp_errf(c->err, c->errsz, "bad folded line %zu: stack too deep", c->lineno);
		return -EINVAL;
	}
	return 0;
}

/* One line, without its newline; blank lines add nothing. */
static int parse_line(struct folded_ctx *c, const char *line, size_t n)
{
	const char *z;
	uint64_t count;
	size_t i, sp;
	int ret;

	/* Tolerate CRLF files and editors that leave trailing blanks. */
	while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
		n--;
	/* A NUL means binary data: most likely a pprof that was not gzipped. */
	z = memchr(line, '\0', n);
	if (z) {
		lp_errf(c->err, c->errsz,
			"bad folded line %zu, column %zu: unexpected NUL byte (binary data? a "
			"pprof file must be gzip-compressed)",
			c->lineno, (size_t)(z - line) + 1);
		return -EINVAL;
	}
	for (i = 0; i < n && (line[i] == ' ' || line[i] == '\t'); i++)
		;
	if (i == n)
		return 0;
	ret = parse_count(c, line, n, &sp, &count);
	if (ret)
		return ret;
	/* Trailing blanks before the count belong to no frame. */
	n = sp - 1;
	while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
		n--;
	if (n == 0) {
		lp_errf(c->err, c->errsz,
			"bad folded line %zu, column 1: no frames before the count", c->lineno);
		return -EINVAL;
	}
	ret = parse_frames(c, line, n);
	/* A zero count is legal (diff tools write them) and adds nothing. */
	if (ret || !count)
		return ret;
	ret = profile__add(c->p, c->st.ids, (uint32_t)c->st.len, count, 0, NULL, 0);
	if (ret)
		lp_errf(c->err, c->errsz, "cannot add a stack: %s", strerror(-ret));
	return ret;
}

int read_folded(struct profile *p, const char *buf, size_t len, char *err, size_t errsz)
{
	struct folded_ctx c = {.p = p, .err = err, .errsz = errsz};
	size_t pos = 0;
	int ret = 0;

	while (pos < len && !ret) {
		const char *line = buf + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;

		pos += n + (nl ? 1 : 0);
		c.lineno++;
		ret = parse_line(&c, line, n);
	}
	free(c.st.ids);
	free(c.tmp);
	return ret;
}

/* Read a whole file into memory; *@out is malloc'd (plus a NUL) and owned by the caller. */
static int slurp(const char *path, char **out, size_t *len, char *err, size_t errsz)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	FILE *f;
	int ret = 0;

	if (!buf) {
		lp_errf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	f = fopen(path, "rb");
	if (!f) {
		ret = -errno;
		lp_errf(err, errsz, "cannot open '%s': %s", path, strerror(-ret));
		free(buf);
		return ret;
	}
	for (;;) {
		size_t got;

		if (n == cap) {
			char *nb;

			if (cap >= PROFILE_MAX_FILE) {
				lp_errf(err, errsz, "'%s' is larger than %lu MiB", path,
					PROFILE_MAX_FILE >> 20);
				ret = -EFBIG;
				break;
			}
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				lp_errf(err, errsz, "out of memory reading '%s'", path);
				ret = -ENOMEM;
				break;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			if (ferror(f)) {
				ret = -EIO;
				lp_errf(err, errsz, "cannot read '%s': %s", path, strerror(EIO));
			}
			break;
		}
	}
	fclose(f);
	if (ret) {
		free(buf);
		return ret;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

int profile_read_file(const char *path, struct profile **out, char *err, size_t errsz)
{
	char msg[PROFILE_READ_ERRSZ];
	struct profile *p;
	size_t len = 0;
	char *buf = NULL;
	int ret;

	ret = slurp(path, &buf, &len, err, errsz);
	if (ret)
		return ret;
	p = profile__new(path);
	if (!p) {
		free(buf);
		lp_errf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	msg[0] = '\0';
	/* gzip magic: pprof (liveprof's own and `go tool pprof -proto` are gzipped). */
	if (len >= 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b)
		ret = read_pprof(p, buf, len, msg, sizeof(msg));
	else
		ret = read_folded(p, buf, len, msg, sizeof(msg));
	free(buf);
	if (!ret && p->n_samples == 0) {
		snprintf(msg, sizeof(msg), "no samples");
		ret = -EINVAL;
	}
	if (ret) {
		lp_errf(err, errsz, "'%s': %s", path, msg);
		profile__free(p);
		return ret;
	}
	*out = p;
	return 0;
}
