// SPDX-License-Identifier: GPL-2.0
/*
 * test_options.c - the profiling command line (user/cli/options.c): every
 * option in its short and long form, the defaults, --help, and bad input,
 * which must give -EINVAL and exactly one line "liveprof: ..." on stderr
 * that quotes what was wrong.
 */
#include <errno.h>
#include <ctype.h>
#include <unistd.h>

#include "unit.h"
#include "user/session/options.h"

#define ARGV(...) ((char *[]){"liveprof", __VA_ARGS__, NULL})
#define ARGC(v)	  ((int)(sizeof(v) / sizeof(v[0])) - 1)

static char out_text[8192], err_text[8192];

static const char *LONG_OPTS[] = {
	"--pid",	"--all",	  "--freq",	  "--duration", "--output",
	"--verbose",	"--help",	  "--json",	  "--kernel",	"--lines",
	"--no-inline",	"--no-tui",	  "--trace",	  "--by",	"--window",
	"--interval",	"--max-overhead", "--split",	  "--when",	"--offcpu",
	"--per-call",	"--call-graph",	  "--stack-size", "--top",	"--per-thread",
	"--ringbuf-mb", "--http",	  "--http-token", "--alloc",	"--alloc-rate",
	NULL,
};

/* Read what was written to the file behind @fd since @fd was emptied. */
static void slurp(FILE *f, char *buf, size_t len)
{
	size_t n;

	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
}

/* options_parse() with stdout and stderr captured into out_text / err_text. */
static int parse_captured(int argc, char **argv, struct options *o)
{
	FILE *out = tmpfile(), *err = tmpfile();
	int save_out = dup(1), save_err = dup(2), rc;

	if (!out || !err || save_out < 0 || save_err < 0) {
		fprintf(stderr, "cannot capture output: %s\n", strerror(errno));
		exit(2);
	}
	fflush(stdout);
	fflush(stderr);
	dup2(fileno(out), 1);
	dup2(fileno(err), 2);
	rc = options_parse(argc, argv, o);
	fflush(stdout);
	fflush(stderr);
	dup2(save_out, 1);
	dup2(save_err, 2);
	close(save_out);
	close(save_err);
	slurp(out, out_text, sizeof(out_text));
	slurp(err, err_text, sizeof(err_text));
	fclose(out);
	fclose(err);
	return rc;
}

#define PARSE(o, ...)                                                                              \
	({                                                                                         \
		char **_v = ARGV(__VA_ARGS__);                                                     \
		parse_captured(ARGC(ARGV(__VA_ARGS__)), _v, (o));                                  \
	})

/*
 * Bad input: -EINVAL, nothing on stdout, one line on stderr in the house
 * style (prefix, lowercase, no final full stop), quoting @subject if given.
 */
static void check_bad(int line, int rc, const char *subject)
{
	size_t n = strlen(err_text);
	const char *body = err_text + strlen("liveprof: ");
	char quoted[256];
	int ok = rc == -EINVAL && !out_text[0] && n > 0 && err_text[n - 1] == '\n' &&
		 !strchr(err_text, '\n')[1] && !strncmp(err_text, "liveprof: ", 10) &&
		 !isupper((unsigned char)body[0]) && err_text[n - 2] != '.';

	if (ok && subject) {
		snprintf(quoted, sizeof(quoted), "'%s'", subject);
		ok = strstr(err_text, quoted) != NULL;
	}
	if (!ok) {
		fprintf(stderr, "  line %d: rc %d, stdout \"%s\", stderr \"%s\" (subject %s)\n",
			line, rc, out_text, err_text, subject ? subject : "-");
		unit_failed_checks++;
	}
}

#define BAD(subject, ...)                                                                          \
	do {                                                                                       \
		struct options _o;                                                                 \
		check_bad(__LINE__, PARSE(&_o, __VA_ARGS__), subject);                             \
	} while (0)

