// SPDX-License-Identifier: GPL-2.0
/*
 * daemon.c - event intake and the one-second tick.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>

#include "bpf/liveprof.h"
#include "dwarf/unwind.h"

_Static_assert(UNWIND_TRAMP_LO == LP_UPROBE_TRAMP_LO && UNWIND_TRAMP_HI == LP_UPROBE_TRAMP_HI,
	       "the unwinder and the contract disagree on the trampoline page");
#include "user/session/alloc.h"
#include "user/session/holders.h"
#include "user/session/bpf_session.h"
#include "user/session/daemon.h"
#include "user/session/reclaim.h"
#include "user/session/python_procs.h"
#include "user/session/ruby_procs.h"
#include "user/util/log.h"
#include "user/session/split.h"
#include "user/session/stack_fixup.h"
#include "user/session/traces.h"
#include "user/session/unwind_tables.h"
#include "user/util/util.h"

static int on_sample(struct daemon *d, const struct lp_sample *s, size_t size)
{
	uint64_t us[MAX_USER_FRAMES];
	struct raw_stack rs = {0};
	int64_t id;
	uint64_t count;

	if (size < sizeof(*s) || (s->stack_len && s->stack_len + LP_REDZONE > size - sizeof(*s))) {
		d->events_bad++;
		return 0;
	}
	/* liveprof's own calibration thread (sample_cost.c), never a target;
	 * and a sample from before the profile's start (daemon__restart) */
	if (s->pid == d->self_pid || s->time_ns < d->count_from_ns)
		return 0;
	id = daemon__sample_stack(d, s, us, &rs);
	if (id < 0)
		return (int)id;

	/* An off-CPU event is one block, weighed by its duration. */
	count = 1;
	if (s->flags & LP_SF_OFFCPU)
		d->offcpu_events++;
	else
		d->samples++;
	/* a new stack's slots are cache misses in both: wait for them once */
	counts__prefetch(&d->total, (uint32_t)id);
	counts__prefetch(&d->slots[d->cur_slot], (uint32_t)id);
	if (counts__add(&d->total, id, count, s->weight_ns) ||
	    counts__add(&d->slots[d->cur_slot], id, count, s->weight_ns))
		return -ENOMEM;
	for (struct daemon_window *w = d->windows; w; w = w->next)
		if (s->time_ns >= w->start_ns && s->time_ns < w->end_ns &&
		    counts__add(&w->counts, id, count, s->weight_ns))
			return -ENOMEM;
	if (d->holders && (s->flags & LP_SF_OFFCPU))
		holders__on_block(d->holders, s->tid, s->time_ns, (uint32_t)id, s->weight_ns);
	if (d->split && s->n_calls)
		split__on_sample(d->split, (uint32_t)id, s, count);
	return 0;
}

/*
 * The waker of the off-CPU sample before: its stack is interned (flagged,
 * so it is never taken for a sample's) and the block counted by the pair
 * (waiter's stack, waker's stack).
 */
static int on_waker(struct daemon *d, const struct lp_waker *w, size_t size)
{
	struct raw_stack rs = {.pid = w->pid, .tid = w->waker_tid, .flags = STACK_F_WAKER};
	uint32_t waiter;
	uint64_t weight;
	const char *name;
	int64_t id, pair;

	if (size < sizeof(*w) || !d->holders ||
	    holders__match(d->holders, w->tid, w->time_ns, &waiter, &weight))
		return 0;
	rs.n_user = w->n_ustack < LP_MAX_WSTACK ? w->n_ustack : LP_MAX_WSTACK;
	rs.user = (const uint64_t *)w->ustack;
	name = daemon__process_name(d, w->pid);
	if (name)
		snprintf(rs.comm, sizeof(rs.comm), "%s", name);
	id = daemon__intern_stack(d, &rs);
	pair = id < 0 ? id : holders__pair(d->holders, waiter, (uint32_t)id);
	if (pair >= 0) {
		/* a pair keeps both ids for the whole run, unremapped */
		stack_store__pin(d->stacks, waiter);
		stack_store__pin(d->stacks, (uint32_t)id);
	}
	if (pair < 0 || counts__add(&d->holder_total, (uint32_t)pair, 1, weight))
		return -ENOMEM;
	for (struct daemon_window *win = d->windows; win; win = win->next)
		if (w->time_ns >= win->start_ns && w->time_ns < win->end_ns &&
		    counts__add(&win->holders, (uint32_t)pair, 1, weight))
			return -ENOMEM;
	return 0;
}

