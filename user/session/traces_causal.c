// SPDX-License-Identifier: GPL-2.0
/*
 * traces_causal.c - what causal experiments need of a trace: its running
 * totals read straight from the BPF maps (windows shorter than the daemon's
 * one-second tick), and the delay its entry probes inject (causal.bpf.h).
 */
#include <errno.h>
#include <string.h>

#include "user/session/bpf_session.h"
#include "user/session/session_core.h"
#include "user/session/traces.h"
#include "user/session/traces_internal.h"

int traces__totals(struct traces *t, int i, struct trace_totals *out)
{
	const volatile struct lp_probe_stats *st;
	const volatile uint64_t *h;
	struct trace *tr;

	memset(out, 0, sizeof(*out));
	if (!t || i < 0 || i >= t->n)
		return -ENOENT;
	tr = t->v[i];
	st = bpf_session__probe_stats(t->c->bpf);
	h = bpf_session__hist(t->c->bpf);
	for (int k = 0; k < tr->n_ids; k++) {
		const volatile uint64_t *row = h + (size_t)tr->ids[k] * LP_HIST_BUCKETS;

		if (tr->info.kind == TRACE_LINE) {
			out->calls += st[tr->ids[k]].calls;
			continue;
		}
		out->calls += st[tr->ids[k]].untimed;
		for (uint32_t b = 0; b < LP_HIST_BUCKETS; b++) {
			uint64_t n = row[b];

			if (!n)
				continue;
			out->timed += n;
			/* Bucket middles: <= 0.8% off per call, the same in every
			 * window, so differences between windows keep their sign. */
			out->sum_ns += (double)n * (double)traces__bucket_value(b);
		}
	}
	out->calls += out->timed;
	return 0;
}

int traces__set_delay(struct traces *t, int i, uint64_t ns)
{
	struct trace *tr;
	int err = 0;

	if (!t || i < 0 || i >= t->n)
		return -ENOENT;
	tr = t->v[i];
	if (tr->info.kind != TRACE_FUNC)
		return -EINVAL;
	for (int k = 0; k < tr->n_ids; k++) {
		int r = bpf_session__set_causal_delay(t->c->bpf, tr->ids[k], ns);

		if (r)
			err = r;
	}
	return err;
}
