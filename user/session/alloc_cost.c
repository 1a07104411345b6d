// SPDX-License-Identifier: GPL-2.0
/*
 * alloc_cost.c - what the allocator probes of --alloc cost per call, and
 * --max-overhead for them.
 *
 * Every allocator call hits a uprobe and a return probe, every free a
 * uprobe, sampled or not: the cost is per call, not per sample. It is
 * measured on liveprof's own libc (the same file as the targets' on one
 * machine, in most cases): malloc/free pairs timed one by one in thread
 * CPU time (the traps are charged to the thread, and preemption is not)
 * with no probe, with free's, and with all of them.
 *
 * What a median latency holds is the typical cost, so each figure is a
 * difference of medians. On this VM the probes' cost drifts between 10
 * and 17 us per pair within seconds, so the three configurations are
 * measured in one round, in the order bare, free, all, all, free, bare
 * (a linear drift cancels), and rounds go on through the session as the
 * sample cost's do (sample_cost.c): one a second for 30 s, then one every
 * 10 s, the median of the latest ALLOC_COST_ROUNDS in force. And the
 * probes cost more right after the thread was switched out (11 us a pair
 * back to back, 17-19 us after a 100 us sleep, the gap a server's
 * requests have): pairs after a short sleep give that extra, which BPF
 * charges at a thread's first hit after a switch (bpf/alloc.bpf.c).
 *
 * Each second, the calls the probes counted times those costs give the
 * share of a CPU the target spends in them. The same costs are charged to
 * the traced calls around each allocator call, which keeps their
 * latencies, and so a split's classes, net of the allocator probes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "alloc.skel.h"
#include "user/session/alloc_internal.h"
#include "user/util/log.h"
#include "user/util/util.h"

#define CAL_WARM     150 /* back-to-back pairs per configuration and pass */
#define CAL_COLD     40	 /* pairs after a sleep, per configuration and pass */
#define CAL_PASSES   2	 /* each configuration twice a round, mirrored */
#define REFINE_EARLY 30	 /* rounds a second apart, then REFINE_EVERY s apart */
#define REFINE_EVERY 10

/* The probes attached, in the order attached: a stack, so the mirrored
 * second half of a round only detaches. */
enum cal_cfg { CAL_BARE, CAL_FREE, CAL_ALL, CAL_NCFG };

/* Through pointers the compiler cannot see through, so the pair stays. */
static void *(*volatile cal_malloc)(size_t) = malloc;
static void (*volatile cal_free)(void *) = free;

/* One configuration's pair times over a round, warm and after a sleep. */
struct cal_times {
	uint64_t warm[CAL_PASSES * CAL_WARM], cold[CAL_PASSES * CAL_COLD];
	size_t n_warm, n_cold;
};

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* One pair on its own, so that a round has a median per configuration. */
static uint64_t pair_ns(void)
{
	uint64_t t0 = thread_ns();

	cal_free(cal_malloc(64));
	return thread_ns() - t0;
}

/*
 * One pass of a configuration into @t: back-to-back pairs, then (but for
 * free's probe alone, which the cold extra does not need) pairs each after
 * a sleep, which switches the thread out as a server's idle gap does.
 */
static void cal_pass(struct cal_times *t, bool cold)
{
	const struct timespec nap = {0, 1000}; /* the timer's slack makes it ~50 us */

	for (int i = 0; i < CAL_WARM; i++)
		t->warm[t->n_warm++] = pair_ns();
	for (int i = 0; cold && i < CAL_COLD; i++) {
		nanosleep(&nap, NULL);
		t->cold[t->n_cold++] = pair_ns();
	}
}

static double median_of(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), lp_cmp_u64);
	return n ? (double)v[n / 2] : 0;
}

static void drop_links_from(struct alloc_prof *a, int first)
{
	while (a->n_links > first)
		bpf_link__destroy(a->links[--a->n_links]);
}

/* The calibration's own probes, on this process, apart from a->links: the
 * calibration thread changes them while the daemon attaches targets. */
static int cal_attach(struct alloc_prof *a, struct bpf_program *prog, const char *libc,
		      const char *func, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = func, .retprobe = ret);
	/* where alloc__attach() puts the targets' probes of free */
	size_t at = ret || strcmp(func, "free") ? 0 : (size_t)a->cal_free_at;
	struct bpf_link *l = bpf_program__attach_uprobe_opts(prog, getpid(), libc, at, &uo);

	if (!l)
		return -errno;
	a->cal_links[a->n_cal_links++] = l;
	return 0;
}

