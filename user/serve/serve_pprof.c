// SPDX-License-Identifier: GPL-2.0
/*
 * serve_pprof.c - /debug/pprof/profile?seconds=N in Go's shape: a window
 * subscription on the one sampler per scrape, answered with a gzip'ed
 * profile.proto (samples/count, cpu/nanoseconds) when the window ends.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "user/session/report.h"
#include "user/serve/query.h"
#include "user/serve/serve_internal.h"
#include "user/session/split.h"
#include "user/profile/stack_symbols.h"
#include "user/session/traces.h"
#include "user/profile/writers.h"
#include "user/util/util.h"

#define DEFAULT_SECONDS 30 /* Go's default */

uint64_t serve__unix_ns(uint64_t mono_ns)
{
	struct timespec ts;
	uint64_t now_unix, now_mono = lp_now_ns();

	clock_gettime(CLOCK_REALTIME, &ts);
	now_unix = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	return now_unix - (now_mono - mono_ns);
}

/* Is @name the frame of function @func ("f", or "f (x.c:12)" with --lines)? */
static bool frame_is(const char *name, const char *func)
{
	size_t n = strlen(func);

	return !strncmp(name, func, n) && (name[n] == '\0' || name[n] == ' ');
}

/* Index of the traced function innermost in stack @id, or -1. */
static int innermost_trace(struct daemon *d, uint32_t id)
{
	const struct frame *f;
	uint32_t depth;

	if (stack_symbols__frames(d->core.symbols, id, &f, &depth))
		return -1;
	for (uint32_t i = depth; i-- > 0;) {
		for (int t = 0; t < traces__count(d->traces); t++) {
			const struct trace_info *ti = traces__info(d->traces, t);

			if (ti->kind == TRACE_FUNC && !ti->detached &&
			    frame_is(f[i].name, ti->func))
				return t;
		}
	}
	return -1;
}

/*
 * Everything not in a split class, by the traced function it ran in:
 * labels come from the symbolized stack, since counts keep stack ids only.
 */
static int add_unsplit(struct daemon *d, struct profile *p, const struct counts *rest)
{
	int n = traces__count(d->traces);
	struct counts *by = calloc((size_t)n + 1, sizeof(*by));
	int err = 0;

	if (!by)
		return -ENOMEM;
	for (int i = 0; i <= n; i++)
		counts__init(&by[i]);
	counts_for_each(rest, sc)
	{
		int t = n ? innermost_trace(d, stack_count__id(sc)) : -1;

		err |= counts__add(&by[t < 0 ? n : t], stack_count__id(sc), sc->count,
				   sc->weight_ns);
	}
	for (int i = 0; i <= n && !err; i++) {
		struct label l = {"function", i < n ? traces__info(d->traces, i)->func : NULL};

		if (by[i].n)
			err = stack_symbols__add_counts(d->core.symbols, p, &by[i], &l, i < n);
	}
	for (int i = 0; i <= n; i++)
		counts__free(&by[i]);
	free(by);
	return err ? -ENOMEM : 0;
}

struct profile *serve__profile_of(struct daemon *d, const struct counts *c, uint64_t since,
				  uint64_t until)
{
	struct split_result r = {0};
	struct counts rest, none;
	struct profile *p;
	int err = 0;

	daemon__symbolize_new(d);
	counts__init(&rest);
	counts__init(&none);
	if (d->split && split__compute_range(d->split, since, until, &r))
		err = -ENOMEM;
	counts_for_each(c, sc)
	{
		uint64_t s_n = 0, s_w = 0, f_n = 0, f_w = 0, id = stack_count__id(sc);

		if (d->split) {
			counts__get(&r.slow, (uint32_t)id, &s_n, &s_w);
			counts__get(&r.fast, (uint32_t)id, &f_n, &f_w);
		}
		if (sc->count > s_n + f_n)
			err |= counts__add(&rest, (uint32_t)id, sc->count - s_n - f_n,
					   sc->weight_ns > s_w + f_w ? sc->weight_ns - s_w - f_w
								     : 0);
	}
	p = err ? NULL : report__build_profile(d, &none);
	if (p)
		err = add_unsplit(d, p, &rest);
	if (p && !err && d->split) {
		struct label slow[2] = {{"class", "slow"}, {"function", r.function}};
		struct label fast[2] = {{"class", "fast"}, {"function", r.function}};

		err = stack_symbols__add_counts(d->core.symbols, p, &r.slow, slow, 2);
		if (!err)
			err = stack_symbols__add_counts(d->core.symbols, p, &r.fast, fast, 2);
	}
	if (p && err) {
		profile__free(p);
		p = NULL;
	}
	if (p)
		p->duration_ns = until - since;
	split_result__fini(&r);
	counts__free(&rest);
	counts__free(&none);
	return p;
}

