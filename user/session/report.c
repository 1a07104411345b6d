// SPDX-License-Identifier: GPL-2.0
/*
 * report.c - outputs at the end of a run and per --interval.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <jansson.h>

#include "user/util/atomic_file.h"
#include "user/session/bpf_session.h"
#include "user/session/daemon.h"
#include "user/util/exit_codes.h"
#include "user/util/log.h"
#include "user/session/report.h"
#include "user/session/reclaim.h"
#include "user/session/alloc.h"
#include "user/session/python_procs.h"
#include "user/session/ruby_procs.h"
#include "user/session/split.h"
#include "user/session/traces.h"
#include "user/profile/annotate.h"
#include "user/profile/writers.h"
#include "user/util/util.h"
#include "user/session/unwind_tables.h"

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

int report__format_of(const char *path)
{
	const char *base = strrchr(path, '/');

	/* before ".txt": annotate.txt is the per-line report, not folded stacks */
	base = base ? base + 1 : path;
	if (!strcmp(base, "annotate.txt") || ends_with(path, ".annotate") ||
	    ends_with(path, ".annotate.txt"))
		return OUT_ANNOTATE;
	if (ends_with(path, ".folded") || ends_with(path, ".txt"))
		return OUT_FOLDED;
	if (ends_with(path, ".svg"))
		return OUT_SVG;
	if (ends_with(path, ".pb.gz"))
		return OUT_PPROF;
	return -1;
}

static void profile_name(struct daemon *d, char *buf, size_t len)
{
	if (d->core.opts->all) {
		snprintf(buf, len, "all processes");
		return;
	}
	if (d->core.n_procs == 1) {
		snprintf(buf, len, "%s (pid %d)", d->core.procs[0].name, d->core.procs[0].pid);
		return;
	}
	snprintf(buf, len, "%d processes", d->core.n_procs);
}

static struct profile *new_profile(struct daemon *d)
{
	char name[128];
	struct profile *p;

	profile_name(d, name, sizeof(name));
	p = stack_symbols__new_profile(d->core.symbols, name);
	if (!p)
		return NULL;
	p->period_ns = 1000000000ULL / (d->freq ? d->freq : 99);
	p->duration_ns = (d->core.end_ns ? d->core.end_ns : lp_now_ns()) - d->core.start_ns;
	return p;
}

struct profile *report__build_profile(struct daemon *d, const struct counts *c)
{
	struct profile *p = new_profile(d);

	if (!p)
		return NULL;
	if (stack_symbols__add_counts(d->core.symbols, p, c ? c : &d->total, NULL, 0)) {
		profile__free(p);
		return NULL;
	}
	return p;
}

/*
 * The whole run with the split's classes as pprof labels: samples inside
 * slow calls get class=slow, inside fast calls class=fast, both with
 * function=FUNC; everything else stays unlabelled.
 */
static struct profile *build_labelled(struct daemon *d, struct split_result *r)
{
	struct profile *p = new_profile(d);
	struct label slow[2] = {{"class", "slow"}, {"function", r->function}};
	struct label fast[2] = {{"class", "fast"}, {"function", r->function}};
	struct counts rest;
	int err = 0;

	if (!p)
		return NULL;
	counts__init(&rest);
	counts_for_each(&d->total, sc)
	{
		uint64_t sc1, sw1, fc1, fw1;
		uint32_t id = stack_count__id(sc);

		counts__get(&r->slow, id, &sc1, &sw1);
		counts__get(&r->fast, id, &fc1, &fw1);
		if (sc->count > sc1 + fc1)
			err |= counts__add(&rest, id, sc->count - sc1 - fc1,
					   sc->weight_ns > sw1 + fw1 ? sc->weight_ns - sw1 - fw1
								     : 0);
	}
	err |= stack_symbols__add_counts(d->core.symbols, p, &rest, NULL, 0);
	err |= stack_symbols__add_counts(d->core.symbols, p, &r->slow, slow, 2);
	err |= stack_symbols__add_counts(d->core.symbols, p, &r->fast, fast, 2);
	counts__free(&rest);
	if (err) {
		profile__free(p);
		return NULL;
	}
	return p;
}

