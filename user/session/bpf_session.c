// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_session.c - loading liveprof.bpf.c and attaching its programs.
 * Sequence as in libbpf-tools: open, set rodata and map sizes, load,
 * attach; one cleanup path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <linux/perf_event.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "user/session/bpf_session.h"
#include "user/session/bpf_session_internal.h"
#include "user/session/bpf_caps.h"
#include "user/session/min_btf.h"
#include "user/session/unwind_tables.h"
#include "user/util/log.h"
#include "liveprof.skel.h"

static bool g_verbose;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	char *msg = NULL;
	int n;

	if (level == LIBBPF_DEBUG)
		return 0;
	/* whole: a verifier log's reason is its last line (bpf_caps.c) */
	n = vasprintf(&msg, fmt, args);
	if (n < 0)
		return 0;
	lp_load_failure_note(msg);
	if (g_verbose)
		fputs(msg, LP_LOG); /* the loader thread's are kept */
	free(msg);
	return n;
}

void bpf_session__log_init(bool verbose)
{
	g_verbose = verbose;
	libbpf_set_print(libbpf_print);
}

static void *map_mmap(struct bpf_map *map, size_t *len)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t sz = (size_t)bpf_map__max_entries(map) * bpf_map__value_size(map);
	void *mem;

	sz = (sz + page - 1) & ~(size_t)(page - 1);
	mem = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(map), 0);
	if (mem == MAP_FAILED)
		return NULL;
	*len = sz;
	return mem;
}

/* The skeleton's constants from @o, before the load; -EINVAL for a bad size. */
static int set_rodata(struct bpf_session *s, const struct bpf_session_opts *o)
{
	struct liveprof_bpf__rodata *rd = s->skel->rodata;

	if (o->stack_copy_bytes > LP_MAX_STACK_COPY || o->rescue_copy_bytes > LP_MAX_STACK_COPY ||
	    o->max_frames > LP_MAX_USTACK)
		return -EINVAL;
	rd->filter_all = o->all_processes;
	rd->capture_kernel = o->kernel_stacks;
	rd->offcpu_enabled = o->offcpu;
	rd->offcpu_min_ns = o->offcpu_min_ns;
	rd->self_tgid = getpid();
	rd->stack_copy_bytes = o->stack_copy_bytes;
	rd->rescue_copy_bytes = o->kernel_unwind ? o->rescue_copy_bytes : 0;
	rd->raw_latency = o->raw_latency;
	rd->max_frames = o->max_frames ? o->max_frames : LP_MAX_USTACK;
	rd->kernel_unwind = o->kernel_unwind;
	rd->uprobes_possible = o->tracing;
	rd->interp_frames = o->interp_frames;
	rd->refuse_caps = lp_cap_test_mask();
	return 0;
}

