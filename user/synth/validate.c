// SPDX-License-Identifier: GPL-2.0
/*
 * validate.c - `liveprof validate`: emit a program with a known profile,
 * build it, run it, profile it with this very liveprof, and compare.
 *
 * With --from, the comparison is of per-function SELF shares: the leaf
 * frame of each measured sample is mapped back from the emitted name to the
 * profile's name, samples whose leaf is not one of the profile's functions
 * (the runtime's calibration, sleeps, the kernel) are left out, and the total
 * variation distance 0.5 * sum |expected - measured| is weighed against the
 * distance that sampling noise alone gives at that many samples
 * (validate_plan.c says how; validate_noise.c simulates the noise). The
 * samples are taken in up to VALIDATE_MAX_LOOKS looks within --seconds,
 * stopping as soon as one decides. --scenario is in validate_scenario.c.
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

#include "user/synth/emit.h"
#include "user/util/log.h"
#include "user/profile/profile_read.h"
#include "user/synth/validate.h"

/* Counts above 2^53 are not exact as doubles, and the sums would overflow. */
#define VALIDATE_MAX_TOTAL (1ULL << 53)

static void validate_usage(FILE *f)
{
	fprintf(f,
		"usage: liveprof validate --from PROFILE [--lang c|go|python|ruby] [--seconds S]\n"
		"                         [--tolerance T]\n"
		"       liveprof validate --scenario SPEC [--lang c|python|ruby] [--seconds S]\n"
		"       liveprof validate --causal pipeline|spin|lock|kink|tail [--speedup PCT]\n"
		"                         [--seconds S]\n"
		"\n"
		"Emit a program from PROFILE (or SPEC), build it (cc or go build) or hand it\n"
		"to its interpreter (python3, ruby), run it, profile it with liveprof and\n"
		"compare with what the input says. A Python or Ruby sample counts for the\n"
		"deepest frame of the emitted script, as py-spy and rbspy count it.\n"
		"\n"
		"  --causal NAME          run liveprof causal on an emitted causal scenario, then\n"
		"                         compare its prediction with a variant whose gating\n"
		"                         function does PCT%% (--speedup, default 30) less work,\n"
		"                         and the same for the other function: PASS when\n"
		"                         Welch's t test at 0.27%% accepts each pair (the\n"
		"                         gating one also far from 0); kink FAILs on purpose;\n"
		"                         tail's metric is a latency point's p95\n"
		"                         (--seconds: the causal run, default 12)\n"
		"  -f, --from PROFILE     folded or gzip pprof: compare per-function self shares\n"
		"                         (functions too small to resolve share one cell) by\n"
		"                         their total variation distance (TVD), against the\n"
		"                         TVD that sampling noise alone gives at that many\n"
		"                         samples (q, its 99.9%% bound): FAIL when TVD > T + q,\n"
		"                         PASS when TVD + q <= T, else INCONCLUSIVE\n"
		"  -s, --scenario SPEC    latency scenario (see liveprof emit --help): split the\n"
		"                         handler at 999 Hz unless -F says otherwise; the share\n"
		"                         of the slow cause's samples in the slow profile and\n"
		"                         p50/p95/p99 must agree with the program's own timings\n"
		"                         (C, Python with py:HANDLER or Ruby with\n"
		"                         rb:Handler#HANDLER)\n"
		"  -l, --lang LANG        c (default), go, python or ruby\n"
		"      --interpreter PATH python or ruby: run the program with PATH (default\n"
		"                         python3 or ruby in PATH)\n"
		"  -P, --program PROG     run PROG, a program `liveprof emit --lang LANG` wrote\n"
		"                         (and you built), instead of emitting one from PROFILE:\n"
		"                         checks that liveprof measures PROG as PROFILE says\n"
		"  -S, --seconds S        sampling budget, the upper bound (default 60); the\n"
		"                         run stops as soon as the samples decide\n"
		"  -t, --tolerance T      the largest systematic TVD that counts as right\n"
		"                         (default 0.05)\n"
		"  -F, --freq HZ          sampling frequency (default: chosen from the profile\n"
		"                         and the budget, 99 to 999)\n"
		"  -k, --keep DIR         work in DIR and keep the program and profiles there\n"
		"      --seed N           seed of the noise simulation (default 1)\n"
		"      --liveprof PATH    the liveprof to test (default: this one)\n"
		"  -h, --help             this text\n"
		"\n"
		"Exit status: 0 PASS, 1 FAIL (by design at most 1 run in 1,000 fails when the\n"
		"TVD is within T), 10 INCONCLUSIVE (too few samples; the output says about how\n"
		"many would decide), 2 bad usage or malformed input, 3 the program could not\n"
		"be built or run (a missing compiler is named), or liveprof's own exit status\n"
		"(4 and up) when it could not profile.\n");
}

