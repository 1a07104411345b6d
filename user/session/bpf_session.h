/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bpf_session.h - owning the BPF side of a profiling session: the
 * skeleton, the per-CPU sampling events, and the uprobes attached and
 * detached at run time. Everything attached here is detached by
 * bpf_session__close(); the kernel also drops it all if liveprof dies,
 * because every attachment is a link or an fd owned by this process.
 */
#ifndef LP_USER_BPF_SESSION_H
#define LP_USER_BPF_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>
#include "bpf/liveprof.h"
#include "dwarf/fetch_compile.h"

struct bpf_session;
struct ring_buffer;

struct bpf_session_opts {
	bool all_processes;
	bool kernel_stacks;
	bool offcpu;
	bool tracing; /* load the uprobe programs (in the background: ~0.35 s here) */
	/* with tracing: also the `ret`-instruction program (Go targets, and
	 * those that unwind their stacks: target_kind.h), the py: pair */
	bool ret_insn_returns;
	bool py_probes;
	uint64_t offcpu_min_ns;
	unsigned int ringbuf_mb; /* 0: 8 MiB, 32 MiB with a stack copy */
	/* user stack bytes copied after each on-CPU sample, for unwinding in
	 * user space; 0: frame-pointer stacks only (at most LP_MAX_STACK_COPY) */
	unsigned int stack_copy_bytes;
	bool verbose;	  /* print libbpf's log, including the verifier's */
	bool raw_latency; /* latencies as measured, not net of liveprof's own cost */
	/* walk user stacks in BPF with CFI tables (bpf/unwind.bpf.h) */
	bool kernel_unwind;
	/* with kernel_unwind: bytes of stack sent with a sample whose walk met
	 * a mapping with no table yet, for libdw to unwind (0: none) */
	unsigned int rescue_copy_bytes;
	unsigned int max_frames;  /* user frames per stack, 1..LP_MAX_USTACK (0: the maximum) */
	unsigned int unwind_rows; /* capacity of the rows map (0: the default) */
	bool interp_frames;	  /* read the frames of processes set with set_python/ruby */
	/*
	 * With tracing or offcpu, their programs are verified in a thread
	 * while the session samples; then @loaded_hook(session, @loaded_ctx)
	 * runs in the thread that finds them loaded, before any is attached.
	 */
	void (*loaded_hook)(struct bpf_session *s, void *ctx);
	void *loaded_ctx;
};

#define BPF_SESSION_UNWIND_ROWS 1000000 /* 12 MB: libc + CPython + a large binary */

enum bpf_probe_prog {
	PROBE_PROG_ENTRY,	/* uprobe at the function entry */
	PROBE_PROG_RETURN,	/* uretprobe */
	PROBE_PROG_RET_INSN,	/* uprobe on a `ret` instruction (Go) */
	PROBE_PROG_LINE,	/* uprobe on a line's address */
	PROBE_PROG_USDT_ENTRY,	/* uprobe on a USDT pair's entry probe */
	PROBE_PROG_USDT_RETURN, /* uprobe on its return probe */
	PROBE_PROG_PY_START,	/* uprobe on CPython's resume_frame (py:) */
	PROBE_PROG_PY_RETURN,	/* uprobe on python:function__return (py:) */
	PROBE_PROG_PY_YIELD,	/* uprobe on TARGET_YIELD_VALUE (py:, no USDT) */
};

/**
 * bpf_session__log_init - route libbpf's messages: its warnings are read
 * for a refused program's reason (bpf_caps.h), and printed with @verbose
 */
void bpf_session__log_init(bool verbose);

/**
 * bpf_session__open - open, configure and load the BPF object
 * @out: set to the new session, owned by the caller
 *
 * Return: 0, or a negative errno: -EPERM (privileges), -ENOENT (no BTF),
 * anything else means the load failed (details were printed with verbose).
 */
int bpf_session__open(struct bpf_session **out, const struct bpf_session_opts *o);