/* Map sizes and the programs to load, from @o, before the load. */
static void size_maps(struct bpf_session *s, const struct bpf_session_opts *o)
{
	struct liveprof_bpf *k = s->skel;
	unsigned int ringbuf_mb, rows;

	/* Without the BPF unwinder the rows map would only cost memory. */
	rows = o->unwind_rows ? o->unwind_rows : BPF_SESSION_UNWIND_ROWS;
	bpf_map__set_max_entries(k->maps.unwind_rows,
				 o->kernel_unwind ? (rows + LP_UNWIND_ROWS_PER_BLOCK - 1) /
							    LP_UNWIND_ROWS_PER_BLOCK
						  : 1);
	if (!o->kernel_unwind) {
		bpf_map__set_max_entries(k->maps.unwind_tables, 1);
		bpf_map__set_max_entries(k->maps.unwind_procs, 1);
	}
	/* One build slot per CPU for samples with a stack copy; none without. */
	bpf_map__set_max_entries(k->maps.sample_buf,
				 o->stack_copy_bytes || o->rescue_copy_bytes ? s->nr_cpus : 1);
	/* 16 KiB copies at 999 Hz are 16 MB/s per CPU: give the daemon more
	 * than a fraction of a second of slack before events are lost. */
	ringbuf_mb = o->ringbuf_mb ? o->ringbuf_mb : (o->stack_copy_bytes > 4096 ? 32 : 8);
	bpf_map__set_max_entries(k->maps.events, ringbuf_mb << 20);
	/* An eighth of the ring: one wake-up per batch of events, with room
	 * left for what arrives while the daemon catches up. */
	k->rodata->wakeup_bytes = (uint64_t)ringbuf_mb << 17;
	/*
	 * Load only what the session can use: verifying a program costs the
	 * start-up its time (this kernel, 2 CPUs: the return programs 0.5 s
	 * each, the py: ones 0.25-0.43 s, the sampler 18 ms). --offcpu once
	 * loaded all of them, 1.4 s of verification for programs no
	 * sampling-only session attaches.
	 */
	if (!o->offcpu) {
		bpf_program__set_autoload(k->progs.lp_sched_switch, false);
		bpf_program__set_autoload(k->progs.lp_sched_waking, false);
		/* The stack map of an unused program still costs memory. */
		bpf_map__set_max_entries(k->maps.offcpu_start, 1);
	}
	if (!o->tracing) {
		bpf_program__set_autoload(k->progs.lp_func_entry, false);
		bpf_program__set_autoload(k->progs.lp_func_return, false);
		bpf_program__set_autoload(k->progs.lp_func_ret_insn, false);
		bpf_program__set_autoload(k->progs.lp_line_hit, false);
		/* the USDT pairs' string match alone took 170 ms to verify */
		bpf_program__set_autoload(k->progs.lp_usdt_entry, false);
		bpf_program__set_autoload(k->progs.lp_usdt_return, false);
		bpf_program__set_autoload(k->progs.lp_causal_tick, false);
		/* --by's table is preallocated: 65,536 entries took 1.2 ms to
		 * create, for traces this session cannot have */
		bpf_map__set_max_entries(k->maps.by_hist, 1);
	}
	/* the bracket around timer interrupts (attach_timer_bracket) */
	if (!o->tracing && !o->offcpu) {
		bpf_program__set_autoload(k->progs.lp_timer_entry, false);
		bpf_program__set_autoload(k->progs.lp_timer_exit, false);
	}
	/* Targets that cannot use them (target_kind.h) */
	if (!o->tracing || !o->ret_insn_returns)
		bpf_program__set_autoload(k->progs.lp_func_ret_insn, false);
	if (!o->tracing || !o->py_probes) {
		bpf_program__set_autoload(k->progs.lp_py_start, false);
		bpf_program__set_autoload(k->progs.lp_py_return, false);
		bpf_program__set_autoload(k->progs.lp_py_yield, false);
		/* their preallocated LRU tables: 98,304 entries to set up */
		bpf_map__set_max_entries(k->maps.py_codes, 1);
		bpf_map__set_max_entries(k->maps.py_gens, 1);
	}
}

/*
 * A memfd holding the embedded kernel-type subset (min_btf.h), if this is
 * the kernel it was cut from; else -1, and libbpf reads the whole BTF.
 */
static int min_btf_fd(void)
{
	struct utsname u;
	struct stat st;
	size_t done = 0;
	int fd;

	if (!lp_min_btf_len || uname(&u) || strcmp(u.release, lp_min_btf_release) ||
	    strcmp(u.version, lp_min_btf_version) || stat("/sys/kernel/btf/vmlinux", &st) ||
	    st.st_size != lp_min_btf_vmlinux_size)
		return -1;
	fd = memfd_create("liveprof-btf", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	while (done < lp_min_btf_len) {
		ssize_t w = write(fd, lp_min_btf + done, lp_min_btf_len - done);

		if (w <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)w;
	}
	return fd;
}

/*
 * Open the skeleton, with the kernel-type subset for CO-RE when it applies:
 * *@btf_fd holds it (or is -1), to be closed after the load, when libbpf
 * reads it.
 */
static struct liveprof_bpf *open_skel(int *btf_fd)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo);
	char path[64];

	*btf_fd = min_btf_fd();
	if (*btf_fd >= 0) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", *btf_fd);
		oo.btf_custom_path = path; /* copied by libbpf */
	}
	return liveprof_bpf__open_opts(&oo);
}