/* Add the leaves of the measured profile @path to the cells; 0 or an exit status. */
static int add_measured(const struct vopts *vo, const char *src_base, const struct emit_tree *t,
			struct vcells *vc, const char *path, uint64_t *elsewhere)
{
	char err[PROFILE_READ_ERRSZ + 64];
	struct profile *m = NULL;
	size_t i;
	int ret;

	ret = profile_read_file(path, &m, err, sizeof(err));
	if (ret) {
		/* A look in which the program was never on a CPU has no samples. */
		if (strstr(err, "no samples"))
			return 0;
		lp_err("validate: %s", err);
		return EXIT_NO_TARGET;
	}
	for (i = 0; i < m->n_samples; i++) {
		const struct profile_sample *s = &m->samples[i];
		long k = validate_leaf_ident(t, vo, src_base, m, s);

		if (k < 0)
			*elsewhere += s->count;
		else
			vc->measured[vc->cell_of[k]] += s->count;
	}
	profile__free(m);
	return 0;
}

/* Whether the counts of @p add up without overflow; 0 or EXIT_USAGE after a message. */
static int check_total(const char *path, const struct profile *p)
{
	uint64_t total = 0;
	size_t i;

	for (i = 0; i < p->n_samples; i++) {
		if (p->samples[i].count > VALIDATE_MAX_TOTAL - total) {
			lp_err("validate: the counts in '%s' add up to more than 2^53 samples",
			       path);
			return EXIT_USAGE;
		}
		total += p->samples[i].count;
	}
	return 0;
}

/* Whether @t has two functions with self samples to compare; 0 or EXIT_USAGE. */
static int check_functions(const char *path, const struct emit_tree *t)
{
	size_t i, with_self = 0, only = 0;

	for (i = 0; i < t->n_names; i++) {
		if (t->names[i].self) {
			with_self++;
			only = i;
		}
	}
	if (with_self >= 2)
		return 0;
	lp_err("validate: '%s' has samples in a single function ('%s'): nothing to compare", path,
	       with_self ? t->names[only].orig : "");
	return EXIT_USAGE;
}

static const char *const verdict_name[] = {"PASS", "FAIL", "INCONCLUSIVE"};

static void print_verdict(const struct vresult *r, const struct vopts *vo, double rate, double freq)
{
	printf("total variation distance: %.4f (tolerance %.4f)\n", r->tvd, vo->tolerance);
	printf("TVD %.3f (noise %.3f +- %.3f at %llu samples, %.2f%% bound %.3f; compared at "
	       "leaf-function level): %s\n",
	       r->tvd, r->noise.mean, r->noise.sd, (unsigned long long)r->n,
	       100 * (1 - r->noise.alpha), r->noise.quantile, verdict_name[r->verdict]);
	if (r->verdict == VERDICT_PASS)
		printf("PASS: TVD + bound <= %.3f: liveprof's own distance is within the "
		       "tolerance\n",
		       vo->tolerance);
	else if (r->verdict == VERDICT_FAIL)
		printf("FAIL: TVD - bound > %.3f: liveprof measures a different profile than "
		       "the program runs\n",
		       vo->tolerance);
	else if (isfinite(r->n_needed) && rate > 0)
		printf("INCONCLUSIVE: needs about %.0f samples (about %.0f s at %g Hz at this "
		       "run's rate; try --seconds %.0f)\n",
		       ceil(r->n_needed), ceil(r->n_needed / rate), freq,
		       ceil(1.2 * r->n_needed / rate));
	else
		printf("INCONCLUSIVE: the distance is too close to the tolerance to decide\n");
}