#define PREFETCH_FRAMES 64 /* deeper stacks take their misses */

/*
 * Start loading the parts of the next record that on_sample() reads: its
 * head (type to registers) and the first frames of its user stack. The
 * producer wrote it from another CPU, so each of those lines is a miss,
 * and a sample's own work is long enough to hide them all. Prefetches
 * alone changed nothing: each record lies on pages the daemon has not
 * touched for a whole turn of the ring, and a prefetch whose page is not
 * in the TLB is dropped; one load from each of the two pages puts them
 * there (measured: the copy of the frames took 600 cycles, 190 after).
 *
 * Records follow each other in the ring 8-byte aligned, each after the
 * kernel's 8-byte header (struct bpf_ringbuf_hdr), and the data area is
 * mapped twice in a row, so an address past its end reads its start:
 * these reads never fault, whatever is (not yet) there.
 */
static void prefetch_next(const void *data, size_t size)
{
	const char *next = (const char *)data + ((size + 8 + 7) & ~(size_t)7);
	const char *ustack = next + offsetof(struct lp_sample, ustack);

	/* every line of both: one left out is a stall all the same */
	for (size_t off = 0; off < offsetof(struct lp_sample, calls) + 63; off += 64)
		__builtin_prefetch(next + off);
	for (size_t off = 0; off < PREFETCH_FRAMES * 8 + 63; off += 64)
		__builtin_prefetch(ustack + off);
	(void)*(const volatile char *)next;
	(void)*(const volatile char *)(ustack + PREFETCH_FRAMES * 8);
}

/* How often daemon__poll() runs while it awaits something between ticks
 * (awaits_between_ticks()); otherwise it sleeps until the next tick, as
 * the ring buffer wakes it once a batch of events is waiting: each
 * wake-up costs 30-80 us of CPU in these VMs, ten a second were most of
 * an idle daemon's cost. */
#define BETWEEN_TICKS_NS (100 * 1000000ULL)

/* The ring buffer is consumed for at most this long at a time. */
#define CONSUME_SLICE_NS (100 * 1000000ULL)
/* Events between two readings of the clock (a reading costs ~20 ns). */
#define CONSUME_CHECK_EVERY 256
/* What on_event() returns to end a consume whose slice is over: libbpf
 * stops at a callback's negative return, with that event taken. */
#define CONSUME_YIELD (-EAGAIN)

static int dispatch(struct daemon *d, void *data, size_t size)
{
	const struct lp_event_hdr *h = data;

	if (size < sizeof(*h)) {
		d->events_bad++;
		return 0;
	}
	switch (h->type) {
	case LP_EV_SAMPLE:
		return on_sample(d, data, size);
	case LP_EV_CALL_END:
		if (size < sizeof(struct lp_call_end))
			return 0;
		if (d->split)
			split__on_call_end(d->split, data);
		if (d->alloc) /* after the split: it knows the call's class */
			alloc__on_call_end(d->alloc, data);
		return 0;
	case LP_EV_WAKER:
		return on_waker(d, data, size);
	case LP_EV_ALLOC:
		return d->alloc ? alloc__on_event(d->alloc, data, size) : 0;
	case LP_EV_HIT:
		if (size >= sizeof(struct lp_hit) && d->traces)
			traces__on_hit(d->traces, data);
		return 0;
	default:
		d->events_bad++;
		return 0;
	}
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct daemon *d = ctx;
	int err;

	prefetch_next(data, size);
	err = dispatch(d, data, size);
	/* After the event, not before it: libbpf counts the event whose
	 * callback stops the consume as consumed, so a yield that came
	 * first lost one event per slice. */
	if (!err && --d->consume_check == 0) {
		d->consume_check = CONSUME_CHECK_EVERY;
		if (lp_now_ns() > d->consume_until_ns)
			return CONSUME_YIELD;
	}
	return err;
}