/*
 * Open and load the core instance for @o (the sampler, and the maps every
 * program shares), and open the deferred one. Returns 0 or a negative
 * errno; s->skel is left for the caller to destroy either way.
 */
static int load_core(struct bpf_session *s, const struct bpf_session_opts *o)
{
	int err, btf_fd;

	s->skel = open_skel(&btf_fd);
	if (!s->skel)
		return errno ? -errno : -EINVAL;
	err = set_rodata(s, o);
	if (!err) {
		size_maps(s, o);
		bpf_session_choose_uprobe_kind(s, o);
		/* what the first sample does not need is verified in the background */
		if (o->tracing || o->offcpu)
			err = bpf_session_defer_open(s, open_skel, o->loaded_hook, o->loaded_ctx);
	}
	if (!err)
		err = liveprof_bpf__load(s->skel);
	if (btf_fd >= 0)
		close(btf_fd);
	return err > 0 ? -EINVAL : err;
}

static void unload_core(struct bpf_session *s)
{
	bpf_session_defer_close(s);
	liveprof_bpf__destroy(s->skel);
	s->skel = NULL;
}

/*
 * The sampler was refused with stacks unwound in BPF or interpreter frames
 * on (@err): find which of them the kernel refuses by loading without
 * each, keep the rest, and say in one line what was lost and why. Sampling
 * itself stays: a kernel that refuses one capability loses that one alone.
 * Returns 0 with *@eff the options that loaded, or @err.
 */
static int load_core_without_refused(struct bpf_session *s, struct bpf_session_opts *eff, int err)
{
	static const struct {
		bool unwind, interp;
	} tries[] = {{true, false}, {false, true}, {false, false}};
	struct lp_load_failure f;
	char why[sizeof(f.prog) + sizeof(f.reason) + 2];

	if (!lp_load_failure_take(&f))
		return err;
	snprintf(why, sizeof(why), "%s: %s", f.prog, f.reason);
	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		struct bpf_session_opts t = *eff;

		t.kernel_unwind = eff->kernel_unwind && tries[i].unwind;
		t.interp_frames = eff->interp_frames && tries[i].interp;
		if (t.kernel_unwind == eff->kernel_unwind && t.interp_frames == eff->interp_frames)
			continue;
		unload_core(s);
		if (load_core(s, &t)) {
			lp_load_failure_take(&f);
			continue;
		}
		if (eff->kernel_unwind && !t.kernel_unwind)
			lp_err("%s is not available on this kernel: %s; stacks come from frame "
			       "pointers", lp_cap_name(LP_CAP_KUNWIND), why);
		if (eff->interp_frames && !t.interp_frames)
			lp_err("%s are not available on this kernel: %s", lp_cap_name(LP_CAP_INTERP),
			       why);
		*eff = t;
		return 0;
	}
	return err;
}

int bpf_session__open(struct bpf_session **out, const struct bpf_session_opts *o)
{
	struct bpf_session_opts eff;
	struct bpf_session *s;
	int err;

	*out = NULL;
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return -ENOENT;
	bpf_session__log_init(o->verbose);

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (int i = 0; i < MAX_UPROBE_LINKS; i++)
		s->multi_fds[i] = -1;
	s->verbose = o->verbose;
	s->nr_cpus = libbpf_num_possible_cpus();
	if (s->nr_cpus <= 0) {
		err = s->nr_cpus ? s->nr_cpus : -EINVAL;
		goto fail;
	}
	s->perf_fds = calloc(s->nr_cpus, sizeof(int));
	s->perf_links = calloc(s->nr_cpus, sizeof(*s->perf_links));
	if (!s->perf_fds || !s->perf_links) {
		err = -ENOMEM;
		goto fail;
	}
	for (int i = 0; i < s->nr_cpus; i++)
		s->perf_fds[i] = -1;

	eff = *o;
	err = load_core(s, &eff);
	if (err && (eff.kernel_unwind || eff.interp_frames))
		err = load_core_without_refused(s, &eff, err);
	if (err)
		goto fail;
	if (s->def) {
		err = bpf_session_defer_start(s);
		if (err)
			goto fail;
	}
	s->hist_mem = map_mmap(s->skel->maps.hist, &s->hist_len);
	s->stats_mem = map_mmap(s->skel->maps.probe_stats, &s->stats_len);
	if (eff.kernel_unwind)
		s->rows_mem = map_mmap(s->skel->maps.unwind_rows, &s->rows_len);
	if (!s->hist_mem || !s->stats_mem || (eff.kernel_unwind && !s->rows_mem)) {
		err = -errno;
		goto fail;
	}
	*out = s;
	return 0;
fail:
	bpf_session__close(s);
	return err;
}

