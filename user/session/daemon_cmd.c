// SPDX-License-Identifier: GPL-2.0
/*
 * daemon_cmd.c - trace, untrace and split a running session.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "user/session/daemon.h"
#include "user/session/daemon_cmd.h"
#include "user/session/split.h"
#include "user/session/traces.h"

static int find_trace(struct traces *tr, const char *spec)
{
	for (int i = 0; tr && i < traces__count(tr); i++) {
		const struct trace_info *ti = traces__info(tr, i);

		if (!strcmp(ti->spec, spec) || (ti->func && !strcmp(ti->func, spec)))
			return i;
	}
	return -1;
}

static struct traces *ensure_traces(struct daemon *d)
{
	if (!d->traces)
		d->traces = traces__new(d);
	return d->traces;
}

int daemon__trace(struct daemon *d, const char *spec, char *msg, size_t len)
{
	char err[256] = "";
	int id;

	if (!spec[0]) {
		snprintf(msg, len, "nothing to trace");
		return -EINVAL;
	}
	if (!ensure_traces(d)) {
		snprintf(msg, len, "out of memory");
		return -ENOMEM;
	}
	if (find_trace(d->traces, spec) >= 0) {
		snprintf(msg, len, "'%s' is already traced", spec);
		return -EEXIST;
	}
	id = traces__add(d->traces, spec, err, sizeof(err));
	if (id < 0) {
		snprintf(msg, len, "%s", err[0] ? err : strerror(-id));
		return id;
	}
	snprintf(msg, len, "tracing '%s'", spec);
	return id;
}

void daemon__unsplit(struct daemon *d)
{
	split__free(d->split);
	d->split = NULL;
}

int daemon__untrace(struct daemon *d, const char *spec, char *msg, size_t len)
{
	int i = find_trace(d->traces, spec), err;

	if (i < 0) {
		snprintf(msg, len, "'%s' is not traced", spec);
		return -ENOENT;
	}
	/* The split holds the probe id: it cannot outlive its trace. */
	if (d->split && split__probe_id(d->split) == traces__info(d->traces, i)->id)
		daemon__unsplit(d);
	err = traces__remove(d->traces, traces__info(d->traces, i)->spec);
	if (err) {
		snprintf(msg, len, "cannot untrace '%s': %s", spec, strerror(-err));
		return err;
	}
	snprintf(msg, len, "untraced '%s'", spec);
	return 0;
}

int daemon__split(struct daemon *d, const char *func, double pct, char *msg, size_t len)
{
	char err[256] = "";
	struct split *s;
	int i, id;

	if (!(pct > 0 && pct < 100)) {
		snprintf(msg, len, "invalid percentile '%g' (between 0 and 100)", pct);
		return -EINVAL;
	}
	if (!func[0]) {
		snprintf(msg, len, "nothing to split");
		return -EINVAL;
	}
	if (!ensure_traces(d)) {
		snprintf(msg, len, "out of memory");
		return -ENOMEM;
	}
	/* Reuse a trace of the function rather than probing it twice. */
	i = find_trace(d->traces, func);
	id = i >= 0 ? traces__info(d->traces, i)->id
		    : traces__add(d->traces, func, err, sizeof(err));
	if (id < 0) {
		snprintf(msg, len, "%s", err[0] ? err : strerror(-id));
		return id;
	}
	if (d->split && split__probe_id(d->split) == id) {
		split__set_percentile(d->split, pct);
	} else {
		s = split__new(d, id, pct, -1);
		if (!s) {
			snprintf(msg, len, "cannot split '%s': out of memory", func);
			return -ENOMEM;
		}
		daemon__unsplit(d);
		d->split = s;
	}
	snprintf(msg, len, "splitting '%s' at p%g", func, pct);
	return 0;
}
