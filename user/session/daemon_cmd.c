// SPDX-License-Identifier: GPL-2.0
/*
 * daemon_cmd.c - the daemon's commands: the one way in for every front end
 * (the CLI, the TUI, the HTTP server). Open and close the session, sample,
 * pause, trace, untrace and split. Nothing outside user/session/ touches
 * BPF, the traces' or the split's internals.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user/session/bpf_session.h"
#include "user/session/daemon.h"
#include "user/session/sample_cost.h"
#include "user/session/split.h"
#include "user/session/target_kind.h"
#include "user/session/traces.h"
#include "user/util/exit_codes.h"
#include "user/util/log.h"
#include "user/util/util.h"

#define DEFAULT_SPLIT_PCT 95.0

/* Why the BPF objects did not load, for people; an EXIT_* status. */
static int bpf_open_error(int err, bool verbose)
{
	if (err == -ENOENT) {
		lp_err("this kernel has no BTF ('/sys/kernel/btf/vmlinux'); liveprof needs "
		       "CONFIG_DEBUG_INFO_BTF=y");
		return EXIT_UNSUPPORTED;
	}
	if (err == -EPERM) {
		lp_err("loading BPF programs was refused: %s (root or CAP_BPF+CAP_PERFMON)",
		       strerror(-err));
		return EXIT_PERMISSION;
	}
	lp_err("cannot load the BPF programs: %s%s", strerror(-err),
	       verbose ? "" : " (run with -v for the verifier log)");
	return EXIT_BPF;
}

/*
 * What liveprof's own work costs the calls it times, measured when the
 * programs are loaded and before the probes waiting for them go in
 * (bpf_session.h): the sample's cost, and the probe pair's of each class
 * of first instruction the traces asked for so far. A call timed before
 * its probes' cost was known kept all of it: single-stepped, 9 us of a
 * 0.56 us call, and a third of a short run's calls came out 17 times too
 * long at p90.
 */
struct daemon_calib {
	struct daemon *d;
	bool sample; /* the sample's cost is measured (not --no-sample-calib) */
	struct sample_cost cost;
	int err;
};

static void calibrate_after_load(struct bpf_session *bpf, void *ctx)
{
	struct daemon_calib *c = ctx;

	if (c->sample)
		c->err = sample_cost__calibrate(bpf, &c->cost);
	if (c->d && c->d->traces)
		traces__measure_costs(c->d->traces);
}

int daemon__open(struct daemon *d, struct options *o, bool tracing)
{
	struct bpf_session_opts bo = {
		.all_processes = o->all,
		.kernel_stacks = o->kernel,
		.offcpu = o->offcpu,
		.tracing = tracing || o->n_traces || o->split_spec,
		.ringbuf_mb = o->ringbuf_mb,
		.verbose = o->verbose,
		.raw_latency = o->raw_latency,
		/* fp still copies a little: enough for CFI to find a frameless
		 * leaf's return address (daemon.c, unwind_user) */
		.stack_copy_bytes = o->call_graph == CALL_GRAPH_FP ? FP_LEAF_COPY_BYTES
				    : o->call_graph == CALL_GRAPH_COPY || o->unwind_check
					    ? o->stack_kib << 10
					    : 0,
		/* dwarf and auto: CFI tables walked in BPF (bpf/unwind.bpf.h) */
		.kernel_unwind = o->unwind_check || o->call_graph == CALL_GRAPH_DWARF ||
				 o->call_graph == CALL_GRAPH_AUTO,
		/* a walk cut at a mapping the tables do not know yet (exec,
		 * dlopen) comes with a copy for libdw (sample_stack.c) */
		.rescue_copy_bytes = o->stack_kib << 10,
		.max_frames = o->max_frames,
		.unwind_rows = o->unwind_rows,
		.interp_frames = !o->no_interp,
	};
	struct bpf_session *bpf = NULL;
	struct daemon_calib *calib = NULL;
	int err;

	memset(d, 0, sizeof(*d));
	/* Before any sample can land in a traced call: its cost is charged.
	 * Measured when the programs are loaded, before the probes go in. */
	if (bo.tracing) {
		calib = calloc(1, sizeof(*calib));
		if (!calib)
			return EXIT_RUNTIME;
		calib->sample = !o->no_sample_calib;
		bo.loaded_hook = calibrate_after_load;
		bo.loaded_ctx = calib;
	}
	if (bo.tracing) {
		target_kind__needs(o, &bo.ret_insn_returns, &bo.py_probes);
		lp_debug("loading the ret-instruction return program: %s; the py: programs: %s",
			 bo.ret_insn_returns ? "yes"
					     : "no (no Go target, none that moves its stack)",
			 bo.py_probes ? "yes" : "no (no CPython target)");
	}
	err = bpf_session__open(&bpf, &bo);
	if (err) {
		free(calib);
		return bpf_open_error(err, o->verbose);
	}
	err = daemon__init(d, o, bpf);
	d->calib = calib; /* daemon__close() frees it, after the loader ended */
	if (calib)
		calib->d = d;
	if (err) {
		lp_err("cannot set up: %s", strerror(-err));
		d->core.bpf = bpf; /* daemon__close() frees it */
		return EXIT_RUNTIME;
	}
	return EXIT_OK;
}

