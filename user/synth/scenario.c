// SPDX-License-Identifier: GPL-2.0
/*
 * scenario.c - latency scenarios with ground truth, for checking the split:
 * parse the spec (scenario_write.c writes the C program).
 *
 * The format (also printed by `liveprof emit --help`), one statement a
 * line, '#' starts a comment, words are separated by blanks:
 *
 *   handler NAME [rate R] [threads N]  the function whose calls are split
 *   rate R                  calls per second per thread (0: back to back)
 *   threads N               threads calling the handler (default 1)
 *   duration SEC            how long the program runs (default: forever)
 *   fast PCT% DURATION      share of fast calls; CPU every call spends in
 *                           the handler itself
 *   slow PCT% ACTION [when arg > N]
 *                           share of slow calls and what they do on top
 *   slow when arg > N       the same with 5% and `call slow_path 1ms cpu`
 *
 *   ACTION: call FUNC DURATION [cpu|sleep|block]
 *                           FUNC spends DURATION on CPU (the default),
 *                           asleep, or blocked on a lock held elsewhere
 *           block LOCK DURATION    same as: call LOCK DURATION block
 *           sleep DURATION         same as: call slow_path DURATION sleep
 *
 * DURATION is a number with ns, us, ms or s. With "when arg > N" the handler
 * takes an argument and decides itself: fast calls get 0..N, slow calls
 * N+1..2N+1. Without it the argument is 0 or 1. PCT of fast and slow add up
 * to 100 (give one, the other is the rest). Example:
 *
 *   handler handle rate 2000
 *   fast 95% 50us
 *   slow 5% call slow_path 1ms cpu
 *
 * The program writes its ground truth when LIVEPROF_TRUTH=FILE is set: one
 * "latency_ns slow" line per call (slow is 0 or 1), measured with
 * CLOCK_MONOTONIC around each call, written when the program exits.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/profile_read.h"
#include "user/synth/scenario.h"

const char scenario_help[] =
	"Scenario spec (--scenario), one statement a line, '#' starts a comment:\n"
	"  handler NAME [rate R] [threads N]   the function whose calls are split (required)\n"
	"  rate R                 calls per second per thread (default 0: back to back)\n"
	"  threads N              threads calling the handler (default 1)\n"
	"  duration SEC           how long the program runs (default: forever)\n"
	"  fast PCT% DURATION     share of fast calls; CPU every call spends in the handler\n"
	"  slow PCT% ACTION [when arg > N]   share of slow calls and what they add:\n"
	"      call FUNC DURATION [cpu|sleep|block]   (cpu is the default)\n"
	"      block LOCK DURATION  |  sleep DURATION (in slow_path)\n"
	"  slow when arg > N      5% of calls, with `call slow_path 1ms cpu`\n"
	"  DURATION is a number with ns, us, ms or s. Example:\n"
	"      handler handle rate 2000\n"
	"      fast 95% 50us\n"
	"      slow 5% call slow_path 1ms cpu\n"
	"  With LIVEPROF_TRUTH=FILE the program writes one \"latency_ns slow\" line per\n"
	"  call to FILE when it exits (after its duration, or on SIGINT/SIGTERM);\n"
	"  LIVEPROF_TRUTH_TIMES=1 adds each call's CLOCK_MONOTONIC start in ns.\n";

#define MAX_TOKENS 16

struct token {
	const char *s;
	size_t len;
	size_t col; /* 1-based byte column */
};

struct parser {
	size_t line;
	char *err;
	size_t errsz;
};

static int perr(struct parser *ps, const struct token *t, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int perr(struct parser *ps, const struct token *t, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ps->err && ps->errsz)
		snprintf(ps->err, ps->errsz, "scenario line %zu, column %zu: %s", ps->line,
			 t ? t->col : 1, msg);
	return -EINVAL;
}

static bool tok_is(const struct token *t, const char *w)
{
	return t->len == strlen(w) && memcmp(t->s, w, t->len) == 0;
}

/* A token as a short printable string for messages. */
static const char *tok_str(const struct token *t, char *buf, size_t sz)
{
	size_t n = t->len < sz - 1 ? t->len : sz - 1, i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)t->s[i];

		buf[i] = c < 0x20 || c >= 0x7f ? '?' : (char)c;
	}
	buf[n] = '\0';
	return buf;
}

