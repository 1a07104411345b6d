// SPDX-License-Identifier: GPL-2.0
/*
 * alloc.c - memory profiles from the allocator probes.
 *
 * An allocation of size s sampled at a mean of R bytes between samples
 * was sampled with probability p = 1 - exp(-s / R) (Poisson sampling by
 * bytes, as in Go's runtime/pprof), so it stands for 1/p allocations and
 * s/p bytes. Sampled allocations are kept by address until freed, so the
 * in-use figures lose them again.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "alloc.skel.h"
#include "bpf/alloc.h"
#include "user/session/alloc.h"
#include "user/session/alloc_internal.h"
#include "user/session/bpf_session.h"
#include "user/session/daemon.h"
#include "user/session/split.h"
#include "user/util/log.h"

static uint64_t live_key(uint64_t ptr, uint32_t pid)
{
	return (ptr ^ ((uint64_t)pid << 48)) | 1ULL << 63;
}

static size_t live_slot(const struct alloc_prof *a, uint64_t key)
{
	size_t i = (key * 0x9e3779b97f4a7c15ULL >> 20) & (a->live_cap - 1);

	while (a->live[i].key && a->live[i].key != key)
		i = (i + 1) & (a->live_cap - 1);
	return i;
}

static int live_grow(struct alloc_prof *a)
{
	struct live *old = a->live;
	size_t old_cap = a->live_cap, cap = old_cap ? old_cap * 2 : 4096;

	a->live = calloc(cap, sizeof(*a->live));
	if (!a->live) {
		a->live = old;
		return -ENOMEM;
	}
	a->live_cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].key)
			a->live[live_slot(a, old[i].key)] = old[i];
	free(old);
	return 0;
}

/* Linear-probing delete: re-seat the run after slot @i. */
static void live_remove(struct alloc_prof *a, size_t i)
{
	a->live[i].key = 0;
	a->live_n--;
	for (size_t j = (i + 1) & (a->live_cap - 1); a->live[j].key;
	     j = (j + 1) & (a->live_cap - 1)) {
		struct live tmp = a->live[j];

		a->live[j].key = 0;
		a->live[live_slot(a, tmp.key)] = tmp;
	}
}

static struct alloc_stack *row_of(struct alloc_prof *a, uint32_t row)
{
	if (row >= a->cap_rows) {
		size_t cap = a->cap_rows ? a->cap_rows : 4096;
		struct alloc_stack *v;

		while (cap <= row)
			cap *= 2;
		v = realloc(a->rows, cap * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + a->cap_rows, 0, (cap - a->cap_rows) * sizeof(*v));
		a->rows = v;
		a->cap_rows = cap;
	}
	if (row >= a->n_rows)
		a->n_rows = row + 1;
	return &a->rows[row];
}

/* The outermost call of the split function among the tagged ones, or 0. */
static uint64_t split_call_of(const struct alloc_prof *a, const struct lp_alloc_event *e)
{
	uint32_t n = e->n_calls < LP_ALLOC_MAX_CALLS ? e->n_calls : LP_ALLOC_MAX_CALLS;
	int probe = a->d->split ? split__probe_id(a->d->split) : -1;

	for (uint32_t i = n; i-- > 0;)
		if ((int)e->calls[i].probe_id == probe)
			return e->calls[i].call_id;
	return 0;
}

static int pending_add(struct alloc_prof *a, const struct pending *p)
{
	if (a->n_pending == PENDING_MAX) { /* calls that never return */
		memmove(a->pending, a->pending + PENDING_MAX / 2,
			(PENDING_MAX / 2) * sizeof(*a->pending));
		a->n_pending = PENDING_MAX / 2;
	}
	if (!a->pending) {
		a->pending = malloc(PENDING_MAX * sizeof(*a->pending));
		if (!a->pending)
			return -ENOMEM;
	}
	a->pending[a->n_pending++] = *p;
	return 0;
}

