// SPDX-License-Identifier: GPL-2.0
/*
 * traces_lines.c - where a source line's instructions lie in a target's
 * memory, without probing it: the address ranges causal experiments watch
 * for samples (bpf/causal.bpf.h, line candidates).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/probe_resolve.h"
#include "user/session/traces.h"
#include "user/session/traces_internal.h"

int traces__line_ranges(struct traces *t, const char *spec, int pid, uint64_t *lo, uint64_t *hi,
			int max, char *err, size_t errlen)
{
	struct trace *tr = calloc(1, sizeof(*tr));
	struct binary_loc loc;
	struct probe_target pt;
	int r, n = 0;

	if (!tr) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	tr->by_index = -1;
	tr->spec_text = strdup(spec);
	r = tr->spec_text ? probe_spec_parse(spec, &tr->spec, err, errlen) : -ENOMEM;
	if (!r && tr->spec.kind != PROBE_SPEC_LINE) {
		snprintf(err, errlen, "'%s' is not a FILE:LINE spec", spec);
		r = -EINVAL;
	}
	if (!r) {
		r = traces_resolve_in(t, tr, pid, &loc, &pt, err, errlen);
		if (r == -EAGAIN)
			snprintf(err, errlen, "the library of '%s' is not loaded", spec);
	}
	if (!r) {
		for (size_t i = 0; i < pt.n_ranges && n < max; i++) {
			lo[n] = pt.ranges[i].lo + loc.bias;
			hi[n++] = pt.ranges[i].hi + loc.bias;
		}
		if (pt.n_ranges > (size_t)max) {
			snprintf(err, errlen, "%s has %zu address ranges, more than the %d watched",
				 spec, pt.n_ranges, max);
			r = -E2BIG;
		}
		probe_target_free(&pt);
	}
	trace_free(t, tr);
	return r ? r : n;
}
