/* SPDX-License-Identifier: GPL-2.0 */
/*
 * daemon.h - the live state of a profiling session: events in, stacks
 * interned, counts for the whole run and for a sliding window, traces
 * and the split. The batch front end and the TUI both drive it through
 * daemon__poll() and read it between polls (single-threaded).
 */
#ifndef LP_USER_DAEMON_H
#define LP_USER_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "user/session/options.h"
#include "user/session/session_core.h"
#include "user/profile/stack_store.h"
#include "user/profile/stack_symbols.h"
#include "dwarf/symbolize.h"

struct bpf_session;
struct traces;
struct split;
struct unwinder;
struct unwind_tables;
struct reclaim;
struct lp_sample;

#define MAX_WINDOW_SLOTS 3600

/*
 * Stack bytes copied per sample with --call-graph fp: a frameless leaf's
 * return address is within its own small frame, so this is enough for
 * CFI to put back the caller the frame-pointer walk skips.
 */
#define FP_LEAF_COPY_BYTES 512

/* Most user frames kept per stack (DWARF unwinds can go past LP_MAX_USTACK). */
#define MAX_USER_FRAMES 256

/*
 * A window subscription: every sample taken (by its BPF timestamp) in
 * [start_ns, end_ns) is added to @counts, from the one sampler, while other
 * readers (the TUI, other scrapes) see the same events. When the window has
 * passed, @done is called once from daemon__poll() and the subscription is
 * removed; @done may free it.
 */
struct daemon_window {
	struct counts counts;
	struct counts holders; /* by pair id of d->holders: who woke the blocks */
	uint64_t start_ns, end_ns;
	void (*done)(struct daemon_window *w, void *ctx);
	void *ctx;
	struct daemon_window *next; /* private */
};

/* A file descriptor polled with the ring buffer; @fn runs on every poll. */
struct daemon_poller {
	int fd;
	void (*fn)(void *ctx);
	void *ctx;
};

#define MAX_POLLERS 4

struct daemon_calib;

struct daemon {
	struct session_core core; /* opts, bpf, symbols, procs, child, times */
	struct symbolizer *sym;
	struct stack_store *stacks;
	struct traces *traces;
	struct split *split;
	struct unwinder *unwind;    /* CFI over the copied stacks */
	struct alloc_prof *alloc;   /* --alloc, see alloc.h */
	struct unwind_tables *utab; /* CFI tables of the BPF unwinder, NULL without it */
	struct python_procs *py;    /* CPython targets, NULL with --no-interp */
	struct ruby_procs *rb;	    /* CRuby targets, NULL with --no-interp */
	struct reclaim *reclaim;    /* idle stacks folded and released, see reclaim.h */
	struct code_spans *spans;   /* code mappings of recent stacks, see stack_fixup.h */

	const char *child_exe; /* its executable, resolved through PATH */
	int child_status;      /* wait status once it exited */
	bool child_exited;
	bool symbolized; /* the first symbolization has run */
	/* stacks keep their addresses once symbolized, for a session that
	 * symbolizes them again in another way (causal profiling's lines);
	 * otherwise they are shed (stack_store__shed) */
	bool keep_addresses;
	/* the programs verified in the background (bpf_session.h) */
	struct daemon_calib *calib; /* the sample cost their loader measures */
	bool programs_done;	    /* their load ended: ready, or load_error */
	int load_error;		    /* its negative errno */
	uint64_t ready_ns;	    /* when they were attached */
	uint64_t count_from_ns;	    /* samples taken before are dropped (0: none) */

	struct counts total; /* whole run */
	/* --offcpu: blocks by (waiter stack, waker stack) pair, see holders.h */
	struct holders *holders;
	struct counts holder_total; /* by pair id, whole run */
	struct counts *slots;	    /* one-second slots of the window, ring */
	int n_slots, cur_slot;

