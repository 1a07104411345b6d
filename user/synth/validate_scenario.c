// SPDX-License-Identifier: GPL-2.0
/*
 * validate_scenario.c - `liveprof validate --scenario`: run a latency
 * scenario, let liveprof split its handler, and check two things against
 * the program's own ground truth (one "latency_ns slow" line per call):
 *
 * - the split: the share of the slow cause's samples in the slow profile
 *   must match the share of slow calls the truth puts above the threshold
 *   (see check_split());
 * - the percentiles: liveprof's p50/p95/p99 of the handler must lie within
 *   bounds derived from the counts. liveprof's p-quantile is the value at
 *   rank ~pM of its M calls; that rank is Binomial(M, p), and the truth's
 *   own empirical quantile of N calls varies likewise, so the population
 *   quantile liveprof estimates lies between the truth's empirical quantiles
 *   at p -+ z sqrt(p (1 - p) (1/M + 1/N)) with probability 1 - alpha. The
 *   bounds then widen by the histogram's relative error (a bucket is 1/64 of
 *   its power of two wide) and by the probes' measured cost per call (the
 *   truth's clock holds it, liveprof's does not; for a Python or Ruby
 *   program, what its own clock saw the probes cost when that is more: see
 *   interp_cost()). Too few calls above a percentile to bound it is
 *   INCONCLUSIVE.
 *
 * The program is C, Python or Ruby (scenario_writer()); a script's handler
 * is split as py:HANDLER or rb:Handler#HANDLER, and its frames are named
 * "NAME (scenario.py:LINE)".
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "user/util/atomic_file.h"
#include "user/synth/emit.h"
#include "user/util/log.h"
#include "user/util/util.h"
#include "user/profile/profile_read.h"
#include "user/synth/scenario.h"
#include "user/synth/validate.h"

/* The split's share must be known to +-10% (Wilson interval 0.2 wide) to decide. */
#define SPLIT_RESOLUTION 0.2

static const char *const verdict_names[] = {"PASS", "FAIL", "INCONCLUSIVE"};
/*
 * liveprof's latency histograms have 2^6 linear sub-buckets per power of
 * two (LP_HIST_SUB_BITS in bpf/liveprof.h, which this layer cannot
 * include) and report a bucket's middle: at most half a bucket, 1/128 of the
 * value, off.
 */
#define HIST_REL_ERR (1.0 / 128)
/* A percentile needs this many calls beyond it on each side to be bounded. */
#define PCT_MIN_TAIL 5

struct truth {
	uint64_t *lat; /* sorted */
	size_t n, slow;
	uint64_t *slow_lat; /* the slow calls' latencies, sorted */
	/* The fast calls' latencies in liveprof's window and before it. */
	struct u64v {
		uint64_t *v;
		size_t n, cap;
	} fast, fast_before;
};

