// SPDX-License-Identifier: GPL-2.0
/*
 * write_folded.c - Brendan Gregg's collapsed stack format.
 *
 * Lines are sorted as whole strings without building them: the comparator
 * walks two stacks as if their names were joined with ';', which is what
 * flamegraph.pl and friends expect, and costs no memory per stack.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/writers.h"

#define KERNEL_SUFFIX "_[k]"
#define INLINE_SUFFIX "_[i]" /* as stackcollapse-perf.pl --inline; flamegraph.pl colours it */

bool writer__sample_offcpu(const struct profile *p, const struct profile_sample *s)
{
	const char *state = profile__label(s, WRITER_LABEL_STATE);

	if (state && strcmp(state, WRITER_STATE_OFFCPU) == 0)
		return true;
	for (uint32_t d = 0; d < s->depth; d++) {
		const struct frame *f = &p->frames[s->frames[d]];

		if (f->kind == FRAME_MARKER &&
		    strncmp(f->name, WRITER_OFFCPU_MARKER, strlen(WRITER_OFFCPU_MARKER)) == 0)
			return true;
	}
	return false;
}

size_t writer__frame_name(const struct frame *f, char *buf, size_t size)
{
	const char *name = *f->name ? f->name : "[unknown]";
	const char *suffix = f->kind == FRAME_KERNEL ? KERNEL_SUFFIX
			     : f->inlined	     ? INLINE_SUFFIX
						     : "";
	size_t n = 0;

	for (const char *s = name; *s; s++, n++) {
		unsigned char c = *s;

		/* ';' separates frames and '\n' lines: neither may leak from a name. */
		if (c == ';')
			c = ':';
		else if (c < 0x20 || c == 0x7f)
			c = '?';
		if (n + 1 < size)
			buf[n] = c;
	}
	for (const char *s = suffix; *s; s++, n++)
		if (n + 1 < size)
			buf[n] = *s;
	if (size)
		buf[n < size ? n : size - 1] = '\0';
	return n;
}

struct fold_ctx {
	const struct profile *p;
	char **names;
	size_t *lens;
};

static int stack_cmp(const void *a, const void *b, void *arg)
{
	const struct fold_ctx *c = arg;
	const struct profile_sample *sa = &c->p->samples[*(const size_t *)a];
	const struct profile_sample *sb = &c->p->samples[*(const size_t *)b];

	for (uint32_t d = 0;; d++) {
		bool ea = d >= sa->depth, eb = d >= sb->depth;
		uint32_t fa, fb;
		size_t la, lb;
		int r;

		if (ea || eb)
			return ea && eb ? 0 : ea ? -1 : 1;
		fa = sa->frames[d];
		fb = sb->frames[d];
		if (fa == fb)
			continue;
		la = c->lens[fa];
		lb = c->lens[fb];
		r = memcmp(c->names[fa], c->names[fb], la < lb ? la : lb);
		if (r)
			return r;
		if (la == lb)
			continue;
		/*
		 * One name is a prefix of the other: the shorter one is followed
		 * by ';' or by the end of its line. Names hold no ';', so the two
		 * next characters always differ.
		 */
		if (la < lb) {
			int ca = d + 1 < sa->depth ? ';' : -1;

			return ca < (unsigned char)c->names[fb][la] ? -1 : 1;
		} else {
			int cb = d + 1 < sb->depth ? ';' : -1;

			return (unsigned char)c->names[fa][lb] < cb ? -1 : 1;
		}
	}
}

static int folded(const struct profile *p, FILE *out, bool weighted)
{
	struct fold_ctx c = {.p = p};
	size_t *order = NULL, total = 0, i, j;
	char *buf = NULL;
	int err = 0;

	if (!p->n_samples)
		return 0;
	c.names = calloc(p->n_frames, sizeof(*c.names));
	c.lens = calloc(p->n_frames, sizeof(*c.lens));
	order = malloc(p->n_samples * sizeof(*order));
	if (!c.names || !c.lens || !order) {
		err = -ENOMEM;
		goto out;
	}
	/* All display names in one buffer: one pass to size it, one to fill it. */
	for (i = 0; i < p->n_frames; i++) {
		c.lens[i] = writer__frame_name(&p->frames[i], NULL, 0);
		total += c.lens[i] + 1;
	}
	buf = malloc(total ? total : 1);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0, total = 0; i < p->n_frames; i++) {
		c.names[i] = buf + total;
		writer__frame_name(&p->frames[i], c.names[i], c.lens[i] + 1);
		total += c.lens[i] + 1;
	}
	for (i = 0; i < p->n_samples; i++)
		order[i] = i;
	qsort_r(order, p->n_samples, sizeof(*order), stack_cmp, &c);

	for (i = 0; i < p->n_samples; i = j) {
		const struct profile_sample *s = &p->samples[order[i]];
		uint64_t v = 0;

		for (j = i; j < p->n_samples && stack_cmp(&order[i], &order[j], &c) == 0; j++)
			v += weighted ? p->samples[order[j]].weight_ns : p->samples[order[j]].count;
		if (!v)
			continue;
		for (uint32_t d = 0; d < s->depth; d++) {
			if (d)
				fputc(';', out);
			fwrite(c.names[s->frames[d]], 1, c.lens[s->frames[d]], out);
		}
		fprintf(out, " %llu\n", (unsigned long long)v);
	}
	if (fflush(out) || ferror(out))
		err = -EIO;
out:
	free(buf);
	free(order);
	free(c.names);
	free(c.lens);
	return err;
}

int write_folded(const struct profile *p, FILE *out)
{
	return folded(p, out, false);
}

int write_folded_weighted(const struct profile *p, FILE *out)
{
	return folded(p, out, true);
}

/* Length of the valid UTF-8 sequence at @s, 0 if there is none. */
static size_t utf8_seq(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and values past U+10FFFF are invalid too. */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

char *writer__clean_utf8(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len = strlen(s), o = 0;
	/* Each bad byte becomes U+FFFD: 3 bytes. */
	char *out = malloc(len * 3 + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq(u + i);

		if (!n) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		} else if (n == 1 && (u[i] < 0x20 || u[i] == 0x7f)) {
			out[o++] = '?';
			i++;
		} else {
			memcpy(out + o, u + i, n);
			o += n;
			i += n;
		}
	}
	out[o] = '\0';
	return out;
}