/**
 * bpf_session__programs_ready - whether the tracing and off-CPU programs,
 * verified in the background, are loaded; the first call that finds them
 * loaded attaches them (off-CPU) and the uprobes asked for meanwhile
 * @wait: wait for the load to end
 *
 * A uprobe asked for while they load gets its handle at once and is
 * attached then. Sessions without them are always ready.
 *
 * Return: 1 ready, 0 still loading, or the negative errno of a load that
 * failed (printed; the waiting uprobes were not attached).
 */
int bpf_session__programs_ready(struct bpf_session *s, bool wait);

/**
 * bpf_session__refused - why this kernel refused capability @cap's programs
 * (a program's name and the verifier's reason), or NULL: not refused, or
 * not known yet (the background load has not been joined)
 */
const char *bpf_session__refused(const struct bpf_session *s, enum lp_cap cap);

/**
 * bpf_session__ready_ns - when bpf_session__programs_ready() attached the
 * programs loaded in the background (CLOCK_MONOTONIC): 0 for a session
 * without them, UINT64_MAX while they load or after their load failed
 */
uint64_t bpf_session__ready_ns(const struct bpf_session *s);

/**
 * bpf_session__set_python - read the CPython frames of process @pid at
 * each of its samples, with @cfg (its _PyRuntime and member offsets)
 *
 * Return: 0, or a negative errno.
 */
int bpf_session__set_python(struct bpf_session *s, uint32_t pid, const struct lp_py_cfg *cfg);

/**
 * bpf_session__set_ruby - read the CRuby frames of process @pid at each
 * of its samples, with @cfg (its ruby_current_vm_ptr and member offsets)
 *
 * Return: 0, or a negative errno.
 */
int bpf_session__set_ruby(struct bpf_session *s, uint32_t pid, const struct lp_rb_cfg *cfg);
void bpf_session__close(struct bpf_session *s);

struct unwind_maps;

/**
 * bpf_session__unwind_maps - where the BPF unwinder's tables go
 * @s: a session opened with kernel_unwind
 * @out: filled (the rows mapping stays valid until bpf_session__close())
 *
 * Return: 0, or -ENOENT when the session does not unwind in BPF.
 */
int bpf_session__unwind_maps(struct bpf_session *s, struct unwind_maps *out);

/** bpf_session__add_pid - profile process @pid (all its threads, present and future) */
int bpf_session__add_pid(struct bpf_session *s, uint32_t pid);

/**
 * bpf_session__start_sampling - open a cpu-clock event on every CPU at @hz
 * and attach the sampler. Calling it again changes the rate.
 *
 * Return: 0 or a negative errno (-ENOENT/-EOPNOTSUPP: no such event).
 */
int bpf_session__start_sampling(struct bpf_session *s, unsigned int hz);
void bpf_session__stop_sampling(struct bpf_session *s);

/**
 * bpf_session__attach_uprobe - attach one probe program to @path at file
 * offset @offset, for process @pid (-1: every process mapping @path)
 * @cookie: the probe id the program will see
 *
 * Return: a handle >= 0 to pass to bpf_session__detach, or a negative errno.
 */
int bpf_session__attach_uprobe(struct bpf_session *s, enum bpf_probe_prog prog, int pid,
			       const char *path, uint64_t offset, uint32_t cookie);
void bpf_session__detach(struct bpf_session *s, int handle);

/**
 * bpf_session__has_prog - whether the program behind @prog was loaded (the
 * Go and py: programs are loaded only for targets that can use them:
 * bpf_session_opts.ret_insn_returns, .py_probes); attaching one that was not
 * fails with -ENOEXEC
 */
bool bpf_session__has_prog(const struct bpf_session *s, enum bpf_probe_prog prog);

/**
 * bpf_session__attach_uprobe_sema - bpf_session__attach_uprobe, with the
 * kernel keeping a USDT semaphore raised while the probe is attached
 * @sema_offset: the semaphore's file offset in @path (0: none)
 *
 * Return: as bpf_session__attach_uprobe.
 */