	unsigned int freq;
	bool paused;
	uint64_t last_tick_ns;
	uint64_t maps_reads;	 /* daemon__maps_reads() after the tick's last refresh */
	uint32_t epoch;		 /* ticks so far: the stack store's clock */
	uint64_t reclaim_ns;	 /* time spent in reclaim passes */
	uint64_t reclaim_errors; /* passes that found no memory to finish */
	uint64_t split_gen; /* changes whenever the split or its trace goes away or is replaced */
	uint64_t samples, offcpu_events, events_bad;
	uint64_t counters[16];	    /* LP_CNT_* from BPF, summed over CPUs */
	uint64_t truncated;	    /* stacks marked truncated */
	uint64_t unwound_dwarf;	    /* user stacks unwound with CFI */
	uint64_t unwound_fp;	    /* user stacks from frame pointers */
	uint64_t leaf_fixed;	    /* frame-pointer stacks given back a skipped caller */
	uint64_t unwind_ns;	    /* time spent in the unwinder */
	uint64_t tramp_fixed;	    /* uretprobe trampoline addresses put back */
	uint64_t uprobe_page_fixed; /* samples in the [uprobes] page given their function */
	uint64_t unwind_errors;	    /* stacks cut where a caller was not code */
	uint32_t self_pid;	    /* liveprof's own (getpid() is a syscall) */
	uint64_t unwound_kernel;    /* user stacks walked in BPF with CFI tables */
	uint64_t rescued_walks;	    /* of those, cut at an unknown mapping, unwound by libdw */
	/* --unwind-check: BPF walks compared with libdw over the copy */
	uint64_t check_compared, check_same, check_skipped;
	bool stop;
	/* A consume of the ring buffer ends by this time: events that come
	 * faster than the daemon takes them would keep libbpf's consume
	 * loop going, and -d, the tick and signals would wait forever. */
	uint64_t consume_until_ns;
	uint32_t consume_check;	       /* events until the clock is read again */
	struct daemon_window *windows; /* window subscriptions, see daemon__window_open */
	struct daemon_poller pollers[MAX_POLLERS];
	int n_pollers;
};

/**
 * daemon__init - set up the daemon for @o and the already-open @bpf
 *
 * Return: 0 or a negative errno.
 */
int daemon__init(struct daemon *d, struct options *o, struct bpf_session *bpf);
void daemon__fini(struct daemon *d);

/** daemon__add_target - follow process @pid: BPF filter, maps, name */
int daemon__add_target(struct daemon *d, int pid);

/**
 * daemon__consume - hand the events in the ring buffer to the daemon, for
 * at most a slice of time (100 ms)
 * @d: the daemon
 *
 * Return: the number of events taken, -EAGAIN if the slice ended with
 * events left (they come faster than they are taken), or a negative
 * errno from an event's handling.
 */
int daemon__consume(struct daemon *d);

/**
 * daemon__next_wake_ns - when daemon__poll() next has work of its own
 * @d: the daemon
 * @now: lp_now_ns()
 *
 * The next one-second tick or window end, or @now + 100 ms while the
 * daemon awaits something it looks for at every poll (programs being
 * verified, a trace's library, a server's connections). Events wake the
 * poll by themselves, once a batch of them is waiting.
 *
 * Return: a time on the lp_now_ns() clock.
 */
uint64_t daemon__next_wake_ns(const struct daemon *d, uint64_t now);

/**
 * daemon__poll - drain events for up to @timeout_ms, and run the
 * one-second tick when due (window rotation, histogram deltas)
 *
 * Return: 0, or a negative errno (-EINTR: interrupted, not an error).
 */
int daemon__poll(struct daemon *d, int timeout_ms);

/**
 * daemon__refresh_maps - have the symbolizer, the unwinder and the unwind
 * tables read @p's mappings again (new libraries, exec), unless
 * /proc/PID/maps reads the same as at the last refresh that went through
 * and @force is false
 * @now: CLOCK_MONOTONIC, for the unwind tables
 */
