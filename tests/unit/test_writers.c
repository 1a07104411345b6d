// SPDX-License-Identifier: GPL-2.0
/*
 * test_writers.c - profiles built in code, checked through every writer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "unit.h"
#include "user/util/atomic_file.h"
#include "user/profile/profile.h"
#include "user/profile/writers.h"

static uint32_t frame(struct profile *p, const char *name, enum frame_kind kind, uint64_t addr,
		      bool inlined)
{
	struct frame f = {.name = name, .kind = kind, .addr = addr, .inlined = inlined};
	int64_t id;

	if (kind == FRAME_USER) {
		f.module = "app";
		f.path = "/usr/bin/app";
		f.build_id = "0011";
		f.file = "app.c";
		f.line = (int)addr;
	}
	id = profile__intern_frame(p, &f);
	CHECK(id >= 0);
	return (uint32_t)id;
}

/* The whole output of @fn on @p as a string the caller frees. */
static char *capture(int (*fn)(const struct profile *, FILE *), const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f != NULL);
	CHECK_EQ_INT(fn(p, f), 0);
	fclose(f);
	return buf;
}

static int svg_plain(const struct profile *p, FILE *f)
{
	return write_svg(p, f, NULL);
}

static int top_all(const struct profile *p, FILE *f)
{
	return write_top(p, f, 0);
}

/* main;a;b x3 (slow), main;a;b x2 (fast), main;a;c x4, main;k_[k] x1 */
static struct profile *sample_profile(void)
{
	struct profile *p = profile__new("test");
	struct label slow[] = {{"class", "slow"}, {"function", "f"}};
	struct label fast[] = {{"class", "fast"}};
	uint32_t r, m, a, b, c, k;

	r = frame(p, "app", FRAME_ROOT, 0, false);
	m = frame(p, "main", FRAME_USER, 1, false);
	a = frame(p, "a", FRAME_USER, 2, false);
	b = frame(p, "b", FRAME_USER, 3, false);
	c = frame(p, "c", FRAME_USER, 4, false);
	k = frame(p, "k", FRAME_KERNEL, 5, false);
	uint32_t s1[] = {r, m, a, b}, s2[] = {r, m, a, c}, s3[] = {r, m, k};

	CHECK_EQ_INT(profile__add(p, s1, 4, 3, 300, slow, 2), 0);
	CHECK_EQ_INT(profile__add(p, s1, 4, 2, 200, fast, 1), 0);
	CHECK_EQ_INT(profile__add(p, s2, 4, 4, 400, NULL, 0), 0);
	CHECK_EQ_INT(profile__add(p, s3, 3, 1, 100, NULL, 0), 0);
	return p;
}

UNIT_TEST(profile_interning)
{
	struct profile *p = profile__new("x");
	struct label l1[] = {{"k1", "v1"}, {"k2", "v2"}};
	struct label l2[] = {{"k2", "v2"}, {"k1", "v1"}};
	char name[] = "main";
	uint32_t a, b, s[2];

	CHECK(p != NULL);
	CHECK(profile__intern_str(p, "abc") == profile__intern_str(p, "abc"));
	CHECK(profile__intern_str(p, NULL) == NULL);
	a = frame(p, name, FRAME_USER, 1, false);
	name[0] = 'M'; /* the profile must have copied the name */
	CHECK_STR(p->frames[a].name, "main");
	CHECK_EQ_INT(frame(p, "main", FRAME_USER, 1, false), a);
	CHECK(frame(p, "main", FRAME_USER, 2, false) != a);
	CHECK(frame(p, "main", FRAME_USER, 1, true) != a);
	b = frame(p, "b", FRAME_USER, 3, false);
	s[0] = a;
	s[1] = b;
	CHECK_EQ_INT(profile__add(p, s, 2, 1, 10, l1, 2), 0);
	CHECK_EQ_INT(profile__add(p, s, 2, 2, 20, l2, 2), 0);
	CHECK_EQ_INT(p->n_samples, 1);
	CHECK_EQ_INT(p->samples[0].count, 3);
	CHECK_EQ_INT(p->samples[0].weight_ns, 30);
	CHECK_STR(profile__label(&p->samples[0], "k2"), "v2");
	CHECK_EQ_INT(profile__add(p, s, 2, 1, 10, NULL, 0), 0);
	CHECK_EQ_INT(p->n_samples, 2);
	CHECK_EQ_INT(p->total_count, 4);
	s[1] = 999;
	CHECK_EQ_INT(profile__add(p, s, 2, 1, 1, NULL, 0), -EINVAL);
	CHECK_EQ_INT(profile__add(p, s, 0, 1, 1, NULL, 0), -EINVAL);
	profile__free(p);
}

