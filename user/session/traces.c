// SPDX-License-Identifier: GPL-2.0
/*
 * traces.c - --trace: the set of traces, their lifecycle and probe ids.
 *
 * A trace owns one or more probe ids: a function trace has one; a line
 * trace has one per address when it captures values (each address may
 * keep the variable somewhere else), otherwise one for all its
 * addresses. Resolving and attaching is in traces_attach.c, probe cost
 * in traces_cost.c, latency histograms in traces_hist.c, captured values
 * in traces_values.c and the printed and JSON summaries in traces_print.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include "dwarf/elf_symtab.h"
#include "dwarf/fetch_compile.h"
#include "dwarf/probe_resolve.h"
#include "dwarf/proc_maps.h"
#include "user/session/bpf_session.h"
#include "user/session/session_core.h"
#include "user/util/log.h"
#include "user/session/traces.h"
#include "user/session/traces_internal.h"
#include "user/util/util.h"

const struct session_core *traces__core(const struct traces *t)
{
	return t->c;
}

struct traces *traces__new(struct session_core *c, int window_s)
{
	struct traces *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->c = c;
	t->n_slots = window_s > 0 ? window_s : 10;
	t->last_tick_ns = lp_now_ns();
	return t;
}

void traces_detach(struct traces *t, struct trace *tr)
{
	for (int i = 0; i < tr->n_links; i++)
		bpf_session__detach(t->c->bpf, tr->links[i]);
	tr->n_links = 0;
	tr->info.detached = true;
}

void trace_free(struct traces *t, struct trace *tr)
{
	if (!tr)
		return;
	traces_detach(t, tr);
	traces_usdt_free(t, tr);
	for (int i = 0; i < tr->n_ids; i++) {
		bpf_session__clear_probe(t->c->bpf, tr->ids[i]);
		t->id_used[tr->ids[i]] = false;
	}
	for (int i = 0; i < tr->n_values; i++) {
		fetch_type_free(&tr->values[i].type);
		free(tr->values[i].vals);
		free(tr->values[i].index);
	}
	free(tr->links);
	free(tr->prev);
	free(tr->slots);
	free(tr->untimed_slots);
	free(tr->spec_text);
	free(tr->func_name);
	free(tr->binary);
	free(tr);
}

void traces__free(struct traces *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n; i++)
		trace_free(t, t->v[i]);
	free(t->v);
	free(t->verdicts);
	free(t);
}

int traces_alloc_id(struct traces *t)
{
	for (int i = 0; i < LP_MAX_PROBES; i++) {
		if (!t->id_used[i]) {
			t->id_used[i] = true;
			bpf_session__clear_probe(t->c->bpf, i);
			return i;
		}
	}
	return -ENOSPC;
}
