// SPDX-License-Identifier: GPL-2.0
/*
 * split.c - join samples with the latency of the call they were taken in.
 *
 * Held samples: call id -> the (stack id, count, weight) entries taken
 * while that call was in flight. When the call ends they move, with its
 * latency, into a log of sampled calls; classes are computed from the
 * log on demand against the current pNN threshold (split_compute.c) and
 * printed by split_print.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/session/split.h"
#include "user/profile/stack_symbols.h"
#include "user/session/session_core.h"
#include "user/session/split_rank.h"
#include "user/session/traces.h"
#include "user/util/util.h"
#include "user/session/split_internal.h"

struct split *split__new(struct traces *traces, struct stack_symbols *symbols, int window_s,
			 int probe_id, double pct, int when_line)
{
	struct split *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->traces = traces;
	s->symbols = symbols;
	s->window_s = window_s > 0 ? window_s : 10;
	s->probe_id = probe_id;
	s->pct = pct;
	s->when_line = when_line;
	s->held_cap = 1024;
	s->held = calloc(s->held_cap, sizeof(*s->held));
	if (!s->held) {
		free(s);
		return NULL;
	}
	return s;
}

void split__free(struct split *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->held_cap; i++)
		free(s->held[i].e);
	free(s->held);
	free(s->done);
	free(s->pool);
	free(s);
}

double split__percentile(const struct split *s)
{
	return s->pct;
}

int split__probe_id(const struct split *s)
{
	return s->probe_id;
}

void split__set_window(struct split *s, int seconds)
{
	if (seconds > 0)
		s->window_s = seconds;
}

void split__set_percentile(struct split *s, double pct)
{
	if (pct > 0 && pct < 100)
		s->pct = pct;
}

static size_t held_slot(const struct split *s, uint64_t call_id)
{
	size_t i = (call_id * 0x9e3779b97f4a7c15ULL >> 17) & (s->held_cap - 1);

	while (s->held[i].call_id && s->held[i].call_id != call_id)
		i = (i + 1) & (s->held_cap - 1);
	return i;
}

/* Remove slot @i and re-seat the run after it (linear probing delete). */
static void held_remove(struct split *s, size_t i)
{
	size_t j = i;

	s->held_entries -= s->held[i].n;
	free(s->held[i].e);
	memset(&s->held[i], 0, sizeof(s->held[i]));
	s->held_n--;
	for (;;) {
		struct held_call tmp;
		size_t k;

		j = (j + 1) & (s->held_cap - 1);
		if (!s->held[j].call_id)
			break;
		tmp = s->held[j];
		memset(&s->held[j], 0, sizeof(s->held[j]));
		k = held_slot(s, tmp.call_id);
		s->held[k] = tmp;
	}
}

static int held_grow(struct split *s)
{
	struct held_call *old = s->held;
	size_t old_cap = s->held_cap;

	s->held = calloc(old_cap * 2, sizeof(*s->held));
	if (!s->held) {
		s->held = old;
		return -ENOMEM;
	}
	s->held_cap = old_cap * 2;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].call_id)
			s->held[held_slot(s, old[i].call_id)] = old[i];
	free(old);
	return 0;
}

void split__on_sample(struct split *s, uint32_t stack_id, const struct lp_sample *ev,
		      uint64_t count)
{
	const struct lp_call_tag *tag = NULL;
	struct held_call *h;
	size_t i;

	/* The outermost call of the split function is the request whose
	 * latency the sample explains (inner recursive calls are part of it). */
	for (unsigned int k = 0; k < ev->n_calls && k < LP_MAX_CALLS; k++) {
		if ((int)ev->calls[k].probe_id == s->probe_id) {
			tag = &ev->calls[k];
			break;
		}
	}
	if (!tag)
		return;
	if (s->held_entries >= HELD_MAX_ENTRIES) {
		s->dropped++;
		return;
	}
	if ((s->held_n + 1) * 2 > s->held_cap && held_grow(s)) {
		s->dropped++;
		return;
	}
	i = held_slot(s, tag->call_id);
	h = &s->held[i];
	if (!h->call_id) {
		h->call_id = tag->call_id;
		h->first_ns = ev->time_ns;
		s->held_n++;
	}
	if (h->n == h->cap) {
		uint32_t cap = h->cap ? h->cap * 2 : 4;
		struct entry *e = realloc(h->e, cap * sizeof(*e));

		if (!e) {
			s->dropped++;
			return;
		}
		h->e = e;
		h->cap = cap;
	}
	h->e[h->n++] = (struct entry){stack_id, (uint32_t)count, ev->weight_ns, ev->time_ns};
	s->held_entries++;
}

static int log_call(struct split *s, const struct held_call *h, const struct lp_call_end *e)
{
	struct done_call *dc;

	if (s->n_done == s->cap_done) {
		size_t cap = s->cap_done ? s->cap_done * 2 : 1024;
		struct done_call *n = realloc(s->done, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->done = n;
		s->cap_done = cap;
	}
	if (s->n_pool + h->n > s->cap_pool) {
		uint64_t cap = (s->cap_pool ? s->cap_pool * 2 : 4096) + h->n;
		struct entry *n = realloc(s->pool, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->pool = n;
		s->cap_pool = cap;
	}
	memcpy(s->pool + s->n_pool, h->e, h->n * sizeof(*h->e));
	dc = &s->done[s->n_done++];
	dc->latency_ns = e->latency_ns;
	dc->overhead_ns = e->overhead_ns;
	dc->start_ns = e->start_ns;
	dc->end_ns = e->start_ns + e->latency_ns;
	dc->first = s->n_pool;
	dc->n = h->n;
	dc->flags = e->flags;
	s->n_pool += h->n;
	return 0;
}

void split__on_call_end(struct split *s, const struct lp_call_end *e)
{
	size_t i;

	if ((int)e->probe_id != s->probe_id)
		return;
	i = held_slot(s, e->call_id);
	if (!s->held[i].call_id)
		return; /* an inner recursive call, or its samples were dropped */
	if (s->when_line >= 0 && !(e->flags & LP_CF_LINE_HIT))
		s->filtered++;
	else if (log_call(s, &s->held[i], e))
		s->dropped += s->held[i].n;
	held_remove(s, i);
}

void split__tick(struct split *s, uint64_t now_ns)
{
	/* Calls that never returned (thread died, target killed) expire. */
	for (size_t i = 0; i < s->held_cap; i++) {
		if (s->held[i].call_id && now_ns - s->held[i].first_ns > ORPHAN_AFTER_NS) {
			s->orphans++;
			held_remove(s, i);
			i = (size_t)-1; /* the table moved: rescan */
		}
	}
}

void split__stats(const struct split *s, uint64_t *held, uint64_t *orphans, uint64_t *dropped)
{
	*held = s->held_entries;
	*orphans = s->orphans;
	*dropped = s->dropped;
}

void split__remap_stacks(struct split *s, const uint32_t *map, size_t n_map)
{
	for (uint64_t i = 0; i < s->n_pool; i++)
		if (s->pool[i].stack_id < n_map && map[s->pool[i].stack_id])
			s->pool[i].stack_id = map[s->pool[i].stack_id] - 1;
	for (size_t i = 0; i < s->held_cap; i++)
		for (uint32_t k = 0; s->held[i].call_id && k < s->held[i].n; k++)
			if (s->held[i].e[k].stack_id < n_map && map[s->held[i].e[k].stack_id])
				s->held[i].e[k].stack_id = map[s->held[i].e[k].stack_id] - 1;
}
