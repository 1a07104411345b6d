// SPDX-License-Identifier: GPL-2.0
/*
 * emit.c - `liveprof emit`: write a program whose profile is known in
 * advance, from a profile (folded or pprof) or from a latency scenario.
 *
 * The work is split so that every piece can be tested on its own: the
 * readers turn a file into a struct profile, emit_tree turns the profile
 * into nodes (name, self work, children), and a backend turns the nodes
 * into program text. This file holds the CLI and the glue.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "user/util/atomic_file.h"
#include "user/synth/emit.h"
#include "user/util/log.h"
#include "user/profile/profile_read.h"
#include "user/synth/scenario.h"
#include "user/synth/causal_scenario.h"

const struct emit_backend *emit_backend_find(const char *lang)
{
	static const struct emit_backend *const all[] = {
		&emit_backend_c,
		&emit_backend_go,
		&emit_backend_python,
		&emit_backend_ruby,
	};
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(all[i]->lang, lang) == 0)
			return all[i];
	return NULL;
}

const char *emit_prog_path(const char *src, char *buf, size_t bufsz)
{
	const char *slash = strrchr(src, '/');
	const char *dot = strrchr(src, '.');
	size_t n = strlen(src);

	/* Strip the extension, but not a dot that belongs to a directory name. */
	if (dot && (!slash || dot > slash + 1))
		n = (size_t)(dot - src);
	snprintf(buf, bufsz, "%s%.*s", slash ? "" : "./", (int)n, src);
	return buf;
}

const char *emit_build_command(const char *lang, const char *src, char *buf, size_t bufsz)
{
	char prog[1024];

	emit_prog_path(src, prog, sizeof(prog));
	if (!strcmp(lang, "c"))
		snprintf(buf, bufsz, "cc -O1 -g %s -o %s -lpthread", src, prog);
	else if (!strcmp(lang, "go"))
		/* GOPATH mode needs no go.mod and no network. */
		snprintf(buf, bufsz, "GO111MODULE=off GOFLAGS= go build -o %s %s", prog, src);
	else if (!strcmp(lang, "python"))
		snprintf(buf, bufsz, "python3 %s", src);
	else
		snprintf(buf, bufsz, "ruby %s", src);
	return buf;
}

void emit_comment_text(FILE *f, const char *s, const char *end)
{
	size_t elen = end ? strlen(end) : 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (elen && strncmp(s, end, elen) == 0) {
			/* "*" "/" becomes "*?/": the comment goes on. */
			fputc(c, f);
			fputc('?', f);
			continue;
		}
		fputc(c < 0x20 || c >= 0x7f ? '?' : c, f);
	}
}

void emit_script_header(FILE *f, const struct emit_tree *t, const struct emit_opts *o,
			const char *lang)
{
	char run[2048];

	fprintf(f, "# Synthetic workload written by `liveprof emit --lang %s` from '", lang);
	emit_comment_text(f, o->source ? o->source : "-", NULL);
	fprintf(f,
		"'.\n"
		"#\n"
		"# It reproduces that profile's call tree: %zu functions, %zu tree nodes,\n"
		"# %llu samples. Each function does the self work of its tree nodes (a\n"
		"# calibrated busy loop) and calls their children once per round.\n"
		"#\n",
		t->n_names, t->n_nodes - 1, (unsigned long long)t->total);
	fprintf(f, "# Run: %s [SECONDS [UTILIZATION [THREADS]]]\n",
		emit_build_command(lang, o->out_path, run, sizeof(run)));
	fprintf(f, "#      (defaults: %g s (0 = forever), utilization %g, %u thread%s)\n",
		o->duration_s, o->utilization, o->threads, o->threads == 1 ? "" : "s");
	emit_write_renames(f, t, "# ", NULL);
}

void emit_write_child_calls(FILE *f, const struct emit_tree *t, uint32_t id, const char *indent)
{
	for (uint32_t c = t->nodes[id].first_child; c != EMIT_NONE; c = t->nodes[c].next_sibling)
		fprintf(f, "%s%s(%u)\n", indent, t->names[t->nodes[c].name].ident, c);
}