int daemon__programs_ready(struct daemon *d, bool wait)
{
	int r;

	if (d->programs_done)
		return d->load_error ? d->load_error : 1;
	r = bpf_session__programs_ready(d->core.bpf, wait);
	if (r == 0)
		return 0;
	d->programs_done = true;
	if (r < 0) {
		d->load_error = r;
		return r;
	}
	/* one moment for the deadline, the traces and the restart */
	d->ready_ns = bpf_session__ready_ns(d->core.bpf);
	if (!d->ready_ns) /* nothing was loaded in the background */
		d->ready_ns = lp_now_ns();
	if (d->calib && d->calib->sample && d->calib->err)
		lp_warn("cannot measure what a sample costs; sampled calls' latencies include it");
	else if (d->calib && d->calib->sample)
		d->core.sample_cost = d->calib->cost;
	traces__programs_ready(d->traces);
	if (d->core.opts->offcpu)
		daemon__restart(d, d->ready_ns);
	return 1;
}

int daemon__start(struct daemon *d)
{
	int err = bpf_session__start_sampling(d->core.bpf, d->freq);

	if (err) {
		lp_err("cannot open the cpu-clock perf event: %s", strerror(-err));
		return err == -EACCES || err == -EPERM ? EXIT_PERMISSION : EXIT_UNSUPPORTED;
	}
	return EXIT_OK;
}

/* Slices of daemon__consume() the end of a run takes at most: 2 s */
#define FINISH_SLICES 20

void daemon__finish(struct daemon *d)
{
	/* Stop producing (the probes stay attached until close, but a paused
	 * entry probe starts no call), then take everything already in the
	 * ring buffer, and read the traces' counts at the end of the run:
	 * symbolizing first let calls made after end_ns be counted. */
	bpf_session__stop_sampling(d->core.bpf);
	bpf_session__set_paused(d->core.bpf, true, false);
	/* what the ring holds, a slice at a time: a probe paused or not
	 * still producing faster than we take (hits with values) gets no
	 * more than FINISH_SLICES of them */
	for (int i = 0; i < FINISH_SLICES && daemon__consume(d) == -EAGAIN; i++)
		;
	d->core.end_ns = lp_now_ns();
	if (d->traces)
		traces__tick(d->traces, d->core.end_ns);
	daemon__targets_alive(d);
	daemon__symbolize_new(d);
}

void daemon__close(struct daemon *d)
{
	struct bpf_session *bpf = d->core.bpf;
	struct daemon_calib *calib = d->calib;

	daemon__fini(d);
	bpf_session__close(bpf); /* ends the loader thread first */
	free(calib);
}

int daemon__set_freq(struct daemon *d, unsigned int hz)
{
	int err;

	if (hz < 1 || hz > 100000)
		return -EINVAL;
	err = bpf_session__start_sampling(d->core.bpf, hz);
	if (err)
		return err;
	d->freq = hz;
	d->core.opts->freq = hz;
	return 0;
}

int daemon__pause(struct daemon *d, bool paused)
{
	int err;

	if (d->paused == paused)
		return -EALREADY;
	err = bpf_session__set_paused(d->core.bpf, paused, false);
	if (err)
		return err;
	d->paused = paused;
	return 0;
}

/* The traces, created on first use. */
static struct traces *ensure_traces(struct daemon *d)
{
	if (!d->traces)
		d->traces = traces__new(&d->core, d->n_slots);
	return d->traces;
}

int daemon__find_trace(struct daemon *d, const char *spec)
{
	for (int i = 0; d->traces && i < traces__count(d->traces); i++) {
		const struct trace_info *ti = traces__info(d->traces, i);

		if (!strcmp(ti->spec, spec) || (ti->func && !strcmp(ti->func, spec)))
			return i;
	}
	return -1;
}