int bpf_session__unwind_maps(struct bpf_session *s, struct unwind_maps *out)
{
	if (!s->rows_mem)
		return -ENOENT;
	out->rows = s->rows_mem;
	out->max_rows = bpf_map__max_entries(s->skel->maps.unwind_rows) * LP_UNWIND_ROWS_PER_BLOCK;
	out->max_tables = bpf_map__max_entries(s->skel->maps.unwind_tables);
	out->tables_fd = bpf_map__fd(s->skel->maps.unwind_tables);
	out->procs_fd = bpf_map__fd(s->skel->maps.unwind_procs);
	return 0;
}

int bpf_session__set_ringbuf_cb(struct bpf_session *s, int (*cb)(void *, void *, size_t), void *ctx)
{
	if (s->rb)
		ring_buffer__free(s->rb);
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), cb, ctx, NULL);
	return s->rb ? 0 : -errno;
}

struct ring_buffer *bpf_session__ringbuf(struct bpf_session *s)
{
	return s->rb;
}

void bpf_session__stop_sampling(struct bpf_session *s)
{
	for (int i = 0; i < s->nr_cpus; i++) {
		/* A link owns its perf event (libbpf closes it on destroy):
		 * closing it again here would close whatever took the number
		 * in between, in another thread. Only an event no link took
		 * (its attach failed) is ours to close. */
		if (s->perf_links[i])
			bpf_link__destroy(s->perf_links[i]);
		else if (s->perf_fds[i] >= 0)
			close(s->perf_fds[i]);
		s->perf_links[i] = NULL;
		s->perf_fds[i] = -1;
	}
}

/* A cpu-clock event of @period_ns on every CPU, running @prog. */
static int open_cpu_clocks(struct bpf_session *s, uint64_t period_ns, struct bpf_program *prog)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = period_ns,
	};
	int attached = 0, err = 0;

	bpf_session__stop_sampling(s);
	for (int cpu = 0; cpu < s->nr_cpus; cpu++) {
		int fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (errno == ENODEV) /* offline CPU */
				continue;
			err = -errno;
			break;
		}
		s->perf_fds[cpu] = fd;
		s->perf_links[cpu] = bpf_program__attach_perf_event(prog, fd);
		if (!s->perf_links[cpu]) {
			err = -errno;
			break;
		}
		attached++;
	}
	if (!err && !attached)
		err = -ENODEV;
	if (err)
		bpf_session__stop_sampling(s);
	return err;
}

int bpf_session__start_sampling(struct bpf_session *s, unsigned int hz)
{
	/* A fixed period in ns, not a frequency: every sample then weighs
	 * exactly the same, and weight_ns is exact. */
	return open_cpu_clocks(s, 1000000000ULL / (hz ? hz : 99), s->skel->progs.lp_sample_cpu);
}

int bpf_session__start_causal_ticks(struct bpf_session *s, uint64_t period_ns)
{
	int err = bpf_session__programs_ready(s, true);

	if (err < 0)
		return err;
	return open_cpu_clocks(s, period_ns, bpf_session_prog_skel(s)->progs.lp_causal_tick);
}

int bpf_session__add_pid(struct bpf_session *s, uint32_t pid)
{
	__u8 one = 1;

	return bpf_map__update_elem(s->skel->maps.targets, &pid, sizeof(pid), &one, sizeof(one),
				    BPF_ANY);
}

int bpf_session__set_python(struct bpf_session *s, uint32_t pid, const struct lp_py_cfg *cfg)
{
	return bpf_map__update_elem(s->skel->maps.py_procs, &pid, sizeof(pid), cfg, sizeof(*cfg),
				    BPF_ANY);
}

