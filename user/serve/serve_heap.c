// SPDX-License-Identifier: GPL-2.0
/*
 * serve_heap.c - /debug/pprof/heap, /allocs and godeltaprof's
 * /debug/pprof/delta_heap from the allocator probes (--alloc), in Go's
 * shape: alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes, period space/bytes = the sampling rate.
 *
 * delta_heap: the alloc_* values are what was allocated since the
 * previous delta_heap scrape; the inuse_* values are not subtracted (they
 * are a level, not a flow); rows where everything is zero are left out.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/writers.h"
#include "user/serve/serve_internal.h"
#include "user/session/alloc.h"
#include "user/session/report.h"
#include "user/session/split.h"
#include "user/profile/stack_symbols.h"
#include "user/util/util.h"

#define ROW_LABEL "liveprof_row" /* which values a profile row carries; not written */

/* One delta stream per server, as godeltaprof keeps one per process. */
struct heap_prev {
	double *objects, *space; /* alloc_* at the previous delta scrape, by stack id */
	size_t n;
};

void serve_heap__free(struct serve *sv)
{
	if (!sv->heap_prev)
		return;
	free(sv->heap_prev->objects);
	free(sv->heap_prev->space);
	free(sv->heap_prev);
	sv->heap_prev = NULL;
}

static bool heap_values(const struct profile_sample *s, int64_t *out, void *ctx)
{
	const char *row = profile__label(s, ROW_LABEL);
	bool inuse = row && !strcmp(row, "inuse");

	(void)ctx;
	memset(out, 0, 4 * sizeof(*out));
	out[inuse ? 2 : 0] = (int64_t)s->count;
	out[inuse ? 3 : 1] = (int64_t)s->weight_ns;
	return s->count || s->weight_ns;
}

/* The previous delta scrape's alloc_* of each stack, grown to @n. */
static int prev_grow(struct heap_prev *hp, size_t n)
{
	double *o, *s;

	if (n <= hp->n)
		return 0;
	o = realloc(hp->objects, n * sizeof(*o));
	if (!o)
		return -1;
	hp->objects = o;
	s = realloc(hp->space, n * sizeof(*s));
	if (!s)
		return -1;
	hp->space = s;
	for (size_t i = hp->n; i < n; i++)
		o[i] = s[i] = 0;
	hp->n = n;
	return 0;
}

/* Per class of enum alloc_class: what goes into the profile's rows. */
struct heap_rows {
	struct counts alloc[ALLOC_NCLASS], inuse[ALLOC_NCLASS];
};

static int heap_counts(struct serve *sv, bool delta, struct heap_rows *hr)
{
	const struct alloc_stack *st;
	struct heap_prev *prev;
	size_t n;
	int err = 0;

	if (!sv->heap_prev)
		sv->heap_prev = calloc(1, sizeof(*sv->heap_prev));
	prev = sv->heap_prev;
	if (!prev)
		return -1;
	st = alloc__rows(sv->d->alloc, &n);
	if (delta && prev_grow(prev, n))
		return -1;
	for (size_t i = 0; i < n; i++) {
		double ao = st[i].alloc_objects, as = st[i].alloc_space;
		double io = fmax(st[i].inuse_objects, 0), is = fmax(st[i].inuse_space, 0);
		uint32_t id = (uint32_t)(i / ALLOC_NCLASS);
		size_t cls = i % ALLOC_NCLASS;

		if (delta) {
			ao -= prev->objects[i];
			as -= prev->space[i];
			prev->objects[i] = st[i].alloc_objects;
			prev->space[i] = st[i].alloc_space;
		}
		if (llround(ao) > 0 || llround(as) > 0)
			err |= counts__add(&hr->alloc[cls], id, (uint64_t)llround(fmax(ao, 0)),
					   (uint64_t)llround(fmax(as, 0)));
		if (llround(io) > 0 || llround(is) > 0)
			err |= counts__add(&hr->inuse[cls], id, (uint64_t)llround(io),
					   (uint64_t)llround(is));
	}
	return err;
}

/*
 * The rows of each class, labelled: allocations in calls of the split
 * function carry function=F, and class=slow|fast once the call returned.
 */
static int heap_add_rows(struct daemon *d, struct profile *p, struct heap_rows *hr)
{
	static const char *const class_name[ALLOC_NCLASS] = {NULL, NULL, "slow", "fast"};
	const char *func = NULL;
	uint64_t threshold;
	int err = 0;

	if (d->split && split__threshold(d->split, &threshold, &func))
		func = NULL;
	for (int c = 0; c < ALLOC_NCLASS && !err; c++) {
		struct label l[3] = {{ROW_LABEL, "alloc"},
				     {"function", func ? func : "(untraced)"},
				     {"class", class_name[c]}};
		int n = c == ALLOC_OUTSIDE ? 1 : c == ALLOC_IN_CALL ? 2 : 3;

		err = stack_symbols__add_counts(d->core.symbols, p, &hr->alloc[c], l, n);
		l[0].value = "inuse";
		if (!err)
			err = stack_symbols__add_counts(d->core.symbols, p, &hr->inuse[c], l, n);
	}
	return err;
}

static struct profile *heap_profile(struct serve *sv, bool delta)
{
	struct daemon *d = sv->d;
	struct heap_rows hr;
	struct counts none;
	struct profile *p = NULL;
	int err;

	for (int c = 0; c < ALLOC_NCLASS; c++) {
		counts__init(&hr.alloc[c]);
		counts__init(&hr.inuse[c]);
	}
	counts__init(&none);
	daemon__symbolize_new(d);
	err = heap_counts(sv, delta, &hr);
	if (!err)
		p = report__build_profile(d, &none);
	if (p) {
		err = heap_add_rows(d, p, &hr);
		p->period_ns = alloc__sample_bytes(d->alloc);
		p->duration_ns = 0;
	}
	if (p && err) {
		profile__free(p);
		p = NULL;
	}
	for (int c = 0; c < ALLOC_NCLASS; c++) {
		counts__free(&hr.alloc[c]);
		counts__free(&hr.inuse[c]);
	}
	counts__free(&none);
	return p;
}

enum MHD_Result serve_heap__get(struct request *r, const char *which)
{
	struct pprof_opts po = {
		.time_nanos = serve__unix_ns(lp_now_ns()),
		.n_types = 4,
		.types = {{"alloc_objects", "count"},
			  {"alloc_space", "bytes"},
			  {"inuse_objects", "count"},
			  {"inuse_space", "bytes"}},
		.period_type = {"space", "bytes"},
		.default_type = !strcmp(which, "allocs") ? "alloc_space" : NULL,
		.values = heap_values,
		.skip_label = ROW_LABEL,
	};
	struct profile *p;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	if (!r->sv->d->alloc)
		return serve__error(r, 404, "memory profiles need --alloc");
	p = heap_profile(r->sv, !strcmp(which, "delta_heap"));
	if (!p)
		return serve__error(r, 500, "cannot build the profile");
	f = open_memstream(&buf, &len);
	err = f ? write_pprof(p, f, &po) : -1;
	if (f && fclose(f))
		err = -1;
	profile__free(p);
	if (err) {
		free(buf);
		return serve__error(r, 500, "cannot encode the profile");
	}
	return serve__reply(r, 200, "application/octet-stream", buf, len);
}