UNIT_TEST(profile_many_stacks)
{
	struct profile *p = profile__new("x"), *q = profile__new("y");
	uint32_t ids[64], st[16];
	char name[16];

	for (int i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ids[i] = frame(p, name, FRAME_USER, i + 1, false);
	}
	for (int n = 0; n < 200000; n++) {
		int s = n % 10000;

		for (int d = 0; d < 16; d++)
			st[d] = ids[(s >> (d % 14)) % 64];
		CHECK_EQ_INT(profile__add(p, st, 16, 1, 0, NULL, 0), 0);
	}
	CHECK_EQ_INT(p->total_count, 200000);
	CHECK(p->n_samples <= 10000);
	CHECK_EQ_INT(profile__merge(q, p), 0);
	CHECK_EQ_INT(q->n_samples, p->n_samples);
	CHECK_EQ_INT(q->total_count, 200000);
	profile__free(p);
	profile__free(q);
}

UNIT_TEST(folded_exact)
{
	struct profile *p = sample_profile();
	char *s = capture(write_folded, p);

	/* b's slow and fast samples differ only by labels: one line. */
	CHECK_STR(s, "app;main;a;b 5\napp;main;a;c 4\napp;main;k_[k] 1\n");
	free(s);
	s = capture(write_folded_weighted, p);
	CHECK_STR(s, "app;main;a;b 500\napp;main;a;c 400\napp;main;k_[k] 100\n");
	free(s);
	profile__free(p);
}

UNIT_TEST(folded_sort_and_sanitize)
{
	struct profile *p = profile__new("x");
	uint32_t r = frame(p, "r", FRAME_ROOT, 0, false);
	uint32_t a = frame(p, "a", FRAME_USER, 1, false);
	uint32_t am = frame(p, "a-x", FRAME_USER, 2, false);
	uint32_t bad = frame(p, "x;y\nz", FRAME_USER, 3, false);
	uint32_t i1 = frame(p, "inl", FRAME_USER, 1, true);
	uint32_t s1[] = {r, a, bad}, s2[] = {r, am}, s3[] = {r, a}, s4[] = {r, a, i1};
	char *s;

	CHECK_EQ_INT(profile__add(p, s1, 3, 1, 0, NULL, 0), 0);
	CHECK_EQ_INT(profile__add(p, s2, 2, 2, 0, NULL, 0), 0);
	CHECK_EQ_INT(profile__add(p, s3, 2, 3, 0, NULL, 0), 0);
	CHECK_EQ_INT(profile__add(p, s4, 3, 4, 0, NULL, 0), 0);
	s = capture(write_folded, p);
	/* Byte order of whole lines: '-' (0x2d) < ' ' no; "r;a " < "r;a-x" < "r;a;..." */
	/* an inlined frame is marked as stackcollapse-perf.pl --inline marks it */
	CHECK_STR(s, "r;a 3\nr;a-x 2\nr;a;inl_[i] 4\nr;a;x:y?z 1\n");
	free(s);
	profile__free(p);
}

UNIT_TEST(top_recursion)
{
	struct profile *p = profile__new("x");
	uint32_t m = frame(p, "main", FRAME_USER, 1, false);
	uint32_t f = frame(p, "f", FRAME_USER, 2, false);
	uint32_t f2 = frame(p, "f", FRAME_USER, 3, false); /* same function, other line */
	uint32_t g = frame(p, "g", FRAME_USER, 4, false);
	uint32_t s1[] = {m, f, f2, f}, s2[] = {m, f, g}, s3[] = {m};
	char *s;
	json_t *j, *row;

	CHECK_EQ_INT(profile__add(p, s1, 4, 6, 0, NULL, 0), 0);
	CHECK_EQ_INT(profile__add(p, s2, 3, 3, 0, NULL, 0), 0);
	CHECK_EQ_INT(profile__add(p, s3, 1, 1, 0, NULL, 0), 0);
	s = capture(top_all, p);
	CHECK(strstr(s, "         6  60.00%  60.00%          9  90.00%  f\n") != NULL);
	CHECK(strstr(s, "         3  30.00%  90.00%          3  30.00%  g\n") != NULL);
	CHECK(strstr(s, "         1  10.00% 100.00%         10 100.00%  main\n") != NULL);
	free(s);
	j = profile__top_json(p, 2);
	CHECK(j && json_array_size(j) == 2);
	row = json_array_get(j, 0);
	CHECK_STR(json_string_value(json_object_get(row, "name")), "f");
	CHECK_EQ_INT(json_integer_value(json_object_get(row, "self")), 6);
	CHECK_EQ_INT(json_integer_value(json_object_get(row, "total")), 9);
	CHECK(json_real_value(json_object_get(row, "total_pct")) > 89.99);
	json_decref(j);
	profile__free(p);
}

