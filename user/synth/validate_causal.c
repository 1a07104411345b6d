// SPDX-License-Identifier: GPL-2.0
/*
 * validate_causal.c - `liveprof validate --causal NAME`: is a prediction of
 * `liveprof causal` what a real speedup does?
 *
 * 1. Emit the scenario and a variant whose gating function does PCT% less
 *    work; build both (-O2, as a user would).
 * 2. Predict: run the scenario, run `liveprof causal` on it with the
 *    gating and the non-gating function as candidates.
 * 3. Measure: run each variant (the gating function, then the other, made
 *    PCT% faster) with its speedup on in every other quarter second; each
 *    (off, on) pair of quarters gives a real program speedup
 *    1 - rate(off)/rate(on) (a latency scenario's: 1 - p95(on)/p95(off)
 *    in each quarter second, of the calls the program timed itself, the
 *    variant's and the base's alternating call by call); their mean
 *    and its standard error (the spread over the pairs) are the real
 *    speedup. The prediction uses the scenario's latency point then.
 * 4. Compare: the prediction is impact x PCT; its standard error is the
 *    interval's half-width / 1.96 x PCT. They agree when they differ by at
 *    most t combined standard errors: Welch's two-sided test at about 0.3%
 *    (t = 3 with many pairs, more with few; see check_cand).
 *    When a prediction of 0 would agree as well, the check has no power:
 *    INCONCLUSIVE. The other function is held to the same test against its
 *    own real speedup: near zero where the CPU is not contended, but not
 *    where its CPU use slows the gating thread (it then truly matters).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <jansson.h>

#include "user/synth/causal_scenario.h"
#include "user/synth/validate.h"
#include "user/util/atomic_file.h"
#include "user/util/exit_codes.h"
#include "user/util/log.h"

#define WARMUP_S   0.5 /* of each real run, not counted */
#define Z_AGREE	   3.0 /* combined standard errors that still agree */
#define NEAR_ZERO  0.1 /* an impact within +-this is "near zero" */
#define MAX_BLOCKS 256
#define NICE	   (-20) /* the programs' priority: other load must not decide */

/*
 * Start @prog SECONDS with stdout on @out_fd (-1: /dev/null), at a high
 * priority when allowed, so that other work on the machine weighs less
 * on both the prediction and the real runs. It does not weigh alike on
 * both: a delay is CPU time, and a thread that takes more of it loses its
 * turn to other load more often (EEVDF's eligibility), where a real
 * speedup takes less. With both CPUs busy with two nice-0 spinners, lock's
 * critical measured impacts of 0.9 and 1.1-1.2 in alternate pairs at
 * -15 (median 1.11 once: predicted 33% against a real 27.7%, FAIL); at
 * -20, the most CFS gives (3x the weight of -15), both runs passed
 * (28.3 and 28.7% against 26.9 and 27.3%). Threads inherit it.
 */