int daemon__init(struct daemon *d, struct options *o, struct bpf_session *bpf)
{
	struct stack_symbols_opts so = {
		.per_thread = o->per_thread,
		.lines = o->lines,
		.inline_frames = !o->no_inline,
	};
	int err;

	memset(d, 0, sizeof(*d));
	d->self_pid = (uint32_t)getpid();
	d->core.opts = o;
	d->core.bpf = bpf;
	d->freq = o->freq;
	/* DWARF for inline chains by default, as perf does; cached per address */
	d->sym = symbolizer__new(o->lines || !o->no_inline);
	d->stacks = stack_store__new(o->per_thread);
	d->core.symbols = stack_symbols__new(&so);
	d->unwind = unwinder__new();
	d->spans = calloc(1, sizeof(*d->spans));
	if (!d->sym || !d->stacks || !d->core.symbols || !d->unwind || !d->spans)
		return -ENOMEM;
	if (!o->no_interp &&
	    (!(d->py = python_procs__new(o->lines)) || !(d->rb = ruby_procs__new(o->lines))))
		return -ENOMEM;
	{
		struct unwind_maps um;

		if (!bpf_session__unwind_maps(bpf, &um)) {
			err = unwind_tables__new(&um, o->verbose, &d->utab);
			if (err)
				return err;
		}
	}
	counts__init_dense(&d->total);
	counts__init(&d->holder_total);
	if (!(d->reclaim = reclaim__new()))
		return -ENOMEM;
	if (o->offcpu && !(d->holders = holders__new()))
		return -ENOMEM;
	err = daemon__set_window(d, (int)(o->window_s + 0.5));
	if (err)
		return err;
	d->core.start_ns = d->last_tick_ns = lp_now_ns();
	return bpf_session__set_ringbuf_cb(bpf, on_event, d);
}

void daemon__restart(struct daemon *d, uint64_t from_ns)
{
	d->count_from_ns = from_ns;
	d->core.start_ns = from_ns;
	counts__clear(&d->total);
	for (int i = 0; i < d->n_slots; i++)
		counts__clear(&d->slots[i]);
	d->samples = d->truncated = d->unwind_errors = d->unwind_ns = 0;
}

void daemon__fini(struct daemon *d)
{
	while (d->windows)
		daemon__window_close(d, d->windows);
	alloc__close(d->alloc);
	d->alloc = NULL;
	split__free(d->split);
	traces__free(d->traces);
	for (int i = 0; i < d->n_slots; i++)
		counts__free(&d->slots[i]);
	free(d->slots);
	counts__free(&d->total);
	counts__free(&d->holder_total);
	reclaim__free(d->reclaim);
	holders__free(d->holders);
	unwinder__free(d->unwind);
	free(d->spans);
	unwind_tables__free(d->utab);
	python_procs__free(d->py);
	ruby_procs__free(d->rb);
	for (int i = 0; i < d->core.n_procs; i++) {
		if (d->core.procs[i].pidfd >= 0)
			close(d->core.procs[i].pidfd);
		free(d->core.procs[i].maps);
	}
	stack_symbols__free(d->core.symbols);
	stack_store__free(d->stacks);
	symbolizer__free(d->sym);
	memset(d, 0, sizeof(*d));
}

int daemon__symbolize_new(struct daemon *d)
{
	return stack_symbols__update(d->core.symbols, d->stacks, d->sym, daemon__process_name, d);
}