UNIT_TEST(defaults)
{
	struct options o;

	CHECK_EQ_INT(PARSE(&o, "-p", "42"), 0);
	CHECK_STR(err_text, "");
	CHECK_EQ_INT(o.n_pids, 1);
	CHECK_EQ_INT(o.pids[0], 42);
	CHECK_EQ_INT(o.freq, 99);
	CHECK(o.duration_s == 0 && o.window_s == 10 && o.interval_s == 0);
	CHECK(o.max_overhead_pct == 0 && o.split_alpha == 0.01);
	CHECK_EQ_INT(o.top_rows, 20);
	CHECK_EQ_INT(o.stack_kib, 16);
	CHECK_EQ_INT(o.ringbuf_mb, 16);
	CHECK_EQ_INT(o.call_graph, CALL_GRAPH_AUTO);
	CHECK(!o.all && !o.command && !o.n_outputs && !o.json_path && !o.n_traces);
	CHECK(!o.kernel && !o.lines && !o.no_inline && !o.verbose && !o.no_tui);
	CHECK(!o.per_thread && !o.offcpu && !o.per_call);
	CHECK(!o.by_expr && !o.split_spec && !o.when_spec && !o.http_addr && !o.http_token);
	CHECK(!o.alloc);
}

UNIT_TEST(every_long_option)
{
	struct options o;

	CHECK_EQ_INT(PARSE(&o, "--pid", "7,8", "--freq", "999", "--duration", "2.5", "--output",
			   "a.svg", "--output", "b.folded", "--verbose", "--json", "s.json",
			   "--kernel", "--lines", "--no-inline", "--no-tui", "--trace", "handle",
			   "--trace", "libc.so.6:malloc", "--by", "req->kind", "--window", "30",
			   "--interval", "0.5", "--max-overhead", "2", "--split", "handle@p99",
			   "--when", "x.c:12", "--split-alpha", "0.001", "--offcpu", "--per-call", "--call-graph", "dwarf",
			   "--stack-size", "32", "--top", "0", "--per-thread", "--ringbuf-mb", "64",
			   "--http", "127.0.0.1:6060", "--http-token", "/tmp/tok", "--alloc-rate",
			   "4096"),
		     0);
	CHECK_STR(err_text, "");
	CHECK_EQ_INT(o.n_pids, 2);
	CHECK(o.pids[0] == 7 && o.pids[1] == 8);
	CHECK_EQ_INT(o.freq, 999);
	CHECK(o.duration_s == 2.5);
	CHECK_EQ_INT(o.n_outputs, 2);
	CHECK_STR(o.outputs[0], "a.svg");
	CHECK_STR(o.outputs[1], "b.folded");
	CHECK(o.verbose && o.kernel && o.lines && o.no_inline && o.no_tui);
	CHECK_STR(o.json_path, "s.json");
	CHECK_EQ_INT(o.n_traces, 2);
	CHECK_STR(o.traces[0], "handle");
	CHECK_STR(o.traces[1], "libc.so.6:malloc");
	CHECK_STR(o.by_expr, "req->kind");
	CHECK(o.window_s == 30 && o.interval_s == 0.5 && o.max_overhead_pct == 2);
	CHECK_STR(o.split_spec, "handle@p99");
	CHECK_STR(o.when_spec, "x.c:12");
	CHECK(o.split_alpha == 0.001);
	CHECK(o.offcpu && o.per_call && o.per_thread);
	CHECK_EQ_INT(o.call_graph, CALL_GRAPH_DWARF);
	CHECK_EQ_INT(o.stack_kib, 32);
	CHECK_EQ_INT(o.top_rows, 0);
	CHECK_EQ_INT(o.ringbuf_mb, 64);
	CHECK_STR(o.http_addr, "127.0.0.1:6060");
	CHECK_STR(o.http_token, "/tmp/tok");
	CHECK(o.alloc); /* --alloc-rate implies --alloc */
	CHECK_EQ_INT(o.alloc_rate_bytes, 4096);
	CHECK(!o.all && !o.command);
}