int bpf_session__attach_uprobe_sema(struct bpf_session *s, enum bpf_probe_prog prog, int pid,
				    const char *path, uint64_t offset, uint64_t sema_offset,
				    uint32_t cookie);

/**
 * bpf_session__set_py_name - let trace @id time the calls of Python
 * functions whose qualname is @name (shorter than LP_STR_LEN - 1), or
 * forget it when @on is false; decisions cached per code object lapse
 *
 * Return: 0, -ENAMETOOLONG, or a negative errno from the map.
 */
int bpf_session__set_py_name(struct bpf_session *s, uint32_t id, const char *name, bool on);

/**
 * bpf_session__set_py_hit_cost - what a hit of the py: start and return
 * probes costs a thread beyond its program's timed run (@start_ns,
 * @return_ns), charged with that run to its traced calls around the hit;
 * the programs of py: trace @owner_id (one of those attached) do the work
 * of all py: traces
 */
void bpf_session__set_py_hit_cost(struct bpf_session *s, uint32_t owner_id, uint64_t start_ns,
				  uint64_t return_ns);

/**
 * bpf_session__take_py_gaps - the shortest gaps between py: probe hits
 * seen on any CPU since the last call, and how many (pytrace.bpf.h),
 * into @out; the counts start again from zero
 *
 * Return: 0, or a negative errno from the map.
 */
int bpf_session__take_py_gaps(struct bpf_session *s, struct lp_py_gaps *out);

/**
 * bpf_session__set_str_match - let USDT pair @id time the hits whose two
 * strings are @a and @b (each shorter than LP_STR_LEN - 1), or forget them
 * when @on is false
 *
 * Return: 0, -ENAMETOOLONG, or a negative errno from the map.
 */
int bpf_session__set_str_match(struct bpf_session *s, uint32_t id, const char *a, const char *b,
			       bool on);

/**
 * bpf_session__probe_site - whether an attached entry, line or ret-insn
 * probe has its breakpoint at @offset of the file (@dev, @ino) (st_dev,
 * st_ino)
 */
bool bpf_session__probe_site(struct bpf_session *s, uint64_t dev, uint64_t ino, uint64_t offset);

struct bpf_probe_site {
	uint64_t dev, ino, offset;
};

/**
 * bpf_session__entry_sites - where the entry probes with cookie @cookie are
 * @out: up to @max sites (file st_dev, st_ino, file offset)
 *
 * Return: the number of sites written.
 */
int bpf_session__entry_sites(struct bpf_session *s, uint32_t cookie, struct bpf_probe_site *out,
			     int max);

/** bpf_session__set_probe - write the configuration of probe @id */
int bpf_session__set_probe(struct bpf_session *s, uint32_t id, const struct lp_probe_cfg *cfg,
			   const struct fetch_prog *progs, unsigned int n_progs);
/** bpf_session__clear_probe - forget probe @id's histogram and stats */
int bpf_session__clear_probe(struct bpf_session *s, uint32_t id);

/** bpf_session__ringbuf - the ring buffer, to be polled by the event loop */
struct ring_buffer *bpf_session__ringbuf(struct bpf_session *s);
int bpf_session__set_ringbuf_cb(struct bpf_session *s, int (*cb)(void *, void *, size_t),
				void *ctx);

/** bpf_session__counters - sum the per-CPU counters into @out[LP_CNT_NR] */
int bpf_session__counters(struct bpf_session *s, uint64_t *out);

/** bpf_session__hist - the mmap'ed histogram: LP_MAX_PROBES * LP_HIST_BUCKETS counters */
const volatile uint64_t *bpf_session__hist(struct bpf_session *s);

/** bpf_session__probe_stats - the mmap'ed per-probe stats, LP_MAX_PROBES entries */
const volatile struct lp_probe_stats *bpf_session__probe_stats(struct bpf_session *s);

/**
 * bpf_session__attach_calib - run the sampler on the perf event @perf_fd
 * of the daemon's own thread @tid as if it were a target (one at a time;
 * see sample_cost.c); the daemon drops those samples
 *
 * On success the attachment owns @perf_fd: bpf_session__detach_calib()
 * closes it, and the caller must not. On failure it stays the caller's.
 *
 * Return: 0 or a negative errno.
 */
