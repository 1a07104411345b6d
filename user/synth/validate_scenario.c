// SPDX-License-Identifier: GPL-2.0
/*
 * validate_scenario.c - `liveprof validate --scenario`: run a latency
 * scenario, let liveprof split its handler, and check two things against
 * the program's own ground truth (one "latency_ns slow" line per call):
 *
 * - the split: at least 90% of the samples in the slow cause must land in
 *   the slow profile;
 * - the percentiles: liveprof's p50/p95/p99 of the handler must lie within
 *   bounds derived from the counts. liveprof's p-quantile is the value at
 *   rank ~pM of its M calls; that rank is Binomial(M, p), and the truth's
 *   own empirical quantile of N calls varies likewise, so the population
 *   quantile liveprof estimates lies between the truth's empirical quantiles
 *   at p -+ z sqrt(p (1 - p) (1/M + 1/N)) with probability 1 - alpha. The
 *   bounds then widen by the histogram's relative error (a bucket is 1/64 of
 *   its power of two wide) and by the probes' measured cost per call (the
 *   truth's clock holds it, liveprof's does not). Too few calls above a
 *   percentile to bound it is INCONCLUSIVE.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
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

/* The share of the cause's samples that must be in the slow profile. */
#define SPLIT_MIN_SHARE 0.9
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
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
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
		if (sscanf(line, "%lu %d %lu", &v, &s, &start) != 3 || start < from || start > to)
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
		tr->lat[tr->n++] = v;
		tr->slow += s != 0;
	}
	fclose(f);
	qsort(tr->lat, tr->n, sizeof(*tr->lat), cmp_u64);
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

/* Samples in @path whose stack holds @fn; -1 after a message. */
static long long count_with_frame(const char *path, const char *fn)
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
			    !strcmp(p->frames[s->frames[j]].name, fn)) {
				n += (long long)s->count;
				break;
			}
		}
	}
	profile__free(p);
	return n;
}

/* The split's check; an enum vverdict, or -1 after a message. */
static int check_split(const struct scenario *sc, const char *slowp, const char *fastp)
{
	long long in_slow = count_with_frame(slowp, sc->cause);
	long long in_fast = count_with_frame(fastp, sc->cause);
	double share;

	if (in_slow < 0 || in_fast < 0)
		return -1;
	if (in_slow + in_fast == 0) {
		lp_err("validate: no samples in '%s' in either profile%s", sc->cause,
		       sc->wait == SCENARIO_CPU
			       ? ""
			       : " (a sleep or block cause needs off-CPU samples)");
		return -1;
	}
	share = (double)in_slow / (double)(in_slow + in_fast);
	printf("split: samples in %s: %lld in slow.folded, %lld in fast.folded: %.1f%% in slow "
	       "(need >= %.0f%%): %s\n",
	       sc->cause, in_slow, in_fast, 100 * share, 100 * SPLIT_MIN_SHARE,
	       share >= SPLIT_MIN_SHARE ? "PASS" : "FAIL");
	return share >= SPLIT_MIN_SHARE ? VERDICT_PASS : VERDICT_FAIL;
}

/* The percentiles' check against @tr; an enum vverdict, or -1 after a message. */
static int check_percentiles(const struct scenario *sc, const char *truthp, uint64_t end_ns,
			     const char *json_path)
{
	static const double pcts[] = {50, 95, 99};
	/* Two-sided, shared by the three percentiles. */
	double z = 3.6, worst = VERDICT_PASS; /* P(|Z| > 3.6) * 3 ~ 0.001 */
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
	window = json_real_value(json_object_get(root, "duration_s"));
	ret = read_truth(truthp, end_ns - (uint64_t)(window * 1e9), end_ns, &truth);
	if (ret) {
		free(truth.lat);
		lp_err("validate: the program's ground truth '%s' has no calls in liveprof's "
		       "window",
		       truthp);
		json_decref(root);
		return -1;
	}
	tr = &truth;
	calls = json_integer_value(json_object_get(t, "calls"));
	cost = json_integer_value(json_object_get(t, "probe_cost_ns"));
	printf("percentiles of %s: liveprof saw %llu calls in %.1f s, the program timed %zu "
	       "then, %zu slow (probe cost %llu ns a call)\n",
	       sc->handler, (unsigned long long)calls, window, tr->n, tr->slow,
	       (unsigned long long)cost);
	for (i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
		char key[32];
		double p = pcts[i] / 100, s, lo, hi, got;
		int v;

		snprintf(key, sizeof(key), "p%g_ns", pcts[i]);
		got = (double)json_integer_value(json_object_get(t, key));
		if (calls * (1 - p) < PCT_MIN_TAIL || tr->n * (1 - p) < PCT_MIN_TAIL) {
			printf("  p%g: liveprof %.1f us: INCONCLUSIVE (needs about %.0f calls)\n",
			       pcts[i], got / 1e3, ceil(PCT_MIN_TAIL / (1 - p)));
			worst = VERDICT_INCONCLUSIVE;
			continue;
		}
		s = z * sqrt(p * (1 - p) * (1.0 / (double)calls + 1.0 / (double)tr->n));
		lo = (double)truth_at(tr, fmax(0, p - s)) * (1 - HIST_REL_ERR) - (double)cost;
		hi = (double)truth_at(tr, fmin(1, p + s)) * (1 + HIST_REL_ERR) + (double)cost;
		v = got >= lo && got <= hi ? VERDICT_PASS : VERDICT_FAIL;
		printf("  p%g: liveprof %.1f us, truth %.1f us, bounds [%.1f, %.1f] us: %s\n",
		       pcts[i], got / 1e3, truth_at(tr, p) / 1e3, lo / 1e3, hi / 1e3,
		       v == VERDICT_PASS ? "PASS" : "FAIL");
		if (v == VERDICT_FAIL)
			worst = VERDICT_FAIL;
	}
	json_decref(root);
	free(truth.lat);
	return (int)worst;
}

