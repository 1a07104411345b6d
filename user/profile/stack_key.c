// SPDX-License-Identifier: GPL-2.0
/*
 * stack_key.c - the keyed 128-bit hash a stack is known by (stack_key.h).
 *
 * Every sample pays it, over every address of its stack. Two functions,
 * both seeded per store:
 *   - AES rounds (x86-64 with AES-NI): four lanes of 128 bits, each taking
 *     every fourth pair of words as one aesenc of (lane ^ words) under the
 *     lane's round key, then the lanes folded into one by further rounds.
 *     A round costs what one multiply does, and takes in two words.
 *   - elsewhere, eight chains of multiplies, two per word (the portable
 *     function, and the unit tests' second).
 * In both, a step is a bijection of the state it updates for the words it
 * takes in, and the lanes are folded one after another the same way: a
 * stack that differs from another in one word has another key.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "user/profile/stack_key.h"
#include "user/util/util.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_AES_ROUNDS 1
#endif

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

/* The second half's step: another multiplier and shift, so that a pair of
 * stacks that meets in mix()'s chains does not also meet here. Like mix(),
 * one to one in @v for a given @h: a single changed word always shows. */
static uint64_t mix2(uint64_t h, uint64_t v)
{
	h ^= v * 0xbf58476d1ce4e5b9ULL + (h >> 29);
	return h * 0xc2b2ae3d27d4eb4fULL;
}

/*
 * Both halves of the key of the @n words of @v, after *@h and *@g. Four
 * lanes each, every lane taking every fourth word: one chain of mix()
 * through a deep stack (a multiply per frame) was a tenth of what
 * interning a new stack cost; eight chains overlap.
 */
static void mix_words(uint64_t *h, uint64_t *g, const uint64_t *v, unsigned int n)
{
	uint64_t a = *h, b = *h ^ 0x94d049bb133111ebULL, c = *h ^ 0xbf58476d1ce4e5b9ULL,
		 e = *h ^ 0x2545f4914f6cdd1dULL;
	uint64_t p = *g, q = *g ^ 0x8cb92ba72f3d8dd7ULL, r = *g ^ 0x3c6ef372fe94f82bULL,
		 t = *g ^ 0xa54ff53a5f1d36f1ULL;
	unsigned int i = 0;

	for (; i + 4 <= n; i += 4) {
		a = mix(a, v[i]);
		b = mix(b, v[i + 1]);
		c = mix(c, v[i + 2]);
		e = mix(e, v[i + 3]);
		p = mix2(p, v[i]);
		q = mix2(q, v[i + 1]);
		r = mix2(r, v[i + 2]);
		t = mix2(t, v[i + 3]);
	}
	for (; i < n; i++) {
		a = mix(a, v[i]);
		p = mix2(p, v[i]);
	}
	*h = n < 4 ? a : mix(mix(mix(a, b), c), e);
	*g = n < 4 ? p : mix2(mix2(mix2(p, q), r), t);
}

static struct stack_key key_portable(const struct stack_keyer *k, const uint64_t *head,
				     unsigned int n_head, const uint64_t *user, unsigned int n_user,
				     const uint64_t *kernel, unsigned int n_kernel)
{
	uint64_t h = k->seed[0], g = k->seed[1];

	for (unsigned int i = 0; i < n_head; i++) {
		h = mix(h, head[i]);
		g = mix2(g, head[i]);
	}
	mix_words(&h, &g, user, n_user);
	if (n_kernel)
		mix_words(&h, &g, kernel, n_kernel);
	/* mix() leaves the low bits, the table's index, weakly spread */
	h = lp_mix64(h);
	return (struct stack_key){.h = h ? h : 1, .h2 = lp_mix64(g)};
}

#ifdef HAVE_AES_ROUNDS
#define AES_FN __attribute__((target("aes,sse2")))

AES_FN static __m128i round_key(const struct stack_keyer *k, int i)
{
	return _mm_loadu_si128((const __m128i *)k->round_keys[i]);
}

/*
 * Take the @n words of @v into the four lanes: pairs of words in turn,
 * an odd last word as a pair with 0 (where an array ends is in the head,
 * so that padding is no other stack's word).
 */