static int count_str(const char *s, const char *needle)
{
	int n = 0;

	for (const char *q = s; (q = strstr(q, needle)); q++)
		n++;
	return n;
}

UNIT_TEST(svg_escaping)
{
	struct profile *p = sample_profile();
	uint32_t r = frame(p, "app", FRAME_ROOT, 0, false);
	uint32_t evil = frame(p, "<script>alert(\"x\")&'\x01\xff</script>", FRAME_USER, 9, false);
	uint32_t off = frame(p, "[off-cpu]", FRAME_MARKER, 0, false);
	uint32_t s1[] = {r, evil}, s2[] = {r, off};
	char *s;

	CHECK_EQ_INT(profile__add(p, s1, 2, 50, 0, NULL, 0), 0);
	CHECK_EQ_INT(profile__add(p, s2, 2, 50, 0, NULL, 0), 0);
	s = capture(svg_plain, p);
	CHECK(strncmp(s, "<?xml", 5) == 0);
	CHECK(strstr(s,
		     "&lt;script&gt;alert(&quot;x&quot;)&amp;&#39;?\xef\xbf\xbd&lt;/script&gt;"));
	CHECK(!strstr(s, "<script>alert"));
	CHECK(!strchr(s, '\x01') && !strstr(s, "\xff<"));
	CHECK_EQ_INT(count_str(s, "<g "), count_str(s, "</g>"));
	CHECK_EQ_INT(count_str(s, "<script"), 1);
	CHECK(strstr(s, "main (110 samples, 100.00%)") == NULL); /* all = 110, main = 10 */
	CHECK(strstr(s, "all (110 samples, 100.00%, off-CPU 45.45%)"));
	CHECK(strstr(s, "off-CPU 100.00%"));
	CHECK(strstr(s, "</svg>\n"));
	free(s);
	profile__free(p);
}

UNIT_TEST(svg_diff)
{
	struct profile *slow = sample_profile(), *fast = profile__new("fast");
	uint32_t r = frame(fast, "app", FRAME_ROOT, 0, false);
	uint32_t m = frame(fast, "main", FRAME_USER, 1, false);
	uint32_t c = frame(fast, "c", FRAME_USER, 4, false);
	uint32_t st[] = {r, m, c};
	struct svg_opts o = {.title = "diff"};
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	CHECK_EQ_INT(profile__add(fast, st, 3, 10, 0, NULL, 0), 0);
	f = open_memstream(&buf, &len);
	CHECK_EQ_INT(write_svg_diff(slow, fast, f, &o), 0);
	fclose(f);
	/* main: 100% in both; a: 90% in slow, absent from fast -> red */
	CHECK(strstr(buf, "main (10 samples, slow 100.00%, fast 100.00%, +0.00%)"));
	CHECK(strstr(buf, "a (9 samples, slow 90.00%, fast 0.00%, +90.00%)"));
	CHECK(strstr(buf, "fill=\"rgb(255,55,55)\""));
	CHECK_EQ_INT(count_str(buf, "<g "), count_str(buf, "</g>"));
	free(buf);
	o.per_call = true;
	f = open_memstream(&buf, &len);
	CHECK_EQ_INT(write_svg_diff(slow, fast, f, &o), -EINVAL);
	fclose(f);
	free(buf);
	profile__free(slow);
	profile__free(fast);
}

/* A tiny protobuf reader: enough for the fields write_pprof writes. */
struct pb {
	const uint8_t *p, *end;
};

static uint64_t pb_varint(struct pb *b)
{
	uint64_t v = 0;

	for (int shift = 0; b->p < b->end && shift < 64; shift += 7) {
		uint8_t c = *b->p++;

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
	}
	return v;
}

