// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_session_deferred.c - the programs a session does not need for its
 * first sample, verified in the background while it samples.
 *
 * The verifier takes most of a tracing session's start-up: on this kernel
 * the function and return programs 50-100 ms each, the off-CPU pair 70 ms,
 * the sampler 15 ms; and a tp_btf program alone (the timer bracket) costs
 * libbpf a parse of the whole kernel BTF, 15 ms. The session therefore
 * loads the sampler alone and starts sampling, while a thread loads a
 * second instance of the same object, holding only the tracing, off-CPU
 * and timer-bracket programs and sharing every map of the first
 * (bpf_map__reuse_fd): the same ring buffer, the same per-thread calls,
 * the same frozen constants. The uprobes asked for in the meantime wait in
 * their slots and are attached once it is done, after the session's hook
 * (the sample cost's calibration, which must precede any traced call) has
 * run in that thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "user/session/bpf_session.h"
#include "user/session/bpf_session_internal.h"
#include "user/session/bpf_caps.h"
#include "user/util/log.h"
#include "user/util/util.h"
#include "liveprof.skel.h"

#define MAX_DEFERRED 16

struct bpf_deferred {
	pthread_t thread;
	struct liveprof_bpf *skel; /* the deferred programs' instance */
	int btf_fd;		   /* the kernel-type subset for its CO-RE, or -1 */
	int err;		   /* the load's result, read after the join */
	bool started, done;	   /* done: set by the thread last (atomic) */
	bool joined;
	void (*hook)(struct bpf_session *, void *);
	void *hook_ctx;
	uint64_t start_ns, ready_ns;
	char *log; /* what the thread printed, for the join to print */
	size_t log_len;
	/* for a reload without a refused capability's programs */
	struct liveprof_bpf *(*open)(int *btf_fd);
	struct liveprof_bpf *core;
	bool want[MAX_DEFERRED]; /* the programs the session asked for */
	char *refused[LP_CAP_NR]; /* the verifier's reason, for those refused */
};


/* The programs that wait: everything but the sampler. */
static void deferred_programs(struct liveprof_bpf *k, struct bpf_program **out, int *n)
{
	struct bpf_program *all[] = {
		k->progs.lp_func_entry,	 k->progs.lp_func_return,  k->progs.lp_func_ret_insn,
		k->progs.lp_line_hit,	 k->progs.lp_usdt_entry,   k->progs.lp_usdt_return,
		k->progs.lp_causal_tick, k->progs.lp_py_start,	   k->progs.lp_py_return,
		k->progs.lp_py_yield,	 k->progs.lp_sched_switch, k->progs.lp_sched_waking,
		k->progs.lp_timer_entry, k->progs.lp_timer_exit,
	};

	_Static_assert(sizeof(all) <= MAX_DEFERRED * sizeof(all[0]), "raise MAX_DEFERRED");
	*n = (int)(sizeof(all) / sizeof(all[0]));
	memcpy(out, all, sizeof(all));
}

/*
 * Give @def the deferred programs that @want asks for, but those of a
 * capability refused already, and set their attach types from @core's.
 */
static void choose_programs(struct bpf_deferred *dd, struct liveprof_bpf *def)
{
	struct bpf_program *c[MAX_DEFERRED], *d[MAX_DEFERRED];
	struct bpf_program *p;
	int n;

	bpf_object__for_each_program (p, def->obj)
		bpf_program__set_autoload(p, false);
	deferred_programs(dd->core, c, &n);
	deferred_programs(def, d, &n);
	for (int i = 0; i < n; i++) {
		enum lp_cap cap = lp_cap_of_prog(bpf_program__name(d[i]));

		bpf_program__set_autoload(d[i], dd->want[i] && (cap >= LP_CAP_NR || !dd->refused[cap]));
		bpf_program__set_expected_attach_type(d[i],
						      bpf_program__expected_attach_type(c[i]));
	}
}

/*
 * Hand the deferred programs from @core (as size_maps() left them: loaded
 * only if the session can use them) to @dd's instance, and keep them out
 * of @core's load. The instance shares every map of @core once @core is
 * loaded.
 */
static void split_programs(struct liveprof_bpf *core, struct bpf_deferred *dd)
{
	struct bpf_program *c[MAX_DEFERRED];
	int n;

	deferred_programs(core, c, &n);
	dd->core = core;
	for (int i = 0; i < n; i++)
		dd->want[i] = bpf_program__autoload(c[i]);
	choose_programs(dd, dd->skel);
	for (int i = 0; i < n; i++)
		bpf_program__set_autoload(c[i], false);
}

int bpf_session_defer_open(struct bpf_session *s, struct liveprof_bpf *(*open)(int *btf_fd),
			   void (*hook)(struct bpf_session *, void *), void *hook_ctx)
{
	struct bpf_deferred *def = calloc(1, sizeof(*def));

	if (!def)
		return -ENOMEM;
	def->skel = open(&def->btf_fd);
	if (!def->skel) {
		int err = errno ? -errno : -EINVAL;

		free(def);
		return err;
	}
	def->open = open;
	split_programs(s->skel, def);
	def->hook = hook;
	def->hook_ctx = hook_ctx;
	s->def = def;
	return 0;
}

/*
 * Time every timer interrupt (cost.bpf.h): a sample's cost is then
 * measured whole, from the calibration on. Until then (and without the
 * tracepoints) the sampler charges its own time plus the calibrated rest.
 */
static void attach_timer_bracket(struct bpf_session *s)
{
	struct liveprof_bpf *k = s->def->skel;

	if (!bpf_program__autoload(k->progs.lp_timer_entry) ||
	    bpf_program__fd(k->progs.lp_timer_entry) < 0)
		return;
	k->links.lp_timer_entry = bpf_program__attach(k->progs.lp_timer_entry);
	k->links.lp_timer_exit = bpf_program__attach(k->progs.lp_timer_exit);
	__atomic_store_n(&s->skel->bss->timer_bracket,
			 k->links.lp_timer_entry && k->links.lp_timer_exit, __ATOMIC_RELEASE);
}

/* Every map of @skel shares the loaded core's, by name. */
static int share_maps(struct liveprof_bpf *core, struct liveprof_bpf *skel)
{
	struct bpf_map *m, *shared;
	int err;

	bpf_object__for_each_map (m, skel->obj) {
		shared = bpf_object__find_map_by_name(core->obj, bpf_map__name(m));
		if (!shared)
			return -ENOENT;
		err = bpf_map__reuse_fd(m, bpf_map__fd(shared));
		if (err)
			return err;
	}
	return 0;
}

/*
 * After a failed load: note the refused program's capability and its
 * reason, and open a new instance without that capability's programs
 * (libbpf loads an object once). False when there is nothing to drop.
 */
static bool reopen_without_refused(struct bpf_deferred *def)
{
	struct lp_load_failure f;
	enum lp_cap cap;

	if (!lp_load_failure_take(&f))
		return false;
	cap = lp_cap_of_prog(f.prog);
	if (cap >= LP_CAP_NR || def->refused[cap])
		return false;
	if (asprintf(&def->refused[cap], "%s: %s", f.prog, f.reason) < 0) {
		def->refused[cap] = NULL;
		return false;
	}
	if (def->btf_fd >= 0)
		close(def->btf_fd);
	liveprof_bpf__destroy(def->skel);
	def->skel = def->open(&def->btf_fd);
	if (!def->skel)
		return false;
	choose_programs(def, def->skel);
	return !share_maps(def->core, def->skel);
}

static void *load_thread(void *arg)
{
	struct bpf_session *s = arg;
	struct bpf_deferred *def = s->def;
	FILE *log = open_memstream(&def->log, &def->log_len);

	/* its lines (the verifier's log, the calibration) wait for the join:
	 * printed then, or dropped if the run ends first, but never after
	 * the run's last line */
	lp_log_stream = log;
	/* a kernel that refuses one capability's programs loses that
	 * capability alone: the rest load without them */
	while ((def->err = liveprof_bpf__load(def->skel)) && reopen_without_refused(def))
		;
	if (def->err > 0)
		def->err = -EINVAL;
	if (def->btf_fd >= 0)
		close(def->btf_fd);
	def->btf_fd = -1;
	if (!def->err)
		attach_timer_bracket(s);
	lp_log_stream = NULL;
	if (log)
		fclose(log);
	__atomic_store_n(&def->done, true, __ATOMIC_RELEASE);
	return NULL;
}

int bpf_session_defer_start(struct bpf_session *s)
{
	struct bpf_deferred *def = s->def;
	int err;

	/* every map of the loaded core, by name: created once, shared */
	err = share_maps(s->skel, def->skel);
	if (err)
		return err;
	def->start_ns = lp_now_ns();
	err = pthread_create(&def->thread, NULL, load_thread, s);
	def->started = !err;
	return -err;
}

/* The off-CPU pair, attached like the skeleton would (tp_btf). */
static int attach_offcpu(struct bpf_session *s)
{
	struct liveprof_bpf *k = s->def->skel;

	if (!bpf_program__autoload(k->progs.lp_sched_switch) ||
	    bpf_program__fd(k->progs.lp_sched_switch) < 0)
		return 0;
	k->links.lp_sched_switch = bpf_program__attach(k->progs.lp_sched_switch);
	k->links.lp_sched_waking = bpf_program__attach(k->progs.lp_sched_waking);
	if (!k->links.lp_sched_switch || !k->links.lp_sched_waking)
		return errno ? -errno : -EINVAL;
	return 0;
}

/*
 * One line for each capability this kernel refused, with the verifier's
 * reason. Returns -ENOEXEC when the session asked for off-CPU profiling or
 * for function tracing and the kernel refused it: a request that needs a
 * refused capability fails, with that reason. The others (USDT, py:, Go
 * returns, causal) fail when a probe of theirs is asked for
 * (bpf_session__refused()).
 */
static int report_refused(struct bpf_session *s)
{
	int err = 0;

	for (int c = 0; c < LP_CAP_NR; c++) {
		if (!s->def->refused[c])
			continue;
		lp_err("%s is not available on this kernel: %s", lp_cap_name(c),
		       s->def->refused[c]);
		if (c == LP_CAP_OFFCPU || c == LP_CAP_TRACING)
			err = -ENOEXEC;
	}
	return err;
}

/* Join the loader and attach what waited for it; the load's result. */
static int finish(struct bpf_session *s)
{
	struct bpf_deferred *def = s->def;
	int err;

	pthread_join(def->thread, NULL);
	def->joined = true;
	if (def->log)
		fwrite(def->log, 1, def->log_len, stderr);
	free(def->log);
	def->log = NULL;
	err = def->err;
	/* The hook (the sample cost's calibration) runs here, in the joining
	 * thread, before the probes go in: run in the loader beside the
	 * daemon's start-up (its first symbolization), it measured samples
	 * dearer than they are, and 239 sampled 5 us calls came out at 0 ns. */
	if (!err && def->hook)
		def->hook(s, def->hook_ctx);
	if (!err)
		err = attach_offcpu(s);
	if (err)
		lp_err("cannot load the tracing and off-CPU programs: %s%s", strerror(-err),
		       s->verbose ? "" : " (run with -v for the verifier log)");
	else
		err = report_refused(s);
	def->err = err;
	bpf_session_attach_waiting(s, err);
	/* after the attaches: from here on, all of them count */
	def->ready_ns = lp_now_ns();
	if (!err)
		lp_debug("programs verified and attached %.0f ms after sampling began",
			 (def->ready_ns - def->start_ns) / 1e6);
	return err;
}

int bpf_session__programs_ready(struct bpf_session *s, bool wait)
{
	struct bpf_deferred *def = s->def;
	int err;

	if (!def)
		return 1;
	if (def->joined)
		return def->err ? def->err : 1;
	if (!def->started)
		return -ECHILD;
	if (!wait && !__atomic_load_n(&def->done, __ATOMIC_ACQUIRE))
		return 0;
	err = finish(s);
	return err ? err : 1;
}

uint64_t bpf_session__ready_ns(const struct bpf_session *s)
{
	if (!s || !s->def)
		return 0;
	return s->def->joined && !s->def->err ? s->def->ready_ns : UINT64_MAX;
}

bool bpf_session_loading(const struct bpf_session *s)
{
	return s->def && !s->def->joined;
}

struct liveprof_bpf *bpf_session_prog_skel(const struct bpf_session *s)
{
	return s->def ? s->def->skel : s->skel;
}

void bpf_session_defer_close(struct bpf_session *s)
{
	struct bpf_deferred *def = s->def;

	if (!def)
		return;
	if (def->started && !def->joined)
		pthread_join(def->thread, NULL);
	if (def->btf_fd >= 0)
		close(def->btf_fd);
	liveprof_bpf__destroy(def->skel);
	free(def->log);
	for (int c = 0; c < LP_CAP_NR; c++)
		free(def->refused[c]);
	free(def);
	s->def = NULL;
}

const char *bpf_session__refused(const struct bpf_session *s, enum lp_cap cap)
{
	if (!s || !s->def || !s->def->joined || cap >= LP_CAP_NR)
		return NULL;
	return s->def->refused[cap];
}
