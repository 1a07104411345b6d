/* SPDX-License-Identifier: GPL-2.0 */
/*
 * unit.h - a minimal unit-test harness. Each tests/unit/test_*.c defines
 * test functions with UNIT_TEST(name), which registers them, and ends with
 * UNIT_MAIN().
 * The binary prints one line per test and a closing "N passed, N failed"
 * line, and exits non-zero if anything failed. pytest runs every binary.
 */
#ifndef LP_TESTS_UNIT_H
#define LP_TESTS_UNIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>

static int unit_failed_checks;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			unit_failed_checks++;                                                      \
		}                                                                                  \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		if (_a != _b) {                                                                    \
			fprintf(stderr, "  %s:%d: %s == %lld, expected %s == %lld\n", __FILE__,    \
				__LINE__, #a, _a, #b, _b);                                         \
			unit_failed_checks++;                                                      \
		}                                                                                  \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *_a = (a), *_b = (b);                                                   \
		if (!_a || !_b || strcmp(_a, _b) != 0) {                                           \
			fprintf(stderr, "  %s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__,      \
				__LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)");             \
			unit_failed_checks++;                                                      \
		}                                                                                  \
	} while (0)

/*
 * Registration: UNIT_TEST(name) defines the test function and a constructor
 * that adds it to the table before main() runs, so a test that is written
 * is a test that runs; there is no list to forget. Tests run in source
 * order (sorted on __LINE__; one source file per binary).
 */
#define UNIT_MAX_TESTS 256

struct unit_test {
	const char *name;
	void (*fn)(void);
	int line;
};

static struct unit_test unit_tests[UNIT_MAX_TESTS];
static int unit_n_tests;

/*
 * readelf @opts @path, its output to read (pclose() it), or NULL: the
 * tests' independent reader of what an ELF file holds.
 */
static inline FILE *unit_readelf(const char *opts, const char *path)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "readelf %s '%s'", opts, path);
	return popen(cmd, "r");
}

static inline void unit_register(const char *name, void (*fn)(void), int line)
{
	if (unit_n_tests == UNIT_MAX_TESTS) {
		/* never drop a test silently: the binary fails before any test runs */
		fprintf(stderr, "unit.h: more than %d tests in one file; split it\n",
			UNIT_MAX_TESTS);
		exit(2);
	}
	unit_tests[unit_n_tests++] = (struct unit_test){name, fn, line};
}

#define UNIT_TEST(name)                                                                            \
	static void name(void);                                                                    \
	__attribute__((constructor)) static void unit_register_##name(void)                        \
	{                                                                                          \
		unit_register(#name, name, __LINE__);                                              \
	}                                                                                          \
	static void name(void)

static inline int unit_by_line(const void *a, const void *b)
{
	return ((const struct unit_test *)a)->line - ((const struct unit_test *)b)->line;
}

/*
 * unit_run - run every registered test, or only the one named in argv[1].
 * A name that matches nothing fails, so a typo cannot pass as "0 failed".
 */
static inline int unit_run(int argc, char **argv)
{
	int passed = 0, failed = 0;

	qsort(unit_tests, unit_n_tests, sizeof(unit_tests[0]), unit_by_line);
	for (int i = 0; i < unit_n_tests; i++) {
		int before = unit_failed_checks, ok;

		if (argc > 1 && strcmp(argv[1], unit_tests[i].name) != 0)
			continue;
		unit_tests[i].fn();
		ok = unit_failed_checks == before;
		printf("%s %s\n", ok ? "PASS" : "FAIL", unit_tests[i].name);
		fflush(stdout);
		ok ? passed++ : failed++;
	}
	if (!passed && !failed) {
		fprintf(stderr, "no test %s%s\n", argc > 1 ? "named " : "registered",
			argc > 1 ? argv[1] : "");
		failed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

/*
 * UNIT_MAIN() - the binary's main(); the tests registered themselves. A list
 * (the old UNIT_MAIN(UNIT_ENTRY(a), ...)) is refused with a message saying so.
 */
#define UNIT_MAIN(...)                                                                             \
	_Static_assert(sizeof(#__VA_ARGS__) == 1,                                                  \
		       "UNIT_MAIN() takes no list: UNIT_TEST(name) registers each test");          \
	int main(int argc, char **argv)                                                            \
	{                                                                                          \
		return unit_run(argc, argv);                                                       \
	}

#endif
