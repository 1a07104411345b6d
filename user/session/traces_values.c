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

static bool count_known(struct value_stats *vs, const char *text)
{
	for (size_t i = 0; i < vs->n; i++) {
		if (!strcmp(vs->vals[i].text, text)) {
			vs->vals[i].count++;
			return true;
		}
	}
	return false;
}

static void count_value(struct value_stats *vs, const char *text)
{
	if (count_known(vs, text))
		return;
	/* Bound the table: past 4096 distinct values the rest is one
	 * "(other)" (it was a new "(other)" per value: a table, and a scan
	 * per hit, that grew with every hit of a counter-like argument). */
	if (vs->n >= 4096) {
		text = "(other)";
		if (count_known(vs, text))
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
