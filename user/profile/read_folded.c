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

int read_folded(struct profile *p, const char *buf, size_t len, char *err, size_t errsz)
{
	struct stack_buf st = {0};
	char *tmp = NULL;
	size_t tmpcap = 0;
	size_t pos = 0, lineno = 0;
	int ret = 0;

	while (pos < len) {
		const char *line = buf + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;
		size_t sp, i, start;
		uint64_t count = 0;
		const char *z;

		pos += n + (nl ? 1 : 0);
		lineno++;
		/* Tolerate CRLF files and editors that leave trailing blanks. */
		while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
			n--;
		/* A NUL means binary data: most likely a pprof that was not gzipped. */
		z = memchr(line, '\0', n);
		if (z) {
			lp_errf(err, errsz,
				"bad folded line %zu, column %zu: unexpected NUL byte (binary "
				"data? "
				"a pprof file must be gzip-compressed)",
				lineno, (size_t)(z - line) + 1);
			ret = -EINVAL;
			goto out;
		}
		for (i = 0; i < n && (line[i] == ' ' || line[i] == '\t'); i++)
			;
		if (i == n)
			continue;

		for (sp = n; sp > 0 && line[sp - 1] != ' '; sp--)
			;
		if (sp == 0 || sp == n) {
			lp_errf(err, errsz,
				"bad folded line %zu, column %zu: expected a count after the last "
				"space",
				lineno, n + 1);
			ret = -EINVAL;
			goto out;
		}
		for (i = sp; i < n; i++) {
			unsigned d = (unsigned char)line[i] - '0';

			if (d > 9) {
				lp_errf(err, errsz,
					"bad folded line %zu, column %zu: the count '%.*s' is not "
					"a "
					"number",
					lineno, i + 1, (int)(n - sp > 40 ? 40 : n - sp), line + sp);
				ret = -EINVAL;
				goto out;
			}
			if (count > (UINT64_MAX - d) / 10) {
				lp_errf(err, errsz,
					"bad folded line %zu, column %zu: the count is too large",
					lineno, sp + 1);
				ret = -EINVAL;
				goto out;
			}
			count = count * 10 + d;
		}

		/* Trailing blanks before the count belong to no frame. */
		n = sp - 1;
		while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
			n--;
		if (n == 0) {
			lp_errf(err, errsz,
				"bad folded line %zu, column 1: no frames before the count",
				lineno);
			ret = -EINVAL;
			goto out;
		}
		st.len = 0;
		start = 0;
		for (i = 0; i <= n; i++) {
			int64_t id;

			if (i < n && line[i] != ';')
				continue;
			if (i == start) {
				lp_errf(err, errsz,
					"bad folded line %zu, column %zu: empty frame name", lineno,
					i + 1);
				ret = -EINVAL;
				goto out;
			}
			id = intern_name(p, line + start, i - start, &tmp, &tmpcap);
			if (id < 0) {
				ret = (int)id;
				lp_errf(err, errsz, "cannot add a frame: %s", strerror(-ret));
				goto out;
			}
			ret = stack_push(&st, (uint32_t)id);
			if (ret) {
				lp_errf(err, errsz, "out of memory");
				goto out;
			}
			start = i + 1;
		}
		if (st.len > UINT32_MAX) {
			lp_errf(err, errsz, "bad folded line %zu: stack too deep", lineno);
			ret = -EINVAL;
			goto out;
		}
		/* A zero count is legal (diff tools write them) and adds nothing. */
		if (!count)
			continue;
		ret = profile__add(p, st.ids, (uint32_t)st.len, count, 0, NULL, 0);
		if (ret) {
			lp_errf(err, errsz, "cannot add a stack: %s", strerror(-ret));
			goto out;
		}
	}
out:
	free(st.ids);
	free(tmp);
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
