// SPDX-License-Identifier: GPL-2.0
/*
 * alloc_cost.c - what the allocator probes of --alloc cost per call, and
 * --max-overhead for them.
 *
 * Every allocator call hits a uprobe and a return probe, every free a
 * uprobe, sampled or not: the cost is per call, not per sample. It is
 * measured once at load on liveprof's own libc (the same file as the
 * targets' on one machine, in most cases): a loop of malloc/free pairs
 * timed in thread CPU time (the traps are charged to the thread, and
 * preemption is not) with no probe, with free's, and with all of them.
 * The lower quartile of a few batches filters interrupts. Each second,
 * the calls the probes counted times those costs give the share of a CPU
 * the target spends in them. The same costs are charged to the traced
 * calls around each allocator call (bpf/alloc.bpf.c), which keeps their
 * latencies, and so a split's classes, net of the allocator probes.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "alloc.skel.h"
#include "user/session/alloc_internal.h"
#include "user/util/log.h"

#define CAL_BATCHES 9
#define CAL_CALLS   400

/* Through pointers the compiler cannot see through, so the pair stays. */
static void *(*volatile cal_malloc)(size_t) = malloc;
static void (*volatile cal_free)(void *) = free;

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* ns per malloc+free pair: the lower quartile of the batches. */
static double pair_ns(void)
{
	uint64_t t[CAL_BATCHES];

	for (int b = 0; b < CAL_BATCHES; b++) {
		uint64_t t0 = thread_ns();

		for (int i = 0; i < CAL_CALLS; i++)
			cal_free(cal_malloc(64));
		t[b] = thread_ns() - t0;
	}
	qsort(t, CAL_BATCHES, sizeof(t[0]), cmp_u64);
	return (double)t[CAL_BATCHES / 4] / CAL_CALLS;
}

static void drop_links_from(struct alloc_prof *a, int first)
{
	while (a->n_links > first)
		bpf_link__destroy(a->links[--a->n_links]);
}

/**
 * alloc_cost_measure - time the probes on liveprof's own libc; events of
 * this process are dropped by the daemon, so nothing of it is profiled
 *
 * Return: 0, or a negative errno (the costs are then unknown, 0).
 */
int alloc_cost_measure(struct alloc_prof *a)
{
	struct alloc_bpf *sk = a->skel;
	int first = a->n_links, pid = (int)getpid(), err;
	double none, with_free, with_all;
	char libc[4096];

	err = alloc_find_libc(pid, libc, sizeof(libc));
	if (err)
		return err;
	none = pair_ns();
	err = alloc_attach_one(a, sk->progs.free_enter, pid, libc, "free", false);
	if (err)
		goto out;
	with_free = pair_ns();
	err = alloc_attach_one(a, sk->progs.malloc_enter, pid, libc, "malloc", false);
	if (!err)
		err = alloc_attach_one(a, sk->progs.alloc_exit, pid, libc, "malloc", true);
	if (err)
		goto out;
	with_all = pair_ns();
	a->cost.free_ns = with_free > none ? with_free - none : 0;
	a->cost.alloc_ns = with_all > with_free ? with_all - with_free : 0;
	a->cost.measured = true;
	/* from now on the traced calls around an allocation are charged */
	sk->bss->charge_alloc_ns = (uint64_t)a->cost.alloc_ns;
	sk->bss->charge_free_ns = (uint64_t)a->cost.free_ns;
	lp_debug("--alloc probes cost %.0f ns per allocation, %.0f ns per free (malloc+free "
		 "pairs: %.0f ns bare, %.0f with free's probe, %.0f with all)",
		 a->cost.alloc_ns, a->cost.free_ns, none, with_free, with_all);
out:
	drop_links_from(a, first);
	return err;
}

void alloc__tick(struct alloc_prof *a, uint64_t now_ns, double max_pct)
{
	struct alloc_cost *k = &a->cost;
	uint64_t c[LP_ALLOC_CNT_NR];
	double dt;

	if (k->detached)
		return;
	dt = (double)(now_ns - a->prev_tick_ns) / 1e9;
	if (a->prev_tick_ns && dt < 0.5)
		return;
	alloc__counters(a, c);
	if (!a->prev_tick_ns) { /* the first tick starts the first interval */
		a->prev_calls = c[LP_ALLOC_CNT_CALLS];
		a->prev_frees = c[LP_ALLOC_CNT_FREES];
		a->prev_tick_ns = now_ns;
		return;
	}
	k->alloc_rate = (double)(c[LP_ALLOC_CNT_CALLS] - a->prev_calls) / dt;
	k->free_rate = (double)(c[LP_ALLOC_CNT_FREES] - a->prev_frees) / dt;
	k->est_pct = (k->alloc_rate * k->alloc_ns + k->free_rate * k->free_ns) / 1e9 * 100;
	a->prev_calls = c[LP_ALLOC_CNT_CALLS];
	a->prev_frees = c[LP_ALLOC_CNT_FREES];
	a->prev_tick_ns = now_ns;
	if (max_pct > 0 && k->est_pct > max_pct) {
		lp_warn("detaching --alloc: %.0f allocations/s x %.0f ns + %.0f frees/s x %.0f ns "
			"= "
			"%.1f%% of a CPU, above --max-overhead %g%%",
			k->alloc_rate, k->alloc_ns, k->free_rate, k->free_ns, k->est_pct, max_pct);
		drop_links_from(a, 0);
		k->detached = true;
	} else if (k->est_pct > 5 && k->est_pct > 2 * a->warned_pct) {
		/* again whenever it doubles */
		a->warned_pct = k->est_pct;
		lp_warn("--alloc costs about %.1f%% of a CPU (%.0f allocations/s x %.0f ns + %.0f "
			"frees/s x %.0f ns, in the last second); --max-overhead PCT detaches it",
			k->est_pct, k->alloc_rate, k->alloc_ns, k->free_rate, k->free_ns);
	}
}

const struct alloc_cost *alloc__cost(const struct alloc_prof *a)
{
	return &a->cost;
}

json_t *alloc__json(const struct alloc_prof *a)
{
	uint64_t c[LP_ALLOC_CNT_NR];

	alloc__counters(a, c);
	return json_pack("{s:I, s:I, s:I, s:I, s:{s:f, s:f}, s:f, s:b}", "calls",
			 (json_int_t)c[LP_ALLOC_CNT_CALLS], "frees",
			 (json_int_t)c[LP_ALLOC_CNT_FREES], "sampled",
			 (json_int_t)c[LP_ALLOC_CNT_SAMPLED], "lost",
			 (json_int_t)(c[LP_ALLOC_CNT_LOST] + c[LP_ALLOC_CNT_LIVE_FULL]),
			 "probe_cost_ns", "alloc", a->cost.alloc_ns, "free", a->cost.free_ns,
			 "overhead_pct", a->cost.est_pct, "detached", a->cost.detached);
}