static pid_t spawn_prog(const char *prog, const char *secs, const char *mode, int out_fd)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = out_fd >= 0 ? out_fd : open("/dev/null", O_WRONLY);

		if (setpriority(PRIO_PROCESS, 0, NICE))
			(void)0; /* not root: the default priority, more noise */
		if (fd >= 0)
			dup2(fd, STDOUT_FILENO);
		execl(prog, prog, secs, mode, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Paired quarter seconds of one variant run: base (slow) then fast. */
struct pair_acc {
	double speedup[MAX_BLOCKS]; /* % per pair */
	int n;
};

static int write_prog(const struct causal_scenario *sc, const char *func, double pct,
		      const char *dir, const char *name, char *prog, size_t len)
{
	char src[4200];
	struct atomic_file af;
	int err;

	snprintf(src, sizeof(src), "%s/%s.c", dir, name);
	snprintf(prog, len, "%s/%s", dir, name);
	err = atomic_file__open(&af, src);
	if (err)
		return err;
	err = causal_scenario_write_c(af.fp, sc, func, pct, 0);
	if (err) {
		atomic_file__abort(&af);
		return err;
	}
	err = atomic_file__commit(&af);
	if (!err) {
		char *argv[] = {"cc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", src,
				"-o", prog,  NULL};

		err = validate_wait(validate_spawn(argv, NULL, false)) ? -EINVAL : 0;
		if (err)
			lp_err("validate: building '%s' failed", src);
	}
	return err;
}

/*
 * Run variant @prog for @seconds in alternate mode (its speedup on in every
 * other quarter second) and add one real speedup per (base, fast) pair of
 * consecutive quarters: drift slower than half a second cancels in a pair.
 */
static int measure_run(const char *prog, double seconds, bool latency, struct pair_acc *acc)
{
	char secs[32], line[128];
	double t0 = -1, n0 = 0, base_rate = -1, base_p95 = -1;
	int fd[2];
	pid_t pid;
	FILE *f;

	snprintf(secs, sizeof(secs), "%g", seconds);
	if (pipe2(fd, O_CLOEXEC))
		return -errno;
	pid = spawn_prog(prog, secs, "alternate", fd[1]);
	close(fd[1]);
	if (pid < 0) {
		close(fd[0]);
		return (int)pid;
	}
	f = fdopen(fd[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		double t, n, rate, p95;
		int fast;

		if (latency) {
			/* a quarter second's p95 of the base calls and of the
			 * variant's, which alternate call by call */
			if (sscanf(line, "latency %lf %lf %lf %lf", &t, &base_p95, &p95, &n) == 4 &&
			    t >= WARMUP_S && base_p95 > 0 && p95 > 0 && acc->n < MAX_BLOCKS)
				acc->speedup[acc->n++] = 100 * (1 - p95 / base_p95);
			continue;
		}
		if (sscanf(line, "progress %lf %lf %d", &t, &n, &fast) != 3)
			continue;
		rate = t0 >= 0 && t > t0 ? (n - n0) / (t - t0) : -1;
		t0 = t;
		n0 = n;
		if (t < WARMUP_S || rate <= 0)
			continue;
		if (!fast) {
			base_rate = rate;
		} else if (base_rate > 0 && acc->n < MAX_BLOCKS) {
			acc->speedup[acc->n++] = 100 * (1 - base_rate / rate);
			base_rate = -1;
		}
	}
	if (f)
		fclose(f);
	else
		close(fd[0]);
	return validate_wait(pid) ? -EIO : 0;
}

/* Run `liveprof causal` on @prog; the JSON it wrote is in @out (owned). */
static int predict(const struct vopts *vo, const struct causal_scenario *sc, const char *prog,
		   const char *dir, json_t **out)
{
	char pidbuf[16], dur[32], json[4200], cands[160], seed[32];
	pid_t pid = spawn_prog(prog, "0", NULL, -1), lp;
	int rc;

	if (pid < 0)
		return (int)pid;
	validate_sleep(0.5);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(dur, sizeof(dur), "%g", vo->seconds);
	snprintf(json, sizeof(json), "%s/causal.json", dir);
	snprintf(cands, sizeof(cands), "%s,%s", sc->gating, sc->idle);
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)vo->seed);
	{
		char *argv[] = {(char *)vo->liveprof,
				"causal",
				"-p",
				pidbuf,
				sc->latency ? "--latency" : "--progress",
				(char *)(sc->latency ? sc->latency : sc->progress),
				"--candidates",
				cands,
				"-d",
				dur,
				"--sample",
				"1",
				"--seed",
				seed,
				"--json",
				json,
				NULL};

		lp = validate_spawn(argv, NULL, false);
		/* At the target's priority: below it, the verifier waits for
		 * the CPU the target's threads take (minutes on a busy machine). */
		if (lp > 0)
			setpriority(PRIO_PROCESS, (id_t)lp, NICE);
		rc = lp < 0 ? (int)lp : validate_wait(lp);
	}
	validate_stop(pid);
	if (rc) {
		lp_err("validate: liveprof causal failed (status %d)", rc);
		return -EIO;
	}
	*out = json_load_file(json, 0, NULL);
	return *out ? 0 : -EINVAL;
}