void daemon__refresh_maps(struct daemon *d, struct target_proc *p, uint64_t now, bool force);

/**
 * daemon__maps_reads - a count that grows whenever the symbolizer, the
 * unwinder or the unwind tables read a process's mappings, or the
 * symbolizer's view of them changed: if it moved since the last refresh,
 * a refresh cannot be skipped on the grounds that the maps look the same
 */
uint64_t daemon__maps_reads(struct daemon *d);

/** daemon__targets_alive - false once every target process is gone */
bool daemon__targets_alive(struct daemon *d);

/** daemon__symbolize_new - symbolize stacks interned since the last call */
int daemon__symbolize_new(struct daemon *d);

/**
 * daemon__intern_stack - the id of stack @rs (a waker's, an allocation's),
 * interned as a sampled stack is (daemon__sample_stack): if new,
 * symbolized now and kept without its addresses. Every intern of the
 * daemon's goes through here or daemon__sample_stack(), so that new ids
 * come in turn for the symbolizer.
 *
 * Return: the id, or a negative errno.
 */
int64_t daemon__intern_stack(struct daemon *d, const struct raw_stack *rs);

/**
 * daemon__sample_stack - the id of the stack of sample @s (daemon_stacks.c),
 * interned and, if new, symbolized
 * @us: room for MAX_USER_FRAMES user frames, which @rs points into
 * @rs: the stack as interned
 *
 * Return: the id, or a negative errno.
 */
int64_t daemon__sample_stack(struct daemon *d, const struct lp_sample *s, uint64_t *us,
			     struct raw_stack *rs);

/** daemon__window_counts - sum of the window's slots into @out (cleared first) */
int daemon__window_counts(struct daemon *d, struct counts *out);

/** daemon__set_window - change the sliding window length in seconds */
int daemon__set_window(struct daemon *d, int seconds);

/** daemon__process_name - the root frame name for @pid */
const char *daemon__process_name(void *d, uint32_t pid);

/**
 * daemon__window_open - subscribe @w to the samples of the next @duration_ns
 *
 * The caller owns @w and sets @w->done and @w->ctx; @w->counts is
 * initialised here. Return: 0, or -EINVAL for a zero duration.
 */
int daemon__window_open(struct daemon *d, struct daemon_window *w, uint64_t duration_ns);

/**
 * daemon__window_close - remove @w before its end (a client went away);
 * its counts are freed, @done is not called
 */
void daemon__window_close(struct daemon *d, struct daemon_window *w);

/** daemon__window_active - number of open window subscriptions */
int daemon__window_active(const struct daemon *d);

/**
 * daemon__finish_windows - hand over the subscriptions whose end has
 * passed by @now (each one's @done, which may free it). Events are
 * consumed on every poll, so by then every sample stamped before the end
 * is in.
 */
void daemon__finish_windows(struct daemon *d, uint64_t now);

/**
 * daemon__add_poller - wait on @fd together with the ring buffer in
 * daemon__poll() and call @fn(@ctx) after every poll, in the daemon's thread
 *
 * Return: 0, or -E2BIG when MAX_POLLERS are registered.
 */
int daemon__add_poller(struct daemon *d, int fd, void (*fn)(void *ctx), void *ctx);

/** daemon__remove_poller - forget every poller registered with @ctx */
void daemon__remove_poller(struct daemon *d, void *ctx);

/* ---- commands: the one way in for the CLI, the TUI and the HTTP server ---- */

struct split_result;

/**
 * daemon__open - load the BPF programs for @o and set up the daemon
 * @tracing: load the uprobe programs even without --trace/--split (the TUI
 *           may trace later)
 *
 * Prints the reason on failure. Call daemon__close() either way.
 * Return: EXIT_OK or the EXIT_* status for the failure.
 */
int daemon__open(struct daemon *d, struct options *o, bool tracing);