/* The pprof bytes of a profile, in a malloc'ed buffer. */
static int encode(struct profile *p, uint64_t start_mono, char **buf, size_t *len)
{
	struct pprof_opts po = {.time_nanos = serve__unix_ns(start_mono)};
	FILE *f = open_memstream(buf, len);
	int err;

	if (!f)
		return -ENOMEM;
	err = write_pprof(p, f, &po);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		free(*buf);
		*buf = NULL;
	}
	return err;
}

/* The window's samples as the profile the client asked for. */
static int window_bytes(struct request *r, struct daemon_window *w, char **buf, size_t *len)
{
	struct daemon *d = r->sv->d;
	struct profile *p;
	struct counts c;
	int err;

	if (r->kind != PROF_CPU) {
		counts__init(&c);
		if (r->waker_stacks)
			err = serve_block__wakers(d, &w->holders, r->kind == PROF_MUTEX, &c);
		else
			err = serve_block__filter(d, &w->counts, r->kind == PROF_MUTEX, &c);
		if (!err)
			err = serve_block__encode(d, &c, w->start_ns, w->end_ns - w->start_ns, buf,
						  len);
		counts__free(&c);
		return err;
	}
	p = serve__profile_of(d, &w->counts, w->start_ns, w->end_ns);
	if (!p)
		return -ENOMEM;
	err = encode(p, w->start_ns, buf, len);
	profile__free(p);
	return err;
}

static void profile_done(struct daemon_window *w, void *ctx)
{
	struct request *r = ctx;
	char *buf = NULL;
	size_t len = 0;
	int err;

	r->window_open = false;
	r->sv->n_windows--;
	err = window_bytes(r, w, &buf, &len);
	counts__free(&w->counts);
	counts__free(&w->holders);
	r->status = err ? 500 : 200;
	r->resp = err ? MHD_create_response_from_buffer(strlen("cannot build the profile\n"),
							(void *)"cannot build the profile\n",
							MHD_RESPMEM_PERSISTENT)
		      : MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	if (r->resp && !err) {
		MHD_add_response_header(r->resp, "Content-Type", "application/octet-stream");
		MHD_add_response_header(r->resp, "Content-Disposition",
					"attachment; filename=\"profile\"");
	} else if (!r->resp) {
		free(buf);
	}
	serve__resume(r);
}

enum MHD_Result serve_pprof__profile(struct request *r)
{
	return serve_pprof__window(r, PROF_CPU);
}

enum MHD_Result serve_pprof__window(struct request *r, enum prof_kind kind)
{
	struct serve *sv = r->sv;
	const char *v = NULL;
	size_t len = 0;
	int seconds, err;

	if (MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND, "seconds", 7, &v, &len) !=
	    MHD_YES)
		v = NULL;
	err = query__seconds(v, len, DEFAULT_SECONDS, QUERY_MAX_SECONDS, &seconds);
	if (err == -ERANGE)
		return serve__error(r, 400, "seconds '%.32s' is over %d", v, QUERY_MAX_SECONDS);
	if (err)
		return serve__error(r, 400, "invalid seconds '%.32s' (a positive integer)", v);
	if (sv->n_windows >= SERVE_MAX_WINDOWS)
		return serve__error(r, 429, "%d profiles are already being taken",
				    SERVE_MAX_WINDOWS);
	r->kind = kind;
	r->w.done = profile_done;
	r->w.ctx = r;
	if (daemon__window_open(sv->d, &r->w, (uint64_t)seconds * 1000000000ULL))
		return serve__error(r, 500, "cannot open a window");
	r->window_open = true;
	sv->n_windows++;
	serve__suspend(r);
	return MHD_YES;
}

void serve_pprof__abort(struct request *r)
{
	if (!r->window_open)
		return;
	daemon__window_close(r->sv->d, &r->w);
	r->window_open = false;
	r->sv->n_windows--;
}

static const char index_html[] =
	"<html><head><title>/debug/pprof/</title></head><body>\n"
	"<p>liveprof serves Go's profile endpoints:</p>\n<ul>\n"
	"<li><a href=\"profile?seconds=5\">profile</a>: CPU profile of the next N seconds "
	"(?seconds=N, default 30)</li>\n"
	"<li><a href=\"heap\">heap</a>, <a href=\"allocs\">allocs</a>, "
	"<a href=\"delta_heap\">delta_heap</a>: memory, with --alloc</li>\n"
	"<li><a href=\"block\">block</a>, <a href=\"mutex\">mutex</a>, "
	"<a href=\"delta_block\">delta_block</a>, <a href=\"delta_mutex\">delta_mutex</a>: "
	"blocked time and lock waits, with --offcpu (?seconds=N: the next N seconds)</li>\n"
	"</ul>\n<p><a href=\"/metrics\">/metrics</a> (Prometheus), <a href=\"/\">live "
	"view</a></p>\n</body></html>\n";

enum MHD_Result serve_pprof__index(struct request *r)
{
	return serve__reply_static(r, 200, "text/html; charset=utf-8", index_html,
				   sizeof(index_html) - 1);
}
