// SPDX-License-Identifier: GPL-2.0
/*
 * serve_state.c - GET /api/state: what the web UI draws, as JSON. The
 * flamegraphs go as trees of {n: name, v: value, c: children} pruned
 * below FLAME_MIN_SHARE of the total, so a page update stays small
 * whatever the number of stacks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "bpf/liveprof.h"
#include "user/profile/writers.h"
#include "user/serve/serve_internal.h"
#include "user/session/alloc.h"
#include "user/session/report.h"
#include "user/session/split.h"
#include "user/session/split_rank.h"
#include "user/session/traces.h"
#include "user/util/util.h"

#define FLAME_MIN_SHARE 0.001 /* frames under 0.1% of the total are not sent */
#define FLAME_MAX_DEPTH 256
#define RANK_ROWS	30

struct fnode {
	uint32_t frame; /* frame id in the profile */
	uint64_t value;
	int32_t child, next; /* first child, next sibling; -1: none */
};

struct ftree {
	struct fnode *v;
	size_t n, cap;
};

static int32_t fnode_new(struct ftree *t, uint32_t frame)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct fnode *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -1;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n] = (struct fnode){frame, 0, -1, -1};
	return (int32_t)t->n++;
}

/* Frames at different addresses of one function are one box: same name. */
static int32_t child_of(const struct profile *p, struct ftree *t, int32_t parent, uint32_t frame)
{
	const struct frame *f = &p->frames[frame];
	int32_t c, k;

	for (c = t->v[parent].child; c >= 0; c = t->v[c].next) {
		const struct frame *g = &p->frames[t->v[c].frame];

		if (g->name == f->name && g->kind == f->kind)
			return c;
	}
	k = fnode_new(t, frame);
	if (k < 0)
		return -1;
	t->v[k].next = t->v[parent].child; /* t->v may have moved */
	t->v[parent].child = k;
	return k;
}

static json_t *fnode_json(const struct profile *p, const struct ftree *t, int32_t i, uint64_t min,
			  int depth)
{
	json_t *o, *kids;
	char name[512];

	if (i == 0)
		snprintf(name, sizeof(name), "all");
	else
		writer__frame_name(&p->frames[t->v[i].frame], name, sizeof(name));
	o = json_pack("{s:s,s:I}", "n", name, "v", (json_int_t)t->v[i].value);
	if (!o || depth >= FLAME_MAX_DEPTH)
		return o;
	kids = json_array();
	for (int32_t c = t->v[i].child; c >= 0; c = t->v[c].next)
		if (t->v[c].value >= min && t->v[c].value)
			json_array_append_new(kids, fnode_json(p, t, c, min, depth + 1));
	if (json_array_size(kids))
		json_object_set_new(o, "c", kids);
	else
		json_decref(kids);
	return o;
}

/* The flamegraph of @c as a JSON tree; NULL on allocation failure. */
static json_t *flame_json(struct daemon *d, const struct counts *c)
{
	struct profile *p = report__build_profile(d, c);
	struct ftree t = {0};
	json_t *out = NULL;

	if (!p || fnode_new(&t, 0) < 0)
		goto done;
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		int32_t n = 0;

		t.v[0].value += s->count;
		for (uint32_t k = 0; k < s->depth && n >= 0; k++) {
			n = child_of(p, &t, n, s->frames[k]);
			if (n >= 0)
				t.v[n].value += s->count;
		}
		if (n < 0)
			goto done;
	}
	out = fnode_json(p, &t, 0, (uint64_t)(t.v[0].value * FLAME_MIN_SHARE), 0);
done:
	free(t.v);
	profile__free(p);
	return out;
}

