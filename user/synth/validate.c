// SPDX-License-Identifier: GPL-2.0
/*
 * validate.c - `liveprof validate`: emit a program with a known profile,
 * build it, run it, profile it with this very liveprof, and compare.
 *
 * With --from, the comparison is of per-function SELF shares: the leaf
 * frame of each measured sample is mapped back from the emitted name to the
 * profile's name, samples whose leaf is not one of the profile's functions
 * (the runtime's calibration, sleeps, the kernel) are left out, and the
 * total variation distance 0.5 * sum |expected - measured| must stay within
 * --tolerance. With --scenario, liveprof splits the handler's calls into
 * slow and fast, and at least 90% of the samples in the slow cause must land
 * in the slow profile.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "user/util/atomic_file.h"
#include "user/synth/emit.h"
#include "user/util/log.h"
#include "user/profile/profile_read.h"
#include "user/synth/scenario.h"

/* The share of the cause's samples that must be in the slow profile. */
#define SPLIT_MIN_SHARE 0.9

struct vopts {
	const char *from, *spec, *lang, *liveprof, *keep;
	double seconds, tolerance, freq;
};

static void validate_usage(FILE *f)
{
	fprintf(f,
		"usage: liveprof validate --from PROFILE [--lang c|go] [--seconds S] [--tolerance "
		"T]\n"
		"       liveprof validate --scenario SPEC [--seconds S]\n"
		"\n"
		"Emit a program from PROFILE (or SPEC), build it (cc or go build), run it,\n"
		"profile it with liveprof and compare with what the input says.\n"
		"\n"
		"  -f, --from PROFILE     folded or gzip pprof: compare per-function self shares\n"
		"                         and fail when their total variation distance > T\n"
		"  -s, --scenario SPEC    latency scenario (see liveprof emit --help): split the\n"
		"                         handler and fail when < 90%% of the slow cause's "
		"samples\n"
		"                         are in the slow profile\n"
		"  -l, --lang LANG        c (default) or go\n"
		"  -S, --seconds S        how long liveprof samples (default 10)\n"
		"  -t, --tolerance T      largest acceptable distance (default 0.05)\n"
		"  -F, --freq HZ          sampling frequency (default 99)\n"
		"  -k, --keep DIR         work in DIR and keep the program and profiles there\n"
		"      --liveprof PATH    the liveprof to test (default: this one)\n"
		"  -h, --help             this text\n"
		"\n"
		"Exit status: 0 within tolerance, 1 validation failed or the program or liveprof\n"
		"could not be built or run, 2 bad usage or malformed input.\n");
}