static void tick(struct daemon *d, uint64_t now)
{
	static unsigned int ticks;

	bpf_session__counters(d->core.bpf, d->counters);
	/* New libraries (dlopen) and exec: re-read the maps while alive,
	 * then symbolize what arrived, so nothing waits until the target
	 * is gone and its maps with it. */
	if (++ticks % 2 == 0) {
		bool force = daemon__maps_reads(d) != d->maps_reads;

		for (int i = 0; i < d->core.n_procs; i++)
			if (d->core.procs[i].alive)
				daemon__refresh_maps(d, &d->core.procs[i], now, force);
		d->maps_reads = daemon__maps_reads(d);
	}
	if (d->utab)
		unwind_tables__tick(d->utab, now);
	/* JIT code renamed in place (an address reused) shows from here on */
	symbolizer__refresh_jit(d->sym);
	daemon__symbolize_new(d);
	if (d->traces)
		traces__tick(d->traces, now);
	if (d->alloc)
		alloc__tick(d->alloc, now, d->core.opts->max_overhead_pct);
	/* the per-sample charge, measured again under the session's load */
	sample_cost__refine(d->core.bpf, &d->core.sample_cost);
	if (d->split)
		split__tick(d->split, now);
	{
		size_t last = d->slots[d->cur_slot].n;

		d->cur_slot = (d->cur_slot + 1) % d->n_slots;
		counts__clear(&d->slots[d->cur_slot]);
		/* room for as many stacks as the second before had: while
		 * the slots fill for the first time, no rehash per doubling */
		counts__reserve(&d->slots[d->cur_slot], last);
	}
	stack_store__set_epoch(d->stacks, ++d->epoch);
	/* The slots hold the epochs after epoch - n_slots: older stacks are
	 * in no slot, only in whole-run counts, which the pass remaps. */
	if (d->epoch % RECLAIM_EVERY_S == 0 && d->epoch > (uint32_t)d->n_slots + 1) {
		uint64_t t0 = lp_now_ns();

		if (reclaim__run(d, d->epoch - (uint32_t)d->n_slots - 1) < 0)
			d->reclaim_errors++;
		d->reclaim_ns += lp_now_ns() - t0;
	}
}

int daemon__add_poller(struct daemon *d, int fd, void (*fn)(void *ctx), void *ctx)
{
	if (d->n_pollers == MAX_POLLERS)
		return -E2BIG;
	d->pollers[d->n_pollers++] = (struct daemon_poller){fd, fn, ctx};
	return 0;
}

void daemon__remove_poller(struct daemon *d, void *ctx)
{
	int n = 0;

	for (int i = 0; i < d->n_pollers; i++)
		if (d->pollers[i].ctx != ctx)
			d->pollers[n++] = d->pollers[i];
	d->n_pollers = n;
}

/*
 * Wait for the ring buffer, any poller's fd or a target's exit, whichever
 * comes first. The targets' pidfds ride along so that
 * daemon__targets_alive() needs no poll of its own after each wait (one
 * system call per wake-up, ten a second at the least), and an exit wakes
 * the daemon at once.
 */
static int wait_events(struct daemon *d, int timeout_ms)
{
	struct pollfd pfd[MAX_POLLERS + MAX_PIDS + 1];
	int who[MAX_PIDS];
	int n = 0, np;

	pfd[n++] = (struct pollfd){
		.fd = ring_buffer__epoll_fd(bpf_session__ringbuf(d->core.bpf)),
		.events = POLLIN,
	};
	for (int i = 0; i < d->n_pollers; i++)
		pfd[n++] = (struct pollfd){.fd = d->pollers[i].fd, .events = POLLIN};
	np = n;
	for (int i = 0; i < d->core.n_procs; i++) {
		struct target_proc *p = &d->core.procs[i];

		p->exit_seen = 0;
		if (p->alive && p->pidfd >= 0) {
			who[n - np] = i;
			pfd[n++] = (struct pollfd){.fd = p->pidfd, .events = POLLIN};
		}
	}
	if (poll(pfd, n, timeout_ms) < 0)
		return -errno;
	for (int k = np; k < n; k++)
		d->core.procs[who[k - np]].exit_seen = pfd[k].revents ? 2 : 1;
	return 0;
}

