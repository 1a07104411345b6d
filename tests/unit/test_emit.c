// SPDX-License-Identifier: GPL-2.0
/*
 * test_emit.c - the readers (folded, pprof), the call tree, identifier
 * sanitizing and the scenario parser of `liveprof emit`.
 *
 * pprof files are built here byte by byte (protobuf + zlib), so the tests
 * cover packed and unpacked fields, inlined lines and hostile variants
 * without a fixture file.
 */
#include <errno.h>
#include <zlib.h>

#include "unit.h"
#include "user/synth/emit.h"
#include "user/synth/emit_tree.h"
#include "user/profile/profile_read.h"
#include "user/synth/scenario.h"

/* Render stack @i of @p as "a;b;c count". */
static void stack_str(const struct profile *p, size_t i, char *buf, size_t sz)
{
	const struct profile_sample *s = &p->samples[i];
	size_t o = 0, j;

	buf[0] = '\0';
	for (j = 0; j < s->depth && o < sz; j++)
		o += snprintf(buf + o, sz - o, "%s%s", j ? ";" : "", p->frames[s->frames[j]].name);
	if (o < sz)
		snprintf(buf + o, sz - o, " %llu", (unsigned long long)s->count);
}

static bool has_stack(const struct profile *p, const char *want)
{
	char buf[512];
	size_t i;

	for (i = 0; i < p->n_samples; i++) {
		stack_str(p, i, buf, sizeof(buf));
		if (!strcmp(buf, want))
			return true;
	}
	return false;
}

static int folded(const char *text, struct profile **out, char *err, size_t errsz)
{
	struct profile *p = profile__new("test");
	int ret;

	if (!p)
		return -ENOMEM;
	err[0] = '\0';
	ret = read_folded(p, text, strlen(text), err, errsz);
	if (ret || !out)
		profile__free(p);
	else
		*out = p;
	return ret;
}

UNIT_TEST(folded_good)
{
	struct profile *p = NULL;
	char err[PROFILE_READ_ERRSZ];

	CHECK_EQ_INT(folded("a;b 3\na;c 2\n\n   \r\nx 1\r\nop new(long);y 4  \na;b 2\n", &p, err,
			    sizeof(err)),
		     0);
	if (!p)
		return;
	CHECK_EQ_INT(p->n_samples, 4);
	CHECK_EQ_INT(p->total_count, 12);
	CHECK(has_stack(p, "a;b 5"));
	CHECK(has_stack(p, "a;c 2"));
	CHECK(has_stack(p, "x 1"));
	CHECK(has_stack(p, "op new(long);y 4"));
	profile__free(p);
}

UNIT_TEST(folded_errors)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{"a;b\n", "bad folded line 1, column 4: expected a count after the last space"},
		{"ok 1\na;b x1\n", "bad folded line 2, column 5: the count 'x1' is not a number"},
		{"a;;b 3\n", "bad folded line 1, column 3: empty frame name"},
		{";a 3\n", "bad folded line 1, column 1: empty frame name"},
		{"a;b; 3\n", "bad folded line 1, column 5: empty frame name"},
		{" 5\n", "bad folded line 1, column 1: no frames before the count"},
		{"a 99999999999999999999999\n",
		 "bad folded line 1, column 3: the count is too large"},
		{"a 1\nb 2\n\nc 3x\n",
		 "bad folded line 4, column 4: the count '3x' is not a number"},
	};
	char err[PROFILE_READ_ERRSZ];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_EQ_INT(folded(cases[i].text, NULL, err, sizeof(err)), -EINVAL);
		CHECK_STR(err, cases[i].msg);
	}
	/* A NUL in the middle: binary data, named as such. */
	{
		struct profile *p = profile__new("t");
		static const char bin[] = "a\0b 1\n";

		CHECK_EQ_INT(read_folded(p, bin, sizeof(bin) - 1, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "line 1, column 2: unexpected NUL byte") != NULL);
		profile__free(p);
	}
}

/* ---- a tiny protobuf writer for building pprof files --------------------- */

struct pbw {
	uint8_t buf[4096];
	size_t len;
};

static void put_varint(struct pbw *w, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;

		v >>= 7;
		w->buf[w->len++] = c | (v ? 0x80 : 0);
	} while (v);
}

