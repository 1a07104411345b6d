// SPDX-License-Identifier: GPL-2.0
/*
 * kallsyms.c - parse /proc/kallsyms once into a sorted array.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kallsyms.h"
#include "user/util/util.h"

#define LAST_SYM_SPAN 4096

/* /proc files report size 0: read until EOF into a growing buffer. */
static int slurp(const char *path, char **out, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap), *tmp;
	ssize_t r;
	int fd;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	for (;;) {
		if (cap - n < 65536) {
			tmp = realloc(buf, cap * 2);
			if (!tmp) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = tmp;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int err = -errno;

			free(buf);
			close(fd);
			return err;
		}
		if (r == 0)
			break;
		n += r;
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int kallsyms__load(const char *path, struct kallsyms **out)
{
	struct kallsyms *k;
	size_t len = 0, cap = 0, n = 0;
	struct ksym *syms = NULL, *tmp;
	char *text = NULL, *p, *end;
	bool any_nonzero = false;
	int err;

	*out = NULL;
	err = slurp(path, &text, &len);
	if (err)
		return err;
	k = calloc(1, sizeof(*k));
	if (!k) {
		free(text);
		return -ENOMEM;
	}
	for (p = text, end = text + len; p < end;) {
		char *nl = memchr(p, '\n', end - p), *addr_s, *type_s, *name, *mod = NULL;
		char *save = NULL;

		if (nl)
			*nl = '\0';
		addr_s = strtok_r(p, " \t", &save);
		type_s = strtok_r(NULL, " \t", &save);
		name = strtok_r(NULL, " \t", &save);
		if (name)
			mod = strtok_r(NULL, " \t", &save);
		p = nl ? nl + 1 : end;
		if (!addr_s || !type_s || !name)
			continue;
		/* text symbols only: t/T, and weak ones w/W that live in text */
		char ty = tolower((unsigned char)type_s[0]);

		if (ty != 't' && ty != 'w')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			tmp = realloc(syms, cap * sizeof(*syms));
			if (!tmp) {
				err = -ENOMEM;
				goto fail;
			}
			syms = tmp;
		}
		syms[n].addr = strtoull(addr_s, NULL, 16);
		syms[n].name = name;
		syms[n].module = mod && mod[0] == '[' ? mod : "[kernel]";
		if (syms[n].addr)
			any_nonzero = true;
		n++;
	}
	if (n && !any_nonzero) {
		err = -EPERM;
		goto fail;
	}
	qsort(syms, n, sizeof(*syms), ksym_cmp);
	k->syms = syms;
	k->n = n;
	k->text = text;
	*out = k;
	return 0;
fail:
	free(syms);
	free(text);
	free(k);
	return err;
}

const struct ksym *kallsyms__lookup(const struct kallsyms *k, uint64_t addr)
{
	size_t lo =
		lp_upper_bound(k->syms, k->n, sizeof(*k->syms), offsetof(struct ksym, addr), addr);

	if (!lo)
		return NULL;
	if (lo == k->n && addr - k->syms[lo - 1].addr >= LAST_SYM_SPAN)
		return NULL;
	return &k->syms[lo - 1];
}

void kallsyms__free(struct kallsyms *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->text);
	free(k);
}