int bpf_session__set_ruby(struct bpf_session *s, uint32_t pid, const struct lp_rb_cfg *cfg)
{
	return bpf_map__update_elem(s->skel->maps.rb_procs, &pid, sizeof(pid), cfg, sizeof(*cfg),
				    BPF_ANY);
}

int bpf_session__counters(struct bpf_session *s, uint64_t *out)
{
	uint64_t *vals = calloc(s->nr_cpus, sizeof(uint64_t));

	if (!vals)
		return -ENOMEM;
	for (__u32 k = 0; k < LP_CNT_NR; k++) {
		out[k] = 0;
		if (bpf_map__lookup_elem(s->skel->maps.counters, &k, sizeof(k), vals,
					 s->nr_cpus * sizeof(uint64_t), 0))
			continue;
		for (int c = 0; c < s->nr_cpus; c++)
			out[k] += vals[c];
	}
	free(vals);
	return 0;
}

int bpf_session__set_paused(struct bpf_session *s, bool paused, bool offcpu_only_in_calls)
{
	struct {
		__u32 paused, offcpu_only_in_calls;
	} rt = {paused, offcpu_only_in_calls};
	__u32 zero = 0;

	return bpf_map__update_elem(s->skel->maps.runtime, &zero, sizeof(zero), &rt, sizeof(rt),
				    BPF_ANY);
}

int bpf_session__attach_calib(struct bpf_session *s, int perf_fd, uint32_t tid)
{
	if (s->calib_link)
		return -EBUSY;
	s->calib_link = bpf_program__attach_perf_event(s->skel->progs.lp_sample_cpu, perf_fd);
	if (!s->calib_link)
		return errno ? -errno : -EINVAL;
	__atomic_store_n(&s->skel->bss->calib_tid, tid, __ATOMIC_RELAXED);
	return 0;
}

void bpf_session__detach_calib(struct bpf_session *s)
{
	bpf_link__destroy(s->calib_link);
	s->calib_link = NULL;
	__atomic_store_n(&s->skel->bss->calib_tid, 0, __ATOMIC_RELAXED);
}

const volatile uint64_t *bpf_session__calib_samples(struct bpf_session *s)
{
	return (const volatile uint64_t *)&s->skel->bss->calib_samples;
}

const volatile struct lp_calib_slot *bpf_session__calib_slots(struct bpf_session *s, bool reset)
{
	volatile struct lp_calib_slot *v =
		(volatile struct lp_calib_slot *)s->skel->bss->calib_slots;

	if (!s->skel->bss->timer_bracket)
		return NULL;
	for (size_t i = 0; reset && i < LP_CALIB_SLOTS; i++) {
		v[i].bracket_ns = 0;
		v[i].kernel_ns = 0;
	}
	return v;
}

void bpf_session__set_sample_charge(struct bpf_session *s, uint64_t ns, uint64_t scale)
{
	__atomic_store_n(&s->skel->bss->sample_irq_scale, scale, __ATOMIC_RELAXED);
	__atomic_store_n(&s->skel->bss->sample_irq_ns, ns, __ATOMIC_RELAXED);
}

int bpf_session__nr_cpus(struct bpf_session *s)
{
	return s->nr_cpus;
}

void bpf_session__close(struct bpf_session *s)
{
	if (!s)
		return;
	if (s->perf_fds)
		bpf_session__stop_sampling(s);
	for (int i = 0; i < MAX_UPROBE_LINKS; i++)
		bpf_session__detach(s, i);
	/* after its links, before the maps it shares */
	bpf_session_defer_close(s);
	free(s->waiting);
	bpf_session__detach_calib(s);
	ring_buffer__free(s->rb);
	if (s->hist_mem)
		munmap(s->hist_mem, s->hist_len);
	if (s->stats_mem)
		munmap(s->stats_mem, s->stats_len);
	if (s->rows_mem)
		munmap(s->rows_mem, s->rows_len);
	liveprof_bpf__destroy(s->skel);
	free(s->perf_fds);
	free(s->perf_links);
	free(s);
}
