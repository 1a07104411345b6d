/* SPDX-License-Identifier: GPL-2.0 */
/*
 * unit.h - a minimal unit-test harness. Each tests/unit/test_*.c defines
 * test functions with UNIT_TEST(name) and lists them in UNIT_MAIN(...).
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

struct unit_test {
	const char *name;
	void (*fn)(void);
};

#define UNIT_TEST(name) static void name(void)
#define UNIT_ENTRY(name)                                                                           \
	{                                                                                          \
#name, name                                                                        \
	}

#define UNIT_MAIN(...)                                                                             \
	int main(int argc, char **argv)                                                            \
	{                                                                                          \
		static const struct unit_test tests[] = {__VA_ARGS__};                             \
		int passed = 0, failed = 0;                                                        \
		for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {                    \
			if (argc > 1 && strcmp(argv[1], tests[i].name) != 0)                       \
				continue;                                                          \
			int before = unit_failed_checks;                                           \
			tests[i].fn();                                                             \
			int ok = unit_failed_checks == before;                                     \
			printf("%s %s\n", ok ? "PASS" : "FAIL", tests[i].name);                    \
			ok ? passed++ : failed++;                                                  \
		}                                                                                  \
		printf("%d passed, %d failed\n", passed, failed);                                  \
		return failed ? 1 : 0;                                                             \
	}

#endif