static void put_uint(struct pbw *w, uint32_t field, uint64_t v)
{
	put_varint(w, (uint64_t)field << 3);
	put_varint(w, v);
}

static void put_bytes(struct pbw *w, uint32_t field, const void *data, size_t n)
{
	put_varint(w, (uint64_t)field << 3 | 2);
	put_varint(w, n);
	memcpy(w->buf + w->len, data, n);
	w->len += n;
}

static void put_msg(struct pbw *w, uint32_t field, const struct pbw *m)
{
	put_bytes(w, field, m->buf, m->len);
}

static void put_str(struct pbw *w, const char *s)
{
	put_bytes(w, 6, s, strlen(s));
}

/* A profile: main -> (inl inlined into main) -> work. */
static void build_pprof(struct pbw *w)
{
	static const char *const strs[] = {"",	   "samples", "count", "cpu", "nanoseconds",
					   "main", "work",    "inl"};
	struct pbw m, l;
	size_t i;

	memset(w, 0, sizeof(*w));
	/* sample_type: samples/count, cpu/nanoseconds */
	memset(&m, 0, sizeof(m));
	put_uint(&m, 1, 1);
	put_uint(&m, 2, 2);
	put_msg(w, 1, &m);
	memset(&m, 0, sizeof(m));
	put_uint(&m, 1, 3);
	put_uint(&m, 2, 4);
	put_msg(w, 1, &m);
	/* sample 1: locations [1, 2] packed, values [5, 5000] packed */
	memset(&m, 0, sizeof(m));
	{
		struct pbw pk = {.len = 0};

		put_varint(&pk, 1);
		put_varint(&pk, 2);
		put_msg(&m, 1, &pk);
		memset(&pk, 0, sizeof(pk));
		put_varint(&pk, 5);
		put_varint(&pk, 5000);
		put_msg(&m, 2, &pk);
	}
	put_msg(w, 2, &m);
	/* sample 2: location 2 and values unpacked */
	memset(&m, 0, sizeof(m));
	put_uint(&m, 1, 2);
	put_uint(&m, 2, 3);
	put_uint(&m, 2, 3000);
	put_msg(w, 2, &m);
	/* location 1: work; location 2: inl inlined into main (innermost first) */
	memset(&m, 0, sizeof(m));
	put_uint(&m, 1, 1);
	memset(&l, 0, sizeof(l));
	put_uint(&l, 1, 2);
	put_msg(&m, 4, &l);
	put_msg(w, 4, &m);
	memset(&m, 0, sizeof(m));
	put_uint(&m, 1, 2);
	memset(&l, 0, sizeof(l));
	put_uint(&l, 1, 3);
	put_msg(&m, 4, &l);
	memset(&l, 0, sizeof(l));
	put_uint(&l, 1, 1);
	put_msg(&m, 4, &l);
	put_msg(w, 4, &m);
	/* functions: 1 main, 2 work, 3 inl */
	for (i = 1; i <= 3; i++) {
		memset(&m, 0, sizeof(m));
		put_uint(&m, 1, i);
		put_uint(&m, 2, i + 4);
		put_msg(w, 5, &m);
	}
	for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		put_str(w, strs[i]);
}

static size_t gzip_buf(const void *in, size_t n, uint8_t *out, size_t cap)
{
	z_stream zs = {0};
	size_t len;

	if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return 0;
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)n;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&zs);
		return 0;
	}
	len = zs.total_out;
	deflateEnd(&zs);
	return len;
}

UNIT_TEST(pprof_good)
{
	char err[PROFILE_READ_ERRSZ];
	static struct pbw w;
	uint8_t gz[8192];
	struct profile *p = profile__new("t");
	size_t n;

	build_pprof(&w);
	n = gzip_buf(w.buf, w.len, gz, sizeof(gz));
	CHECK(n > 0);
	CHECK_EQ_INT(read_pprof(p, gz, n, err, sizeof(err)), 0);
	CHECK_EQ_INT(p->n_samples, 2);
	CHECK(has_stack(p, "main;inl;work 5"));
	CHECK(has_stack(p, "main;inl 3"));
	profile__free(p);
}

