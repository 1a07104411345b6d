// SPDX-License-Identifier: GPL-2.0
/*
 * test_py_code.c - user/profile/py_code against live CPython interpreters
 * (Debian's python3.11 and, when installed, pyenv's 3.11, 3.12 and 3.13).
 *
 * Each interpreter runs SCRIPT below, which prints for each of its code
 * objects id(code) (the object's address in CPython), co_firstlineno and
 * the line of every code unit as the interpreter itself computes it
 * (co_positions(); a unit with no location counts as co_firstlineno, as in
 * the contract), then sleeps. Names and files are known from the script;
 * the line of a suspended caller frame is the line of its CALLSITE marker.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"
#include "child_report.h"
#include "user/profile/py_code.h"

/* ASCII only: non-ASCII names are built from escapes, so argv's encoding
 * does not matter. */
static const char SCRIPT[] =
	"import sys, time\n"
	"def show(key, co):\n"
	"    first = co.co_firstlineno\n"
	"    keep = lambda: first  # a cell: MAKE_CELL has no location\n"
	"    lines = [-1 if p[0] is None else p[0] for p in co.co_positions()]\n"
	"    print('CODE', key, hex(id(co)), first, len(lines), *lines)\n"
	"class Outer:\n"
	"    def inner_method(self, n):\n"
	"        total = 0\n"
	"        for i in range(n):\n"
	"            total += i * 2  # LOOP\n"
	"        return hold(total)  # CALLSITE\n"
	"def hold(t):\n"
	"    f = sys._getframe(1)\n"
	"    print('FRAME', hex(id(f.f_code)), f.f_lasti, f.f_lineno)\n"
	"    return t\n"
	"Outer().inner_method(3)\n"
	"ns = {}\n"
	"def load(src, filename):\n"
	"    exec(compile(src, filename, 'exec'), ns)\n"
	"load('def gr\\u00f6\\u00dfe(x):\\n    y = [x,\\n         x + 1]\\n    return sum(y)\\n'\n"
	"     'class \\u00dcn\\u00ef:\\n    def \\u95a2\\u6570(self):\\n        return 1\\n',\n"
	"     '/tmp/\\u30d5\\u30a1\\u30a4\\u30eb.py')\n"
	"load('def \\U00020000():\\n    return 2\\n', '/tmp/\\U00020000.py')\n"
	"load('def ' + '\\u00f6' * 100 + '():\\n    return 3\\n'\n"
	"     'def ' + 'a' * 200 + '():\\n    return 4\\n', '/tmp/caf\\u00e9.py')\n"
	"load('def f():\\n    return 5\\n', '/tmp/' + 'd' * 300 + '.py')\n"
	"show('module', sys._getframe().f_code)\n"
	"show('show', show.__code__)\n"
	"show('method', Outer.inner_method.__code__)\n"
	"show('grosse', ns['gr\\u00f6\\u00dfe'].__code__)\n"
	"show('kanji', ns['\\u00dcn\\u00ef'].__dict__['\\u95a2\\u6570'].__code__)\n"
	"show('ucs4', ns['\\U00020000'].__code__)\n"
	"show('longlatin', ns['\\u00f6' * 100].__code__)\n"
	"show('longascii', ns['a' * 200].__code__)\n"
	"show('longfile', ns['f'].__code__)\n"
	"a_list = [1, 2, 3]\n"
	"a_str = 'not a code object ' * 3\n"
	"print('LIST', hex(id(a_list)))\n"
	"print('STR', hex(id(a_str)))\n"
	"print('READY', flush=True)\n"
	"time.sleep(120)\n";

struct expect {
	const char *key, *qualname, *filename;
};

static char long_latin[PY_NAME_MAX], long_ascii[PY_NAME_MAX], long_file[PY_FILE_MAX];