/* Non-empty buckets of the in-kernel histogram, merged 8 per octave. */
static json_t *hist_json(struct daemon *d, int i, bool window)
{
	uint64_t *h = calloc(LP_HIST_BUCKETS, sizeof(uint64_t));
	json_t *a = json_array();

	if (!h || !a || traces__histogram(d->traces, i, window, h)) {
		free(h);
		return a;
	}
	for (uint32_t b = 0; b < LP_HIST_BUCKETS;) {
		uint32_t e = b < 64 ? 64 : (b | 7) + 1;
		uint64_t n = 0;

		for (uint32_t k = b; k < e && k < LP_HIST_BUCKETS; k++)
			n += h[k];
		if (n)
			json_array_append_new(
				a, json_pack("[I,I,I]", (json_int_t)traces__bucket_lower(b),
					     (json_int_t)traces__bucket_lower(e), (json_int_t)n));
		b = e;
	}
	free(h);
	return a;
}

static json_t *traces_json(struct daemon *d, bool window)
{
	json_t *a = json_array();

	for (int i = 0; d->traces && i < traces__count(d->traces); i++) {
		const struct trace_info *ti = traces__info(d->traces, i);
		struct trace_summary s = {0};

		traces__summary(d->traces, i, window, &s);
		json_array_append_new(
			a, json_pack("{s:s,s:s,s:b,s:I,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "func",
				     ti->func ? ti->func : ti->spec, "spec", ti->spec, "line",
				     ti->kind == TRACE_LINE, "calls", (json_int_t)s.calls, "rate",
				     s.rate, "p50", (json_int_t)s.p50, "p90", (json_int_t)s.p90,
				     "p95", (json_int_t)s.p95, "p99", (json_int_t)s.p99, "p999",
				     (json_int_t)s.p999, "max", (json_int_t)s.max, "hist",
				     hist_json(d, i, window)));
	}
	return a;
}

static json_t *split_json(struct daemon *d, bool window)
{
	struct split_result r;
	json_t *o, *ranks;

	if (!d->split || daemon__split_compute(d, window, d->core.opts->offcpu, &r))
		return json_null();
	o = json_pack("{s:s,s:f,s:I,s:I,s:I,s:I,s:I}", "function", r.function, "percentile",
		      r.percentile, "threshold_ns", (json_int_t)r.threshold_ns, "slow_calls",
		      (json_int_t)r.slow_calls, "fast_calls", (json_int_t)r.fast_calls,
		      "slow_samples", (json_int_t)r.slow_samples, "fast_samples",
		      (json_int_t)r.fast_samples);
	ranks = json_array();
	for (int i = 0; i < r.n_ranks && i < RANK_ROWS; i++) {
		const struct split_frame_rank *k = &r.ranks[i];

		/* as the CLI's table: frames more frequent in slow calls, or the top one */
		if (k->delta <= 0 && i > 0)
			break;
		json_array_append_new(ranks, json_pack("{s:s,s:f,s:f,s:f,s:f,s:b}", "frame",
						       k->frame, "slow", k->slow_share, "fast",
						       k->fast_share, "delta", k->delta, "z", k->z,
						       "significant", k->significant));
	}
	json_object_set_new(o, "ranks", ranks);
	json_object_set_new(o, "verdict", json_string(split_rank__verdict(&r)));
	if (r.have_expected)
		json_object_set_new(o, "bias_z", json_real(r.bias_z));
	json_object_set_new(o, "slow", flame_json(d, &r.slow));
	json_object_set_new(o, "fast", flame_json(d, &r.fast));
	split_result__fini(&r);
	return o;
}

/*
 * The flamegraph's values for @source: cpu (samples), block or mutex
 * (microseconds blocked, needs --offcpu), inuse or alloc (KiB, whole run,
 * needs --alloc). Return: 0, -ENOENT when the source is not available.
 */
static int source_counts(struct daemon *d, const char *source, const struct counts *c,
			 struct counts *out)
{
	struct counts tmp;
	int err = 0;