UNIT_TEST(pprof_garbage)
{
	char err[PROFILE_READ_ERRSZ];
	static struct pbw w;
	uint8_t gz[8192], junk[256];
	struct profile *p;
	size_t n, i, k;

	/* Not gzip at all. */
	p = profile__new("t");
	CHECK_EQ_INT(read_pprof(p, "a;b 1\n", 6, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "not a pprof file: it is not gzip-compressed");
	profile__free(p);

	/* gzip of text: inflates, but is not a profile. */
	n = gzip_buf("hello;world 12\n", 15, gz, sizeof(gz));
	p = profile__new("t");
	CHECK_EQ_INT(read_pprof(p, gz, n, err, sizeof(err)), -EINVAL);
	CHECK(strncmp(err, "not a pprof file", 16) == 0);
	profile__free(p);

	/* Truncated gzip. */
	build_pprof(&w);
	n = gzip_buf(w.buf, w.len, gz, sizeof(gz));
	p = profile__new("t");
	CHECK_EQ_INT(read_pprof(p, gz, n / 2, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "truncated") != NULL);
	profile__free(p);

	/* Corrupted protobuf, recompressed: every outcome must be a clean one. */
	srand(42);
	for (k = 0; k < 2000; k++) {
		static struct pbw bad;
		int ret;

		bad = w;
		for (i = 0; i < 1 + (size_t)(rand() % 4); i++)
			bad.buf[rand() % bad.len] = (uint8_t)rand();
		if (k % 3 == 0)
			bad.len = (size_t)rand() % bad.len;
		n = gzip_buf(bad.buf, bad.len, gz, sizeof(gz));
		p = profile__new("t");
		ret = read_pprof(p, gz, n, err, sizeof(err));
		CHECK(ret == 0 || ret == -EINVAL);
		profile__free(p);
	}
	/* Random bytes behind a gzip magic. */
	for (k = 0; k < 200; k++) {
		for (i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)rand();
		junk[0] = 0x1f;
		junk[1] = 0x8b;
		p = profile__new("t");
		CHECK_EQ_INT(read_pprof(p, junk, sizeof(junk), err, sizeof(err)), -EINVAL);
		profile__free(p);
	}
}

UNIT_TEST(tree_shape)
{
	char err[PROFILE_READ_ERRSZ];
	struct emit_tree t = {0};
	struct profile *p = NULL;
	size_t i;

	CHECK_EQ_INT(folded("a;b;a;b 2\na;b 3\na 1\nc 4\n", &p, err, sizeof(err)), 0);
	if (!p)
		return;
	CHECK_EQ_INT(emit_tree__build(&t, p), 0);
	/* root, a, b, a, b, c */
	CHECK_EQ_INT(t.n_nodes, 6);
	CHECK_EQ_INT(t.n_names, 3);
	CHECK_EQ_INT(t.total, 10);
	CHECK_EQ_INT(t.nodes[0].total, 10);
	CHECK_EQ_INT(t.max_depth, 4);
	for (i = 0; i < t.n_names; i++) {
		if (!strcmp(t.names[i].orig, "a")) {
			CHECK_EQ_INT(t.names[i].count, 2);
			CHECK_EQ_INT(t.names[i].self, 1);
		} else if (!strcmp(t.names[i].orig, "b")) {
			CHECK_EQ_INT(t.names[i].count, 2);
			CHECK_EQ_INT(t.names[i].self, 5);
		} else {
			CHECK_STR(t.names[i].orig, "c");
			CHECK_EQ_INT(t.names[i].self, 4);
		}
	}
	/* Every node is its parent's child, and totals add up. */
	for (i = 1; i < t.n_nodes; i++) {
		uint64_t sum = t.nodes[i].self;
		uint32_t c;

		for (c = t.nodes[i].first_child; c != EMIT_NONE; c = t.nodes[c].next_sibling) {
			CHECK_EQ_INT(t.nodes[c].parent, i);
			sum += t.nodes[c].total;
		}
		CHECK_EQ_INT(sum, t.nodes[i].total);
	}
	emit_tree__free(&t);
	profile__free(p);
}

static void check_ident(const struct emit_backend *b, const char *in, const char *want)
{
	char *s = emit_sanitize(in, b->rules);

	CHECK_STR(s, want);
	free(s);
}

UNIT_TEST(sanitize_names)
{
	const struct emit_backend *c = emit_backend_find("c"), *go = emit_backend_find("go");
	const struct emit_backend *py = emit_backend_find("python"),
				  *rb = emit_backend_find("ruby");

	CHECK(c && go && py && rb && !emit_backend_find("cobol"));
	check_ident(c, "main", "main_fn");
	check_ident(c, "malloc", "malloc_fn");
	check_ident(c, "memcpy", "memcpy_fn");
	check_ident(c, "printf", "printf_fn");
	check_ident(c, "exit", "exit_fn");
	check_ident(c, "int", "int_fn");
	check_ident(c, "read", "read_fn"); /* found in libc itself */
	check_ident(c, "__libc_start_main", "__libc_start_main_fn");
	check_ident(c, "lp_work", "lp_work_fn");
	check_ident(c, "ns::Foo<int>::bar(int const&)", "ns__Foo_int___bar_int_const__");
	check_ident(c, "1st", "_1st");
	check_ident(c, "", "_");
	check_ident(c, "[unknown]", "_unknown_");
	check_ident(c, "compute_hash", "compute_hash");
	check_ident(go, "func", "func_fn");
	check_ident(go, "init", "init_fn");
	check_ident(go, "main", "main_fn");
	check_ident(go, "len", "len_fn");
	check_ident(go, "lpRoot", "lpRoot_fn");
	check_ident(go, "runtime.mallocgc", "runtime_mallocgc");
	check_ident(py, "print", "print_fn");
	check_ident(py, "lambda", "lambda_fn");
	check_ident(py, "__init__", "__init___fn");
	check_ident(py, "_lp_root", "_lp_root_fn");
	check_ident(rb, "puts", "puts_fn");
	check_ident(rb, "end", "end_fn");
	check_ident(rb, "Integer", "Integer_fn");
	check_ident(rb, "hash", "hash_fn");
}

UNIT_TEST(unique_idents)
{
	char err[PROFILE_READ_ERRSZ];
	struct emit_tree t = {0};
	struct profile *p = NULL;
	size_t i;

	CHECK_EQ_INT(folded("a.b 1\na_b 1\na-b 1\nmain 1\nmain_fn 1\n", &p, err, sizeof(err)), 0);
	if (!p)
		return;
	CHECK_EQ_INT(emit_tree__build(&t, p), 0);
	CHECK_EQ_INT(emit_tree__idents(&t, emit_backend_c.rules), 0);
	for (i = 0; i < t.n_names; i++) {
		const char *o = t.names[i].orig, *id = t.names[i].ident;

		if (!strcmp(o, "a.b"))
			CHECK_STR(id, "a_b");
		else if (!strcmp(o, "a_b"))
			CHECK_STR(id, "a_b_2");
		else if (!strcmp(o, "a-b"))
			CHECK_STR(id, "a_b_3");
		else if (!strcmp(o, "main"))
			CHECK_STR(id, "main_fn");
		else
			CHECK_STR(id, "main_fn_2");
		CHECK_EQ_INT(t.names[i].renamed, strcmp(o, id) != 0);
	}
	emit_tree__free(&t);
	profile__free(p);
}

/* The C program for a tree compiles to text that names every function once. */
UNIT_TEST(c_backend_text)
{
	struct emit_opts o = {
		.utilization = 0.5, .threads = 2, .source = "x.folded", .out_path = "/tmp/x.c"};
	char err[PROFILE_READ_ERRSZ], *text = NULL;
	struct emit_tree t = {0};
	struct profile *p = NULL;
	size_t len = 0;
	FILE *f;

	CHECK_EQ_INT(folded("main;work 3\nmain;x*/y 1\n", &p, err, sizeof(err)), 0);
	if (!p)
		return;
	CHECK_EQ_INT(emit_tree__build(&t, p), 0);
	CHECK_EQ_INT(emit_tree__idents(&t, emit_backend_c.rules), 0);
	f = open_memstream(&text, &len);
	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ_INT(emit_backend_c.write(f, &t, &o), 0);
	fclose(f);
	CHECK(strstr(text, "Build: cc -O1 -g /tmp/x.c -o /tmp/x -lpthread") != NULL);
	CHECK(strstr(text, "renamed: main -> main_fn") != NULL);
	/* A hostile name cannot close the header comment. */
	CHECK(strstr(text, "renamed: x*?/y -> x__y") != NULL);
	CHECK(strstr(text, "static LP_FN void work(unsigned int node)\n{") != NULL);
	CHECK(strstr(text, "static double lp_utilization = 0.5;") != NULL);
	free(text);
	emit_tree__free(&t);
	profile__free(p);
}

static int scen(const char *text, struct scenario *sc, char *err, size_t errsz)
{
	err[0] = '\0';
	return scenario_parse(sc, text, strlen(text), err, errsz);
}

UNIT_TEST(scenario_good)
{
	char err[PROFILE_READ_ERRSZ];
	struct scenario sc;

	CHECK_EQ_INT(scen("# comment\nhandler handle rate 2000   # per second\n"
			  "fast 95% 50us\nslow 5% call slow_path 1ms cpu\nthreads 2\n",
			  &sc, err, sizeof(err)),
		     0);
	CHECK_STR(sc.handler, "handle");
	CHECK_STR(sc.cause, "slow_path");
	CHECK(sc.rate == 2000 && sc.threads == 2 && sc.work_us == 50 && sc.cause_us == 1000);
	CHECK(sc.fast_pct == 95 && sc.slow_pct == 5 && sc.wait == SCENARIO_CPU);
	CHECK_EQ_INT(sc.arg_over, -1);
	scenario_free(&sc);

	CHECK_EQ_INT(scen("handler h\nslow 10% block mu 2ms\n", &sc, err, sizeof(err)), 0);
	CHECK(sc.wait == SCENARIO_BLOCK && sc.fast_pct == 90 && sc.cause_us == 2000);
	CHECK_STR(sc.cause, "mu");
	scenario_free(&sc);

	CHECK_EQ_INT(scen("handler h\nslow when arg > 1000\n", &sc, err, sizeof(err)), 0);
	CHECK(sc.arg_over == 1000 && sc.slow_pct == 5);
	CHECK_STR(sc.cause, "slow_path");
	scenario_free(&sc);

	CHECK_EQ_INT(scen("handler h\nslow 1% sleep 500us\n", &sc, err, sizeof(err)), 0);
	CHECK(sc.wait == SCENARIO_SLEEP && sc.cause_us == 500);
	scenario_free(&sc);
}

UNIT_TEST(scenario_errors)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{"handler handle\n  fsat 95% 50us\n",
		 "scenario line 2, column 3: unknown keyword 'fsat'"},
		{"handler handle\nfast 95% 50xs\nslow 5% sleep 1ms\n",
		 "scenario line 2, column 10: expected a duration such as '50us' or '1ms' (ns, "
		 "us, ms, s), not '50xs'"},
		{"handler handle\nfast 95 50us\n",
		 "scenario line 2, column 6: expected a percentage such as '5%', not '95'"},
		{"fast 95% 50us\nslow 5% sleep 1ms\n",
		 "scenario line 3, column 1: no 'handler NAME' line"},
		{"handler h\nfast 90% 50us\nslow 5% sleep 1ms\n",
		 "scenario line 4, column 1: fast 90% and slow 5% do not add up to 100%"},
		{"handler 9x\n", "scenario line 1, column 9: '9x' is not a C identifier"},
		{"handler h rate\n", "scenario line 1, column 11: 'rate' needs a value"},
		{"handler h\nslow 5% call f 1ms warm\n",
		 "scenario line 2, column 20: expected cpu, sleep or block, not 'warm'"},
		{"handler h\nslow 5% when arg >\n",
		 "scenario line 2, column 9: expected 'when arg > N' at the end of the line"},
	};
	char err[PROFILE_READ_ERRSZ];
	struct scenario sc;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK_EQ_INT(scen(cases[i].text, &sc, err, sizeof(err)), -EINVAL);
		CHECK_STR(err, cases[i].msg);
		scenario_free(&sc);
	}
}

UNIT_MAIN()