/* Sample @pid in looks until one decides or the budget is spent; an exit status. */
static int sample_and_decide(const struct vopts *vo, const struct emit_tree *t, struct vcells *vc,
			     const struct vplan *plan, pid_t pid, const char *dir, const char *src)
{
	double used = 0, look_s = plan->seconds, freq = plan->freq, rate = 0, t0;
	const char *src_base = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
	uint64_t elsewhere = 0;
	struct vresult r = {0};
	char out[4096];
	int look, ret;

	for (look = 1; look <= VALIDATE_MAX_LOOKS; look++) {
		snprintf(out, sizeof(out), "%s/measured%d.folded", dir, look);
		t0 = validate_now();
		ret = validate_run_liveprof(vo, pid, freq, look_s, out, NULL, NULL);
		if (ret)
			return ret;
		used += look_s;
		ret = add_measured(vo, src_base, t, vc, out, &elsewhere);
		if (ret)
			return ret;
		ret = vcells_decide(vc, vo->tolerance, VALIDATE_ALPHA / VALIDATE_MAX_LOOKS,
				    vo->seed, &r);
		if (ret) {
			lp_err("validate: out of memory");
			return EXIT_RUNTIME;
		}
		rate = used > 0 ? (double)r.n / used : 0;
		printf("look %d: %g s at %g Hz (%.1f s with liveprof's start): %llu samples "
		       "so far, TVD %.4f, bound %.4f: %s\n",
		       look, look_s, freq, validate_now() - t0, (unsigned long long)r.n, r.tvd,
		       r.noise.quantile, verdict_name[r.verdict]);
		fflush(stdout);
		if (r.verdict != VERDICT_INCONCLUSIVE || vo->seconds - used < 1 ||
		    look == VALIDATE_MAX_LOOKS)
			break;
		if (!r.n) {
			/* Never on a CPU yet (a loaded machine): spend the rest. */
			look_s = vo->seconds - used;
			continue;
		}
		/* Raise the frequency before the length when the budget is short. */
		look_s = (r.n_needed - (double)r.n) / rate;
		if (!vo->freq && freq < 999 && look_s > vo->seconds - used) {
			rate *= 999 / freq;
			look_s = (r.n_needed - (double)r.n) / rate;
			freq = 999;
		}
		/* Beyond 4x what is left, the budget cannot decide: stop here. */
		if (!isfinite(look_s) || look_s > 4 * (vo->seconds - used))
			break;
		look_s = fmin(vo->seconds - used, fmax(1, ceil(1.1 * look_s)));
		/*
		 * The last look takes what is left at the highest frequency: the
		 * estimate of the systematic part is itself noisy, and budget
		 * left unused decides nothing.
		 */
		if (look + 1 == VALIDATE_MAX_LOOKS) {
			if (!vo->freq && freq < 999) {
				rate *= 999 / freq;
				freq = 999;
			}
			look_s = vo->seconds - used;
		}
	}
	vcells_print(vc, elsewhere);
	if (!r.n && elsewhere) {
		lp_err("validate: none of the %llu samples is in a function of the profile",
		       (unsigned long long)elsewhere);
		return EXIT_NO_TARGET;
	}
	if (!r.n) {
		printf("INCONCLUSIVE: no samples in %g s; needs about %.0f samples\n", used,
		       ceil(plan->n_target));
		return EXIT_INCONCLUSIVE;
	}
	print_verdict(&r, vo, rate, freq);
	return r.verdict == VERDICT_PASS   ? EXIT_OK
	       : r.verdict == VERDICT_FAIL ? EXIT_RUNTIME
					   : EXIT_INCONCLUSIVE;
}