UNIT_TEST(short_options)
{
	struct options o;

	CHECK_EQ_INT(
		PARSE(&o, "-p", "1", "-p", "2,3", "-F", "49", "-d", "1", "-o", "x.pb.gz", "-v"), 0);
	CHECK_EQ_INT(o.n_pids, 3);
	CHECK(o.pids[0] == 1 && o.pids[1] == 2 && o.pids[2] == 3);
	CHECK_EQ_INT(o.freq, 49);
	CHECK(o.duration_s == 1);
	CHECK_EQ_INT(o.n_outputs, 1);
	CHECK(o.verbose);
	CHECK_EQ_INT(PARSE(&o, "-a", "--call-graph", "fp", "--alloc"), 0);
	CHECK(o.alloc);
	CHECK(o.all && !o.n_pids);
	CHECK_EQ_INT(o.call_graph, CALL_GRAPH_FP);
	CHECK_EQ_INT(PARSE(&o, "--all", "--call-graph", "auto"), 0);
	CHECK(o.all);
	CHECK_EQ_INT(o.call_graph, CALL_GRAPH_AUTO);
	/* the argument glued to the option */
	CHECK_EQ_INT(PARSE(&o, "-p42", "-F1000", "--freq=500"), 0);
	CHECK_EQ_INT(o.pids[0], 42);
	CHECK_EQ_INT(o.freq, 500);
}

UNIT_TEST(command_after_dashes)
{
	struct options o;
	char **v = ARGV("-F", "199", "--", "./prog", "-p", "1");

	CHECK_EQ_INT(parse_captured(ARGC(ARGV("-F", "199", "--", "./prog", "-p", "1")), v, &o), 0);
	CHECK(o.command == &v[4]);
	CHECK_STR(o.command[0], "./prog");
	CHECK_STR(o.command[1], "-p"); /* the command's own options are left alone */
	CHECK(o.command[3] == NULL);
	CHECK_EQ_INT(o.n_pids, 0);
	CHECK_EQ_INT(o.freq, 199);
}

/* Ring buffer sizes must be a power of two: others round down. */
UNIT_TEST(ringbuf_rounding)
{
	struct options o;

	CHECK_EQ_INT(PARSE(&o, "-a", "--ringbuf-mb", "100"), 0);
	CHECK_EQ_INT(o.ringbuf_mb, 64);
	CHECK_EQ_INT(PARSE(&o, "-a", "--ringbuf-mb", "1"), 0);
	CHECK_EQ_INT(o.ringbuf_mb, 1);
	CHECK_EQ_INT(PARSE(&o, "-a", "--ringbuf-mb", "1024"), 0);
	CHECK_EQ_INT(o.ringbuf_mb, 1024);
	CHECK_EQ_INT(PARSE(&o, "-a", "--ringbuf-mb", "3"), 0);
	CHECK_EQ_INT(o.ringbuf_mb, 2);
}

UNIT_TEST(help)
{
	struct options o;

	CHECK_EQ_INT(PARSE(&o, "--help"), 1);
	CHECK(!strncmp(out_text, "usage: liveprof", 15));
	CHECK_STR(err_text, "");
	/* every option of every_long_option() above is documented */
	for (const char **opt = LONG_OPTS; *opt; opt++) {
		char word[64];

		snprintf(word, sizeof(word), "%s ", *opt);
		if (!strstr(out_text, word)) {
			fprintf(stderr, "  --help does not document %s\n", *opt);
			unit_failed_checks++;
		}
	}
	CHECK_EQ_INT(PARSE(&o, "-h", "-p", "nonsense"), 1); /* help wins where it stands */
	CHECK(strstr(out_text, "Exit status") != NULL);
}