static const struct expect EXPECT[] = {
	{"module", "<module>", "<string>"},
	{"show", "show", "<string>"},
	{"method", "Outer.inner_method", "<string>"},
	{"grosse", "größe", "/tmp/ファイル.py"},
	{"kanji", "Ünï.関数", "/tmp/ファイル.py"},
	{"ucs4", "𠀀", "/tmp/𠀀.py"},
	{"longlatin", long_latin, "/tmp/café.py"},
	{"longascii", long_ascii, "/tmp/café.py"},
	{"longfile", "f", long_file},
};
#define NEXPECT (sizeof(EXPECT) / sizeof(EXPECT[0]))

/* The names cut at PY_NAME_MAX - 1 / PY_FILE_MAX - 1 bytes, on a
 * character boundary: 63 two-byte 'ö' fit in 127 bytes, not 64. */
static void make_long_names(void)
{
	size_t n = 0;

	while (n + 2 <= PY_NAME_MAX - 1) {
		memcpy(long_latin + n, "ö", 2);
		n += 2;
	}
	long_latin[n] = '\0';
	memset(long_ascii, 'a', PY_NAME_MAX - 1);
	long_ascii[PY_NAME_MAX - 1] = '\0';
	strcpy(long_file, "/tmp/");
	memset(long_file + 5, 'd', PY_FILE_MAX - 1 - 5);
	long_file[PY_FILE_MAX - 1] = '\0';
}

struct code_info {
	uint64_t addr;
	int first;
	int n;
	int *lines;
};

struct child {
	pid_t pid;
	struct code_info code[NEXPECT];
	uint64_t frame_code, list, str;
	int frame_lasti, frame_lineno;
	int no_location; /* code units without a line */
};

/*
 * Offsets from the interpreters' own headers: offsetof()/sizeof() compiled
 * with -DPy_BUILD_CORE against /usr/include/python3.11 (Debian 3.11.2) and
 * /root/.pyenv/versions/{3.11.7,3.12.1,3.13.0}/include/python3.X; Debian's
 * 3.11.2 and pyenv's 3.11.7 agree. Members this file does not use stay
 * PY_OFF_NONE.
 */
static struct py_runtime make_rt(unsigned int minor)
{
	struct py_runtime rt = {.major = 3, .minor = minor};

	memset(&rt.off, 0xff, sizeof(rt.off));
	rt.off.code_filename = 112;
	rt.off.code_name = 120;
	rt.off.code_qualname = 128;
	rt.off.code_linetable = 136;
	rt.off.unicode_length = 16;
	rt.off.unicode_state = 32;
	rt.off.bytes_size = 16;
	rt.off.bytes_sval = 32;
	if (minor == 11) {
		rt.off.code_firstlineno = 72;
		rt.off.code_code_adaptive = 184;
		rt.off.ascii_size = 48; /* 3.11 still has the wstr pointer */
		rt.off.compact_size = 72;
	} else {
		rt.off.code_firstlineno = 68;
		rt.off.code_code_adaptive = minor == 12 ? 192 : 200;
		rt.off.ascii_size = 40;
		rt.off.compact_size = 56;
	}
	return rt;
}

/* The 1-based line of the script holding @marker. */
static int marker_line(const char *marker)
{
	const char *at = strstr(SCRIPT, marker);
	int line = 1;

	for (const char *s = SCRIPT; at && s < at; s++)
		line += *s == '\n';
	return at ? line : -1;
}

static int parse_code(struct child *ch, char *rest)
{
	char *save = NULL, *key = strtok_r(rest, " ", &save);

	for (size_t i = 0; key && i < NEXPECT; i++) {
		struct code_info *ci = &ch->code[i];

		if (strcmp(key, EXPECT[i].key) != 0)
			continue;
		ci->addr = strtoull(strtok_r(NULL, " ", &save), NULL, 16);
		ci->first = atoi(strtok_r(NULL, " ", &save));
		ci->n = atoi(strtok_r(NULL, " ", &save));
		ci->lines = calloc(ci->n, sizeof(int));
		if (!ci->lines)
			return -1;
		for (int k = 0; k < ci->n; k++) {
			char *t = strtok_r(NULL, " ", &save);

			if (!t)
				return -1;
			ci->lines[k] = atoi(t);
			if (ci->lines[k] < 0) {
				ch->no_location++;
				ci->lines[k] = ci->first;
			}
		}
		return 0;
	}
	return -1;
}