static int write_one(struct daemon *d, struct profile *p, const char *path, int fmt,
		     const struct svg_opts *so)
{
	struct atomic_file af;
	int err;

	if (fmt == OUT_PPROF) {
		struct pprof_opts po = {.wall = d->core.opts->offcpu};

		err = write_pprof_file(p, path, &po);
		if (err)
			lp_err("cannot write '%s': %s", path, strerror(-err));
		return err;
	}
	err = atomic_file__open(&af, path);
	if (err) {
		lp_err("cannot write '%s': %s", path, strerror(-err));
		return err;
	}
	if (fmt == OUT_FOLDED)
		err = d->core.opts->offcpu ? write_folded_weighted(p, af.fp)
					   : write_folded(p, af.fp);
	else if (fmt == OUT_ANNOTATE)
		err = write_annotate(p, af.fp,
				     &(struct annotate_opts){.func = d->core.opts->annotate_func});
	else
		err = write_svg(p, af.fp, so);
	if (err) {
		atomic_file__abort(&af);
		lp_err("cannot write '%s': %s", path, strerror(-err));
		return err;
	}
	err = atomic_file__commit(&af);
	if (err)
		lp_err("cannot write '%s': %s", path, strerror(-err));
	return err;
}

int report__write_file(struct daemon *d, struct profile *p, const char *path)
{
	struct svg_opts so = {
		.title = d->core.opts->offcpu ? "On-CPU and off-CPU time" : "CPU flame graph",
		.subtitle = p->name,
		.use_weight = d->core.opts->offcpu,
	};
	int fmt = report__format_of(path);

	if (fmt < 0)
		return -EINVAL;
	return write_one(d, p, path, fmt, &so);
}