/* Whether every live target has its unwind tables (or none are used). */
static bool tables_ready(struct daemon *d)
{
	for (int i = 0; d->utab && i < d->core.n_procs; i++)
		if (d->core.procs[i].alive &&
		    !unwind_tables__has_pid(d->utab, d->core.procs[i].pid))
			return false;
	return true;
}

/* Whether something the daemon looks for at every poll, not only at the
 * tick, is still awaited: programs verified in the background, the first
 * symbolization, a library a trace waits for, a target whose exit no
 * pidfd announces, or a server's connections (their deadlines). */
static bool awaits_between_ticks(const struct daemon *d)
{
	if (!d->programs_done || d->n_pollers ||
	    (!d->symbolized && stack_store__count(d->stacks) > 0))
		return true;
	if (d->traces && traces__any_pending(d->traces))
		return true;
	for (int i = 0; i < d->core.n_procs; i++)
		if (d->core.procs[i].alive && d->core.procs[i].pidfd < 0)
			return true;
	return false;
}

uint64_t daemon__next_wake_ns(const struct daemon *d, uint64_t now)
{
	uint64_t at = d->last_tick_ns + 1000000000ULL;

	for (const struct daemon_window *w = d->windows; w; w = w->next)
		if (w->end_ns < at)
			at = w->end_ns;
	if (awaits_between_ticks(d) && now + BETWEEN_TICKS_NS < at)
		at = now + BETWEEN_TICKS_NS;
	return at;
}

int daemon__consume(struct daemon *d)
{
	d->consume_until_ns = lp_now_ns() + CONSUME_SLICE_NS;
	d->consume_check = CONSUME_CHECK_EVERY;
	return ring_buffer__consume(bpf_session__ringbuf(d->core.bpf));
}

int daemon__poll(struct daemon *d, int timeout_ms)
{
	bool had_stacks = stack_store__count(d->stacks) > 0;
	uint64_t now;
	int err;

	err = wait_events(d, timeout_ms);
	/* Events are sent without a wake-up until a batch is waiting
	 * (rb_flags() in BPF): take whatever is there on every poll. */
	if (err >= 0 || err == -EINTR) {
		int n = daemon__consume(d);

		if (n < 0 && n != CONSUME_YIELD && err >= 0)
			err = n;
	}
	/* The first symbolization opens the targets' DWARF (libc's debug
	 * file alone: 40 ms of decompression): at start-up, once the first
	 * stacks have been counted and reported, rather than at the first
	 * tick, amid the steady state; but not before every target has its
	 * unwind tables, or the samples taken during the stall are walked
	 * without them (a launched command gets them at its first samples). */
	if (had_stacks && !d->symbolized && tables_ready(d)) {
		d->symbolized = true;
		daemon__symbolize_new(d);
	}
	/* the programs verified in the background, attached once they are */
	daemon__programs_ready(d, false);
	now = lp_now_ns();
	/* A library a trace waits for is looked for at every poll, not only
	 * at the tick: calls made in the meantime would be missed. */
	if (d->traces)
		traces__retry_pending(d->traces);
	while (now - d->last_tick_ns >= 1000000000ULL) {
		d->last_tick_ns += 1000000000ULL;
		tick(d, now);
	}
	daemon__finish_windows(d, now);
	for (int i = 0; i < d->n_pollers; i++)
		d->pollers[i].fn(d->pollers[i].ctx);
	if (err == -EINTR)
		return -EINTR;
	return err < 0 ? err : 0;
}