/* Run @argv (with @env "K=V" entries added) and return its pid; stdout to /dev/null if @quiet. */
static pid_t spawn(char *const argv[], char *const env[], bool quiet)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		for (; env && *env; env++)
			putenv(*env);
		if (quiet && !freopen("/dev/null", "w", stdout))
			_exit(127);
		execvp(argv[0], argv);
		fprintf(stderr, "liveprof: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

/* Wait for @pid; return its exit status, 128 + signal, or a negative errno. */
static int wait_exit(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

static int run_wait(char *const argv[], char *const env[])
{
	pid_t pid = spawn(argv, env, false);

	return pid < 0 ? pid : wait_exit(pid);
}

static void stop_child(pid_t pid)
{
	kill(pid, SIGTERM);
	wait_exit(pid);
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Build the emitted source in @dir; 0 or EXIT_RUNTIME after a message. */
static int build(const char *lang, const char *dir, const char *src, const char *prog)
{
	char gocache[4096];
	int ret;

	if (!strcmp(lang, "c")) {
		char *argv[] = {"cc", "-O1",	    "-g",	 (char *)src,
				"-o", (char *)prog, "-lpthread", NULL};

		ret = run_wait(argv, NULL);
	} else {
		char *argv[] = {"go", "build", "-o", (char *)prog, (char *)src, NULL};
		char *env[] = {"GO111MODULE=off", "GOFLAGS=", NULL, NULL};

		/* go needs a writable cache even for one file; HOME may be unset. */
		if (!getenv("GOCACHE") && !getenv("HOME")) {
			snprintf(gocache, sizeof(gocache), "GOCACHE=%s/gocache", dir);
			env[2] = gocache;
		}
		ret = run_wait(argv, env);
	}
	if (ret) {
		lp_err("validate: building '%s' failed (%s %d)", src, ret < 0 ? "error" : "exit",
		       ret);
		return EXIT_RUNTIME;
	}
	return 0;
}

/* Run liveprof on @pid; 0 or EXIT_RUNTIME after a message. */
static int profile_pid(const struct vopts *vo, pid_t pid, const char *out, const char *split)
{
	char pidbuf[32], fbuf[32], dbuf[32];
	char *argv[16];
	int n = 0, ret;
	pid_t lp;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(fbuf, sizeof(fbuf), "%g", vo->freq);
	snprintf(dbuf, sizeof(dbuf), "%g", vo->seconds);
	argv[n++] = (char *)vo->liveprof;
	argv[n++] = "-p";
	argv[n++] = pidbuf;
	argv[n++] = "-F";
	argv[n++] = fbuf;
	argv[n++] = "-d";
	argv[n++] = dbuf;
	if (split) {
		argv[n++] = "--split";
		argv[n++] = (char *)split;
	}
	argv[n++] = "-o";
	argv[n++] = (char *)out;
	argv[n++] = "--no-tui";
	/* emitted programs inline their spin loop: its samples are the caller's */
	argv[n++] = "--no-inline";
	argv[n] = NULL;
	/* Its report goes to stdout; ours is the comparison. Errors still show. */
	lp = spawn(argv, NULL, true);
	ret = lp < 0 ? lp : wait_exit(lp);
	if (ret) {
		if (split && ret == EXIT_USAGE)
			lp_err("validate: liveprof --split %s failed (exit %d); this liveprof may "
			       "not support --split yet",
			       split, ret);
		else if (split)
			lp_err("validate: liveprof --split %s -p %s failed (exit %d)", split,
			       pidbuf, ret);
		else
			lp_err("validate: liveprof -p %s failed (exit %d)", pidbuf, ret);
		return EXIT_RUNTIME;
	}
	return 0;
}

struct share_row {
	const char *name;
	double expected, measured;
};

static int cmp_row(const void *a, const void *b)
{
	const struct share_row *x = a, *y = b;

	if (x->expected != y->expected)
		return x->expected < y->expected ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* The profile name of an emitted function name, or -1. */
static long lookup_ident(const struct emit_tree *t, const char *lang, const char *frame)
{
	size_t i;

	/* Go shows package main's functions as main.NAME. */
	if (!strcmp(lang, "go")) {
		if (strncmp(frame, "main.", 5) != 0)
			return -1;
		frame += 5;
	}
	for (i = 0; i < t->n_names; i++)
		if (!strcmp(t->names[i].ident, frame))
			return (long)i;
	return -1;
}

static int compare_shares(const struct vopts *vo, const struct emit_tree *t, const char *folded)
{
	char err[PROFILE_READ_ERRSZ + 64];
	struct share_row *rows = NULL;
	uint64_t *count = NULL, matched = 0, other = 0;
	struct profile *m = NULL;
	double tvd = 0;
	size_t i, shown, hidden;
	int ret;

	ret = profile_read_file(folded, &m, err, sizeof(err));
	if (ret) {
		lp_err("validate: %s", err);
		return EXIT_RUNTIME;
	}
	count = calloc(t->n_names, sizeof(*count));
	rows = calloc(t->n_names, sizeof(*rows));
	if (!count || !rows) {
		lp_err("validate: out of memory");
		ret = EXIT_RUNTIME;
		goto out;
	}
	for (i = 0; i < m->n_samples; i++) {
		const struct profile_sample *s = &m->samples[i];
		long k;

		if (!s->depth || s->frames[s->depth - 1] >= m->n_frames)
			continue;
		k = lookup_ident(t, vo->lang, m->frames[s->frames[s->depth - 1]].name);
		if (k < 0) {
			other += s->count;
			continue;
		}
		count[k] += s->count;
		matched += s->count;
	}
	if (!matched) {
		lp_err("validate: none of the %llu samples is in a function of the profile",
		       (unsigned long long)other);
		ret = EXIT_RUNTIME;
		goto out;
	}
	for (i = 0; i < t->n_names; i++) {
		rows[i].name = t->names[i].orig;
		rows[i].expected = (double)t->names[i].self / (double)t->total;
		rows[i].measured = (double)count[i] / (double)matched;
		tvd += fabs(rows[i].expected - rows[i].measured);
	}
	tvd *= 0.5;
	qsort(rows, t->n_names, sizeof(*rows), cmp_row);
	printf("%-40s %9s %9s %8s\n", "function (self share)", "expected", "measured", "diff");
	for (i = 0, shown = 0; i < t->n_names && shown < 40; i++) {
		if (rows[i].expected == 0 && rows[i].measured == 0)
			continue;
		printf("%-40.40s %8.2f%% %8.2f%% %+7.2f%%\n", rows[i].name, 100 * rows[i].expected,
		       100 * rows[i].measured, 100 * (rows[i].measured - rows[i].expected));
		shown++;
	}
	for (hidden = 0; i < t->n_names; i++)
		hidden += rows[i].expected > 0 || rows[i].measured > 0;
	if (hidden)
		printf("(%zu more functions not shown)\n", hidden);
	printf("samples: %llu in the profile's functions, %llu elsewhere (left out)\n",
	       (unsigned long long)matched, (unsigned long long)other);
	printf("total variation distance: %.4f (tolerance %.4f): %s\n", tvd, vo->tolerance,
	       tvd <= vo->tolerance ? "PASS" : "FAIL");
	ret = tvd <= vo->tolerance ? EXIT_OK : EXIT_RUNTIME;
out:
	free(count);
	free(rows);
	profile__free(m);
	return ret;
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

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Summarise the program's own ground truth. */
static void report_truth(const char *path)
{
	uint64_t *lat = NULL, v;
	size_t n = 0, cap = 0, slow = 0;
	FILE *f = fopen(path, "r");
	int s;

	if (!f) {
		lp_warn("validate: the program wrote no ground truth to '%s'", path);
		return;
	}
	while (fscanf(f, "%lu %d", &v, &s) == 2) {
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 4096;
			uint64_t *nl = realloc(lat, nc * sizeof(*nl));

			if (!nl)
				break;
			lat = nl;
			cap = nc;
		}
		lat[n++] = v;
		slow += s != 0;
	}
	fclose(f);
	if (n) {
		qsort(lat, n, sizeof(*lat), cmp_u64);
		printf("ground truth: %zu calls, %zu slow (%.2f%%); latency p50 %.1f us, p95 %.1f "
		       "us, p99 %.1f us\n",
		       n, slow, 100.0 * slow / n, lat[n / 2] / 1e3, lat[(size_t)(n * 0.95)] / 1e3,
		       lat[(size_t)(n * 0.99)] / 1e3);
	}
	free(lat);
}

static int validate_scenario(const struct vopts *vo, const char *dir)
{
	char src[4096], prog[4096], truth[4096], outdir[4096], slowp[4096], fastp[4096];
	char dur[32], split[256], envt[4200], err[PROFILE_READ_ERRSZ + 64];
	struct emit_opts o = {.utilization = 1, .threads = 1};
	struct scenario sc = {0};
	long long in_slow, in_fast;
	struct atomic_file af;
	pid_t pid;
	int ret;

	ret = scenario_read_file(&sc, vo->spec, err, sizeof(err));
	if (ret) {
		lp_err("%s", err);
		scenario_free(&sc);
		return ret == -ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
	}
	snprintf(src, sizeof(src), "%s/scenario.c", dir);
	snprintf(prog, sizeof(prog), "%s/scenario", dir);
	snprintf(truth, sizeof(truth), "%s/truth.txt", dir);
	snprintf(outdir, sizeof(outdir), "%s/split/", dir);
	snprintf(slowp, sizeof(slowp), "%s/split/slow.folded", dir);
	snprintf(fastp, sizeof(fastp), "%s/split/fast.folded", dir);
	o.source = vo->spec;
	o.out_path = src;
	/* Longer than the profiling window; stopped with SIGTERM afterwards. */
	o.duration_s = vo->seconds + 60;
	ret = atomic_file__open(&af, src);
	if (!ret) {
		ret = scenario_write_c(af.fp, &sc, &o);
		if (ret)
			atomic_file__abort(&af);
		else
			ret = atomic_file__commit(&af);
	}
	if (ret) {
		lp_err("validate: cannot write '%s': %s", src, strerror(-ret));
		ret = EXIT_RUNTIME;
		goto out;
	}
	ret = build("c", dir, src, prog);
	if (ret)
		goto out;
	snprintf(dur, sizeof(dur), "%g", o.duration_s);
	snprintf(envt, sizeof(envt), "LIVEPROF_TRUTH=%s", truth);
	{
		char *argv[] = {prog, dur, NULL};
		char *env[] = {envt, NULL};

		pid = spawn(argv, env, true);
	}
	if (pid < 0) {
		lp_err("validate: cannot run '%s': %s", prog, strerror((int)-pid));
		ret = EXIT_RUNTIME;
		goto out;
	}
	sleep_s(0.3);
	mkdir(outdir, 0755);
	/*
	 * Split a little below the fast share: at exactly p95 for 5% slow calls
	 * the threshold lands among the slow calls themselves, and any jitter
	 * sends half of them to "fast". Below it, the slow class holds every
	 * slow call and a few fast ones, which never run the cause.
	 */
	snprintf(split, sizeof(split), "%s@p%d", sc.handler, (int)floor(sc.fast_pct * 0.95));
	ret = profile_pid(vo, pid, outdir, split);
	stop_child(pid);
	if (ret)
		goto out;
	report_truth(truth);
	in_slow = count_with_frame(slowp, sc.cause);
	in_fast = count_with_frame(fastp, sc.cause);
	if (in_slow < 0 || in_fast < 0) {
		ret = EXIT_RUNTIME;
		goto out;
	}
	if (in_slow + in_fast == 0) {
		lp_err("validate: no samples in '%s' in either profile%s", sc.cause,
		       sc.wait == SCENARIO_CPU ? ""
					       : " (a sleep or block cause needs off-CPU samples)");
		ret = EXIT_RUNTIME;
		goto out;
	}
	printf("samples in %s: %lld in slow.folded, %lld in fast.folded: %.1f%% in slow "
	       "(need >= %.0f%%): %s\n",
	       sc.cause, in_slow, in_fast, 100.0 * in_slow / (in_slow + in_fast),
	       100 * SPLIT_MIN_SHARE,
	       (double)in_slow / (in_slow + in_fast) >= SPLIT_MIN_SHARE ? "PASS" : "FAIL");
	ret = (double)in_slow / (in_slow + in_fast) >= SPLIT_MIN_SHARE ? EXIT_OK : EXIT_RUNTIME;
out:
	scenario_free(&sc);
	return ret;
}

static int validate_profile(const struct vopts *vo, const char *dir)
{
	char src[4096], prog[4096], out[4096], dur[32], err[PROFILE_READ_ERRSZ + 256];
	struct emit_opts o = {.utilization = 1, .threads = 1};
	const struct emit_backend *b = emit_backend_find(vo->lang);
	struct emit_tree t = {0};
	struct profile *p = NULL;
	pid_t pid;
	int ret;

	ret = profile_read_file(vo->from, &p, err, sizeof(err));
	if (ret) {
		lp_err("%s", err);
		return ret == -ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
	}
	snprintf(src, sizeof(src), "%s/synthetic.%s", dir, vo->lang);
	snprintf(prog, sizeof(prog), "%s/synthetic", dir);
	snprintf(out, sizeof(out), "%s/measured.folded", dir);
	o.source = vo->from;
	o.out_path = src;
	o.duration_s = vo->seconds + 60;
	ret = emit_write_file(b, p, &o, src, err, sizeof(err));
	if (ret) {
		lp_err("validate: %s", err);
		ret = ret == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
		goto out;
	}
	/* The same tree and names as the emitted program, for the expectations. */
	ret = emit_tree__build(&t, p);
	if (!ret)
		ret = emit_tree__idents(&t, b->rules);
	if (ret) {
		lp_err("validate: out of memory");
		ret = EXIT_RUNTIME;
		goto out;
	}
	ret = build(vo->lang, dir, src, prog);
	if (ret)
		goto out;
	snprintf(dur, sizeof(dur), "%g", o.duration_s);
	{
		char *argv[] = {prog, dur, NULL};

		pid = spawn(argv, NULL, true);
	}
	if (pid < 0) {
		lp_err("validate: cannot run '%s': %s", prog, strerror((int)-pid));
		ret = EXIT_RUNTIME;
		goto out;
	}
	/* Let calibration finish: it is not part of the profile. */
	sleep_s(0.3);
	ret = profile_pid(vo, pid, out, NULL);
	stop_child(pid);
	if (!ret)
		ret = compare_shares(vo, &t, out);
out:
	emit_tree__free(&t);
	profile__free(p);
	return ret;
}

/* Remove the files validate made in @dir, then @dir itself. */
static void cleanup_dir(const char *dir)
{
	static const char *const files[] = {
		"synthetic.c",	     "synthetic.go",	  "synthetic", "measured.folded",
		"scenario.c",	     "scenario",	  "truth.txt", "split/slow.folded",
		"split/fast.folded", "split/diff.folded", NULL,
	};
	char path[4096];
	size_t i;

	for (i = 0; files[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/split", dir);
	rmdir(path);
	/* Anything else (a go cache, other split outputs) stays, and so does dir. */
	rmdir(dir);
}

int cmd_validate(int argc, char **argv)
{
	enum { OPT_LIVEPROF = 256 };
	static const struct option longopts[] = {
		{"from", required_argument, NULL, 'f'},
		{"scenario", required_argument, NULL, 's'},
		{"lang", required_argument, NULL, 'l'},
		{"seconds", required_argument, NULL, 'S'},
		{"tolerance", required_argument, NULL, 't'},
		{"freq", required_argument, NULL, 'F'},
		{"keep", required_argument, NULL, 'k'},
		{"liveprof", required_argument, NULL, OPT_LIVEPROF},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct vopts vo = {
		.lang = "c",
		.liveprof = "/proc/self/exe",
		.seconds = 10,
		.tolerance = 0.05,
		.freq = 99,
	};
	char tmpl[] = "/tmp/liveprof-validate.XXXXXX";
	const char *dir;
	char *end;
	int c, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:s:l:S:t:F:k:h", longopts, NULL)) != -1) {
		double *dst = NULL;

		switch (c) {
		case 'f':
			vo.from = optarg;
			break;
		case 's':
			vo.spec = optarg;
			break;
		case 'l':
			vo.lang = optarg;
			break;
		case 'S':
			dst = &vo.seconds;
			break;
		case 't':
			dst = &vo.tolerance;
			break;
		case 'F':
			dst = &vo.freq;
			break;
		case 'k':
			vo.keep = optarg;
			break;
		case OPT_LIVEPROF:
			vo.liveprof = optarg;
			break;
		case 'h':
			validate_usage(stdout);
			return EXIT_OK;
		case ':':
			lp_err("validate: option '%s' needs an argument", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			lp_err("validate: unknown option '%s' (see liveprof validate --help)",
			       argv[optind - 1]);
			return EXIT_USAGE;
		}
		if (dst) {
			errno = 0;
			*dst = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(*dst) || *dst <= 0 ||
			    (dst == &vo.tolerance && *dst > 1) || *dst > 1e6) {
				lp_err("validate: bad value '%s' for '%s'", optarg,
				       argv[optind - 2]);
				return EXIT_USAGE;
			}
		}
	}
	if (optind < argc) {
		lp_err("validate: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (!!vo.from == !!vo.spec) {
		lp_err("validate: give exactly one of --from PROFILE and --scenario SPEC");
		return EXIT_USAGE;
	}
	if (strcmp(vo.lang, "c") && strcmp(vo.lang, "go")) {
		lp_err("validate: --lang must be c or go, not '%s'", vo.lang);
		return EXIT_USAGE;
	}
	if (vo.keep) {
		if (mkdir(vo.keep, 0755) && errno != EEXIST) {
			lp_err("validate: cannot create '%s': %s", vo.keep, strerror(errno));
			return EXIT_RUNTIME;
		}
		dir = vo.keep;
	} else {
		dir = mkdtemp(tmpl);
		if (!dir) {
			lp_err("validate: cannot create a directory in /tmp: %s", strerror(errno));
			return EXIT_RUNTIME;
		}
	}
	ret = vo.from ? validate_profile(&vo, dir) : validate_scenario(&vo, dir);
	if (!vo.keep)
		cleanup_dir(dir);
	return ret;
}