AES_FN static void absorb(__m128i lane[4], const __m128i rk[4], const uint64_t *v, unsigned int n)
{
	unsigned int i = 0, j = 0;

	for (; i + 8 <= n; i += 8) {
		lane[0] = _mm_aesenc_si128(
			_mm_xor_si128(lane[0], _mm_loadu_si128((const __m128i *)(v + i))), rk[0]);
		lane[1] = _mm_aesenc_si128(
			_mm_xor_si128(lane[1], _mm_loadu_si128((const __m128i *)(v + i + 2))),
			rk[1]);
		lane[2] = _mm_aesenc_si128(
			_mm_xor_si128(lane[2], _mm_loadu_si128((const __m128i *)(v + i + 4))),
			rk[2]);
		lane[3] = _mm_aesenc_si128(
			_mm_xor_si128(lane[3], _mm_loadu_si128((const __m128i *)(v + i + 6))),
			rk[3]);
	}
	for (; i < n; i += 2, j++) {
		__m128i w = i + 1 < n ? _mm_loadu_si128((const __m128i *)(v + i))
				      : _mm_set_epi64x(0, (long long)v[i]);

		lane[j] = _mm_aesenc_si128(_mm_xor_si128(lane[j], w), rk[j]);
	}
}

AES_FN static struct stack_key key_aes(const struct stack_keyer *k, const uint64_t *head,
				       unsigned int n_head, const uint64_t *user,
				       unsigned int n_user, const uint64_t *kernel,
				       unsigned int n_kernel)
{
	__m128i rk[4] = {round_key(k, 0), round_key(k, 1), round_key(k, 2), round_key(k, 3)};
	__m128i lane[4] = {rk[3], rk[2], rk[1], rk[0]}, x;
	uint64_t h;

	absorb(lane, rk, head, n_head);
	absorb(lane, rk, user, n_user);
	if (n_kernel)
		absorb(lane, rk, kernel, n_kernel);
	/* one lane after another, each a bijection of the fold so far; the
	 * last three rounds spread every bit over the whole key */
	x = _mm_xor_si128(_mm_aesenc_si128(lane[0], round_key(k, 4)), lane[1]);
	x = _mm_xor_si128(_mm_aesenc_si128(x, round_key(k, 5)), lane[2]);
	x = _mm_xor_si128(_mm_aesenc_si128(x, round_key(k, 6)), lane[3]);
	x = _mm_aesenc_si128(x, round_key(k, 7));
	x = _mm_aesenc_si128(x, round_key(k, 4));
	x = _mm_aesenc_si128(x, round_key(k, 5));
	h = (uint64_t)_mm_cvtsi128_si64(x);
	return (struct stack_key){.h = h ? h : 1,
				  .h2 = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(x, x))};
}

static bool cpu_has_aes(void)
{
	unsigned int a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_AES);
}
#endif

void stack_keyer__init(struct stack_keyer *k, bool portable)
{
	memset(k, 0, sizeof(*k));
	if (getrandom(k->seed, sizeof(k->seed), GRND_NONBLOCK) != sizeof(k->seed)) {
		k->seed[0] = lp_mix64((uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)k);
		k->seed[1] = lp_mix64(k->seed[0] ^ 0x9e3779b97f4a7c15ULL);
	}
	/* the round keys follow from the seed: one draw, as before */
	for (int i = 0; i < STACK_KEY_ROUND_KEYS; i++) {
		k->round_keys[i][0] = lp_mix64(k->seed[0] + 2 * (uint64_t)i + 1);
		k->round_keys[i][1] = lp_mix64(k->seed[1] + 2 * (uint64_t)i + 2);
	}
#ifdef HAVE_AES_ROUNDS
	k->aes = !portable && cpu_has_aes();
#else
	(void)portable;
#endif
}

struct stack_key stack_keyer__key(const struct stack_keyer *k, const uint64_t *head,
				  unsigned int n_head, const uint64_t *user, unsigned int n_user,
				  const uint64_t *kernel, unsigned int n_kernel)
{
#ifdef HAVE_AES_ROUNDS
	if (k->aes)
		return key_aes(k, head, n_head, user, n_user, kernel, n_kernel);
#endif
	return key_portable(k, head, n_head, user, n_user, kernel, n_kernel);
}
