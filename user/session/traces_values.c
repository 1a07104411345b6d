// SPDX-License-Identifier: GPL-2.0
/*
 * traces_values.c - values captured at probes: formatting, counting, --by groups.
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

/* ---- captured values ---- */

void traces_format_value(const struct fetch_type *ty, const struct lp_value *v, char *buf,
			 size_t len)
{
	uint64_t u = v->u64;
	int64_t s;

	if (ty->size && ty->size < 8 && ty->kind != FETCH_STRING) {
		u &= (1ULL << (ty->size * 8)) - 1;
		s = ty->is_signed && (u >> (ty->size * 8 - 1))
			    ? (int64_t)(u | ~((1ULL << (ty->size * 8)) - 1))
			    : (int64_t)u;
	} else {
		s = (int64_t)u;
	}
	switch (ty->kind) {
	case FETCH_STRING: {
		char tmp[LP_STR_LEN + 1];
		size_t j = 0;

		for (size_t i = 0; i < LP_STR_LEN && v->str[i]; i++)
			tmp[j++] = (unsigned char)v->str[i] >= 0x20 && v->str[i] != 0x7f ? v->str[i]
											 : '?';
		tmp[j] = 0;
		snprintf(buf, len, "\"%s\"", tmp);
		break;
	}
	case FETCH_PTR:
		snprintf(buf, len, "0x%" PRIx64, u);
		break;
	case FETCH_ENUM:
		for (size_t i = 0; i < ty->n_enums; i++) {
			if (ty->enums[i].value == s) {
				snprintf(buf, len, "%s", ty->enums[i].name);
				return;
			}
		}
		snprintf(buf, len, "%" PRId64, s);
		break;
	case FETCH_CHAR:
		if (u >= 0x20 && u < 0x7f)
			snprintf(buf, len, "'%c'", (char)u);
		else
			snprintf(buf, len, "%" PRId64, s);
		break;
	case FETCH_BOOL:
		snprintf(buf, len, "%s", u ? "true" : "false");
		break;
	case FETCH_INT:
		snprintf(buf, len, "%" PRId64, s);
		break;
	default:
		snprintf(buf, len, "%" PRIu64, u);
	}
}

/* Distinct values kept per argument; the rest count as "(other)". */
#define MAX_DISTINCT_VALUES 4096

static uint64_t text_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* The slot of @text in vs->index: its entry's, or the empty one it would take. */
static size_t index_slot(const struct value_stats *vs, const char *text)
{
	size_t mask = vs->index_cap - 1, i = text_hash(text) & mask;

	while (vs->index[i] && strcmp(vs->vals[vs->index[i] - 1].text, text))
		i = (i + 1) & mask;
	return i;
}

/* Index vals[0, n) in a table at most half full. Return: 0 or -ENOMEM. */
static int reindex(struct value_stats *vs)
{
	size_t cap = 32;

	while (cap < 2 * (vs->n + 1))
		cap *= 2;
	if (cap != vs->index_cap) {
		uint32_t *ix = malloc(cap * sizeof(*ix));

		if (!ix)
			return -ENOMEM;
		free(vs->index);
		vs->index = ix;
		vs->index_cap = cap;
	}
	memset(vs->index, 0, vs->index_cap * sizeof(*vs->index));
	for (size_t k = 0; k < vs->n; k++)
		vs->index[index_slot(vs, vs->vals[k].text)] = (uint32_t)k + 1;
	vs->indexed = vs->n;
	return 0;
}

/* Count one more @text: a hash lookup, not a scan (a counter-like
 * argument has thousands of values, and hits come by the 10,000 a second). */
static void count_value(struct value_stats *vs, const char *text)
{
	size_t slot;

	if ((vs->indexed != vs->n || 2 * (vs->n + 1) > vs->index_cap) && reindex(vs))
		return;
	slot = index_slot(vs, text);
	if (!vs->index[slot] && vs->n >= MAX_DISTINCT_VALUES) {
		text = "(other)";
		slot = index_slot(vs, text);
	}
	if (vs->index[slot]) {
		vs->vals[vs->index[slot] - 1].count++;
		return;
	}
	if (vs->n == vs->cap) {
		size_t cap = vs->cap ? vs->cap * 2 : 16;
		struct value_count *n = realloc(vs->vals, cap * sizeof(*n));

		if (!n)
			return;
		vs->vals = n;
		vs->cap = cap;
	}
	snprintf(vs->vals[vs->n].text, sizeof(vs->vals[vs->n].text), "%s", text);
	vs->vals[vs->n++].count = 1;
	vs->index[slot] = (uint32_t)vs->n;
	vs->indexed = vs->n;
}

void traces__on_hit(struct traces *t, const struct lp_hit *h)
{
	int i = traces__find(t, h->probe_id);
	struct trace *tr;
	int first, n;

	if (i < 0)
		return;
	tr = t->v[i];
	first = h->at_return ? tr->n_entry_values : 0;
	n = h->at_return ? tr->n_values - tr->n_entry_values : tr->n_entry_values;
	for (int k = 0; k < n && k < (int)h->n_values && k < LP_MAX_VALUES; k++) {
		struct value_stats *vs = &tr->values[first + k];
		char buf[64];

		/* the --by value rides along but is not a user value */
		if (!h->at_return && k == tr->by_index && (size_t)tr->by_index >= tr->user_args)
			continue;
		if (h->fault_mask & (1ULL << k)) {
			vs->faults++;
			count_value(vs, "(fault)");
			continue;
		}
		traces_format_value(&vs->type, &h->values[k], buf, sizeof(buf));
		count_value(vs, buf);
	}
}

/* ---- --by ---- */

int traces_read_by_groups(struct traces *t, struct trace *tr, struct by_group **out)
{
	int fd = bpf_session__by_hist_fd(t->c->bpf), n = 0;
	struct lp_by_key key, next;
	struct by_group *g = NULL;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		uint64_t count;
		int j;

		key = next;
		prev = &key;
		if ((int)key.probe_id != tr->ids[0] || bpf_map_lookup_elem(fd, &key, &count))
			continue;
		for (j = 0; j < n && g[j].value != key.value; j++)
			;
		if (j == n) {
			struct by_group *ng;

			if (n >= 256) /* enough groups to print */
				continue;
			ng = realloc(g, (n + 1) * sizeof(*g));
			if (!ng)
				break;
			g = ng;
			g[n].value = key.value;
			g[n].calls = 0;
			g[n].hist = calloc(LP_HIST_BUCKETS, sizeof(uint64_t));
			if (!g[n].hist)
				break;
			n++;
		}
		if (key.bucket < LP_HIST_BUCKETS)
			g[j].hist[key.bucket] += count;
		g[j].calls += count;
	}
	*out = g;
	return n;
}