/* Next field: its number, wire type, varint value or sub-buffer. */
static bool pb_next(struct pb *b, unsigned *field, unsigned *wt, uint64_t *v, struct pb *sub)
{
	uint64_t tag;

	if (b->p >= b->end)
		return false;
	tag = pb_varint(b);
	*field = tag >> 3;
	*wt = tag & 7;
	if (*wt == 0) {
		*v = pb_varint(b);
	} else if (*wt == 2) {
		*v = pb_varint(b);
		sub->p = b->p;
		sub->end = b->p + *v;
		b->p += *v;
	} else {
		return false;
	}
	return true;
}

UNIT_TEST(pprof_roundtrip)
{
	struct profile *p = sample_profile();
	uint8_t *raw = malloc(1 << 20);
	const char *strs[64];
	uint64_t values[16][2], loc_fn[32] = {0}, fn_name[32] = {0}, leaf[16];
	int n_strs = 0, n_samples = 0, n_labels = 0;
	char *gz = NULL;
	size_t gz_len = 0;
	z_stream zs = {0};
	struct pb b, sub, s2, s3;
	unsigned field, wt;
	uint64_t v;
	FILE *f;
	struct pprof_opts o = {.time_nanos = 1};

	p->period_ns = 100;
	p->duration_ns = 1000;
	f = open_memstream(&gz, &gz_len);
	CHECK_EQ_INT(write_pprof(p, f, &o), 0);
	fclose(f);
	CHECK(gz_len > 18 && (uint8_t)gz[0] == 0x1f && (uint8_t)gz[1] == 0x8b);
	CHECK_EQ_INT(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *)gz;
	zs.avail_in = gz_len;
	zs.next_out = raw;
	zs.avail_out = 1 << 20;
	CHECK_EQ_INT(inflate(&zs, Z_FINISH), Z_STREAM_END);
	b.p = raw;
	b.end = raw + zs.total_out;
	inflateEnd(&zs);

	while (pb_next(&b, &field, &wt, &v, &sub)) {
		if (field == 6 && n_strs < 64) {
			strs[n_strs++] = strndup((const char *)sub.p, v);
		} else if (field == 2 && n_samples < 16) {
			while (pb_next(&sub, &field, &wt, &v, &s2)) {
				if (field == 1)
					leaf[n_samples] = pb_varint(&s2); /* first id: the leaf */
				if (field == 2) {
					values[n_samples][0] = pb_varint(&s2);
					values[n_samples][1] = pb_varint(&s2);
				}
				n_labels += field == 3;
			}
			n_samples++;
		} else if (field == 4) {
			uint64_t id = 0, fn = 0;

			while (pb_next(&sub, &field, &wt, &v, &s2)) {
				if (field == 1)
					id = v;
				if (field == 4)
					while (pb_next(&s2, &field, &wt, &v, &s3))
						if (field == 1)
							fn = v;
			}
			if (id < 32)
				loc_fn[id] = fn;
		} else if (field == 5) {
			uint64_t id = 0, name = 0;

			while (pb_next(&sub, &field, &wt, &v, &s2)) {
				if (field == 1)
					id = v;
				if (field == 2)
					name = v;
			}
			if (id < 32)
				fn_name[id] = name;
		}
	}
	CHECK(n_strs > 0 && strs[0][0] == '\0');
	CHECK_EQ_INT(n_samples, 4);
	/* class/function labels, and the process root as a label on each sample */
	CHECK_EQ_INT(n_labels, 3 + 4);
	/* Samples in profile order: b x3 w300, b x2 w200, c x4 w400, k x1 w100. */
	CHECK_EQ_INT(values[0][0], 3);
	CHECK_EQ_INT(values[0][1], 300);
	CHECK_EQ_INT(values[2][0], 4);
	CHECK_EQ_INT(values[3][1], 100);
	for (int i = 0; i < n_samples; i++)
		CHECK(leaf[i] < 32 && fn_name[loc_fn[leaf[i]]] < (uint64_t)n_strs);
	if (n_samples == 4) {
		CHECK_STR(strs[fn_name[loc_fn[leaf[0]]]], "b");
		CHECK_STR(strs[fn_name[loc_fn[leaf[2]]]], "c");
		CHECK_STR(strs[fn_name[loc_fn[leaf[3]]]], "k");
	}
	bool have_kernel = false, have_slow = false, have_cpu = false, have_process = false;

	/* Go's convention: the process is a label, never a function */
	for (int i = 1; i < 32; i++)
		CHECK(!fn_name[i] || fn_name[i] >= (uint64_t)n_strs ||
		      strcmp(strs[fn_name[i]], "app") != 0);

	for (int i = 0; i < n_strs; i++) {
		have_kernel |= !strcmp(strs[i], "[kernel]");
		have_slow |= !strcmp(strs[i], "slow");
		have_cpu |= !strcmp(strs[i], "cpu");
		have_process |= !strcmp(strs[i], "process");
		free((void *)strs[i]);
	}
	CHECK(have_kernel && have_slow && have_cpu && have_process);
	free(gz);
	free(raw);
	profile__free(p);
}