/* Parse the whole token as a number followed by @suffix_ok characters. */
static int tok_number(const struct token *t, double *v, const char **rest)
{
	char buf[64], *end;

	if (t->len == 0 || t->len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, t->s, t->len);
	buf[t->len] = '\0';
	/* strtod would take "inf", "nan" and hex: digits only. */
	if (!((buf[0] >= '0' && buf[0] <= '9') || buf[0] == '.'))
		return -EINVAL;
	errno = 0;
	*v = strtod(buf, &end);
	if (errno || end == buf || !isfinite(*v))
		return -EINVAL;
	*rest = t->s + (end - buf);
	return 0;
}

static int parse_plain(struct parser *ps, const struct token *t, const char *what, double max,
		       double *v)
{
	const char *rest;
	char b[64];

	if (tok_number(t, v, &rest) || rest != t->s + t->len || *v > max)
		return perr(ps, t, "%s must be a number from 0 to %g, not '%s'", what, max,
			    tok_str(t, b, sizeof(b)));
	return 0;
}

static int parse_pct(struct parser *ps, const struct token *t, double *v)
{
	const char *rest;
	char b[64];

	if (tok_number(t, v, &rest) || rest + 1 != t->s + t->len || *rest != '%' || *v > 100)
		return perr(ps, t, "expected a percentage such as '5%%', not '%s'",
			    tok_str(t, b, sizeof(b)));
	return 0;
}

/* A duration in microseconds. */
static int parse_duration(struct parser *ps, const struct token *t, double *us)
{
	static const struct {
		const char *unit;
		double us;
	} units[] = {{"ns", 1e-3}, {"us", 1}, {"ms", 1e3}, {"s", 1e6}};
	const char *rest;
	char b[64];
	size_t i, n;
	double v;

	if (!tok_number(t, &v, &rest)) {
		n = (size_t)(t->s + t->len - rest);
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			if (n == strlen(units[i].unit) && !memcmp(rest, units[i].unit, n)) {
				*us = v * units[i].us;
				if (*us > 60e6)
					return perr(
						ps, t,
						"a duration of more than 60 s is not a latency");
				return 0;
			}
		}
	}
	return perr(ps, t, "expected a duration such as '50us' or '1ms' (ns, us, ms, s), not '%s'",
		    tok_str(t, b, sizeof(b)));
}

static int parse_name(struct parser *ps, const struct token *t, char **out)
{
	char b[64], *c_name;
	bool clash;
	size_t i;

	for (i = 0; i < t->len; i++) {
		char c = t->s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
		      (i && c >= '0' && c <= '9')))
			return perr(ps, t, "'%s' is not a C identifier", tok_str(t, b, sizeof(b)));
	}
	if (t->len > 128)
		return perr(ps, t, "the name is too long");
	free(*out);
	*out = strndup(t->s, t->len);
	if (!*out)
		return -ENOMEM;
	/* The program is C: "sleep" or "main" would clash with libc or the runtime. */
	c_name = emit_sanitize(*out, emit_backend_c.rules);
	if (!c_name)
		return -ENOMEM;
	clash = strcmp(c_name, *out) != 0;
	free(c_name);
	if (clash)
		return perr(ps, t,
			    "'%s' clashes with C, its library or the program; choose "
			    "another name",
			    tok_str(t, b, sizeof(b)));
	return 0;
}

static int parse_uint_tok(struct parser *ps, const struct token *t, const char *what,
			  unsigned int max, unsigned int *v)
{
	double d;
	int ret = parse_plain(ps, t, what, max, &d);

	if (ret)
		return ret;
	if (d != floor(d) || d < 1)
		return perr(ps, t, "%s must be a whole number from 1 to %u", what, max);
	*v = (unsigned int)d;
	return 0;
}

/* "when arg > N" at tokens [i, i + 4). */
static int parse_when(struct parser *ps, const struct token *tk, size_t n, size_t i,
		      struct scenario *sc)
{
	double v;
	int ret;

	if (i + 4 != n || !tok_is(&tk[i + 1], "arg") || !tok_is(&tk[i + 2], ">"))
		return perr(ps, &tk[i], "expected 'when arg > N' at the end of the line");
	ret = parse_plain(ps, &tk[i + 3], "the threshold", 1e15, &v);
	if (ret)
		return ret;
	if (v != floor(v))
		return perr(ps, &tk[i + 3], "the threshold must be a whole number");
	sc->arg_over = (long long)v;
	return 0;
}