void emit_write_renames(FILE *f, const struct emit_tree *t, const char *prefix, const char *end)
{
	size_t i, n = 0;

	for (i = 0; i < t->n_names; i++)
		n += t->names[i].renamed;
	if (!n)
		return;
	/* The blank comment line without the prefix's trailing blank. */
	fprintf(f, "%.*s\n%sRenamed: %zu name%s (profile name -> function name):\n",
		(int)(strlen(prefix) - (prefix[0] && prefix[strlen(prefix) - 1] == ' ')), prefix,
		prefix, n, n == 1 ? "" : "s");
	for (i = 0; i < t->n_names; i++) {
		if (!t->names[i].renamed)
			continue;
		fprintf(f, "%s  renamed: ", prefix);
		emit_comment_text(f, t->names[i].orig, end);
		fprintf(f, " -> %s\n", t->names[i].ident);
	}
}

int emit_write_file(const struct emit_backend *b, const struct profile *p,
		    const struct emit_opts *o, const char *path, char *err, size_t errsz)
{
	struct emit_tree t = {0};
	struct atomic_file af;
	bool to_stdout = !strcmp(path, "-");
	int ret;

	ret = emit_tree__build(&t, p);
	if (ret) {
		snprintf(err, errsz, "%s",
			 ret == -EINVAL ? "the profile has no samples"
					: "out of memory building the call tree");
		goto out;
	}
	ret = emit_tree__idents(&t, b->rules);
	if (ret) {
		snprintf(err, errsz, "out of memory naming functions");
		goto out;
	}
	if (t.truncated)
		lp_warn("%llu samples had stacks deeper than %d frames; cut there",
			(unsigned long long)t.truncated, EMIT_MAX_DEPTH);
	if (to_stdout) {
		ret = b->write(stdout, &t, o);
		if (!ret && fflush(stdout))
			ret = -errno;
		if (ret)
			snprintf(err, errsz, "cannot write the program: %s", strerror(-ret));
		goto out;
	}
	ret = atomic_file__open(&af, path);
	if (ret) {
		snprintf(err, errsz, "cannot write '%s': %s", path, strerror(-ret));
		goto out;
	}
	ret = b->write(af.fp, &t, o);
	if (ret) {
		atomic_file__abort(&af);
	} else {
		ret = atomic_file__commit(&af);
	}
	if (ret)
		snprintf(err, errsz, "cannot write '%s': %s", path, strerror(-ret));
out:
	emit_tree__free(&t);
	return ret;
}

static void emit_usage(FILE *f)
{
	fprintf(f,
		"usage: liveprof emit --from PROFILE -o FILE [--lang c|go|python|ruby]\n"
		"                     [--duration SEC] [--utilization U] [--threads N]\n"
		"       liveprof emit --scenario SPEC -o FILE [--lang c|python|ruby]\n"
		"                     [--duration SEC]\n"
		"\n"
		"Write a program whose profile is known in advance.\n"
		"\n"
		"  -f, --from PROFILE     folded stacks (\"a;b;c 42\" per line) or a gzip pprof\n"
		"  -s, --scenario SPEC    a latency scenario (format below) in C, Python\n"
		"                         (split with py:HANDLER) or Ruby (rb:Handler#HANDLER);\n"
		"                         or causal-NAME[:FUNC=PCT] (pipeline, spin, lock, kink,\n"
		"                         tail;\n"
		"                         FUNC made PCT%% faster; C only), for liveprof causal\n"
		"  -o, --output FILE      the program to write ('-' for stdout)\n"
		"  -l, --lang LANG        c (default), go, python or ruby\n"
		"  -d, --duration SEC     the program runs that long, then exits (default: "
		"forever)\n"
		"  -u, --utilization U    0 < U <= 1: each thread uses about U of one CPU (default "
		"1)\n"
		"  -t, --threads N        threads running the call tree (default 1)\n"
		"  -h, --help             this text\n"
		"\n"
		"Every function of the program carries its frame's name; names that are not\n"
		"identifiers, or that clash with the language or its runtime, are changed and\n"
		"listed at the top of the file, with the commands that build and run it.\n"
		"\n"
		"%s\n"
		"Exit status: 0 written, 1 runtime error, 2 bad usage or malformed input,\n"
		"7 the output file cannot be written.\n",
		scenario_help);
}

