// SPDX-License-Identifier: GPL-2.0
/*
 * probe_spec.c - parse --trace specs (FUNC, BIN:FUNC, FUNC+OFF, FILE:LINE, values).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include "dwarf/dwarf_aux.h"
#include "dwarf/probe_resolve.h"
#include "dwarf/probe_internal.h"
#include "user/util/util.h"

const char *probe_base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* ---- spec and expression parsing ---------------------------------- */

static const char *skip_ws(const char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return s;
}

static size_t parse_ident(const char *s, char *out, size_t outlen)
{
	size_t n = 0;

	if (!isalpha((unsigned char)s[0]) && s[0] != '_')
		return 0;
	while (isalnum((unsigned char)s[n]) || s[n] == '_')
		n++;
	if (n >= outlen)
		return 0;
	memcpy(out, s, n);
	out[n] = '\0';
	return n;
}

int probe_expr_parse(const char *text, struct probe_expr *out, char *err, size_t errlen)
{
	const char *s;
	size_t n, len;

	memset(out, 0, sizeof(*out));
	s = skip_ws(text);
	len = strlen(s);
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	if (!len || len >= sizeof(out->text)) {
		lp_errf(err, errlen, "bad expression '%s': %s", text, len ? "too long" : "empty");
		return -EINVAL;
	}
	memcpy(out->text, s, len);
	out->text[len] = '\0';
	s = out->text;

	while (*s == '*' || isspace((unsigned char)*s)) {
		if (*s == '*')
			out->n_deref++;
		s++;
	}
	n = parse_ident(s, out->base, sizeof(out->base));
	if (!n) {
		lp_errf(err, errlen, "bad expression '%s': expected a variable name at '%s'",
			out->text, s);
		return -EINVAL;
	}
	s = skip_ws(s + n);
	while (*s) {
		struct probe_step *st;

		if (out->n_steps >= PROBE_EXPR_MAX) {
			lp_errf(err, errlen, "bad expression '%s': more than %d steps", out->text,
				PROBE_EXPR_MAX);
			return -EINVAL;
		}
		st = &out->steps[out->n_steps];
		if (s[0] == '-' && s[1] == '>') {
			st->kind = PROBE_STEP_ARROW;
			s = skip_ws(s + 2);
		} else if (s[0] == '.') {
			st->kind = PROBE_STEP_DOT;
			s = skip_ws(s + 1);
		} else if (s[0] == '[') {
			char *end;
			long long v;

			errno = 0;
			v = strtoll(skip_ws(s + 1), &end, 0);
			end = (char *)skip_ws(end);
			if (errno || end == skip_ws(s + 1) || *end != ']') {
				lp_errf(err, errlen, "bad expression '%s': bad index at '%s'",
					out->text, s);
				return -EINVAL;
			}
			st->kind = PROBE_STEP_INDEX;
			st->index = v;
			out->n_steps++;
			s = skip_ws(end + 1);
			continue;
		} else {
			lp_errf(err, errlen, "bad expression '%s': unexpected '%s'", out->text, s);
			return -EINVAL;
		}
		n = parse_ident(s, st->field, sizeof(st->field));
		if (!n) {
			lp_errf(err, errlen, "bad expression '%s': expected a field name at '%s'",
				out->text, s);
			return -EINVAL;
		}
		out->n_steps++;
		s = skip_ws(s + n);
	}
	out->is_ret = strcmp(out->base, "ret") == 0;
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* Split "a, b[1], c" at top-level commas into the spec's args. */
static int parse_args(char *list, struct probe_spec *out, char *err, size_t errlen)
{
	char *start = list, *p;
	int depth = 0, ret;

	if (!*skip_ws(list))
		return 0;
	for (p = list;; p++) {
		if (*p == '[' || *p == '(')
			depth++;
		else if ((*p == ']' || *p == ')') && depth > 0)
			depth--;
		if (*p && (*p != ',' || depth))
			continue;
		if (out->n_args >= PROBE_MAX_ARGS) {
			lp_errf(err, errlen, "too many values: at most %d", PROBE_MAX_ARGS);
			return -EINVAL;
		}
		{
			char save = *p;

			*p = '\0';
			ret = probe_expr_parse(start, &out->args[out->n_args], err, errlen);
			*p = save;
		}
		if (ret)
			return ret;
		out->n_args++;
		if (!*p)
			break;
		start = p + 1;
	}
	return 0;
}

static int copy_str(char *dst, size_t dstlen, const char *src, size_t n)
{
	if (n >= dstlen)
		return -EINVAL;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

/* "FILE" or "LIB:FILE" (the part before ":LINE") into the spec. */
static int split_line_file(char *head, const char *line, struct probe_spec *out, char *err,
			   size_t errlen)
{
	char *lib = strrchr(head, ':'), *file = head;

	if (lib) {
		*lib = '\0';
		file = lib + 1;
		if (!*head || copy_str(out->binary, sizeof(out->binary), head, strlen(head))) {
			lp_errf(err, errlen, "bad binary name in '%s:%s:%s'", head, file, line);
			return -EINVAL;
		}
	}
	if (!*file || copy_str(out->file, sizeof(out->file), file, strlen(file))) {
		lp_errf(err, errlen, "bad file name in '%s:%s'", file, line);
		return -EINVAL;
	}
	return 0;
}

/*
 * The argument list is the parenthesis group that ends @buf (@len bytes):
 * parsed into @out and cut off. Searching from the right keeps Go names
 * such as "main.(*Server).handle" intact.
 */
static int cut_arg_list(char *buf, size_t len, struct probe_spec *out, char *err, size_t errlen)
{
	int depth = 0;
	size_t i = len;

	if (buf[len - 1] != ')')
		return 0;
	while (i-- > 0) {
		if (buf[i] == ')')
			depth++;
		else if (buf[i] == '(' && --depth == 0)
			break;
	}
	if (depth != 0 || i == (size_t)-1) {
		lp_errf(err, errlen, "bad probe spec '%s': unbalanced parentheses", buf);
		return -EINVAL;
	}
	/* "main.(*T)" alone is a name, not an argument list */
	if (i == 0 || buf[i - 1] == '.')
		return 0;
	buf[len - 1] = '\0';
	buf[i] = '\0';
	return parse_args(buf + i + 1, out, err, errlen);
}

/* "FUNC" or "FUNC+OFF", the end of a function spec, into @out. */
static int parse_func_offset(char *func, const char *text, struct probe_spec *out, char *err,
			     size_t errlen)
{
	char *plus = strrchr(func, '+');

	if (plus) {
		char *end;

		errno = 0;
		out->offset = strtoull(plus + 1, &end, 0);
		if (errno || end == plus + 1 || *end || plus[1] == '-') {
			lp_errf(err, errlen, "bad offset '%s' in probe spec '%s'", plus + 1, text);
			return -EINVAL;
		}
		out->has_offset = true;
		*plus = '\0';
	}
	if (!*func || strpbrk(func, " \t,")) {
		lp_errf(err, errlen, "bad function name '%s' in probe spec '%s'", func, text);
		return -EINVAL;
	}
	if (copy_str(out->func, sizeof(out->func), func, strlen(func))) {
		lp_errf(err, errlen, "function name too long in probe spec '%s'", text);
		return -EINVAL;
	}
	out->kind = PROBE_SPEC_FUNC;
	return 0;
}

int probe_spec_parse(const char *text, struct probe_spec *out, char *err, size_t errlen)
{
	char buf[PROBE_PATH_MAX + PROBE_NAME_MAX];
	char *head, *colon, *func;
	size_t len;
	int ret;

	memset(out, 0, sizeof(*out));
	text = skip_ws(text);
	len = strlen(text);
	while (len && isspace((unsigned char)text[len - 1]))
		len--;
	if (!len) {
		lp_errf(err, errlen, "empty probe spec");
		return -EINVAL;
	}
	if (len >= sizeof(buf)) {
		lp_errf(err, errlen, "probe spec too long");
		return -EINVAL;
	}
	memcpy(buf, text, len);
	buf[len] = '\0';
	head = buf;

	ret = cut_arg_list(buf, len, out, err, errlen);
	if (ret)
		return ret;
	len = strlen(head);
	while (len && isspace((unsigned char)head[len - 1]))
		head[--len] = '\0';

	colon = strrchr(head, ':');
	if (colon) {
		*colon = '\0';
		if (all_digits(colon + 1) && strpbrk(head, "./")) {
			long line = strtol(colon + 1, NULL, 10);

			if (line <= 0 || line > INT_MAX) {
				lp_errf(err, errlen, "bad line number in '%s:%s'", head, colon + 1);
				return -EINVAL;
			}
			ret = split_line_file(head, colon + 1, out, err, errlen);
			if (ret)
				return ret;
			out->kind = PROBE_SPEC_LINE;
			out->line = (int)line;
			return 0;
		}
		if (!*head || copy_str(out->binary, sizeof(out->binary), head, strlen(head))) {
			lp_errf(err, errlen, "bad binary name in probe spec '%s'", text);
			return -EINVAL;
		}
		func = colon + 1;
	} else {
		func = head;
	}
	return parse_func_offset(func, text, out, err, errlen);
}

bool probe_spec_binary_matches(const char *spec_binary, const char *mapped_path)
{
	const char *base;
	size_t n;

	if (!spec_binary || !*spec_binary || !mapped_path)
		return false;
	if (strchr(spec_binary, '/'))
		return strcmp(spec_binary, mapped_path) == 0;
	base = probe_base_name(mapped_path);
	n = strlen(spec_binary);
	if (strncmp(base, spec_binary, n) != 0)
		return false;
	return base[n] == '\0' || base[n] == '.' || base[n] == '-';
}