static int parse_slow(struct parser *ps, const struct token *tk, size_t n, struct scenario *sc,
		      bool *have_slow)
{
	size_t i = 1;
	char b[64];
	int ret;

	*have_slow = true;
	if (i < n && tk[i].len && tk[i].s[tk[i].len - 1] == '%') {
		ret = parse_pct(ps, &tk[i], &sc->slow_pct);
		if (ret)
			return ret;
		i++;
	} else {
		sc->slow_pct = 5;
	}
	if (i == n)
		return perr(ps, NULL,
			    "'slow' needs an action: call FUNC DURATION, block LOCK "
			    "DURATION or sleep DURATION");
	if (tok_is(&tk[i], "when")) {
		/* The shorthand: the default cause. */
		sc->wait = SCENARIO_CPU;
		sc->cause_us = 1000;
		return parse_when(ps, tk, n, i, sc);
	}
	if (tok_is(&tk[i], "call")) {
		if (i + 2 >= n)
			return perr(ps, &tk[i], "expected 'call FUNC DURATION [cpu|sleep|block]'");
		ret = parse_name(ps, &tk[i + 1], &sc->cause);
		if (!ret)
			ret = parse_duration(ps, &tk[i + 2], &sc->cause_us);
		if (ret)
			return ret;
		i += 3;
		sc->wait = SCENARIO_CPU;
		if (i < n && !tok_is(&tk[i], "when")) {
			if (tok_is(&tk[i], "cpu"))
				sc->wait = SCENARIO_CPU;
			else if (tok_is(&tk[i], "sleep"))
				sc->wait = SCENARIO_SLEEP;
			else if (tok_is(&tk[i], "block"))
				sc->wait = SCENARIO_BLOCK;
			else
				return perr(ps, &tk[i], "expected cpu, sleep or block, not '%s'",
					    tok_str(&tk[i], b, sizeof(b)));
			i++;
		}
	} else if (tok_is(&tk[i], "block")) {
		if (i + 2 >= n)
			return perr(ps, &tk[i], "expected 'block LOCK DURATION'");
		ret = parse_name(ps, &tk[i + 1], &sc->cause);
		if (!ret)
			ret = parse_duration(ps, &tk[i + 2], &sc->cause_us);
		if (ret)
			return ret;
		sc->wait = SCENARIO_BLOCK;
		i += 3;
	} else if (tok_is(&tk[i], "sleep")) {
		if (i + 1 >= n)
			return perr(ps, &tk[i], "expected 'sleep DURATION'");
		ret = parse_duration(ps, &tk[i + 1], &sc->cause_us);
		if (ret)
			return ret;
		sc->wait = SCENARIO_SLEEP;
		i += 2;
	} else {
		return perr(ps, &tk[i], "unknown action '%s' (call, block, sleep or when)",
			    tok_str(&tk[i], b, sizeof(b)));
	}
	if (i < n && tok_is(&tk[i], "when"))
		return parse_when(ps, tk, n, i, sc);
	if (i < n)
		return perr(ps, &tk[i], "unexpected '%s'", tok_str(&tk[i], b, sizeof(b)));
	return 0;
}

static int parse_line(struct parser *ps, const struct token *tk, size_t n, struct scenario *sc,
		      bool *have_fast, bool *have_slow)
{
	char b[64];
	size_t i;
	int ret;

	if (tok_is(&tk[0], "handler")) {
		if (n < 2)
			return perr(ps, &tk[0], "expected 'handler NAME'");
		ret = parse_name(ps, &tk[1], &sc->handler);
		for (i = 2; !ret && i < n; i += 2) {
			if (i + 1 >= n)
				return perr(ps, &tk[i], "'%s' needs a value",
					    tok_str(&tk[i], b, sizeof(b)));
			if (tok_is(&tk[i], "rate"))
				ret = parse_plain(ps, &tk[i + 1], "the rate", 1e7, &sc->rate);
			else if (tok_is(&tk[i], "threads"))
				ret = parse_uint_tok(ps, &tk[i + 1], "threads", 1024, &sc->threads);
			else
				return perr(ps, &tk[i], "expected 'rate' or 'threads', not '%s'",
					    tok_str(&tk[i], b, sizeof(b)));
		}
		return ret;
	}
	if (tok_is(&tk[0], "rate") || tok_is(&tk[0], "threads") || tok_is(&tk[0], "duration")) {
		if (n != 2)
			return perr(ps, n > 2 ? &tk[2] : &tk[0], "expected '%s' and one value",
				    tok_str(&tk[0], b, sizeof(b)));
		if (tok_is(&tk[0], "rate"))
			return parse_plain(ps, &tk[1], "the rate", 1e7, &sc->rate);
		if (tok_is(&tk[0], "duration"))
			return parse_plain(ps, &tk[1], "the duration", 1e7, &sc->seconds);
		return parse_uint_tok(ps, &tk[1], "threads", 1024, &sc->threads);
	}
	if (tok_is(&tk[0], "fast")) {
		if (n != 3)
			return perr(ps, n > 3 ? &tk[3] : &tk[0], "expected 'fast PCT%% DURATION'");
		*have_fast = true;
		ret = parse_pct(ps, &tk[1], &sc->fast_pct);
		return ret ? ret : parse_duration(ps, &tk[2], &sc->work_us);
	}
	if (tok_is(&tk[0], "slow"))
		return parse_slow(ps, tk, n, sc, have_slow);
	return perr(ps, &tk[0], "unknown keyword '%s'", tok_str(&tk[0], b, sizeof(b)));
}

