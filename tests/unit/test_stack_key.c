// SPDX-License-Identifier: GPL-2.0
/*
 * test_stack_key.c - the keyed hash stacks are known by
 * (user/profile/stack_key.c), both functions: the AES rounds this CPU
 * runs, and the portable multiply chains.
 */
#include <stdio.h>
#include <string.h>

#include "unit.h"
#include "user/profile/stack_key.h"

#define MAXW 40

static bool keys_equal(struct stack_key a, struct stack_key b)
{
	return a.h == b.h && a.h2 == b.h2;
}

static bool cpuinfo_has_aes(void)
{
	char line[4096];
	bool aes = false;
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && !aes && fgets(line, sizeof(line), f))
		aes = !strncmp(line, "flags", 5) && strstr(line, " aes ");
	if (f)
		fclose(f);
	return aes;
}

/*
 * For every length of user stack up to MAXW words, with and without
 * kernel words: a change of one bit in any one word (head, user or
 * kernel), in each of the function's lanes and tails, gives another key;
 * the same words give the same key; h is never 0.
 */
static int one_word_apart(const struct stack_keyer *k)
{
	uint64_t head[3] = {1234, 0, 99}, u[MAXW], kern[4] = {0xffffffff81000000ULL, 0x1, 0x2, 0x3};
	int bad = 0;

	for (unsigned int n = 0; n <= MAXW; n++) {
		for (unsigned int nk = 0; nk <= 4; nk += 4) {
			struct stack_key base;

			for (unsigned int i = 0; i < n; i++)
				u[i] = 0x401000 + 16 * i;
			head[1] = ((uint64_t)n << 16) | nk;
			base = stack_keyer__key(k, head, 3, u, n, kern, nk);
			bad += base.h == 0;
			bad += !keys_equal(base, stack_keyer__key(k, head, 3, u, n, kern, nk));
			for (unsigned int i = 0; i < n; i++) {
				u[i] ^= 1ULL << (i % 64);
				bad += keys_equal(base,
						  stack_keyer__key(k, head, 3, u, n, kern, nk));
				u[i] ^= 1ULL << (i % 64);
			}
			for (unsigned int i = 0; i < nk; i++) {
				kern[i] ^= 1ULL << 40;
				bad += keys_equal(base,
						  stack_keyer__key(k, head, 3, u, n, kern, nk));
				kern[i] ^= 1ULL << 40;
			}
			for (unsigned int i = 0; i < 3; i++) {
				head[i] ^= 1;
				bad += keys_equal(base,
						  stack_keyer__key(k, head, 3, u, n, kern, nk));
				head[i] ^= 1;
			}
		}
	}
	return bad;
}

UNIT_TEST(aes_where_the_cpu_has_it)
{
	struct stack_keyer k;

	stack_keyer__init(&k, false);
#if defined(__x86_64__)
	CHECK(k.aes == cpuinfo_has_aes());
#endif
	stack_keyer__init(&k, true);
	CHECK(!k.aes);
}

UNIT_TEST(one_word_apart_aes)
{
	struct stack_keyer k;

	stack_keyer__init(&k, false);
	CHECK_EQ_INT(one_word_apart(&k), 0);
}

UNIT_TEST(one_word_apart_portable)
{
	struct stack_keyer k;

	stack_keyer__init(&k, true);
	CHECK_EQ_INT(one_word_apart(&k), 0);
}

/* A word moved from the user stack to the kernel's, or an odd last word
 * against the same words with a 0 after them: other stacks, other keys
 * (the lengths are in the head). Two keyers: two keys of one stack. */
UNIT_TEST(split_padding_and_seed)
{
	uint64_t w[4] = {0x401000, 0x402000, 0x403000, 0};
	for (int portable = 0; portable < 2; portable++) {
		struct stack_keyer a, b;
		uint64_t h3[2] = {7, 3 << 16}, h31[2] = {7, (2 << 16) | 1}, h4[2] = {7, 4 << 16};
		struct stack_key k3, k31, k4;

		stack_keyer__init(&a, portable);
		stack_keyer__init(&b, portable);
		k3 = stack_keyer__key(&a, h3, 2, w, 3, NULL, 0);
		k31 = stack_keyer__key(&a, h31, 2, w, 2, w + 2, 1);
		k4 = stack_keyer__key(&a, h4, 2, w, 4, NULL, 0);
		CHECK(!keys_equal(k3, k31) && !keys_equal(k3, k4) && !keys_equal(k31, k4));
		k4 = stack_keyer__key(&b, h3, 2, w, 3, NULL, 0);
		CHECK(k3.h != k4.h && k3.h2 != k4.h2);
	}
}
UNIT_MAIN()