static int on_alloc(struct alloc_prof *a, const struct lp_alloc_event *e)
{
	struct raw_stack rs = {.pid = e->pid, .tid = e->tid};
	double p = 1 - exp(-(double)e->size / a->mean_bytes);
	uint64_t call = split_call_of(a, e), key = live_key(e->ptr, e->pid);
	struct alloc_stack *st;
	const char *name;
	uint32_t row;
	int64_t id;
	size_t i;

	rs.n_user = e->n_ustack < LP_ALLOC_MAX_STACK ? e->n_ustack : LP_ALLOC_MAX_STACK;
	rs.user = (const uint64_t *)e->ustack;
	name = daemon__process_name(a->d, e->pid);
	if (name)
		snprintf(rs.comm, sizeof(rs.comm), "%s", name);
	id = daemon__intern_stack(a->d, &rs);
	if (id < 0)
		return (int)id;
	/* rows are by stack id for the whole run: never released */
	stack_store__pin(a->d->stacks, (uint32_t)id);
	row = (uint32_t)id * ALLOC_NCLASS + (call ? ALLOC_IN_CALL : ALLOC_OUTSIDE);
	st = row_of(a, row);
	if (!st)
		return -ENOMEM;
	if (p <= 0)
		p = 1e-12;
	st->alloc_objects += 1 / p;
	st->alloc_space += e->size / p;
	st->inuse_objects += 1 / p;
	st->inuse_space += e->size / p;
	if (call) {
		struct pending pd = {call, key, e->time_ns, row, 1 / p, e->size / p};

		if (pending_add(a, &pd))
			return -ENOMEM;
	}
	if ((a->live_n + 1) * 2 > a->live_cap && live_grow(a))
		return -ENOMEM;
	i = live_slot(a, key);
	if (!a->live[i].key)
		a->live_n++;
	else /* reused address whose free we missed: it is not live twice */
		row_of(a, a->live[i].row)->inuse_objects -= a->live[i].objects;
	a->live[i] = (struct live){key, e->pid, row, 1 / p, e->size / p};
	return 0;
}

/* Move @p's values from its ALLOC_IN_CALL row to the class of its call. */
static void pending_settle(struct alloc_prof *a, const struct pending *p, enum alloc_class cls)
{
	uint32_t to = p->row - ALLOC_IN_CALL + cls;
	struct alloc_stack *src, *dst = row_of(a, to);
	size_t i;

	if (!dst)
		return; /* no memory: it stays "in a call" */
	src = &a->rows[p->row];
	src->alloc_objects -= p->objects;
	src->alloc_space -= p->bytes;
	dst->alloc_objects += p->objects;
	dst->alloc_space += p->bytes;
	if (!a->live_cap)
		return;
	i = live_slot(a, p->key);
	if (a->live[i].key != p->key || a->live[i].row != p->row)
		return; /* freed already, or the address was reused */
	src->inuse_objects -= a->live[i].objects;
	src->inuse_space -= a->live[i].bytes;
	dst->inuse_objects += a->live[i].objects;
	dst->inuse_space += a->live[i].bytes;
	a->live[i].row = to;
}

void alloc__on_call_end(struct alloc_prof *a, const struct lp_call_end *e)
{
	uint64_t threshold = 0;
	bool known = false;
	size_t k = 0;

	for (size_t i = 0; i < a->n_pending; i++) {
		struct pending *p = &a->pending[i];

		if (p->call_id != e->call_id) {
			a->pending[k++] = *p;
			continue;
		}
		if (!known) {
			known = true;
			if (!a->d->split || (int)e->probe_id != split__probe_id(a->d->split) ||
			    split__threshold(a->d->split, &threshold, NULL))
				threshold = 0;
		}
		if (threshold)
			pending_settle(a, p, e->latency_ns >= threshold ? ALLOC_SLOW : ALLOC_FAST);
	}
	a->n_pending = k;
}