int scenario_parse(struct scenario *sc, const char *buf, size_t len, char *err, size_t errsz)
{
	struct parser ps = {.err = err, .errsz = errsz};
	bool have_fast = false, have_slow = false;
	size_t pos = 0;
	int ret;

	memset(sc, 0, sizeof(*sc));
	sc->threads = 1;
	sc->arg_over = -1;
	sc->work_us = 50;
	while (pos < len) {
		const char *line = buf + pos, *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos, i = 0, ntok = 0;
		struct token tk[MAX_TOKENS];

		pos += n + (nl ? 1 : 0);
		ps.line++;
		while (i < n) {
			size_t start;

			while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
				i++;
			if (i == n || line[i] == '#')
				break;
			if (line[i] == '\0' || (unsigned char)line[i] < 0x20) {
				struct token bad = {line + i, 1, i + 1};

				return perr(&ps, &bad, "unexpected control character");
			}
			if (ntok == MAX_TOKENS) {
				struct token bad = {line + i, 1, i + 1};

				return perr(&ps, &bad, "too many words on one line");
			}
			start = i;
			while (i < n && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' &&
			       line[i] != '#' && (unsigned char)line[i] >= 0x20)
				i++;
			tk[ntok].s = line + start;
			tk[ntok].len = i - start;
			tk[ntok].col = start + 1;
			ntok++;
		}
		if (!ntok)
			continue;
		ret = parse_line(&ps, tk, ntok, sc, &have_fast, &have_slow);
		if (ret)
			return ret;
	}
	ps.line++;
	if (!sc->handler)
		return perr(&ps, NULL, "no 'handler NAME' line");
	if (!have_slow)
		return perr(&ps, NULL, "no 'slow' line: a scenario needs slow calls");
	if (!have_fast)
		sc->fast_pct = 100 - sc->slow_pct;
	if (fabs(sc->fast_pct + sc->slow_pct - 100) > 1e-9)
		return perr(&ps, NULL, "fast %g%% and slow %g%% do not add up to 100%%",
			    sc->fast_pct, sc->slow_pct);
	if (!(sc->slow_pct > 0))
		return perr(&ps, NULL, "slow calls must be more than 0%%");
	if (!sc->cause) {
		sc->cause = strdup("slow_path");
		if (!sc->cause)
			return -ENOMEM;
	}
	if (!strcmp(sc->cause, sc->handler))
		return perr(&ps, NULL, "the slow cause '%s' must not be the handler", sc->cause);
	return 0;
}

int scenario_read_file(struct scenario *sc, const char *path, char *err, size_t errsz)
{
	char msg[PROFILE_READ_ERRSZ];
	size_t cap = 4096, len = 0, got;
	char *buf;
	FILE *f;
	int ret;

	f = fopen(path, "r");
	if (!f) {
		ret = -errno;
		snprintf(err, errsz, "cannot open '%s': %s", path, strerror(-ret));
		return ret;
	}
	buf = malloc(cap);
	if (!buf) {
		fclose(f);
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
		len += got;
		if (len == cap) {
			char *nb;

			/* A scenario is a few lines: refuse anything huge. */
			if (cap >= (1 << 20)) {
				fclose(f);
				free(buf);
				snprintf(err, errsz, "'%s' is too large for a scenario", path);
				return -EINVAL;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				fclose(f);
				free(buf);
				snprintf(err, errsz, "out of memory");
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
	}
	ret = ferror(f) ? -EIO : 0;
	fclose(f);
	if (ret) {
		free(buf);
		snprintf(err, errsz, "cannot read '%s': %s", path, strerror(EIO));
		return ret;
	}
	msg[0] = '\0';
	ret = scenario_parse(sc, buf, len, msg, sizeof(msg));
	free(buf);
	if (ret)
		snprintf(err, errsz, "'%s': %s", path, msg[0] ? msg : "out of memory");
	return ret;
}

void scenario_free(struct scenario *sc)
{
	free(sc->handler);
	free(sc->cause);
	memset(sc, 0, sizeof(*sc));
}