	if (!strcmp(source, "cpu"))
		return counts__merge(out, c);
	if (!strcmp(source, "block") || !strcmp(source, "mutex")) {
		if (!d->core.opts->offcpu)
			return -ENOENT;
		counts__init(&tmp);
		err = serve_block__filter(d, c, !strcmp(source, "mutex"), &tmp);
		counts_for_each(&tmp, sc) if (sc->weight_ns >= 1000) err |=
			counts__add(out, stack_count__id(sc), sc->weight_ns / 1000, 0);
		counts__free(&tmp);
		return err;
	}
	if (!strcmp(source, "inuse") || !strcmp(source, "alloc")) {
		const struct alloc_stack *st;
		size_t n;
		bool inuse = !strcmp(source, "inuse");

		if (!d->alloc)
			return -ENOENT;
		st = alloc__rows(d->alloc, &n);
		for (size_t i = 0; i < n; i++) {
			double kib = (inuse ? st[i].inuse_space : st[i].alloc_space) / 1024;

			if (kib >= 1)
				err |= counts__add(out, (uint32_t)(i / ALLOC_NCLASS), (uint64_t)kib,
						   0);
		}
		return err;
	}
	return -ENOENT;
}

static json_t *sources_json(struct daemon *d)
{
	json_t *a = json_array();

	json_array_append_new(a, json_string("cpu"));
	if (d->core.opts->offcpu) {
		json_array_append_new(a, json_string("block"));
		json_array_append_new(a, json_string("mutex"));
	}
	if (d->alloc) {
		json_array_append_new(a, json_string("inuse"));
		json_array_append_new(a, json_string("alloc"));
	}
	return a;
}

static json_t *state_json(struct serve *sv, bool window, const char *source)
{
	struct daemon *d = sv->d;
	struct counts c, src;
	json_t *o, *flame = NULL;
	int err = 0;

	counts__init(&c);
	counts__init(&src);
	if (window)
		err = daemon__window_counts(d, &c);
	if (!err)
		err = source_counts(d, source, window ? &c : &d->total, &src);
	if (!err)
		flame = flame_json(d, &src);
	counts__free(&c);
	counts__free(&src);
	if (err == -ENOMEM)
		return NULL;
	o = json_pack("{s:s,s:I,s:I,s:I,s:i,s:f,s:i,s:b,s:I}", "csrf", sv->csrf, "samples",
		      (json_int_t)d->samples, "lost", (json_int_t)d->counters[LP_CNT_LOST],
		      "stacks", (json_int_t)stack_store__count(d->stacks), "hz", (int)d->freq,
		      "uptime_s", (lp_now_ns() - d->core.start_ns) / 1e9, "window_s", d->n_slots,
		      "window", window, "tick", (json_int_t)d->last_tick_ns);
	if (!o) {
		json_decref(flame);
		return NULL;
	}
	json_object_set_new(o, "target",
			    json_string(d->core.n_procs == 1 ? d->core.procs[0].name
					: d->core.opts->all  ? "all processes"
							     : "processes"));
	json_object_set_new(o, "flame", flame ? flame : json_null());
	json_object_set_new(o, "source", json_string(source));
	json_object_set_new(o, "unit",
			    json_string(!strcmp(source, "cpu") ? "samples"
					: !strcmp(source, "block") || !strcmp(source, "mutex")
						? "us"
						: "KiB"));
	json_object_set_new(o, "sources", sources_json(d));
	json_object_set_new(o, "traces", traces_json(d, window));
	json_object_set_new(o, "split", split_json(d, window));
	return o;
}

enum MHD_Result serve_ui__state(struct request *r)
{
	const char *v = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "view");
	const char *source = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "source");
	bool window = true;
	json_t *o;
	char *s;

	if (v && strcmp(v, "window") && strcmp(v, "run"))
		return serve__error(r, 400, "invalid view '%.32s' (window or run)", v);
	if (v && !strcmp(v, "run"))
		window = false;
	if (!source)
		source = "cpu";
	if (strcmp(source, "cpu") && strcmp(source, "block") && strcmp(source, "mutex") &&
	    strcmp(source, "inuse") && strcmp(source, "alloc"))
		return serve__error(r, 400, "invalid source '%.32s'", source);
	daemon__symbolize_new(r->sv->d);
	o = state_json(r->sv, window, source);
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!s)
		return serve__error(r, 500, "out of memory");
	return serve__reply(r, 200, "application/json", s, strlen(s));
}
