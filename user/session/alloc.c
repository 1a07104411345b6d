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
#include "user/session/bpf_session.h"
#include "user/session/daemon.h"

#define MAX_LINKS 256

struct live {
	uint64_t key; /* ptr ^ pid << 48; 0 = empty */
	uint32_t pid, stack_id;
	double objects, bytes;
};

struct alloc_prof {
	struct daemon *d;
	struct alloc_bpf *skel;
	uint64_t sample_bytes;
	double mean_bytes; /* the sampler's actual mean distance, from its table */
	struct bpf_link *links[MAX_LINKS];
	int n_links;
	struct alloc_stack *stacks;
	size_t n_stacks, cap_stacks;
	struct live *live;
	size_t live_cap, live_n;
	uint64_t bad_events;
};

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

static struct alloc_stack *stack_of(struct alloc_prof *a, uint32_t id)
{
	if (id >= a->cap_stacks) {
		size_t cap = a->cap_stacks ? a->cap_stacks : 1024;
		struct alloc_stack *v;

		while (cap <= id)
			cap *= 2;
		v = realloc(a->stacks, cap * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + a->cap_stacks, 0, (cap - a->cap_stacks) * sizeof(*v));
		a->stacks = v;
		a->cap_stacks = cap;
	}
	if (id >= a->n_stacks)
		a->n_stacks = id + 1;
	return &a->stacks[id];
}

static int on_alloc(struct alloc_prof *a, const struct lp_alloc_event *e)
{
	struct raw_stack rs = {.pid = e->pid, .tid = e->tid};
	double p = 1 - exp(-(double)e->size / a->mean_bytes);
	struct alloc_stack *st;
	const char *name;
	int64_t id;
	size_t i;

	rs.n_user = e->n_ustack < LP_ALLOC_MAX_STACK ? e->n_ustack : LP_ALLOC_MAX_STACK;
	rs.user = (const uint64_t *)e->ustack;
	name = daemon__process_name(a->d, e->pid);
	if (name)
		snprintf(rs.comm, sizeof(rs.comm), "%s", name);
	id = stack_store__intern(a->d->stacks, &rs);
	if (id < 0)
		return (int)id;
	st = stack_of(a, (uint32_t)id);
	if (!st)
		return -ENOMEM;
	if (p <= 0)
		p = 1e-12;
	st->alloc_objects += 1 / p;
	st->alloc_space += e->size / p;
	st->inuse_objects += 1 / p;
	st->inuse_space += e->size / p;
	if ((a->live_n + 1) * 2 > a->live_cap && live_grow(a))
		return -ENOMEM;
	i = live_slot(a, live_key(e->ptr, e->pid));
	if (!a->live[i].key)
		a->live_n++;
	else /* reused address whose free we missed: it is not live twice */
		stack_of(a, a->live[i].stack_id)->inuse_objects -= a->live[i].objects;
	a->live[i] =
		(struct live){live_key(e->ptr, e->pid), e->pid, (uint32_t)id, 1 / p, e->size / p};
	return 0;
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
	st = &a->stacks[a->live[i].stack_id];
	st->inuse_objects -= a->live[i].objects;
	st->inuse_space -= a->live[i].bytes;
	live_remove(a, i);
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct alloc_prof *a = ctx;
	const struct lp_alloc_event *e = data;

	if (size < offsetof(struct lp_alloc_event, ustack)) {
		a->bad_events++;
		return 0;
	}
	if (e->type == LP_ALLOC_EV_FREE) {
		on_free(a, e);
		return 0;
	}
	if (e->type != LP_ALLOC_EV_ALLOC || size < sizeof(*e)) {
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
	err = alloc_bpf__load(a->skel);
	if (err)
		goto fail;
	err = ring_buffer__add(bpf_session__ringbuf(d->core.bpf),
			       bpf_map__fd(a->skel->maps.alloc_events), on_event, a);
	if (err)
		goto fail;
	*out = a;
	return 0;
fail:
	alloc__close(a);
	return err < 0 ? err : -EINVAL;
}

/* The libc mapped by @pid, as a path the kernel can open from here. */
static int find_libc(int pid, char *buf, size_t len)
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

static int attach_one(struct alloc_prof *a, struct bpf_program *prog, int pid, const char *libc,
		      const char *func, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = func, .retprobe = ret);
	struct bpf_link *l;

	if (a->n_links == MAX_LINKS)
		return -E2BIG;
	l = bpf_program__attach_uprobe_opts(prog, pid, libc, 0, &uo);
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

	e = find_libc(pid, libc, sizeof(libc));
	if (e) {
		snprintf(err, errlen, "no libc mapped in process '%d' for --alloc", pid);
		return e;
	}
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		e = attach_one(a, probes[i].enter, pid, libc, probes[i].func, false);
		if (!e && probes[i].ret)
			e = attach_one(a, sk->progs.alloc_exit, pid, libc, probes[i].func, true);
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
	for (int i = 0; i < a->n_links; i++)
		bpf_link__destroy(a->links[i]);
	alloc_bpf__destroy(a->skel);
	free(a->stacks);
	free(a->live);
	free(a);
}

const struct alloc_stack *alloc__stacks(const struct alloc_prof *a, size_t *n)
{
	*n = a->n_stacks;
	return a->stacks;
}

uint64_t alloc__sample_bytes(const struct alloc_prof *a)
{
	return a->sample_bytes;
}

void alloc__counters(const struct alloc_prof *a, uint64_t out[4])
{
	int nr = libbpf_num_possible_cpus(), fd = bpf_map__fd(a->skel->maps.alloc_counters);
	uint64_t *v = nr > 0 ? calloc((size_t)nr, sizeof(*v)) : NULL;

	memset(out, 0, 4 * sizeof(*out));
	for (uint32_t k = 0; v && k < 4; k++)
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