/* Strict number parsing: the whole string, finite. */
static int parse_double(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v))
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_uint(const char *s, unsigned int max, unsigned int *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max)
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
}

/* What the command line asked for; the strings point into argv. */
struct emit_args {
	struct emit_opts o;
	const char *from, *spec, *out, *lang;
	bool threads_set;
};

/* emit_parse_args() returns this when the command should go on. */
#define EMIT_PARSED (-1)

/*
 * The getopt loop: one case per option, each with its own error, so it is
 * longer than the other helpers; splitting it would scatter the options.
 * Returns EMIT_PARSED, or the exit status to stop with.
 */
static int emit_parse_args(int argc, char **argv, struct emit_args *a)
{
	static const struct option longopts[] = {
		{"from", required_argument, NULL, 'f'},
		{"scenario", required_argument, NULL, 's'},
		{"output", required_argument, NULL, 'o'},
		{"lang", required_argument, NULL, 'l'},
		{"duration", required_argument, NULL, 'd'},
		{"utilization", required_argument, NULL, 'u'},
		{"threads", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:s:o:l:d:u:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			a->from = optarg;
			break;
		case 's':
			a->spec = optarg;
			break;
		case 'o':
			a->out = optarg;
			break;
		case 'l':
			a->lang = optarg;
			break;
		case 'd':
			if (parse_double(optarg, &a->o.duration_s) || a->o.duration_s < 0) {
				lp_err("emit: --duration wants seconds >= 0, not '%s'", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'u':
			if (parse_double(optarg, &a->o.utilization) || !(a->o.utilization > 0) ||
			    a->o.utilization > 1) {
				lp_err("emit: --utilization wants 0 < U <= 1, not '%s'", optarg);
				return EXIT_USAGE;
			}
			break;
		case 't':
			if (parse_uint(optarg, 4096, &a->o.threads) || a->o.threads == 0) {
				lp_err("emit: --threads wants 1 to 4096, not '%s'", optarg);
				return EXIT_USAGE;
			}
			a->threads_set = true;
			break;
		case 'h':
			emit_usage(stdout);
			return EXIT_OK;
		case ':':
			lp_err("emit: option '%s' needs an argument", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			lp_err("emit: unknown option '%s' (see liveprof emit --help)",
			       argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		lp_err("emit: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	return EMIT_PARSED;
}

/*
 * The checks across options; on success *@b is the backend and
 * @a->o.out_path the name the program's header uses. Returns EMIT_PARSED,
 * or the exit status to stop with.
 */
static int emit_check_args(struct emit_args *a, const struct emit_backend **b)
{
	if (!!a->from == !!a->spec) {
		lp_err("emit: give exactly one of --from PROFILE and --scenario SPEC");
		return EXIT_USAGE;
	}
	if (!a->out) {
		lp_err("emit: -o FILE is required");
		return EXIT_USAGE;
	}
	*b = emit_backend_find(a->lang);
	if (!*b) {
		lp_err("emit: unknown language '%s' (c, go, python or ruby)", a->lang);
		return EXIT_USAGE;
	}
	/* On stdout, the header's commands name the file the user will save. */
	if (!strcmp(a->out, "-"))
		a->o.out_path = !strcmp(a->lang, "c")	     ? "synthetic.c"
				: !strcmp(a->lang, "go")     ? "synthetic.go"
				: !strcmp(a->lang, "python") ? "synthetic.py"
							     : "synthetic.rb";
	else
		a->o.out_path = a->out;
	return EMIT_PARSED;
}

/* Write @sc's program with @write to @out ('-' for stdout), whole or not at all. */
static int write_scenario(scenario_write_fn *write, const struct scenario *sc,
			  const struct emit_opts *o, const char *out)
{
	struct atomic_file af;
	int ret;

	if (!strcmp(out, "-")) {
		ret = write(stdout, sc, o);
		if (!ret && fflush(stdout))
			ret = -EIO;
		return ret;
	}
	ret = atomic_file__open(&af, out);
	if (ret)
		return ret;
	ret = write(af.fp, sc, o);
	if (ret)
		atomic_file__abort(&af);
	else
		ret = atomic_file__commit(&af);
	return ret;
}

/* `emit --scenario causal-NAME[:FUNC=PCT]`: returns the exit status. */
static int emit_causal_scenario(const char *spec, const char *out, double seconds)
{
	const struct causal_scenario *sc;
	struct atomic_file af;
	char func[64], err[256];
	double pct;
	int ret;

	if (causal_scenario_parse(spec, &sc, func, sizeof(func), &pct, err, sizeof(err))) {
		lp_err("emit: %s", err);
		return EXIT_USAGE;
	}
	if (!strcmp(out, "-"))
		return causal_scenario_write_c(stdout, sc, func, pct, seconds) ? EXIT_OUTPUT : 0;
	ret = atomic_file__open(&af, out);
	if (!ret) {
		ret = causal_scenario_write_c(af.fp, sc, func, pct, seconds);
		if (ret)
			atomic_file__abort(&af);
		else
			ret = atomic_file__commit(&af);
	}
	if (ret) {
		lp_err("cannot write '%s': %s", out, strerror(-ret));
		return EXIT_OUTPUT;
	}
	return EXIT_OK;
}

/* `emit --scenario`: returns the exit status. */
static int emit_scenario(struct emit_args *a)
{
	char err[PROFILE_READ_ERRSZ + 256];
	struct scenario sc = {0};
	int ret;

	scenario_write_fn *write = scenario_writer(a->lang);

	if (!write) {
		lp_err("emit: scenarios are written in C, Python or Ruby, not '%s'", a->lang);
		return EXIT_USAGE;
	}
	if (!strncmp(a->spec, CAUSAL_SCENARIO_PREFIX, strlen(CAUSAL_SCENARIO_PREFIX))) {
		if (strcmp(a->lang, "c") != 0) {
			lp_err("emit: causal scenarios are written in C only, not '%s'", a->lang);
			return EXIT_USAGE;
		}
		return emit_causal_scenario(a->spec, a->out, a->o.duration_s);
	}
	ret = scenario_read_file(&sc, a->spec, err, sizeof(err));
	if (!ret)
		ret = scenario_check_names(&sc, a->lang, err, sizeof(err));
	if (ret) {
		lp_err("%s", err);
		scenario_free(&sc);
		return ret == -EINVAL || ret == -ENOENT ? EXIT_USAGE : EXIT_RUNTIME;
	}
	if (a->threads_set)
		sc.threads = a->o.threads;
	a->o.source = a->spec;
	ret = write_scenario(write, &sc, &a->o, a->out);
	scenario_free(&sc);
	if (ret) {
		lp_err("cannot write '%s': %s", a->out, strerror(-ret));
		return EXIT_OUTPUT;
	}
	return EXIT_OK;
}

/* `emit --from`: returns the exit status. */
static int emit_profile(struct emit_args *a, const struct emit_backend *b)
{
	char err[PROFILE_READ_ERRSZ + 256];
	struct profile *p = NULL;
	int ret;

	ret = profile_read_file(a->from, &p, err, sizeof(err));
	if (ret) {
		lp_err("%s", err);
		return ret == -ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
	}
	a->o.source = a->from;
	ret = emit_write_file(b, p, &a->o, a->out, err, sizeof(err));
	profile__free(p);
	if (ret) {
		lp_err("%s", err);
		if (ret == -EINVAL)
			return EXIT_USAGE;
		return ret == -ENOMEM ? EXIT_RUNTIME : EXIT_OUTPUT;
	}
	return EXIT_OK;
}

int cmd_emit(int argc, char **argv)
{
	struct emit_args a = {.o = {.utilization = 1, .threads = 1}, .lang = "c"};
	const struct emit_backend *b;
	int ret;

	ret = emit_parse_args(argc, argv, &a);
	if (ret == EMIT_PARSED)
		ret = emit_check_args(&a, &b);
	if (ret != EMIT_PARSED)
		return ret;
	return a.spec ? emit_scenario(&a) : emit_profile(&a, b);
}