UNIT_TEST(bad_numbers)
{
	BAD("abc", "-p", "abc");
	BAD("0", "-p", "0");
	BAD("-5", "-p", "-5");
	BAD("x", "-p", "1,x");
	BAD("99999999999", "-p", "99999999999");
	BAD("0", "-F", "0");
	BAD("100001", "-F", "100001");
	BAD("nan", "-a", "-F", "nan");
	BAD("99.5", "-a", "-F", "99.5");
	BAD("1e", "-a", "-F", "1e");
	BAD("", "-a", "-F", "");
	BAD("0", "-a", "-d", "0");
	BAD("nan", "-a", "-d", "nan");
	BAD("inf", "-a", "-d", "inf");
	BAD("0.5", "-a", "--window", "0.5");
	BAD("nan", "-a", "--window", "nan");
	BAD("0.0005", "-a", "--interval", "0.0005");
	BAD("nan", "-a", "--interval", "nan");
	BAD("0", "-a", "--max-overhead", "0");
	BAD("nan", "-a", "--max-overhead", "nan");
	BAD("101", "-a", "--max-overhead", "101");
	BAD("lbr", "-a", "--call-graph", "lbr");
	BAD("65", "-a", "--stack-size", "65");
	BAD("1.5", "-a", "--stack-size", "1.5");
	BAD("-1", "-a", "--top", "-1");
	BAD("2.5", "-a", "--top", "2.5");
	BAD("2048", "-a", "--ringbuf-mb", "2048");
	BAD("nan", "-a", "--ringbuf-mb", "nan");
	BAD("0", "-a", "--alloc-rate", "0");
	BAD("1.5", "-a", "--alloc-rate", "1.5");
	BAD("nan", "-a", "--alloc-rate", "nan");
}

UNIT_TEST(bad_usage)
{
	struct options o;

	BAD("--bogus", "-a", "--bogus");
	BAD("-x", "-a", "-x");
	BAD("-p", "-p");
	BAD("--trace", "-a", "--trace");
	BAD("foo", "-p", "1", "foo");
	BAD(NULL, "-F", "99");		    /* no target */
	BAD(NULL, "-p", "1", "-a");	    /* two targets */
	BAD(NULL, "-a", "--", "./prog");    /* and a third */
	BAD(NULL, "-a", "--when", "x.c:3"); /* --when needs --split */
	BAD(NULL, "-a", "--http-token", "/tmp/t");
	BAD("nope", "-a", "--http", "nope");
	BAD("0.0.0.0:6060", "-a", "--http", "0.0.0.0:6060"); /* not loopback, no token */
	/* a split needs calls with a latency: not an offset, not a line */
	BAD("f+0x4", "-a", "--split", "f+0x4@p99");
	BAD("x.c:12", "-a", "--split", "x.c:12");
	BAD("p101", "-a", "--split", "f@p101");
	/* a parse after a failed one starts afresh */
	CHECK_EQ_INT(PARSE(&o, "-p", "5"), 0);
	CHECK_EQ_INT(o.n_pids, 1);
}

UNIT_TEST(limits)
{
	char pids[64 * 4 + 8] = "", *v[2 * MAX_TRACES + 8];
	struct options o;
	int n = 0;

	for (int i = 1; i <= MAX_PIDS; i++)
		snprintf(pids + strlen(pids), sizeof(pids) - strlen(pids), "%s%d", i > 1 ? "," : "",
			 i);
	CHECK_EQ_INT(PARSE(&o, "-p", pids), 0);
	CHECK_EQ_INT(o.n_pids, MAX_PIDS);
	strcat(pids, ",65");
	BAD(NULL, "-p", pids);
	CHECK(strstr(err_text, "too many pids") != NULL);

	v[n++] = "liveprof";
	v[n++] = "-a";
	for (int i = 0; i <= MAX_TRACES; i++) {
		v[n++] = "--trace";
		v[n++] = "f";
	}
	v[n] = NULL;
	check_bad(__LINE__, parse_captured(n, v, &o), NULL);
	CHECK(strstr(err_text, "too many --trace") != NULL);
	CHECK_EQ_INT(parse_captured(n - 2, (v[n - 2] = NULL, v), &o), 0);
	CHECK_EQ_INT(o.n_traces, MAX_TRACES);

	n = 2;
	for (int i = 0; i <= MAX_OUTPUTS; i++) {
		v[n++] = "-o";
		v[n++] = "x.svg";
	}
	v[n] = NULL;
	check_bad(__LINE__, parse_captured(n, v, &o), NULL);
	CHECK(strstr(err_text, "too many outputs") != NULL);
}

UNIT_MAIN()