static void cal_detach_from(struct alloc_prof *a, int first)
{
	while (a->n_cal_links > first)
		bpf_link__destroy(a->cal_links[--a->n_cal_links]);
}

/* From configuration @cur to @want: attach what is missing. */
static int cal_switch(struct alloc_prof *a, enum cal_cfg cur, enum cal_cfg want, const char *libc)
{
	struct alloc_bpf *sk = a->skel;
	int err = 0;

	if (want < cur) {
		cal_detach_from(a, want == CAL_BARE ? 0 : 1);
		return 0;
	}
	if (cur == CAL_BARE && want >= CAL_FREE)
		err = cal_attach(a, sk->progs.free_enter, libc, "free", false);
	if (!err && cur <= CAL_FREE && want == CAL_ALL)
		err = cal_attach(a, sk->progs.malloc_enter, libc, "malloc", false);
	if (!err && cur <= CAL_FREE && want == CAL_ALL)
		err = cal_attach(a, sk->progs.alloc_exit, libc, "malloc", true);
	return err;
}

/*
 * One round into @out: the passes in mirrored order, the costs as
 * differences of medians. Events of this process are dropped by the
 * daemon, so nothing of it is profiled. Most of a round's 350 ms here is
 * the kernel's wait for each uprobe to go (110 ms), not CPU.
 */