static int parse(struct child *ch, char *text)
{
	char *save = NULL;

	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(l, "CODE ", 5)) {
			if (parse_code(ch, l + 5))
				return -1;
		} else if (!strncmp(l, "FRAME ", 6)) {
			if (sscanf(l + 6, "%" SCNx64 " %d %d", &ch->frame_code, &ch->frame_lasti,
				   &ch->frame_lineno) != 3)
				return -1;
		} else if (!strncmp(l, "LIST ", 5)) {
			ch->list = strtoull(l + 5, NULL, 16);
		} else if (!strncmp(l, "STR ", 4)) {
			ch->str = strtoull(l + 4, NULL, 16);
		}
	}
	for (size_t i = 0; i < NEXPECT; i++)
		if (!ch->code[i].addr)
			return -1;
	return ch->frame_code && ch->list && ch->str ? 0 : -1;
}

static void stop(struct child *ch)
{
	if (ch->pid > 0) {
		kill(ch->pid, SIGKILL);
		waitpid(ch->pid, NULL, 0);
		ch->pid = 0;
	}
	for (size_t i = 0; i < NEXPECT; i++)
		free(ch->code[i].lines);
}

/*
 * Run SCRIPT under @python, with "-X @xopt" unless NULL; read its report
 * up to READY (30 s at most).
 */
static int start(const char *python, const char *xopt, struct child *ch)
{
	static char text[1 << 16];
	bool ready;
	int fds[2];

	memset(ch, 0, sizeof(*ch));
	text[0] = '\0';
	if (pipe(fds))
		return -1;
	ch->pid = fork();
	if (ch->pid == 0) {
		char *const env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8", NULL};

		dup2(fds[1], 1);
		close(fds[0]);
		if (xopt)
			execle(python, python, "-I", "-X", xopt, "-c", SCRIPT, (char *)NULL, env);
		else
			execle(python, python, "-I", "-c", SCRIPT, (char *)NULL, env);
		_exit(127);
	}
	close(fds[1]);
	ready = ch->pid > 0 && read_until_ready(fds[0], text, sizeof(text));
	close(fds[0]);
	if (!ready || parse(ch, text)) {
		fprintf(stderr, "  %s: no usable report:\n%s\n", python, text);
		return -1;
	}
	return 0;
}

/* Every code object: names, and the line of every code unit. */
static void check_codes(struct py_code_cache *c, const struct child *ch,
			const struct py_runtime *rt)
{
	for (size_t i = 0; i < NEXPECT; i++) {
		const struct code_info *ci = &ch->code[i];
		uint64_t base = ci->addr + rt->off.code_code_adaptive;
		struct py_frame_name f;
		int bad = 0;

		CHECK_EQ_INT(py_code_resolve(c, ch->pid, rt, ci->addr, 0, 0, &f), 0);
		CHECK_STR(f.qualname, EXPECT[i].qualname);
		CHECK_STR(f.filename, EXPECT[i].filename);
		CHECK_EQ_INT(f.line, ci->first);
		for (int k = 0; k < ci->n && bad < 3; k++) {
			f.line = -1;
			CHECK_EQ_INT(py_code_resolve(c, ch->pid, rt, ci->addr, base + 2 * k, 0, &f),
				     0);
			if (f.line != ci->lines[k]) {
				fprintf(stderr, "  %s unit %d:\n", EXPECT[i].key, k);
				CHECK_EQ_INT(f.line, ci->lines[k]);
				bad++;
			}
		}
		/* before the first unit (3.11/3.12 start at _PyCode_CODE - 1), past the end */
		py_code_resolve(c, ch->pid, rt, ci->addr, base - 2, 0, &f);
		CHECK_EQ_INT(f.line, ci->first);
		py_code_resolve(c, ch->pid, rt, ci->addr, base + 2 * ci->n, 0, &f);
		CHECK_EQ_INT(f.line, ci->first);
	}
}