/** daemon__start - start sampling at the daemon's frequency; EXIT_* like daemon__open */
int daemon__start(struct daemon *d);

/**
 * daemon__restart - start the profile again at @from_ns (CLOCK_MONOTONIC):
 * what was counted so far is dropped, and so are the samples taken before
 * it that are still to be read; the stacks stay interned
 */
void daemon__restart(struct daemon *d, uint64_t from_ns);

/**
 * daemon__programs_ready - whether the tracing and off-CPU programs, which
 * are verified while the daemon samples, are attached (with the uprobes
 * asked for meanwhile); daemon__poll() asks without waiting
 * @wait: wait for them
 *
 * An --offcpu profile starts again when the off-CPU programs go in
 * (daemon__restart), so that it weighs on-CPU and off-CPU time over one
 * and the same span.
 *
 * Return: 1 (also for sessions without them), 0 while they load, or the
 * load's negative errno (printed once).
 */
int daemon__programs_ready(struct daemon *d, bool wait);

/**
 * daemon__finish - stop sampling, take the events still in the ring
 * buffer, symbolize and read the histograms once more: the run's end
 */
void daemon__finish(struct daemon *d);

/** daemon__close - detach and free everything daemon__open() set up */
void daemon__close(struct daemon *d);

/** daemon__set_freq - sample at @hz (1..100000); 0 or a negative errno */
int daemon__set_freq(struct daemon *d, unsigned int hz);

/** daemon__pause - stop (@paused) or resume taking samples; -EALREADY if no change */
int daemon__pause(struct daemon *d, bool paused);

/** daemon__find_trace - the index of the trace of @spec (or of its function), or -1 */
int daemon__find_trace(struct daemon *d, const char *spec);

/**
 * daemon__trace - resolve @spec in every target and attach its probes
 * @by: a value expression to group the latency by, or NULL
 * @err: a one-line message for the user on failure
 *
 * Return: the probe id (>= 0), or a negative errno (-EEXIST: already traced).
 */
int daemon__trace(struct daemon *d, const char *spec, const char *by, char *err, size_t errlen);

/** daemon__untrace - detach @spec's trace, and the split that depends on it */
int daemon__untrace(struct daemon *d, const char *spec, char *err, size_t errlen);

/**
 * daemon__split - split FUNC[@pNN] (default p95) into slow and fast calls
 * @when: a FILE:LINE: keep only calls that ran it, or NULL
 * @by: as for daemon__trace() when the function is not traced yet
 *
 * Reuses the function's trace when there is one; on the same function
 * only the percentile moves. -EINVAL is a malformed @spec (usage error).
 * Return: 0 or a negative errno, with a message in @err.
 */
int daemon__split(struct daemon *d, const char *spec, const char *when, const char *by, char *err,
		  size_t errlen);

/** daemon__unsplit - drop the split (its trace stays) */
void daemon__unsplit(struct daemon *d);

/**
 * daemon__split_compute - classify the split's sampled calls and rank frames
 * @window: only calls that ended within the sliding window
 * @use_weight: shares of blocked time (with --offcpu) instead of counts
 *
 * Return: 0, -ENOENT without a split, or a negative errno. Free @r with
 * split_result__fini().
 */
int daemon__split_compute(struct daemon *d, bool window, bool use_weight, struct split_result *r);

/**
 * daemon__complete - names of functions in the targets that start with @prefix
 * @out: receives up to @max names, owned by the daemon until the next call
 *
 * Return: how many were written.
 */
int daemon__complete(struct daemon *d, const char *prefix, const char **out, int max);

/**
 * split_spec_parse - the one parser of FUNC[@pNN]
 * @func: receives FUNC
 * @pct: receives NN, 95 when absent
 *
 * Return: 0, or -EINVAL with a one-line message in @err.
 */
int split_spec_parse(const char *text, char *func, size_t funclen, double *pct, char *err,
		     size_t errlen);

#endif