static json_t *cand_of(json_t *root, const char *fn)
{
	json_t *arr = json_object_get(root, "causal"), *c;
	size_t i;

	json_array_foreach(arr, i,
			   c) if (!strcmp(json_string_value(json_object_get(c, "function")) ?: "",
					  fn)) return c;
	return NULL;
}

static double jnum(json_t *c, const char *k)
{
	json_t *v = json_object_get(c, k);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A real speedup (%) of a variant against the base, with its standard error. */
struct real_speedup {
	double pct, se;
	int pairs;
};

static int real_of(const struct pair_acc *a, struct real_speedup *out)
{
	double s = 0, ss = 0, m;

	if (a->n < 3)
		return -ENODATA;
	for (int i = 0; i < a->n; i++)
		s += a->speedup[i];
	m = s / a->n;
	for (int i = 0; i < a->n; i++)
		ss += (a->speedup[i] - m) * (a->speedup[i] - m);
	out->pct = m;
	out->se = sqrt(ss / (a->n - 1) / a->n);
	out->pairs = a->n;
	return 0;
}

/* Each variant alone, in alternate mode: the gating one, then the other. */
static int measure_real(char *const progs[2], double seconds, bool latency,
			struct real_speedup *gating, struct real_speedup *idle)
{
	struct pair_acc acc[2] = {0};
	int err;

	for (int i = 0; i < 2; i++) {
		err = measure_run(progs[i], seconds, latency, &acc[i]);
		if (err)
			return err;
	}
	err = real_of(&acc[0], gating);
	return err ? err : real_of(&acc[1], idle);
}

/*
 * The two-sided quantile of Student's t with @df degrees of freedom at the
 * level of Z_AGREE for a normal (99.73% for 3): Hill's Cornish-Fisher
 * series in 1/df: within 1% of the exact quantile from df = 4 (6.58 for
 * 6.62 at df 4, 5.49 for 5.51 at 5, 3.85 at 11), Z_AGREE as df grows.
 * Welch's df here is at least the fewer pairs less one (5).
 */
static double t_agree(double df)
{
	double z = Z_AGREE, z2 = z * z, v = df < 2 ? 2 : df;
	double g1 = (z2 + 1) * z / 4, g2 = ((5 * z2 + 16) * z2 + 3) * z / 96;
	double g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384;
	double g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160;

	return z + g1 / v + g2 / (v * v) + g3 / (v * v * v) + g4 / (v * v * v * v);
}

/*
 * Predicted (impact x PCT) against real: Welch's test. Both standard errors
 * are estimates, the prediction's from its n pairs (the sign-test interval's
 * half-width / 1.96), the real one's from its pairs' spread. With 6 to 20
 * pairs a side they are uncertain themselves: at 6 pairs the interval is
 * their range, under half its mean width in 1 run of 20 (normal pairs,
 * simulated), and Z_AGREE such standard errors are then too narrow a
 * tolerance. So the tolerance is t_agree(df) combined standard errors, df
 * from Welch-Satterthwaite: 3.85 of them at df 11, 3.0 with many. For
 * the gating function, a check that a prediction of 0 would pass as well
 * has no power: INCONCLUSIVE.
 */
static enum vverdict check_cand(const char *role, json_t *c, double pct,
				const struct real_speedup *real, bool need_power)
{
	double imp = jnum(c, "impact"), lo = jnum(c, "ci_low"), hi = jnum(c, "ci_high");
	double pred = imp * pct, se_pred = (hi - lo) / 2 / 1.96 * pct;
	double a = se_pred * se_pred, b = real->se * real->se, n = jnum(c, "experiments");
	double df = (a + b) * (a + b) / (a * a / (n - 1) + b * b / (real->pairs - 1));
	double tol = t_agree(isnan(df) || n < 2 ? 2 : df) * sqrt(a + b);
	bool near0 = (lo <= 0 && hi >= 0) || (lo >= -NEAR_ZERO && hi <= NEAR_ZERO);
	enum vverdict v;

	if (isnan(lo) || isnan(hi))
		v = VERDICT_INCONCLUSIVE;
	else if (fabs(pred - real->pct) > tol)
		v = VERDICT_FAIL;
	else
		v = need_power && fabs(real->pct) <= tol ? VERDICT_INCONCLUSIVE : VERDICT_PASS;
	printf("causal-check %s function=%s impact=%.3f ci=[%.3f,%.3f] near_zero=%s speedup=%g "
	       "predicted=%.2f real=%.2f se_pred=%.2f se_real=%.2f df=%.1f tolerance=%.2f "
	       "verdict=%s\n",
	       role, json_string_value(json_object_get(c, "function")), imp, lo, hi,
	       near0 ? "yes" : "no", pct, pred, real->pct, se_pred, real->se, df, tol,
	       v == VERDICT_PASS   ? "PASS"
	       : v == VERDICT_FAIL ? "FAIL"
				   : "INCONCLUSIVE");
	return v;
}

static int verdict_status(enum vverdict a, enum vverdict b)
{
	if (a == VERDICT_FAIL || b == VERDICT_FAIL) {
		printf("FAIL\n");
		return EXIT_RUNTIME;
	}
	if (a == VERDICT_INCONCLUSIVE || b == VERDICT_INCONCLUSIVE) {
		printf("INCONCLUSIVE\n");
		return EXIT_INCONCLUSIVE;
	}
	printf("PASS\n");
	return EXIT_OK;
}

int validate_causal(const struct vopts *vo, const char *dir)
{
	const struct causal_scenario *sc;
	char func[64], err[256], base[4200], fast[4200], idle[4200];
	char *progs[2] = {fast, idle};
	struct real_speedup rg, ri;
	json_t *pred = NULL, *g, *i;
	enum vverdict vg, vi;
	double pct;
	int ret;

	if (causal_scenario_parse(vo->causal, &sc, func, sizeof(func), &pct, err, sizeof(err))) {
		lp_err("validate: %s", err);
		return EXIT_USAGE;
	}
	pct = vo->speedup;
	if (write_prog(sc, "", 0, dir, "base", base, sizeof(base)) ||
	    write_prog(sc, sc->gating, pct, dir, "fast", fast, sizeof(fast)) ||
	    write_prog(sc, sc->idle, pct, dir, "idle", idle, sizeof(idle)))
		return EXIT_RUNTIME;
	printf("validate --causal %s: %s; %s, then %s, made %g%% faster\n", sc->name, sc->what,
	       sc->gating, sc->idle, pct);
	ret = predict(vo, sc, base, dir, &pred);
	if (!ret)
		ret = measure_real(progs, vo->real_seconds, sc->latency != NULL, &rg, &ri);
	if (ret) {
		json_decref(pred);
		lp_err("validate: %s", strerror(-ret));
		return EXIT_RUNTIME;
	}
	g = cand_of(pred, sc->gating);
	i = cand_of(pred, sc->idle);
	if (!g || !i) {
		json_decref(pred);
		lp_err("validate: liveprof causal did not report %s and %s", sc->gating, sc->idle);
		return EXIT_RUNTIME;
	}
	vg = check_cand("gating", g, pct, &rg, true);
	vi = check_cand("idle", i, pct, &ri, false);
	/* How many delays were cut short for the scheduler (their rest paid
	 * at later calls): on a loaded machine, what moves a percentile's
	 * delays from call to call, printed to tell such runs apart. */
	printf("causal-delays delayed_hits=%.0f yielded_hits=%.0f\n", jnum(pred, "delayed_hits"),
	       jnum(pred, "yielded_hits"));
	json_decref(pred);
	return verdict_status(vg, vi);
}