/* Append @x to @a; 0 or -ENOMEM. */
static int u64v_push(struct u64v *a, uint64_t x)
{
	if (a->n == a->cap) {
		size_t nc = a->cap ? a->cap * 2 : 4096;
		uint64_t *nv = realloc(a->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		a->v = nv;
		a->cap = nc;
	}
	a->v[a->n++] = x;
	return 0;
}

/* The median of @a (sorted here); 0 when it is empty. */
static double u64v_median(struct u64v *a)
{
	if (!a->n)
		return 0;
	qsort(a->v, a->n, sizeof(*a->v), lp_cmp_u64);
	return (double)a->v[a->n / 2];
}

static void truth_free(struct truth *tr)
{
	free(tr->lat);
	free(tr->slow_lat);
	free(tr->fast.v);
	free(tr->fast_before.v);
}

/*
 * Read the program's ground truth: the calls that started in [@from, @to]
 * (CLOCK_MONOTONIC ns), liveprof's window, so that a load that changes
 * over the run weighs both sides alike. 0 or -errno.
 */
static int read_truth(const char *path, uint64_t from, uint64_t to, struct truth *tr)
{
	char line[128];
	size_t cap = 0;
	FILE *f = fopen(path, "r");
	uint64_t v, start;
	int s;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lu %d %lu", &v, &s, &start) != 3 || start > to)
			continue;
		if (!s && u64v_push(start < from ? &tr->fast_before : &tr->fast, v)) {
			fclose(f);
			return -ENOMEM;
		}
		if (start < from)
			continue;
		if (tr->n == cap) {
			size_t nc = cap ? cap * 2 : 4096;
			uint64_t *nl = realloc(tr->lat, nc * sizeof(*nl));

			if (!nl) {
				fclose(f);
				return -ENOMEM;
			}
			tr->lat = nl;
			cap = nc;
		}
		if (s) {
			uint64_t *ns = realloc(tr->slow_lat, cap * sizeof(*ns));

			if (!ns) {
				fclose(f);
				return -ENOMEM;
			}
			tr->slow_lat = ns;
			tr->slow_lat[tr->slow++] = v;
		}
		tr->lat[tr->n++] = v;
	}
	fclose(f);
	qsort(tr->lat, tr->n, sizeof(*tr->lat), lp_cmp_u64);
	if (tr->slow)
		qsort(tr->slow_lat, tr->slow, sizeof(*tr->slow_lat), lp_cmp_u64);
	return tr->n ? 0 : -ENODATA;
}

/* The truth's empirical @p-quantile (nearest rank, like liveprof's). */
static uint64_t truth_at(const struct truth *tr, double p)
{
	double k = ceil(p * (double)tr->n);

	if (k < 1)
		k = 1;
	if (k > (double)tr->n)
		k = (double)tr->n;
	return tr->lat[(size_t)k - 1];
}

/*
 * A function's frame as liveprof names it: @name alone in C; in a Python
 * or Ruby program, "@name (@script:LINE)" with @script the emitted file's
 * base name (and @name "Handler#slow_path" for a Ruby method).
 */
struct frame_ref {
	const char *name;
	const char *script; /* NULL for C */
};

/* Is @frame the frame of @fn? */
static bool frame_is(const char *frame, const struct frame_ref *fn)
{
	size_t len;

	if (!fn->script)
		return !strcmp(frame, fn->name);
	len = validate_script_frame_name(frame, fn->script);
	return len && len == strlen(fn->name) && !memcmp(frame, fn->name, len);
}

/* Samples in @path whose stack holds @fn; -1 after a message. */
static long long count_with_frame(const char *path, const struct frame_ref *fn)
{
	char err[PROFILE_READ_ERRSZ + 64];
	struct profile *p;
	long long n = 0;
	size_t i, j;

	if (access(path, R_OK) != 0)
		return 0; /* an empty class may have no file */
	if (profile_read_file(path, &p, err, sizeof(err))) {
		/* "no samples" is an empty class, not an error. */
		if (strstr(err, "no samples"))
			return 0;
		lp_err("validate: %s", err);
		return -1;
	}
	for (i = 0; i < p->n_samples; i++) {
		const struct profile_sample *s = &p->samples[i];

		for (j = 0; j < s->depth; j++) {
			if (s->frames[j] < p->n_frames &&
			    frame_is(p->frames[s->frames[j]].name, fn)) {
				n += (long long)s->count;
				break;
			}
		}
	}
	profile__free(p);
	return n;
}