static int split_path(char *buf, size_t len, const char *dir, const char *name)
{
	size_t n = strlen(dir);

	if (snprintf(buf, len, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static int write_latency_file(struct daemon *d, struct split_result *r, const char *path)
{
	int idx = traces__find(d->traces, split__probe_id(d->split));
	uint64_t *hist = calloc(LP_HIST_BUCKETS, sizeof(uint64_t));
	struct atomic_file af;
	char title[300];
	int err;

	if (!hist)
		return -ENOMEM;
	traces__histogram(d->traces, idx, false, hist);
	snprintf(title, sizeof(title), "Latency of %s", r->function);
	err = atomic_file__open(&af, path);
	if (!err) {
		err = write_latency_svg(hist, title, r->threshold_ns, r->percentile, af.fp);
		err = err ? (atomic_file__abort(&af), err) : atomic_file__commit(&af);
	}
	free(hist);
	if (err)
		lp_err("cannot write '%s': %s", path, strerror(-err));
	return err;
}

/* -o DIR/ under --split: the two classes, their diff, the latency histogram. */
static int write_split_dir(struct daemon *d, struct split_result *r, const char *dir)
{
	struct profile *slow = report__build_profile(d, &r->slow);
	struct profile *fast = report__build_profile(d, &r->fast);
	struct profile *all = build_labelled(d, r);
	char path[4096], sub[512];
	int err = -ENOMEM;

	if (!slow || !fast || !all)
		goto out;
	snprintf(sub, sizeof(sub), "%s at p%g: slow >= %.1f us", r->function, r->percentile,
		 r->threshold_ns / 1e3);
	struct svg_opts so = {
		.title = "Slow calls", .subtitle = sub, .use_weight = d->core.opts->offcpu};
	struct svg_opts fo = {
		.title = "Fast calls", .subtitle = sub, .use_weight = d->core.opts->offcpu};
	struct svg_opts dopt = {.title = "Slow vs fast calls (red: more in slow calls)",
				.subtitle = sub,
				.use_weight = d->core.opts->offcpu,
				.per_call = d->core.opts->per_call,
				.slow_calls = r->slow_calls,
				.fast_calls = r->fast_calls};
	struct atomic_file af;

	if ((err = split_path(path, sizeof(path), dir, "slow.folded")) ||
	    (err = write_one(d, slow, path, OUT_FOLDED, NULL)))
		goto out;
	if ((err = split_path(path, sizeof(path), dir, "fast.folded")) ||
	    (err = write_one(d, fast, path, OUT_FOLDED, NULL)))
		goto out;
	if ((err = split_path(path, sizeof(path), dir, "slow.svg")) ||
	    (err = write_one(d, slow, path, OUT_SVG, &so)))
		goto out;
	if ((err = split_path(path, sizeof(path), dir, "fast.svg")) ||
	    (err = write_one(d, fast, path, OUT_SVG, &fo)))
		goto out;
	if ((err = split_path(path, sizeof(path), dir, "split.pb.gz")) ||
	    (err = write_one(d, all, path, OUT_PPROF, NULL)))
		goto out;
	if ((err = split_path(path, sizeof(path), dir, "diff.svg")))
		goto out;
	if (dopt.per_call && (!dopt.slow_calls || !dopt.fast_calls))
		dopt.per_call = false; /* nothing to divide by: fall back to shares */
	err = atomic_file__open(&af, path);
	if (!err) {
		err = write_svg_diff(slow, fast, af.fp, &dopt);
		err = err ? (atomic_file__abort(&af), err) : atomic_file__commit(&af);
	}
	if (err) {
		lp_err("cannot write '%s': %s", path, strerror(-err));
		goto out;
	}
	if ((err = split_path(path, sizeof(path), dir, "latency.svg")))
		goto out;
	err = write_latency_file(d, r, path);
out:
	profile__free(slow);
	profile__free(fast);
	profile__free(all);
	return err;
}

static bool is_dir_output(const char *p)
{
	struct stat st;
	size_t n = strlen(p);

	return (n && p[n - 1] == '/') || (!stat(p, &st) && S_ISDIR(st.st_mode));
}

static json_t *summary_json(struct daemon *d, struct profile *p, struct split_result *r)
{
	json_t *root = json_object(), *pids = json_array();
	double dur = ((d->core.end_ns ? d->core.end_ns : lp_now_ns()) - d->core.start_ns) / 1e9;

	for (int i = 0; i < d->core.n_procs; i++)
		json_array_append_new(pids, json_integer(d->core.procs[i].pid));
	json_object_set_new(root, "samples", json_integer(d->samples));
	json_object_set_new(root, "lost", json_integer(d->counters[LP_CNT_LOST]));
	json_object_set_new(root, "duration_s", json_real(dur));
	json_object_set_new(
		root, "end_monotonic_ns",
		json_integer((json_int_t)(d->core.end_ns ? d->core.end_ns : lp_now_ns())));
	json_object_set_new(root, "frequency_hz", json_integer(d->freq));
	json_object_set_new(root, "pids", pids);
	json_object_set_new(root, "distinct_stacks", json_integer(stack_store__count(d->stacks)));
	json_object_set_new(root, "stacks_released",
			    json_integer((json_int_t)stack_store__released(d->stacks)));
	json_object_set_new(root, "stacks_kept", json_integer(reclaim__kept(d->reclaim)));
	json_object_set_new(root, "stacks_shed",
			    json_integer((json_int_t)stack_store__shed_count(d->stacks)));
	json_object_set_new(root, "offcpu_events", json_integer(d->offcpu_events));
	json_object_set_new(root, "truncated_stacks", json_integer(d->truncated));
	json_object_set_new(root, "trampolines_fixed", json_integer(d->tramp_fixed));
	json_object_set_new(root, "uprobe_page_fixed", json_integer(d->uprobe_page_fixed));
	json_object_set_new(root, "unwind_errors", json_integer(d->unwind_errors));
	json_object_set_new(root, "call_graph",
			    json_string(d->core.opts->call_graph == CALL_GRAPH_FP      ? "fp"
					: d->core.opts->call_graph == CALL_GRAPH_DWARF ? "dwarf"
					: d->core.opts->call_graph == CALL_GRAPH_COPY  ? "copy"
										       : "auto"));
	json_object_set_new(root, "unwound_in_kernel", json_integer(d->unwound_kernel));
	json_object_set_new(root, "rescued_walks", json_integer(d->rescued_walks));
	if (d->utab) {
		struct unwind_tables_stats us;
		json_t *u = json_object();

		unwind_tables__stats(d->utab, &us);
		json_object_set_new(u, "modules", json_integer(us.modules));
		json_object_set_new(u, "rows", json_integer(us.rows));
		json_object_set_new(u, "bytes",
				    json_integer(us.rows * sizeof(struct lp_unwind_row)));
		json_object_set_new(u, "modules_without", json_integer(us.no_table));
		json_object_set_new(u, "build_ms", json_real(us.build_ns / 1e6));
		json_object_set_new(u, "scans", json_integer(us.scans));
		json_object_set_new(u, "frames_cfi", json_integer(d->counters[LP_CNT_UNWIND_CFI]));
		json_object_set_new(u, "frames_fp", json_integer(d->counters[LP_CNT_UNWIND_FP]));
		json_object_set_new(u, "walks_cut", json_integer(d->counters[LP_CNT_UNWIND_STOP]));
		json_object_set_new(root, "unwind_tables", u);
	}
	if (d->core.opts->unwind_check) {
		json_t *c = json_object();

		json_object_set_new(c, "compared", json_integer(d->check_compared));
		json_object_set_new(c, "identical", json_integer(d->check_same));
		json_object_set_new(c, "skipped", json_integer(d->check_skipped));
		json_object_set_new(root, "unwind_check", c);
	}
	json_object_set_new(root, "unwind_ns_per_sample",
			    json_real(d->samples ? (double)d->unwind_ns / d->samples : 0));
	json_object_set_new(root, "calls_dropped", json_integer(d->counters[LP_CNT_CALLS_DROPPED]));
	json_object_set_new(root, "calls_unwound", json_integer(d->counters[LP_CNT_CALLS_UNWOUND]));
	if (d->core.child && d->child_exited) {
		int st = d->child_status;

		json_object_set_new(
			root, "exit_status",
			json_integer(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)));
	}
	json_object_set_new(root, "top", p ? profile__top_json(p, 50) : json_array());
	if (d->traces)
		json_object_set_new(root, "traces", traces__json(d->traces));
	if (r)
		json_object_set_new(root, "split", split__json(r, 30));
	if (d->alloc)
		json_object_set_new(root, "alloc", alloc__json(d->alloc));
	return root;
}

static int write_json(struct daemon *d, struct profile *p, struct split_result *r)
{
	json_t *j = summary_json(d, p, r);
	struct atomic_file af;
	int err;

	if (!j)
		return -ENOMEM;
	err = atomic_file__open(&af, d->core.opts->json_path);
	if (!err) {
		if (json_dumpf(j, af.fp, JSON_INDENT(2) | JSON_REAL_PRECISION(6)) ||
		    fputc('\n', af.fp) == EOF)
			err = -EIO;
		err = err ? (atomic_file__abort(&af), err) : atomic_file__commit(&af);
	}
	json_decref(j);
	if (err)
		lp_err("cannot write '%s': %s", d->core.opts->json_path, strerror(-err));
	return err;
}

/* What the interpreter frames cost in accuracy: every loss is said. */
static void print_interp(FILE *f, const char *lang, const char *loop, const struct interp_stats *st)
{
	if (!st->procs && !st->frames)
		return;
	fprintf(f, "liveprof: %s: %d process%s, %" PRIu64 " frames merged", lang, st->procs,
		st->procs == 1 ? "" : "es", st->frames);
	if (st->frames_unnamed)
		fprintf(f, ", %" PRIu64 " unreadable", st->frames_unnamed);
	if (st->frames_unqualified)
		fprintf(f, ", %" PRIu64 " whose method's class could not be read",
			st->frames_unqualified);
	if (st->samples_unmerged)
		fprintf(f, ", %" PRIu64 " samples with no %s frame to merge at",
			st->samples_unmerged, loop);
	if (st->read_faults)
		fprintf(f, ", %" PRIu64 " samples whose frame walk hit a failed read",
			st->read_faults);
	fputc('\n', f);
}

static void print_interps(struct daemon *d, FILE *f)
{
	struct interp_stats st;

	if (d->py) {
		python_procs__stats(d->py, &st);
		print_interp(f, "python", "evaluator", &st);
	}
	if (d->rb) {
		ruby_procs__stats(d->rb, &st);
		print_interp(f, "ruby", "VM loop", &st);
	}
}

static void print_header(struct daemon *d, FILE *f)
{
	double dur = ((d->core.end_ns ? d->core.end_ns : lp_now_ns()) - d->core.start_ns) / 1e9;

	fprintf(f,
		"liveprof: %" PRIu64 " samples at %u Hz over %.1f s, %zu distinct stacks, %" PRIu64
		" lost",
		d->samples, d->freq, dur, stack_store__count(d->stacks), d->counters[LP_CNT_LOST]);
	if (d->offcpu_events)
		fprintf(f, ", %" PRIu64 " off-CPU events", d->offcpu_events);
	if (d->truncated)
		fprintf(f, ", %" PRIu64 " truncated stacks", d->truncated);
	if (d->unwind_errors)
		fprintf(f, ", %" PRIu64 " stacks cut at an unwind error", d->unwind_errors);
	/* "0 lost" must not hide traced calls that were counted but not timed */
	if (d->counters[LP_CNT_CALLS_DROPPED] || d->counters[LP_CNT_CALLS_UNWOUND])
		fprintf(f, ", %" PRIu64 " traced calls untimed",
			d->counters[LP_CNT_CALLS_DROPPED] + d->counters[LP_CNT_CALLS_UNWOUND]);
	fputc('\n', f);
	print_interps(d, f);
	if (d->core.child && d->child_exited) {
		int st = d->child_status;

		if (WIFEXITED(st))
			fprintf(f, "liveprof: command exited with status %d\n", WEXITSTATUS(st));
		else if (WIFSIGNALED(st))
			fprintf(f, "liveprof: command killed by signal %d\n", WTERMSIG(st));
	}
	if (d->counters[LP_CNT_LOST])
		lp_warn("%" PRIu64 " events were lost (ring buffer full); raise --ringbuf-mb",
			d->counters[LP_CNT_LOST]);
	if (d->counters[LP_CNT_CALLS_DROPPED] || d->counters[LP_CNT_CALLS_UNWOUND])
		lp_warn("%" PRIu64 " traced calls were counted but not timed: %" PRIu64
			" deeper than %d traced calls in flight on a thread, %" PRIu64
			" whose return was not seen (the kernel keeps 64 pending returns per "
			"thread; longjmp, exceptions)",
			d->counters[LP_CNT_CALLS_DROPPED] + d->counters[LP_CNT_CALLS_UNWOUND],
			d->counters[LP_CNT_CALLS_DROPPED], LP_MAX_DEPTH,
			d->counters[LP_CNT_CALLS_UNWOUND]);
}

int report__finish(struct daemon *d, FILE *f)
{
	struct profile *p;
	struct split_result r, *rp = NULL;
	bool written[MAX_OUTPUTS] = {false}, json_written = false;
	int rc = EXIT_OK;

	/* The counters were last read at a tick: take the final values
	 * (a run shorter than a tick would otherwise report none). */
	if (d->core.bpf)
		bpf_session__counters(d->core.bpf, d->counters);
	p = report__build_profile(d, NULL);

	if (!p) {
		lp_err("cannot build the profile: %s", strerror(ENOMEM));
		return EXIT_RUNTIME;
	}
	if (d->split && !daemon__split_compute(d, false, d->core.opts->offcpu, &r))
		rp = &r;
	for (int i = 0; i < d->core.opts->n_outputs; i++) {
		const char *path = d->core.opts->outputs[i];
		int err;

		if (is_dir_output(path))
			err = rp ? write_split_dir(d, rp, path) : -EINVAL;
		else if (rp && report__format_of(path) == OUT_PPROF) {
			struct profile *lp = build_labelled(d, rp);

			err = lp ? report__write_file(d, lp, path) : -ENOMEM;
			profile__free(lp);
		} else
			err = report__write_file(d, p, path);
		if (err)
			rc = EXIT_OUTPUT;
		written[i] = !err;
	}
	print_header(d, f);
	if (d->core.opts->top_rows > 0 && p->total_count) {
		fputc('\n', f);
		write_top(p, f, d->core.opts->top_rows);
	}
	if (d->core.opts->annotate_func && p->total_count) {
		fputc('\n', f);
		write_annotate(p, f, &(struct annotate_opts){.func = d->core.opts->annotate_func});
	}
	if (d->traces)
		traces__print(d->traces, f, true);
	if (rp)
		split__print(rp, f, 15);
	if (d->core.opts->json_path) {
		json_written = !write_json(d, p, rp);
		if (!json_written)
			rc = EXIT_OUTPUT;
	}
	/* "wrote" only for what is there: a failed rename left nothing */
	for (int i = 0; i < d->core.opts->n_outputs; i++)
		if (written[i])
			fprintf(f, "liveprof: wrote %s\n", d->core.opts->outputs[i]);
	if (json_written)
		fprintf(f, "liveprof: wrote %s\n", d->core.opts->json_path);
	if (rp)
		split_result__fini(rp);
	profile__free(p);
	return rc;
}

void report__print_interval(struct daemon *d, FILE *f)
{
	double t = (lp_now_ns() - d->core.start_ns) / 1e9;

	fprintf(f, "--- %.1f s: %" PRIu64 " samples, %" PRIu64 " lost\n", t, d->samples,
		d->counters[LP_CNT_LOST]);
	if (d->traces)
		traces__print(d->traces, f, false);
	if (d->split) {
		struct split_result r;

		if (!daemon__split_compute(d, true, d->core.opts->offcpu, &r)) {
			split__print(&r, f, 5);
			split_result__fini(&r);
		}
	}
	fflush(f);
}