/* EXIT_NO_TARGET after a message when @pid (running @prog) has already exited, else 0. */
static int exited_early(const char *prog, pid_t pid)
{
	int st;

	if (waitpid(pid, &st, WNOHANG) != pid)
		return 0;
	lp_err("validate: '%s' exited (%s %d) before it could be profiled", prog,
	       WIFEXITED(st) ? "status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return EXIT_NO_TARGET;
}

/* Emit @t's program for @p into @dir and build it; 0 or an exit status. */
static int emit_and_build(const struct vopts *vo, const struct profile *p, const char *dir,
			  const char *src, char *prog, size_t progsz)
{
	char err[PROFILE_READ_ERRSZ + 256];
	struct emit_opts o = {.utilization = 1, .threads = 1};
	int ret;

	snprintf(prog, progsz, "%s/synthetic", dir);
	o.source = vo->from;
	o.out_path = src;
	/* Longer than the budget; stopped with SIGTERM afterwards. */
	o.duration_s = vo->seconds + 60;
	ret = emit_write_file(emit_backend_find(vo->lang), p, &o, src, err, sizeof(err));
	if (ret) {
		lp_err("validate: %s", err);
		return ret == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
	}
	return validate_build(vo->lang, dir, src, prog);
}

static int validate_profile(const struct vopts *vo, const char *dir)
{
	char src[4096], prog[4096], dur[32], err[PROFILE_READ_ERRSZ + 256];
	struct emit_tree t = {0};
	struct vcells vc = {0};
	struct profile *p = NULL;
	double t0 = validate_now();
	struct vplan plan;
	pid_t pid;
	int ret;

	ret = profile_read_file(vo->from, &p, err, sizeof(err));
	if (ret) {
		lp_err("%s", err);
		return ret == -ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
	}
	ret = check_total(vo->from, p);
	if (ret)
		goto out;
	/* The same tree and names as the emitted program, for the expectations. */
	ret = emit_tree__build(&t, p);
	if (!ret)
		ret = emit_tree__idents(&t, emit_backend_find(vo->lang)->rules);
	snprintf(src, sizeof(src), "%s/synthetic.%s", dir, vlang_find(vo->lang)->ext);
	if (ret) {
		lp_err("validate: cannot build the call tree of '%s': %s", vo->from,
		       strerror(-ret));
		ret = ret == -ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
		goto out;
	}
	ret = check_functions(vo->from, &t);
	if (!ret && (!vo->program || vlang_find(vo->lang)->script))
		ret = validate_check_tool(vo);
	if (ret)
		goto out;
	if (vcells_plan(&vc, &t, vo, &plan)) {
		lp_err("validate: out of memory");
		ret = EXIT_RUNTIME;
		goto out;
	}
	printf("plan: about %.0f samples decide at tolerance %g; sampling at %g Hz, first look "
	       "%g s of a %g s budget\n",
	       ceil(plan.n_target), vo->tolerance, plan.freq, plan.seconds, vo->seconds);
	fflush(stdout);
	if (vo->program)
		snprintf(prog, sizeof(prog), "%s", vo->program);
	else
		ret = emit_and_build(vo, p, dir, src, prog, sizeof(prog));
	if (ret)
		goto out;
	if (!vo->program)
		printf("built %zu functions in %.1f s\n", t.n_names, validate_now() - t0);
	snprintf(dur, sizeof(dur), "%g", vo->seconds + 60);
	pid = validate_start_program(vo, src, prog, dur);
	if (pid < 0) {
		lp_err("validate: cannot run '%s': %s", prog, strerror((int)-pid));
		ret = EXIT_NO_TARGET;
		goto out;
	}
	/* Let calibration (and an interpreter's start) finish: not part of the profile. */
	validate_sleep(vlang_find(vo->lang)->script ? 1.0 : 0.3);
	ret = exited_early(prog, pid);
	if (ret)
		goto out; /* reaped */
	ret = sample_and_decide(vo, &t, &vc, &plan, pid, dir, vo->program ? vo->program : src);
	/* Also reaps a program that exited meanwhile (a zombie ignores the signal). */
	validate_stop(pid);
out:
	vcells_free(&vc);
	emit_tree__free(&t);
	profile__free(p);
	return ret;
}

/* Remove the files validate made in @dir, then @dir itself. */
static void cleanup_dir(const char *dir)
{
	static const char *const files[] = {
		"synthetic.c",
		"synthetic.go",
		"synthetic.py",
		"synthetic.rb",
		"synthetic",
		"measured1.folded",
		"measured2.folded",
		"measured3.folded",
		"scenario.c",
		"scenario",
		"scenario.py",
		"scenario.rb",
		"ready",
		"truth.txt",
		"split.json",
		"split/slow.folded",
		"split/fast.folded",
		"split/diff.folded",
		NULL,
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

/* Parse a positive number option into @dst; false after a message. */
static bool parse_num(const char *arg, const char *opt, double *dst, double max)
{
	char *end;

	errno = 0;
	*dst = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(*dst) || *dst <= 0 || *dst > max) {
		lp_err("validate: bad value '%s' for '%s'", arg, opt);
		return false;
	}
	return true;
}

/* The checks across options, after parsing; 0 or EXIT_USAGE after a message. */
static int check_args(int argc, char **argv, const struct vopts *vo)
{
	if (optind < argc) {
		lp_err("validate: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (vo->causal && !vo->from && !vo->spec)
		return 0;
	if (!!vo->from == !!vo->spec) {
		lp_err("validate: give exactly one of --from PROFILE and --scenario SPEC");
		return EXIT_USAGE;
	}
	if (vo->program && !vo->from) {
		lp_err("validate: --program needs --from PROFILE");
		return EXIT_USAGE;
	}
	if (!vlang_find(vo->lang)) {
		lp_err("validate: --lang must be c, go, python or ruby, not '%s'", vo->lang);
		return EXIT_USAGE;
	}
	if (vo->spec && !strcmp(vo->lang, "go")) {
		lp_err("validate: --scenario emits C, Python or Ruby programs, not go");
		return EXIT_USAGE;
	}
	if (vo->interpreter && !vlang_find(vo->lang)->script) {
		lp_err("validate: --interpreter is for --lang python or ruby");
		return EXIT_USAGE;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct vopts *vo)
{
	enum { OPT_LIVEPROF = 256, OPT_SEED, OPT_INTERPRETER, OPT_CAUSAL, OPT_SPEEDUP };
	static const struct option longopts[] = {
		{"from", required_argument, NULL, 'f'},
		{"scenario", required_argument, NULL, 's'},
		{"lang", required_argument, NULL, 'l'},
		{"seconds", required_argument, NULL, 'S'},
		{"tolerance", required_argument, NULL, 't'},
		{"freq", required_argument, NULL, 'F'},
		{"keep", required_argument, NULL, 'k'},
		{"program", required_argument, NULL, 'P'},
		{"seed", required_argument, NULL, OPT_SEED},
		{"liveprof", required_argument, NULL, OPT_LIVEPROF},
		{"interpreter", required_argument, NULL, OPT_INTERPRETER},
		{"causal", required_argument, NULL, OPT_CAUSAL},
		{"speedup", required_argument, NULL, OPT_SPEEDUP},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	double seed;
	bool ok = true;
	int c;

	optind = 1;
	opterr = 0;
	while (ok && (c = getopt_long(argc, argv, ":f:s:l:S:t:F:k:P:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			vo->from = optarg;
			break;
		case 's':
			vo->spec = optarg;
			break;
		case 'l':
			vo->lang = optarg;
			break;
		case 'S':
			ok = parse_num(optarg, argv[optind - 2], &vo->seconds, 3600);
			vo->seconds_given = true;
			break;
		case 't':
			ok = parse_num(optarg, argv[optind - 2], &vo->tolerance, 1);
			break;
		case 'F':
			ok = parse_num(optarg, argv[optind - 2], &vo->freq, 100000);
			break;
		case OPT_SEED:
			ok = parse_num(optarg, argv[optind - 2], &seed, 1e15);
			vo->seed = (uint64_t)seed;
			break;
		case 'k':
			vo->keep = optarg;
			break;
		case 'P':
			vo->program = optarg;
			break;
		case OPT_LIVEPROF:
			vo->liveprof = optarg;
			break;
		case OPT_INTERPRETER:
			vo->interpreter = optarg;
			break;
		case OPT_CAUSAL:
			vo->causal = optarg;
			break;
		case OPT_SPEEDUP:
			ok = parse_num(optarg, argv[optind - 2], &vo->speedup, 90);
			break;
		case 'h':
			validate_usage(stdout);
			return -1;
		case ':':
			lp_err("validate: option '%s' needs an argument", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			lp_err("validate: unknown option '%s' (see liveprof validate --help)",
			       argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (!ok)
		return EXIT_USAGE;
	return check_args(argc, argv, vo);
}

int cmd_validate(int argc, char **argv)
{
	struct vopts vo = {
		.lang = "c",
		.liveprof = "/proc/self/exe",
		.seconds = 60,
		.tolerance = 0.05,
		.seed = 1,
		.speedup = 30,
		.real_seconds = 4.5,
	};
	char tmpl[] = "/tmp/liveprof-validate.XXXXXX";
	const char *dir;
	int ret;

	ret = parse_args(argc, argv, &vo);
	if (ret)
		return ret < 0 ? EXIT_OK : ret;
	/* A scenario's percentiles need calls, not a long run: 10 s unless told. */
	if (vo.spec && !vo.seconds_given)
		vo.seconds = 10;
	if (vo.keep) {
		if (mkdir(vo.keep, 0755) && errno != EEXIST) {
			lp_err("validate: cannot create '%s': %s", vo.keep, strerror(errno));
			return EXIT_OUTPUT;
		}
		dir = vo.keep;
	} else {
		dir = mkdtemp(tmpl);
		if (!dir) {
			lp_err("validate: cannot create a directory in /tmp: %s", strerror(errno));
			return EXIT_OUTPUT;
		}
	}
	/* A causal run: 12 s of experiments for two candidates, unless told. */
	if (vo.causal && !vo.seconds_given)
		vo.seconds = 12;
	ret = vo.causal ? validate_causal(&vo, dir)
	      : vo.from ? validate_profile(&vo, dir)
			: validate_scenario(&vo, dir);
	if (!vo.keep)
		cleanup_dir(dir);
	return ret;
}