static int cal_round(struct alloc_prof *a, struct alloc_cost_round *out)
{
	static const enum cal_cfg order[] = {CAL_BARE, CAL_FREE, CAL_ALL,
					     CAL_ALL,  CAL_FREE, CAL_BARE};
	struct cal_times *t = calloc(CAL_NCFG, sizeof(*t));
	enum cal_cfg cur = CAL_BARE;
	double w[CAL_NCFG], c_bare, c_all;
	uint64_t t0 = lp_now_ns();
	char libc[4096];
	int err;

	if (!t)
		return -ENOMEM;
	err = alloc_find_libc((int)getpid(), libc, sizeof(libc));
	if (!err && !a->cal_site_known) {
		a->cal_free_at = alloc_entry_offset(libc, "free");
		a->cal_site_known = true;
	}
	for (size_t i = 0; !err && i < sizeof(order) / sizeof(order[0]); i++) {
		err = cal_switch(a, cur, order[i], libc);
		cur = order[i];
		if (!err)
			cal_pass(&t[cur], cur != CAL_FREE);
	}
	cal_detach_from(a, 0);
	if (!err) {
		for (int k = 0; k < CAL_NCFG; k++)
			w[k] = median_of(t[k].warm, t[k].n_warm);
		c_bare = median_of(t[CAL_BARE].cold, t[CAL_BARE].n_cold);
		c_all = median_of(t[CAL_ALL].cold, t[CAL_ALL].n_cold);
		out->free_ns = w[CAL_FREE] - w[CAL_BARE];
		out->alloc_ns = w[CAL_ALL] - w[CAL_FREE];
		out->switch_ns = (c_all - c_bare) - (w[CAL_ALL] - w[CAL_BARE]);
		lp_debug("--alloc probe cost round: pairs %.0f ns bare, %.0f with free's probe, "
			 "%.0f with all; after a sleep %.0f bare, %.0f with all (%.1f ms)",
			 w[CAL_BARE], w[CAL_FREE], w[CAL_ALL], c_bare, c_all,
			 (double)(lp_now_ns() - t0) / 1e6);
	}
	free(t);
	return err;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* The median of one field of the rounds kept; never below 0. */
static double rounds_median(const struct alloc_prof *a, size_t off)
{
	double v[ALLOC_COST_ROUNDS];

	for (uint32_t i = 0; i < a->n_rounds; i++)
		v[i] = *(const double *)((const char *)&a->rounds[i] + off);
	qsort(v, a->n_rounds, sizeof(v[0]), cmp_double);
	return v[a->n_rounds / 2] > 0 ? v[a->n_rounds / 2] : 0;
}

/* One round into the ring of rounds kept, and the charge from them. */
static int add_round(struct alloc_prof *a)
{
	struct alloc_cost_round r;
	struct alloc_bpf *sk = a->skel;
	struct alloc_cost *k = &a->cost;
	int err = cal_round(a, &r);

	if (err)
		return err;
	pthread_mutex_lock(&a->cal_lock);
	a->rounds[a->next_round] = r;
	a->next_round = (a->next_round + 1) % ALLOC_COST_ROUNDS;
	if (a->n_rounds < ALLOC_COST_ROUNDS)
		a->n_rounds++;
	k->alloc_ns = rounds_median(a, offsetof(struct alloc_cost_round, alloc_ns));
	k->free_ns = rounds_median(a, offsetof(struct alloc_cost_round, free_ns));
	k->switch_ns = rounds_median(a, offsetof(struct alloc_cost_round, switch_ns));
	k->rounds = a->n_rounds;
	k->measured = true;
	/* from now on the traced calls around an allocation are charged */
	sk->bss->charge_alloc_ns = (uint64_t)k->alloc_ns;
	sk->bss->charge_free_ns = (uint64_t)k->free_ns;
	sk->bss->charge_switch_ns = (uint64_t)k->switch_ns;
	pthread_mutex_unlock(&a->cal_lock);
	lp_debug("--alloc probes cost %.0f ns per allocation, %.0f ns per free, %.0f ns more "
		 "after a switch (median of %u rounds)",
		 k->alloc_ns, k->free_ns, k->switch_ns, a->n_rounds);
	return 0;
}

/*
 * The rounds after the first, on their own thread so that the daemon's
 * loop does not wait for the uprobes to go: one a second for REFINE_EARLY
 * s, then one every REFINE_EVERY s, until alloc_cost_stop(). A round that
 * fails leaves the charge as it was.
 */
static void *cal_thread(void *arg)
{
	struct alloc_prof *a = arg;
	struct timespec at;
	int n = 0;

	clock_gettime(CLOCK_MONOTONIC, &at);
	pthread_mutex_lock(&a->cal_lock);
	while (!a->cal_stop) {
		at.tv_sec += ++n <= REFINE_EARLY ? 1 : REFINE_EVERY;
		if (pthread_cond_timedwait(&a->cal_cond, &a->cal_lock, &at) != ETIMEDOUT ||
		    a->cal_stop)
			continue;
		pthread_mutex_unlock(&a->cal_lock);
		add_round(a);
		pthread_mutex_lock(&a->cal_lock);
	}
	pthread_mutex_unlock(&a->cal_lock);
	return NULL;
}

/**
 * alloc_cost_measure - one round now, so the charge applies from the
 * start, and the rest on a thread of their own
 *
 * Return: 0, or a negative errno (the costs are then unknown, 0).
 */
int alloc_cost_measure(struct alloc_prof *a)
{
	pthread_condattr_t ca;
	int err;

	pthread_mutex_init(&a->cal_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cal_cond, &ca);
	pthread_condattr_destroy(&ca);
	a->cal_init = true;
	err = add_round(a);
	if (err)
		return err;
	/* without the thread, the first round's charge stays */
	a->cal_running = !pthread_create(&a->cal_tid, NULL, cal_thread, a);
	if (!a->cal_running)
		lp_debug("--alloc: no thread to measure the probes' cost again");
	return 0;
}

/**
 * alloc_cost_stop - end the rounds alloc_cost_measure() started and wait
 * for the one under way; nothing if none started
 */
void alloc_cost_stop(struct alloc_prof *a)
{
	if (!a->cal_init)
		return;
	pthread_mutex_lock(&a->cal_lock);
	a->cal_stop = true;
	pthread_cond_signal(&a->cal_cond);
	pthread_mutex_unlock(&a->cal_lock);
	if (a->cal_running)
		pthread_join(a->cal_tid, NULL);
	a->cal_running = false;
	pthread_cond_destroy(&a->cal_cond);
	pthread_mutex_destroy(&a->cal_lock);
	a->cal_init = false;
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
		alloc_cost_stop(a); /* nothing is probed now, nothing to charge */
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
	return json_pack("{s:I, s:I, s:I, s:I, s:{s:f, s:f, s:f, s:i}, s:f, s:b}", "calls",
			 (json_int_t)c[LP_ALLOC_CNT_CALLS], "frees",
			 (json_int_t)c[LP_ALLOC_CNT_FREES], "sampled",
			 (json_int_t)c[LP_ALLOC_CNT_SAMPLED], "lost",
			 (json_int_t)(c[LP_ALLOC_CNT_LOST] + c[LP_ALLOC_CNT_LIVE_FULL]),
			 "probe_cost_ns", "alloc", a->cost.alloc_ns, "free", a->cost.free_ns,
			 "after_switch", a->cost.switch_ns, "rounds", (int)a->cost.rounds,
			 "overhead_pct", a->cost.est_pct, "detached", a->cost.detached);
}