static void on_free(struct alloc_prof *a, const struct lp_alloc_event *e)
{
	size_t i;
	struct alloc_stack *st;

	if (!a->live_cap)
		return;
	i = live_slot(a, live_key(e->ptr, e->pid));
	if (!a->live[i].key)
		return;
	st = &a->rows[a->live[i].row];
	st->inuse_objects -= a->live[i].objects;
	st->inuse_space -= a->live[i].bytes;
	live_remove(a, i);
}

int alloc__on_event(struct alloc_prof *a, const void *data, size_t size)
{
	const struct lp_alloc_event *e = data;

	if (size < offsetof(struct lp_alloc_event, ustack)) {
		a->bad_events++;
		return 0;
	}
	if (e->pid == a->d->self_pid) /* alloc_cost_measure()'s own calls */
		return 0;
	if (e->kind == LP_ALLOC_EV_FREE) {
		on_free(a, e);
		return 0;
	}
	if (e->kind != LP_ALLOC_EV_ALLOC || size < sizeof(*e)) {
		a->bad_events++;
		return 0;
	}
	return on_alloc(a, e);
}

int alloc__open(struct alloc_prof **out, struct daemon *d, uint64_t sample_bytes)
{
	struct alloc_prof *a = calloc(1, sizeof(*a));
	int err;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	a->d = d;
	a->sample_bytes = sample_bytes ? sample_bytes : 512 * 1024;
	a->skel = alloc_bpf__open();
	if (!a->skel) {
		err = -errno;
		goto fail;
	}
	a->skel->rodata->sample_bytes = a->sample_bytes;
	/* Quantiles of Exp(1) at (i + 0.5) / n: a draw with mean ~1. */
	for (int i = 0; i < LP_ALLOC_EXP_STEPS; i++) {
		a->skel->rodata->exp_q[i] =
			(uint32_t)(-log((i + 0.5) / LP_ALLOC_EXP_STEPS) * 1024 + 0.5);
		a->mean_bytes += (double)(a->sample_bytes * a->skel->rodata->exp_q[i] / 1024) + 1;
	}
	a->mean_bytes /= LP_ALLOC_EXP_STEPS;
	/* The session's ring (one order for allocations and call ends) and
	 * its calls in flight, so allocations carry the calls around them. */
	err = bpf_map__reuse_fd(a->skel->maps.events, bpf_session__map_fd(d->core.bpf, "events"));
	if (!err)
		err = bpf_map__reuse_fd(a->skel->maps.thread_calls,
					bpf_session__map_fd(d->core.bpf, "thread_calls"));
	if (!err)
		err = alloc_bpf__load(a->skel);
	if (err)
		goto fail;
	if (alloc_cost_measure(a))
		lp_warn("--alloc: cannot measure what the allocator probes cost here; "
			"--max-overhead does not apply to them");
	*out = a;
	return 0;
fail:
	alloc__close(a);
	return err < 0 ? err : -EINVAL;
}