int daemon__trace(struct daemon *d, const char *spec, const char *by, char *err, size_t errlen)
{
	int id;

	if (!ensure_traces(d)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (daemon__find_trace(d, spec) >= 0) {
		snprintf(err, errlen, "'%s' is already traced", spec);
		return -EEXIST;
	}
	err[0] = 0;
	id = traces__add_by(d->traces, spec, by, err, errlen);
	if (id < 0 && !err[0])
		snprintf(err, errlen, "cannot trace '%s': %s", spec, strerror(-id));
	return id;
}

void daemon__unsplit(struct daemon *d)
{
	/* Front ends holding results of this split drop them on seeing the
	 * generation change (the web page may unsplit under the TUI). */
	if (d->split)
		d->split_gen++;
	split__free(d->split);
	d->split = NULL;
}

int daemon__untrace(struct daemon *d, const char *spec, char *err, size_t errlen)
{
	int i = daemon__find_trace(d, spec), r;
	const struct trace_info *ti;

	if (i < 0) {
		snprintf(err, errlen, "'%s' is not traced", spec);
		return -ENOENT;
	}
	ti = traces__info(d->traces, i);
	/* The split holds the probe id: it cannot outlive its trace. */
	if (d->split && split__probe_id(d->split) == ti->id)
		daemon__unsplit(d);
	r = traces__remove(d->traces, ti->spec);
	if (r)
		snprintf(err, errlen, "cannot untrace '%s': %s", spec, strerror(-r));
	return r;
}

int split_spec_parse(const char *text, char *func, size_t funclen, double *pct, char *err,
		     size_t errlen)
{
	const char *at = strrchr(text, '@');
	size_t n = at ? (size_t)(at - text) : strlen(text);

	*pct = DEFAULT_SPLIT_PCT;
	if (at) {
		const char *p = at + 1 + (at[1] == 'p' || at[1] == 'P');
		char *end;

		*pct = strtod(p, &end);
		if (end == p || *end || !(*pct > 0 && *pct < 100)) {
			snprintf(err, errlen, "invalid split percentile '%s' (e.g. FUNC@p95)",
				 at + 1);
			return -EINVAL;
		}
	}
	if (!n || n >= funclen) {
		snprintf(err, errlen,
			 n ? "split spec too long" : "split spec '%s' names no function", text);
		return -EINVAL;
	}
	memcpy(func, text, n);
	func[n] = 0;
	return 0;
}

/* The probe id of @func's trace: an existing one, else a new trace. */
static int split_probe(struct daemon *d, const char *func, const char *by, char *err, size_t errlen)
{
	int i = daemon__find_trace(d, func);

	if (i >= 0)
		return traces__info(d->traces, i)->id;
	return daemon__trace(d, func, by, err, errlen);
}

int daemon__split(struct daemon *d, const char *spec, const char *when, const char *by, char *err,
		  size_t errlen)
{
	char func[256];
	double pct;
	int id, when_id = -1, r;
	struct split *s;

	r = split_spec_parse(spec, func, sizeof(func), &pct, err, errlen);
	if (r)
		return r;
	id = split_probe(d, func, by, err, errlen);
	if (id < 0)
		return id;
	if (d->split && split__probe_id(d->split) == id && !when) {
		split__set_percentile(d->split, pct);
		return 0;
	}
	if (when) {
		when_id = daemon__trace(d, when, NULL, err, errlen);
		if (when_id < 0)
			return when_id;
		traces__set_when(d->traces, id, when_id);
	}
	s = split__new(d->traces, d->core.symbols, d->n_slots, id, pct, when_id);
	if (!s) {
		snprintf(err, errlen, "cannot split '%s': out of memory", func);
		return -ENOMEM;
	}
	daemon__unsplit(d);
	d->split = s;
	return 0;
}

int daemon__split_compute(struct daemon *d, bool window, bool use_weight, struct split_result *r)
{
	if (!d->split)
		return -ENOENT;
	/* Ranks name frames: symbolize what arrived since the last look. */
	daemon__symbolize_new(d);
	return split__compute(d->split, window, use_weight, r);
}

int daemon__complete(struct daemon *d, const char *prefix, const char **out, int max)
{
	if (!ensure_traces(d))
		return 0;
	return traces__complete(d->traces, prefix, out, max);
}