int bpf_session__attach_calib(struct bpf_session *s, int perf_fd, uint32_t tid);
/** bpf_session__detach_calib - detach the calibration sampler, if attached */
void bpf_session__detach_calib(struct bpf_session *s);
/** bpf_session__calib_samples - the count of calibration samples, live */
const volatile uint64_t *bpf_session__calib_samples(struct bpf_session *s);
/**
 * bpf_session__calib_slots - the timed timer interrupt of calibration
 * sample i at [i % LP_CALIB_SLOTS] (bracket_ns 0: none recorded), zeroed
 * first with @reset; NULL when the timer interrupt is not timed
 */
const volatile struct lp_calib_slot *bpf_session__calib_slots(struct bpf_session *s, bool reset);
/**
 * bpf_session__set_sample_charge - what a sample costs beyond what BPF times
 * @s: the session
 * @ns: charged more per sample outside a timed timer interrupt
 * @scale: per timed timer interrupt, its length x @scale / 1024 more
 */
void bpf_session__set_sample_charge(struct bpf_session *s, uint64_t ns, uint64_t scale);

/**
 * bpf_session__map_fd - fd of the session object's map @name, for another
 * BPF object to share it (bpf_map__reuse_fd before that object's load)
 *
 * Return: the fd, or a negative errno if there is no such map.
 */
int bpf_session__map_fd(struct bpf_session *s, const char *name);

/** bpf_session__by_hist_fd - fd of the --by (probe, value, bucket) -> count map */
int bpf_session__by_hist_fd(struct bpf_session *s);

/** bpf_session__set_paused - pause/resume sampling and tracing in BPF */
int bpf_session__set_paused(struct bpf_session *s, bool paused, bool offcpu_only_in_calls);

/**
 * bpf_session__set_causal_delay - busy-wait @ns at each entry of probe @id
 * (causal experiments; 0 stops it). Clamped to LP_CAUSAL_MAX_DELAY_NS.
 *
 * Return: 0, or -EINVAL for an id out of range.
 */
int bpf_session__set_causal_delay(struct bpf_session *s, uint32_t id, uint64_t ns);
/** bpf_session__causal_hits - probe hits that were delayed so far */
uint64_t bpf_session__causal_hits(struct bpf_session *s);
/** bpf_session__causal_yields - of those, the ones cut short for the scheduler */
uint64_t bpf_session__causal_yields(struct bpf_session *s);
/** bpf_session__causal_waited_ns - nanoseconds the delayed hits really waited so far */
uint64_t bpf_session__causal_waited_ns(struct bpf_session *s);

/**
 * bpf_session__start_causal_ticks - cpu-clock ticks of @period_ns on every
 * CPU for a line candidate's delays (bpf/causal.bpf.h), in place of the
 * sampler; bpf_session__stop_sampling() stops them
 *
 * Return: 0 or a negative errno.
 */
int bpf_session__start_causal_ticks(struct bpf_session *s, uint64_t period_ns);
/**
 * bpf_session__set_causal_line - the line whose ticks wait @delay_ns: @n
 * ranges [@lo[i], @hi[i]) of addresses in process @tgid (0 ranges: none).
 * Debts of the previous setting lapse.
 *
 * Return: 0, or -EINVAL for more than LP_CAUSAL_MAX_RANGES ranges.
 */
int bpf_session__set_causal_line(struct bpf_session *s, uint32_t tgid, const uint64_t *lo,
				 const uint64_t *hi, int n, uint64_t delay_ns);
/** bpf_session__causal_line_counts - ticks in the process, in its user code, in the line */
void bpf_session__causal_line_counts(struct bpf_session *s, uint64_t *ticks, uint64_t *user,
				     uint64_t *hits);

/** bpf_session__nr_cpus - number of possible CPUs */
int bpf_session__nr_cpus(struct bpf_session *s);

#endif