int alloc_find_libc(int pid, char *buf, size_t len)
{
	char path[64], line[4096];
	FILE *f;
	int err = -ENOENT;

	if (pid < 0) {
		snprintf(buf, len, "libc.so.6"); /* libbpf finds it in the library path */
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/');
		const char *base;

		if (!file)
			continue;
		file[strcspn(file, "\n")] = 0;
		base = strrchr(file, '/') + 1;
		if (strncmp(base, "libc.so", 7) && strncmp(base, "libc-", 5))
			continue;
		/* Through the target's root: containers have their own libc. */
		snprintf(buf, len, "/proc/%d/root%s", pid, file);
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

int alloc_attach_one(struct alloc_prof *a, struct bpf_program *prog, int pid, const char *libc,
		     const char *func, uint64_t offset, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = func, .retprobe = ret);
	struct bpf_link *l;

	if (a->n_links == MAX_LINKS)
		return -E2BIG;
	l = bpf_program__attach_uprobe_opts(prog, pid, libc, ret ? 0 : (size_t)offset, &uo);
	if (!l)
		return -errno;
	a->links[a->n_links++] = l;
	return 0;
}

int alloc__attach(struct alloc_prof *a, int pid, char *err, size_t errlen)
{
	struct alloc_bpf *sk = a->skel;
	const struct {
		const char *func;
		struct bpf_program *enter;
		bool ret;
	} probes[] = {
		{"malloc", sk->progs.malloc_enter, true},
		{"calloc", sk->progs.calloc_enter, true},
		{"realloc", sk->progs.realloc_enter, true},
		{"aligned_alloc", sk->progs.aligned_alloc_enter, true},
		{"posix_memalign", sk->progs.posix_memalign_enter, true},
		{"mmap", sk->progs.mmap_enter, true},
		{"free", sk->progs.free_enter, false},
		{"munmap", sk->progs.munmap_enter, false},
	};
	char libc[4096];
	int n = 0, e;

	if (a->cost.detached)
		return 0;
	e = alloc_find_libc(pid, libc, sizeof(libc));
	if (e) {
		snprintf(err, errlen, "no libc mapped in process '%d' for --alloc", pid);
		return e;
	}
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		/* with a return probe, the entry's is on the same trap */
		uint64_t at = probes[i].ret ? 0 : alloc_site_at(a, libc, probes[i].func);

		e = alloc_attach_one(a, probes[i].enter, pid, libc, probes[i].func, at, false);
		if (!e && probes[i].ret)
			e = alloc_attach_one(a, sk->progs.alloc_exit, pid, libc, probes[i].func, 0,
					     true);
		if (e) {
			snprintf(err, errlen, "cannot probe '%s' in '%s': %s", probes[i].func, libc,
				 strerror(-e));
			return e;
		}
		n++;
	}
	return n;
}

void alloc__close(struct alloc_prof *a)
{
	if (!a)
		return;
	alloc_cost_stop(a);
	for (int i = 0; i < a->n_links; i++)
		bpf_link__destroy(a->links[i]);
	alloc_bpf__destroy(a->skel);
	free(a->rows);
	free(a->live);
	free(a->pending);
	free(a);
}

const struct alloc_stack *alloc__rows(const struct alloc_prof *a, size_t *n)
{
	*n = a->n_rows;
	return a->rows;
}

uint64_t alloc__sample_bytes(const struct alloc_prof *a)
{
	return a->sample_bytes;
}

void alloc__counters(const struct alloc_prof *a, uint64_t out[LP_ALLOC_CNT_NR])
{
	int nr = libbpf_num_possible_cpus(), fd = bpf_map__fd(a->skel->maps.alloc_counters);
	uint64_t *v = nr > 0 ? calloc((size_t)nr, sizeof(*v)) : NULL;

	memset(out, 0, LP_ALLOC_CNT_NR * sizeof(*out));
	for (uint32_t k = 0; v && k < LP_ALLOC_CNT_NR; k++)
		if (!bpf_map_lookup_elem(fd, &k, v))
			for (int c = 0; c < nr; c++)
				out[k] += v[c];
	free(v);
}

int daemon__alloc_start(struct daemon *d, uint64_t sample_bytes, char *err, size_t errlen)
{
	int e;

	if (d->alloc)
		return 0;
	e = alloc__open(&d->alloc, d, sample_bytes);
	if (e) {
		snprintf(err, errlen, "cannot load the allocator probes: %s", strerror(-e));
		return e;
	}
	if (d->core.opts->all)
		return alloc__attach(d->alloc, -1, err, errlen) < 0 ? -EINVAL : 0;
	for (int i = 0; i < d->core.n_procs; i++) {
		e = alloc__attach(d->alloc, d->core.procs[i].pid, err, errlen);
		if (e < 0)
			return e;
	}
	return 0;
}