/* The share of the slow calls at or above @t ns. */
static double slow_above(const struct truth *tr, double t)
{
	size_t lo = 0, hi = tr->slow;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((double)tr->slow_lat[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return tr->slow ? (double)(tr->slow - lo) / (double)tr->slow : 0;
}

/* The Wilson score interval of @k successes in @n at two-sided normal quantile @z. */
static void wilson(double k, double n, double z, double *lo, double *hi)
{
	double p = k / n, d = 1 + z * z / n, c = (p + z * z / (2 * n)) / d;
	double h = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d;

	/* exact at the ends: c + h is 1 in theory but may round below it,
	 * and an all-slow count must meet a truth of exactly 100% */
	*lo = k <= 0 ? 0 : fmax(0, c - h);
	*hi = k >= n ? 1 : fmin(1, c + h);
}

/*
 * The split's check; an enum vverdict, or -1 after a message.
 *
 * A sample in the cause belongs to a slow call, and lands in the slow
 * profile when that call's latency is above liveprof's threshold (its
 * p@pct). The truth says which share of the slow calls are above it: on a
 * busy machine, preempted fast calls can outlast slow ones and move the
 * threshold. liveprof's threshold lies between the truth's quantiles at
 * pct -+ the rank error (as for the percentiles), so the expected share lies
 * in [e_lo, e_hi]; the measured share's Wilson interval (same z) must meet
 * it. An interval wider than SPLIT_RESOLUTION cannot tell: INCONCLUSIVE.
 */
static int check_split(const struct scenario *sc, const struct truth *tr, double calls, double pct,
		       double z, const char *slowp, const char *fastp,
		       const struct frame_ref *cause)
{
	long long in_slow = count_with_frame(slowp, cause);
	long long in_fast = count_with_frame(fastp, cause);
	double p = pct / 100, s, e_lo, e_hi, w_lo, w_hi, n;
	int v;

	if (in_slow < 0 || in_fast < 0)
		return -1;
	if (in_slow + in_fast == 0) {
		lp_err("validate: no samples in '%s' in either profile%s", cause->name,
		       sc->wait == SCENARIO_CPU
			       ? ""
			       : " (a sleep or block cause needs off-CPU samples)");
		return -1;
	}
	n = (double)(in_slow + in_fast);
	s = z * sqrt(p * (1 - p) * (1.0 / calls + 1.0 / (double)tr->n));
	e_lo = slow_above(tr, (double)truth_at(tr, fmin(1, p + s)) * (1 + HIST_REL_ERR));
	e_hi = slow_above(tr, (double)truth_at(tr, fmax(0, p - s)) * (1 - HIST_REL_ERR));
	wilson((double)in_slow, n, z, &w_lo, &w_hi);
	if (w_hi < e_lo || w_lo > e_hi)
		v = VERDICT_FAIL;
	else if (w_hi - w_lo > SPLIT_RESOLUTION)
		v = VERDICT_INCONCLUSIVE;
	else
		v = VERDICT_PASS;
	printf("split at p%g: samples in %s: %lld in slow.folded, %lld in fast.folded: %.1f%% "
	       "in slow [%.1f%%, %.1f%%]; the truth puts %.1f%%-%.1f%% of the slow calls above "
	       "the threshold: %s\n",
	       pct, cause->name, in_slow, in_fast, 100 * in_slow / n, 100 * w_lo, 100 * w_hi,
	       100 * e_lo, 100 * e_hi, verdict_names[v]);
	return v;
}

/*
 * The probes' cost per call of a Python or Ruby handler, as the program's
 * clock sees it. liveprof's estimate @est calibrates a pair of probes on
 * nops; an interpreter pays more per probed call (with the semaphores up it
 * builds the probes' arguments: file, name, line), all of it in the
 * program's clock and little in liveprof's. A fast call does a fixed CPU
 * work, so the shift of the fast calls' median from before the probes went
 * in to liveprof's window is that cost: the larger of the two is used.
 * Fewer than PRE_MIN_CALLS fast calls before the window leave @est.
 */
#define PRE_MIN_CALLS 50
static uint64_t interp_cost(struct truth *tr, uint64_t est)
{
	double before, in;

	if (tr->fast_before.n < PRE_MIN_CALLS || !tr->fast.n) {
		printf("probes' cost: %zu fast calls before liveprof's window, too few to see "
		       "what they cost the program (%d needed): liveprof's estimate\n",
		       tr->fast_before.n, PRE_MIN_CALLS);
		return est;
	}
	before = u64v_median(&tr->fast_before);
	in = u64v_median(&tr->fast);
	printf("probes' cost as the program sees it: fast calls' median %.1f us before "
	       "liveprof's window (%zu calls), %.1f us in it: %.0f ns a call\n",
	       before / 1e3, tr->fast_before.n, in / 1e3, fmax(0, in - before));
	return in - before > (double)est ? (uint64_t)(in - before) : est;
}

/*
 * liveprof's @pct-th percentile of the handler (in its trace @t) against
 * the truth @tr, with @calls calls on liveprof's side, the normal quantile
 * @z and the probes' @cost per call; an enum vverdict.
 */
static int check_pct(json_t *t, const struct truth *tr, double pct, double calls, double z,
		     double cost)
{
	char key[32];
	double p = pct / 100, s, lo, hi, got;
	int v;

	snprintf(key, sizeof(key), "p%g_ns", pct);
	got = (double)json_integer_value(json_object_get(t, key));
	if (calls * (1 - p) < PCT_MIN_TAIL || (double)tr->n * (1 - p) < PCT_MIN_TAIL) {
		printf("  p%g: liveprof %.1f us: INCONCLUSIVE (needs about %.0f calls)\n", pct,
		       got / 1e3, ceil(PCT_MIN_TAIL / (1 - p)));
		return VERDICT_INCONCLUSIVE;
	}
	s = z * sqrt(p * (1 - p) * (1.0 / calls + 1.0 / (double)tr->n));
	/*
	 * The program's clock also sees the probes' own cost, which liveprof's
	 * entry and return timestamps leave out; its estimate is within a
	 * factor of 1.5 of the measured cost (BENCHMARKS.md, "estimated vs
	 * measured probe cost": 0.67 at worst), so allow 2x. For a script,
	 * @cost is what the program's clock saw when larger (interp_cost()).
	 */
	lo = (double)truth_at(tr, fmax(0, p - s)) * (1 - HIST_REL_ERR) - 2.0 * cost;
	hi = (double)truth_at(tr, fmin(1, p + s)) * (1 + HIST_REL_ERR) + cost;
	v = got >= lo && got <= hi ? VERDICT_PASS : VERDICT_FAIL;
	printf("  p%g: liveprof %.1f us, truth %.1f us, bounds [%.1f, %.1f] us: %s\n", pct,
	       got / 1e3, truth_at(tr, p) / 1e3, lo / 1e3, hi / 1e3,
	       v == VERDICT_PASS ? "PASS" : "FAIL");
	return v;
}

/*
 * liveprof's own window on the program's clock, in seconds: from when the
 * handler's probes went in (its trace @t) to when liveprof stopped counting
 * (on a loaded machine, seconds away from when validate saw it end), which
 * *@end_ns receives when the summary @root has it.
 */
static double liveprof_window(json_t *root, json_t *t, uint64_t *end_ns)
{
	double window = json_real_value(json_object_get(root, "duration_s"));
	json_int_t from = json_integer_value(json_object_get(t, "attached_monotonic_ns"));
	json_int_t to = json_integer_value(json_object_get(root, "end_monotonic_ns"));

	if (to > 0)
		*end_ns = (uint64_t)to;
	if (from > 0 && (uint64_t)from < *end_ns)
		window = (double)(*end_ns - (uint64_t)from) / 1e9;
	return window;
}

/* The percentiles' check against @tr; an enum vverdict, or -1 after a message. */
static int check_percentiles(const struct scenario *sc, const char *truthp, uint64_t end_ns,
			     const char *json_path, double split_pct, const char *slowp,
			     const char *fastp, const struct frame_ref *cause)
{
	static const double pcts[] = {50, 95, 99};
	/* Two-sided, shared by the three percentiles. */
	/* Two-sided, shared by the split and the three percentiles: 4 x P(|Z| > 3.7) ~ 0.001. */
	double z = 3.7;
	int worst, sv;
	struct truth truth = {0}, *tr;
	double window;
	json_error_t jerr;
	int ret;
	json_t *root = json_load_file(json_path, 0, &jerr), *t = NULL;
	uint64_t calls = 0, cost = 0;
	size_t i;

	if (root)
		t = json_array_get(json_object_get(root, "traces"), 0);
	if (!t) {
		lp_err("validate: no trace of '%s' in liveprof's summary '%s'", sc->handler,
		       json_path);
		json_decref(root);
		return -1;
	}
	window = liveprof_window(root, t, &end_ns);
	ret = read_truth(truthp, end_ns - (uint64_t)(window * 1e9), end_ns, &truth);
	if (ret) {
		truth_free(&truth);
		lp_err("validate: the program's ground truth '%s' has no calls in liveprof's "
		       "window",
		       truthp);
		json_decref(root);
		return -1;
	}
	tr = &truth;
	calls = json_integer_value(json_object_get(t, "calls"));
	if (!calls) {
		/* A script's trace times nothing until liveprof has recognized
		 * the interpreter; its warnings (above) say why it did not. */
		lp_err("validate: liveprof timed no call of '%s' while the program made %zu",
		       sc->handler, tr->n);
		json_decref(root);
		truth_free(&truth);
		return -1;
	}
	cost = json_integer_value(json_object_get(t, "probe_cost_ns"));
	if (cause->script)
		cost = interp_cost(tr, cost);
	printf("percentiles of %s: liveprof saw %llu calls in %.1f s, the program timed %zu "
	       "then, %zu slow (probe cost %llu ns a call)\n",
	       sc->handler, (unsigned long long)calls, window, tr->n, tr->slow,
	       (unsigned long long)cost);
	sv = check_split(sc, tr, (double)calls, split_pct, z, slowp, fastp, cause);
	if (sv < 0) {
		json_decref(root);
		truth_free(&truth);
		return -1;
	}
	worst = sv;
	for (i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
		int v = check_pct(t, tr, pcts[i], (double)calls, z, (double)cost);

		if (v == VERDICT_FAIL || (v == VERDICT_INCONCLUSIVE && worst == VERDICT_PASS))
			worst = v;
	}
	json_decref(root);
	truth_free(&truth);
	return (int)worst;
}

/* Write the scenario's program to @src and build it into @prog; 0 or an exit status. */
static int scenario_build(const struct vopts *vo, const struct scenario *sc, const char *dir,
			  const char *src, const char *prog)
{
	struct emit_opts o = {.utilization = 1, .threads = 1};
	struct atomic_file af;
	int ret;

	o.source = vo->spec;
	o.out_path = src;
	/* Longer than the profiling window; stopped with SIGTERM afterwards. */
	o.duration_s = vo->seconds + 60;
	ret = atomic_file__open(&af, src);
	if (!ret) {
		ret = scenario_writer(vo->lang)(af.fp, sc, &o);
		if (ret)
			atomic_file__abort(&af);
		else
			ret = atomic_file__commit(&af);
	}
	if (ret) {
		lp_err("validate: cannot write '%s': %s", src, strerror(-ret));
		return EXIT_OUTPUT;
	}
	ret = validate_check_tool(vo);
	return ret ? ret : validate_build(vo->lang, dir, src, prog);
}

static int scenario_verdict(int v)
{
	if (v == VERDICT_FAIL)
		return EXIT_RUNTIME;
	if (v == VERDICT_INCONCLUSIVE)
		return EXIT_INCONCLUSIVE;
	return EXIT_OK;
}

/*
 * The --split spec of @sc's handler in @lang: the bare name in C,
 * py:QUALNAME for Python, rb:Class#method for Ruby (the writers put the
 * handler at module level and in class Handler).
 */
static void split_spec(const struct scenario *sc, const char *lang, double pct, char *buf,
		       size_t bufsz)
{
	snprintf(buf, bufsz, "%s%s@p%g",
		 !strcmp(lang, "python") ? "py:"
		 : !strcmp(lang, "ruby") ? "rb:" SCENARIO_RUBY_CLASS "#"
					 : "",
		 sc->handler, pct);
}

int validate_scenario(const struct vopts *vo, const char *dir)
{
	char prog[4096], src[4096], truthp[4096], outdir[4096], slowp[4096], fastp[4096];
	char json[4096], ready[4096], dur[32], split[256], err[PROFILE_READ_ERRSZ + 64];
	const struct vlang *l = vlang_find(vo->lang);
	uint64_t end_ns;
	struct scenario sc = {0};
	double split_pct;
	int ret, pv;
	pid_t pid;

	ret = scenario_read_file(&sc, vo->spec, err, sizeof(err));
	if (!ret)
		ret = scenario_check_names(&sc, vo->lang, err, sizeof(err));
	if (ret) {
		lp_err("%s", err);
		scenario_free(&sc);
		return ret == -ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
	}
	snprintf(src, sizeof(src), "%s/scenario.%s", dir, l->ext);
	snprintf(prog, sizeof(prog), "%s/scenario", dir);
	snprintf(truthp, sizeof(truthp), "%s/truth.txt", dir);
	snprintf(outdir, sizeof(outdir), "%s/split/", dir);
	snprintf(slowp, sizeof(slowp), "%s/split/slow.folded", dir);
	snprintf(fastp, sizeof(fastp), "%s/split/fast.folded", dir);
	snprintf(json, sizeof(json), "%s/split.json", dir);
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	ret = scenario_build(vo, &sc, dir, src, prog);
	if (ret)
		goto out;
	snprintf(dur, sizeof(dur), "%g", vo->seconds + 60);
	ret = validate_launch_scenario(vo, src, prog, truthp, ready, dur, &pid);
	if (ret)
		goto out;
	mkdir(outdir, 0755);
	/*
	 * Split a little below the fast share: at exactly p95 for 5% slow calls
	 * the threshold lands among the slow calls themselves, and any jitter
	 * sends half of them to "fast". Below it, the slow class holds every
	 * slow call and a few fast ones, which never run the cause.
	 */
	split_pct = floor(sc.fast_pct * 0.95);
	split_spec(&sc, vo->lang, split_pct, split, sizeof(split));
	ret = validate_run_liveprof(vo, pid, vo->freq ? vo->freq : 999, vo->seconds, outdir, split,
				    json);
	end_ns = lp_now_ns();
	/* SIGTERM makes the program write its truth. */
	validate_stop(pid);
	if (ret)
		goto out;
	{
		/*
		 * Scripts' frames name their file, "slow_path (scenario.py:12)",
		 * and Ruby's the method's class: "Handler#slow_path (...)".
		 */
		char name[256];
		struct frame_ref cause = {name, l->script ? strrchr(src, '/') + 1 : NULL};

		snprintf(name, sizeof(name), "%s%s",
			 !strcmp(vo->lang, "ruby") ? SCENARIO_RUBY_CLASS "#" : "", sc.cause);
		pv = check_percentiles(&sc, truthp, end_ns, json, split_pct, slowp, fastp, &cause);
	}
	ret = pv < 0 ? EXIT_NO_TARGET : scenario_verdict(pv);
	printf("scenario: %s\n", ret == EXIT_OK		    ? "PASS"
				 : ret == EXIT_RUNTIME	    ? "FAIL"
				 : ret == EXIT_INCONCLUSIVE ? "INCONCLUSIVE"
							    : "ERROR");
out:
	scenario_free(&sc);
	return ret;
}