static void run_one(const char *python, unsigned int minor, const char *xopt)
{
	struct py_runtime rt = make_rt(minor);
	struct py_code_cache *c = py_code_cache__new();
	int loop = marker_line("# LOOP"), call = marker_line("# CALLSITE");
	const struct code_info *method;
	struct py_frame_name f;
	struct child ch;
	bool has_loop = false;

	CHECK(c != NULL);
	make_long_names();
	if (!c || start(python, xopt, &ch)) {
		CHECK(!"the interpreter ran the script");
		py_code_cache__free(c);
		stop(&ch);
		return;
	}
	check_codes(c, &ch, &rt);
	CHECK(ch.no_location > 0); /* the form without a line was decoded */
	method = &ch.code[2];
	for (int k = 0; k < method->n; k++)
		has_loop |= method->lines[k] == loop;
	CHECK(has_loop);

	/* a caller suspended in a call: prev_instr / instr_ptr as f_lasti has it */
	CHECK_EQ_INT(ch.frame_code, method->addr);
	CHECK_EQ_INT(ch.frame_lineno, call);
	CHECK_EQ_INT(py_code_resolve(c, ch.pid, &rt, ch.frame_code,
				     ch.frame_code + rt.off.code_code_adaptive + ch.frame_lasti, 0,
				     &f),
		     0);
	CHECK_EQ_INT(f.line, call);

	/* not code objects: a list, a str, an unmapped address */
	CHECK_EQ_INT(py_code_resolve(c, ch.pid, &rt, ch.list, 0, 0, &f), -EINVAL);
	CHECK_EQ_INT(py_code_resolve(c, ch.pid, &rt, ch.str, 0, 0, &f), -EINVAL);
	CHECK_EQ_INT(py_code_resolve(c, ch.pid, &rt, 8, 0, 0, &f), -EFAULT);

	/* cached: answered with the process gone; forgotten: -ESRCH */
	kill(ch.pid, SIGKILL);
	waitpid(ch.pid, NULL, 0);
	CHECK_EQ_INT(py_code_resolve(c, ch.pid, &rt, method->addr, 0, 0, &f), 0);
	CHECK_STR(f.qualname, "Outer.inner_method");
	py_code_cache__forget_pid(c, ch.pid);
	CHECK_EQ_INT(py_code_resolve(c, ch.pid, &rt, method->addr, 0, 0, &f), -ESRCH);
	ch.pid = 0;
	stop(&ch);
	py_code_cache__free(c);
}

/*
 * Each interpreter twice: as is, and with -X no_debug_ranges, whose line
 * table has no columns (the forms "no column" and "no location" only).
 */
static void run_version(const char *python, unsigned int minor, bool required)
{
	if (access(python, X_OK) != 0) {
		fprintf(stderr, "  %s not installed: not tested\n", python);
		CHECK(!required);
		return;
	}
	run_one(python, minor, NULL);
	run_one(python, minor, "no_debug_ranges");
}

UNIT_TEST(test_python311_debian)
{
	run_version("/usr/bin/python3.11", 11, true);
}

UNIT_TEST(test_python311_pyenv)
{
	run_version("/root/.pyenv/versions/3.11.7/bin/python3.11", 11, false);
}

UNIT_TEST(test_python312)
{
	run_version("/root/.pyenv/versions/3.12.1/bin/python3.12", 12, false);
}

UNIT_TEST(test_python313)
{
	run_version("/root/.pyenv/versions/3.13.0/bin/python3.13", 13, false);
}

/* Offsets that are not a CPython's are refused before anything is read. */
UNIT_TEST(test_broken_offsets)
{
	struct py_code_cache *c = py_code_cache__new();
	struct py_runtime rt = make_rt(12);
	struct py_frame_name f;

	CHECK(c != NULL);
	rt.off.code_qualname = PY_OFF_NONE;
	CHECK_EQ_INT(py_code_resolve(c, getpid(), &rt, (uint64_t)(uintptr_t)&rt, 0, 0, &f), -EINVAL);
	py_code_cache__forget_pid(c, getpid());
	py_code_cache__free(c);
}

UNIT_MAIN()