static int count_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."));
	closedir(d);
	return n;
}

static char *slurp(const char *path)
{
	static char buf[256];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

UNIT_TEST(atomic_file_safety)
{
	char dir[] = "/tmp/lp-test-XXXXXX", target[64], victim[64], link[128];
	struct atomic_file af;
	struct stat st;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(target, sizeof(target), "%s/out.txt", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(link, sizeof(link), "%s/link", dir);

	/* commit replaces the target atomically */
	CHECK_EQ_INT(atomic_file__open(&af, target), 0);
	fputs("old", af.fp);
	CHECK_EQ_INT(atomic_file__commit(&af), 0);
	CHECK_EQ_INT(atomic_file__open(&af, target), 0);
	fputs("new", af.fp);
	CHECK_STR(slurp(target), "old"); /* readers see the old file until commit */
	CHECK_EQ_INT(atomic_file__commit(&af), 0);
	CHECK_STR(slurp(target), "new");
	CHECK_EQ_INT(stat(target, &st), 0);
	CHECK_EQ_INT(st.st_mode & 0600, 0600);

	/* abort leaves the target and no temporary file */
	CHECK_EQ_INT(atomic_file__open(&af, target), 0);
	fputs("partial", af.fp);
	atomic_file__abort(&af);
	CHECK_STR(slurp(target), "new");
	CHECK_EQ_INT(count_dir(dir), 1);

	/* a symlink swapped in at the temporary name is neither followed nor installed */
	int fd = open(victim, O_WRONLY | O_CREAT, 0644);

	CHECK(write(fd, "victim", 6) == 6);
	close(fd);
	CHECK_EQ_INT(atomic_file__open(&af, target), 0);
	CHECK_EQ_INT(unlink(af.tmp_path), 0);
	CHECK_EQ_INT(symlink(victim, af.tmp_path), 0);
	fputs("evil", af.fp);
	CHECK(atomic_file__commit(&af) < 0);
	CHECK_STR(slurp(victim), "victim");
	CHECK_STR(slurp(target), "new");
	CHECK_EQ_INT(lstat(target, &st), 0);
	CHECK(S_ISREG(st.st_mode));
	CHECK_EQ_INT(count_dir(dir), 2);

	/* a planted symlink at the target is replaced, its destination untouched */
	CHECK_EQ_INT(symlink(victim, link), 0);
	CHECK_EQ_INT(atomic_file__open(&af, link), 0);
	fputs("mine", af.fp);
	CHECK_EQ_INT(atomic_file__commit(&af), 0);
	CHECK_STR(slurp(victim), "victim");
	CHECK_EQ_INT(lstat(link, &st), 0);
	CHECK(S_ISREG(st.st_mode));
	CHECK_STR(slurp(link), "mine");

	/* writability checks */
	CHECK_EQ_INT(atomic_file__check_writable(target), 0);
	CHECK_EQ_INT(atomic_file__check_writable("/nonexistent-dir/x"), -ENOENT);
	CHECK_EQ_INT(atomic_file__check_writable(dir), -EISDIR);
	snprintf(link, sizeof(link), "%s/x", target);
	CHECK_EQ_INT(atomic_file__check_writable(link), -ENOTDIR);
	CHECK_EQ_INT(atomic_file__open(&af, "/nonexistent-dir/x"), -ENOENT);

	/* pprof through the atomic file */
	struct profile *p = sample_profile();

	CHECK_EQ_INT(write_pprof_file(p, target, NULL), 0);
	CHECK_EQ_INT(stat(target, &st), 0);
	CHECK(st.st_size > 20);
	profile__free(p);

	unlink(target);
	unlink(victim);
	unlink(link);
	snprintf(link, sizeof(link), "%s/link", dir);
	unlink(link);
	CHECK_EQ_INT(rmdir(dir), 0);
}

UNIT_MAIN()