/* Write and build the scenario's program; 0 or an exit status. */
static int scenario_build(const struct vopts *vo, const struct scenario *sc, const char *dir,
			  const char *prog)
{
	struct emit_opts o = {.utilization = 1, .threads = 1};
	struct atomic_file af;
	char src[4096];
	int ret;

	snprintf(src, sizeof(src), "%s/scenario.c", dir);
	o.source = vo->spec;
	o.out_path = src;
	/* Longer than the profiling window; stopped with SIGTERM afterwards. */
	o.duration_s = vo->seconds + 60;
	ret = atomic_file__open(&af, src);
	if (!ret) {
		ret = scenario_write_c(af.fp, sc, &o);
		if (ret)
			atomic_file__abort(&af);
		else
			ret = atomic_file__commit(&af);
	}
	if (ret) {
		lp_err("validate: cannot write '%s': %s", src, strerror(-ret));
		return EXIT_OUTPUT;
	}
	return validate_build("c", dir, src, prog);
}

static int scenario_verdict(int split, int pct)
{
	if (split == VERDICT_FAIL || pct == VERDICT_FAIL)
		return EXIT_RUNTIME;
	if (pct == VERDICT_INCONCLUSIVE)
		return EXIT_INCONCLUSIVE;
	return EXIT_OK;
}

int validate_scenario(const struct vopts *vo, const char *dir)
{
	char prog[4096], truthp[4096], outdir[4096], slowp[4096], fastp[4096], json[4096];
	char dur[32], split[256], envt[4200], err[PROFILE_READ_ERRSZ + 64];
	uint64_t end_ns;
	struct scenario sc = {0};
	int ret, sv, pv;
	pid_t pid;

	ret = scenario_read_file(&sc, vo->spec, err, sizeof(err));
	if (ret) {
		lp_err("%s", err);
		scenario_free(&sc);
		return ret == -ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
	}
	snprintf(prog, sizeof(prog), "%s/scenario", dir);
	snprintf(truthp, sizeof(truthp), "%s/truth.txt", dir);
	snprintf(outdir, sizeof(outdir), "%s/split/", dir);
	snprintf(slowp, sizeof(slowp), "%s/split/slow.folded", dir);
	snprintf(fastp, sizeof(fastp), "%s/split/fast.folded", dir);
	snprintf(json, sizeof(json), "%s/split.json", dir);
	ret = scenario_build(vo, &sc, dir, prog);
	if (ret)
		goto out;
	snprintf(dur, sizeof(dur), "%g", vo->seconds + 60);
	snprintf(envt, sizeof(envt), "LIVEPROF_TRUTH=%s", truthp);
	{
		char *argv[] = {prog, dur, NULL};
		char *env[] = {envt, "LIVEPROF_TRUTH_TIMES=1", NULL};

		pid = validate_spawn(argv, env, true);
	}
	if (pid < 0) {
		lp_err("validate: cannot run '%s': %s", prog, strerror((int)-pid));
		ret = EXIT_NO_TARGET;
		goto out;
	}
	validate_sleep(0.3);
	mkdir(outdir, 0755);
	/*
	 * Split a little below the fast share: at exactly p95 for 5% slow calls
	 * the threshold lands among the slow calls themselves, and any jitter
	 * sends half of them to "fast". Below it, the slow class holds every
	 * slow call and a few fast ones, which never run the cause.
	 */
	snprintf(split, sizeof(split), "%s@p%d", sc.handler, (int)floor(sc.fast_pct * 0.95));
	ret = validate_run_liveprof(vo, pid, vo->freq ? vo->freq : 99, vo->seconds, outdir, split,
				    json);
	end_ns = lp_now_ns();
	/* SIGTERM makes the program write its truth. */
	validate_stop(pid);
	if (ret)
		goto out;
	sv = check_split(&sc, slowp, fastp);
	pv = sv < 0 ? -1 : check_percentiles(&sc, truthp, end_ns, json);
	ret = sv < 0 || pv < 0 ? EXIT_NO_TARGET : scenario_verdict(sv, pv);
	printf("scenario: %s\n", ret == EXIT_OK		    ? "PASS"
				 : ret == EXIT_RUNTIME	    ? "FAIL"
				 : ret == EXIT_INCONCLUSIVE ? "INCONCLUSIVE"
							    : "ERROR");
out:
	scenario_free(&sc);
	return ret;
}
