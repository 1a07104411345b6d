// SPDX-License-Identifier: GPL-2.0
/*
 * serve_block.c - /debug/pprof/block and /debug/pprof/mutex from the
 * off-CPU events of --offcpu, in Go's shape (contentions/count,
 * delay/nanoseconds), and godeltaprof's /delta_block and /delta_mutex.
 *
 * block: every block of a target thread, by the stack it blocked in.
 * mutex: the blocks whose stack waits on a lock (pthread_mutex_lock, the
 * lll/futex lock waits of glibc), by the waiter's stack.
 *
 * ?stack=waker (or holder): the same blocks by the stack of the thread
 * that woke them, where another thread of the process woke them from a
 * futex wait (user/session/holders.h): for a mutex, the holder's stack as
 * it released the lock, which is Go's view of a mutex profile.
 *
 * Without ?seconds=N both are cumulative since the start, as in Go; with
 * it, a window of the next N seconds (Go's delta form); delta_* return
 * what accumulated since the previous delta_* scrape of the same kind.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/stack_symbols.h"
#include "user/profile/writers.h"
#include "user/serve/serve_internal.h"
#include "user/session/holders.h"
#include "user/session/report.h"
#include "user/util/util.h"

/*
 * Frames that wait on a lock: glibc's mutex and rwlock entry points and
 * the low-level waits under them (also as "__GI___lll_lock_wait" or an
 * inlined "futex_wait").
 */
static const char *const lock_frames[] = {
	"pthread_mutex_lock", "pthread_mutex_timedlock", "pthread_mutex_clocklock",
	"pthread_rwlock_",    "lll_lock_wait",		 "futex_wait",
};

/* Does stack @id wait on a lock? One of its frames is a lock wait. */
static bool waits_on_lock(struct daemon *d, uint32_t id)
{
	const struct frame *f;
	uint32_t depth;

	if (stack_symbols__frames(d->core.symbols, id, &f, &depth))
		return false;
	for (uint32_t i = 0; i < depth; i++)
		for (size_t k = 0; k < sizeof(lock_frames) / sizeof(lock_frames[0]); k++)
			if (strstr(f[i].name, lock_frames[k]))
				return true;
	return false;
}

int serve_block__filter(struct daemon *d, const struct counts *src, bool mutex, struct counts *out)
{
	int err = 0;

	daemon__symbolize_new(d);
	counts_for_each(src, sc)
	{
		uint32_t flags;

		if (!stack_store__flags(d->stacks, stack_count__id(sc), &flags) ||
		    !(flags & STACK_F_OFFCPU))
			continue;
		if (mutex && !waits_on_lock(d, stack_count__id(sc)))
			continue;
		err |= counts__add(out, stack_count__id(sc), sc->count, sc->weight_ns);
	}
	return err ? -ENOMEM : 0;
}

int serve_block__wakers(struct daemon *d, const struct counts *pairs, bool mutex,
			struct counts *out)
{
	int err = 0;

	if (!d->holders)
		return 0;
	daemon__symbolize_new(d);
	counts_for_each(pairs, sc)
	{
		uint32_t waiter, waker;

		if (holders__get(d->holders, stack_count__id(sc), &waiter, &waker))
			continue;
		if (mutex && !waits_on_lock(d, waiter))
			continue;
		err |= counts__add(out, waker, sc->count, sc->weight_ns);
	}
	return err ? -ENOMEM : 0;
}

static bool block_values(const struct profile_sample *s, int64_t *out, void *ctx)
{
	(void)ctx;
	out[0] = (int64_t)s->count;
	out[1] = (int64_t)s->weight_ns;
	return s->count || s->weight_ns;
}

int serve_block__encode(struct daemon *d, const struct counts *c, uint64_t start_ns,
			uint64_t duration_ns, char **buf, size_t *len)
{
	struct pprof_opts po = {
		.time_nanos = serve__unix_ns(start_ns),
		.n_types = 2,
		.types = {{"contentions", "count"}, {"delay", "nanoseconds"}},
		.period_type = {"contentions", "count"},
		.values = block_values,
	};
	struct profile *p = report__build_profile(d, c);
	FILE *f;
	int err;

	if (!p)
		return -ENOMEM;
	p->period_ns = 1;
	p->duration_ns = duration_ns;
	f = open_memstream(buf, len);
	err = f ? write_pprof(p, f, &po) : -ENOMEM;
	if (f && fclose(f) && !err)
		err = -ENOMEM;
	profile__free(p);
	if (err) {
		free(*buf);
		*buf = NULL;
	}
	return err;
}

/* @c minus what the previous delta scrape saw; @prev becomes @c. */
static int delta_of(const struct counts *c, struct counts *prev, struct counts *out)
{
	int err = 0;

	counts_for_each(c, sc)
	{
		uint64_t pc, pw;

		counts__get(prev, stack_count__id(sc), &pc, &pw);
		if (sc->count > pc || sc->weight_ns > pw)
			err |= counts__add(out, stack_count__id(sc),
					   sc->count - (pc < sc->count ? pc : sc->count),
					   sc->weight_ns > pw ? sc->weight_ns - pw : 0);
	}
	counts__clear(prev);
	err |= counts__merge(prev, c);
	return err ? -ENOMEM : 0;
}

/* ?stack=waiter (the default) or waker/holder; false for anything else */
static bool stack_param(struct request *r, bool *waker)
{
	const char *v = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "stack");

	*waker = v && (!strcmp(v, "waker") || !strcmp(v, "holder"));
	return !v || *waker || !strcmp(v, "waiter");
}

enum MHD_Result serve_block__get(struct request *r, const char *which)
{
	struct serve *sv = r->sv;
	struct daemon *d = sv->d;
	bool mutex = strstr(which, "mutex") != NULL, delta = !strncmp(which, "delta_", 6), waker;
	const char *v = NULL;
	struct counts all, out, *prev;
	char *buf = NULL;
	size_t len = 0;
	int err;

	if (!d->core.opts->offcpu)
		return serve__error(r, 404, "block and mutex profiles need --offcpu");
	if (!stack_param(r, &waker))
		return serve__error(r, 400, "stack must be waiter, waker or holder");
	r->waker_stacks = waker;
	if (!delta && MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND, "seconds", 7,
						    &v, &len) == MHD_YES)
		return serve_pprof__window(r, mutex ? PROF_MUTEX : PROF_BLOCK);
	counts__init(&all);
	counts__init(&out);
	if (waker)
		err = serve_block__wakers(d, &d->holder_total, mutex, &all);
	else
		err = serve_block__filter(d, &d->total, mutex, &all);
	prev = waker ? (mutex ? &sv->prev_mutex_waker : &sv->prev_block_waker)
		     : (mutex ? &sv->prev_mutex : &sv->prev_block);
	if (!err && delta)
		err = delta_of(&all, prev, &out);
	if (!err)
		err = serve_block__encode(d, delta ? &out : &all, d->core.start_ns,
					  lp_now_ns() - d->core.start_ns, &buf, &len);
	counts__free(&all);
	counts__free(&out);
	if (err)
		return serve__error(r, 500, "cannot build the profile");
	return serve__reply(r, 200, "application/octet-stream", buf, len);
}
