// SPDX-License-Identifier: GPL-2.0
/*
 * test_stack_store.c - interning of raw stacks and the id -> count tables
 * (user/profile/stack_store.c): identity, lookup, copies, growth far past
 * the initial sizes, stacks of hostile sizes, and releasing and reusing
 * ids (the reclaim of long runs).
 */
#include <errno.h>
#include <stdint.h>

#include "unit.h"
#include "user/profile/stack_store.h"

/* splitmix64: deterministic pseudo-random addresses, the same every run */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static struct raw_stack mk(uint32_t pid, const uint64_t *user, uint16_t nu, const uint64_t *kernel,
			   uint16_t nk)
{
	struct raw_stack st = {.pid = pid, .tid = pid, .n_user = nu, .n_kernel = nk};

	st.user = user;
	st.kernel = kernel;
	memcpy(st.comm, "app", 4);
	return st;
}

static bool same_stack(const struct raw_stack *a, const struct raw_stack *b)
{
	return a && b && a->pid == b->pid && a->flags == b->flags && a->n_user == b->n_user &&
	       a->n_kernel == b->n_kernel &&
	       (!a->n_user || !memcmp(a->user, b->user, a->n_user * sizeof(uint64_t))) &&
	       (!a->n_kernel || !memcmp(a->kernel, b->kernel, a->n_kernel * sizeof(uint64_t)));
}

/* stack_store__read() into the test's own buffer: NULL for an unknown id */
static const struct raw_stack *get(const struct stack_store *ss, uint32_t id)
{
	static uint64_t addrs[STACK_STORE_MAX_ADDRS];
	static struct raw_stack st;

	return stack_store__read(ss, id, &st, addrs) ? &st : NULL;
}

UNIT_TEST(intern_identity)
{
	struct stack_store *ss = stack_store__new(false);
	uint64_t u[] = {0x401000, 0x401100, 0x401200}, k[] = {0xffffffff81000000ULL};
	uint64_t u2[] = {0x401000, 0x401100, 0x401201};
	struct raw_stack a = mk(42, u, 3, k, 1), b;
	int64_t id;

	CHECK(ss != NULL);
	id = stack_store__intern(ss, &a);
	CHECK_EQ_INT(id, 0);
	CHECK_EQ_INT(stack_store__intern(ss, &a), id);
	/* tid and comm are not part of a stack's identity without per_thread */
	b = a;
	b.tid = 43;
	memcpy(b.comm, "other", 6);
	CHECK_EQ_INT(stack_store__intern(ss, &b), id);
	CHECK_STR(get(ss, id)->comm, "app");
	CHECK_EQ_INT(stack_store__count(ss), 1);

	/* each part of the key makes a new stack */
	b = a, b.pid = 43;
	CHECK_EQ_INT(stack_store__intern(ss, &b), 1);
	b = a, b.flags = STACK_F_OFFCPU;
	CHECK_EQ_INT(stack_store__intern(ss, &b), 2);
	b = a, b.flags = STACK_F_TRUNCATED;
	CHECK_EQ_INT(stack_store__intern(ss, &b), 3);
	b = a, b.user = u2;
	CHECK_EQ_INT(stack_store__intern(ss, &b), 4);
	b = a, b.n_user = 2;
	CHECK_EQ_INT(stack_store__intern(ss, &b), 5);
	b = a, b.n_kernel = 0;
	CHECK_EQ_INT(stack_store__intern(ss, &b), 6);
	CHECK_EQ_INT(stack_store__count(ss), 7);
	for (uint32_t i = 0; i < 7; i++)
		CHECK(get(ss, i) != NULL);
	stack_store__free(ss);
}

/* The same addresses split differently between user and kernel differ. */
UNIT_TEST(intern_user_kernel_boundary)
{
	struct stack_store *ss = stack_store__new(false);
	uint64_t all[] = {1, 2, 3};
	struct raw_stack a = mk(1, all, 2, all + 2, 1), b = mk(1, all, 1, all + 1, 2);
	int64_t ia = stack_store__intern(ss, &a), ib = stack_store__intern(ss, &b);

	CHECK(ia >= 0 && ib >= 0 && ia != ib);
	CHECK_EQ_INT(get(ss, ib)->n_user, 1);
	CHECK_EQ_INT(get(ss, ib)->kernel[1], 3);
	stack_store__free(ss);
}

UNIT_TEST(intern_per_thread)
{
	struct stack_store *ss = stack_store__new(true);
	uint64_t u[] = {0x1000};
	struct raw_stack a = mk(7, u, 1, NULL, 0), b = a;

	b.tid = 8;
	CHECK_EQ_INT(stack_store__intern(ss, &a), 0);
	CHECK_EQ_INT(stack_store__intern(ss, &b), 1);
	CHECK_EQ_INT(stack_store__intern(ss, &a), 0);
	CHECK_EQ_INT(get(ss, 1)->tid, 8);
	stack_store__free(ss);
}

/* The store copies the addresses: the caller's buffer is reused at once. */
UNIT_TEST(intern_copies)
{
	struct stack_store *ss = stack_store__new(false);
	uint64_t buf[4] = {10, 20, 30, 40};
	struct raw_stack a = mk(1, buf, 2, buf + 2, 2);
	const struct raw_stack *got;

	CHECK_EQ_INT(stack_store__intern(ss, &a), 0);
	buf[0] = buf[1] = buf[2] = buf[3] = 0;
	got = get(ss, 0);
	CHECK(got != NULL && got->user != buf);
	CHECK_EQ_INT(got->user[0], 10);
	CHECK_EQ_INT(got->user[1], 20);
	CHECK_EQ_INT(got->kernel[0], 30);
	CHECK_EQ_INT(got->kernel[1], 40);
	/* the zeroed stack is a different one */
	CHECK_EQ_INT(stack_store__intern(ss, &a), 1);
	stack_store__free(ss);
}

UNIT_TEST(lookup_unknown)
{
	struct stack_store *ss = stack_store__new(false);
	uint64_t u[] = {1};
	struct raw_stack a = mk(1, u, 1, NULL, 0);

	CHECK(get(ss, 0) == NULL);
	CHECK_EQ_INT(stack_store__count(ss), 0);
	CHECK_EQ_INT(stack_store__intern(ss, &a), 0);
	CHECK(get(ss, 1) == NULL);
	CHECK(get(ss, UINT32_MAX) == NULL);
	stack_store__free(ss);
	stack_store__free(NULL);
}

/*
 * 200,000 distinct stacks: the hash table, the record array and the address
 * arenas all grow many times. Every id keeps its stack, re-interning finds
 * every one, and the first stack reads back whole however much the store
 * grew since.
 */
UNIT_TEST(growth)
{
	enum { N = 200000, DEPTH = 12 };
	struct stack_store *ss = stack_store__new(false);
	uint64_t seed = 1, u[DEPTH], first = 0;
	struct raw_stack a;
	int bad = 0;

	for (uint32_t i = 0; i < N; i++) {
		uint16_t nu = 1 + i % DEPTH;

		for (int j = 0; j < nu; j++)
			u[j] = rnd(&seed);
		a = mk(1 + i % 5, u, nu, NULL, 0);
		bad += stack_store__intern(ss, &a) != i;
		if (i == 0)
			first = u[0];
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(stack_store__count(ss), N);
	CHECK(get(ss, 0) && get(ss, 0)->n_user == 1 && get(ss, 0)->user[0] == first);
	/* the same sequence again: every stack is found, none is added */
	seed = 1;
	for (uint32_t i = 0; i < N; i++) {
		uint16_t nu = 1 + i % DEPTH;
		const struct raw_stack *got = get(ss, i);

		for (int j = 0; j < nu; j++)
			u[j] = rnd(&seed);
		a = mk(1 + i % 5, u, nu, NULL, 0);
		bad += !same_stack(got, &a);
		bad += stack_store__intern(ss, &a) != i;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(stack_store__count(ss), N);
	stack_store__free(ss);
}

/*
 * Hostile sizes: an empty stack (no frames at all, NULL arrays); the
 * largest stack the store takes (STACK_STORE_MAX_ADDRS random addresses,
 * the longest packing), stored whole; one address more, refused with
 * -E2BIG rather than cut or taken for a lack of memory.
 */
UNIT_TEST(hostile_sizes)
{
	enum { HALF = STACK_STORE_MAX_ADDRS / 2 };
	struct stack_store *ss = stack_store__new(false);
	uint64_t big[STACK_STORE_MAX_ADDRS + 1], seed = 7;
	struct raw_stack e = mk(1, NULL, 0, NULL, 0), e2 = mk(2, NULL, 0, NULL, 0), b;
	int64_t ie, ib;

	ie = stack_store__intern(ss, &e);
	CHECK_EQ_INT(ie, 0);
	CHECK_EQ_INT(stack_store__intern(ss, &e), ie);
	CHECK_EQ_INT(stack_store__intern(ss, &e2), 1);
	CHECK_EQ_INT(get(ss, 0)->n_user + get(ss, 0)->n_kernel, 0);

	for (size_t i = 0; i < STACK_STORE_MAX_ADDRS + 1; i++)
		big[i] = rnd(&seed);
	b = mk(1, big, HALF, big + HALF, HALF);
	ib = stack_store__intern(ss, &b);
	CHECK_EQ_INT(ib, 2);
	CHECK(same_stack(get(ss, 2), &b));
	CHECK_EQ_INT(stack_store__intern(ss, &b), ib);
	b = mk(1, big, HALF + 1, big + HALF + 1, HALF);
	CHECK_EQ_INT(stack_store__intern(ss, &b), -E2BIG);
	/* a small stack after the big one */
	b = mk(1, big, 3, NULL, 0);
	CHECK_EQ_INT(stack_store__intern(ss, &b), 3);
	CHECK(same_stack(get(ss, 2), &(struct raw_stack){.pid = 1,
							 .n_user = HALF,
							 .n_kernel = HALF,
							 .user = big,
							 .kernel = big + HALF}));
	stack_store__free(ss);
}

/*
 * The packing of addresses as differences: the extremes of a 64-bit
 * address, steps across the sign of the difference, interpreter-tagged
 * entries and a kernel part that starts far from the last user address
 * all read back exactly, and stacks that differ only there stay apart.
 */
UNIT_TEST(packing_extremes)
{
	struct stack_store *ss = stack_store__new(false);
	uint64_t u[] = {0,
			UINT64_MAX,
			1,
			0x8000000000000000ULL,
			0x7fffffffffffffffULL,
			0x55d0c0de1000ULL,
			0x55d0c0de0fffULL,
			0x7f0000001000ULL,
			0xc000000000000005ULL,
			0x55d0c0de1000ULL};
	uint64_t k[] = {0xffffffff81000000ULL, 0xffffffff80ffffffULL, 0};
	uint64_t u2[sizeof(u) / sizeof(u[0])];
	struct raw_stack a = mk(3, u, sizeof(u) / sizeof(u[0]), k, 3), b;

	CHECK_EQ_INT(stack_store__intern(ss, &a), 0);
	CHECK(same_stack(get(ss, 0), &a));
	memcpy(u2, u, sizeof(u));
	u2[1] = UINT64_MAX - 1;
	b = a, b.user = u2;
	CHECK_EQ_INT(stack_store__intern(ss, &b), 1);
	CHECK(same_stack(get(ss, 1), &b));
	CHECK(same_stack(get(ss, 0), &a));
	CHECK_EQ_INT(stack_store__intern(ss, &a), 0);
	stack_store__free(ss);
}

UNIT_TEST(counts_basic)
{
	struct counts c;
	uint64_t n, w;

	counts__init(&c);
	counts__get(&c, 5, &n, &w); /* never added to: no table yet */
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(w, 0);
	CHECK_EQ_INT(counts__add(&c, 0, 1, 100), 0);
	CHECK_EQ_INT(counts__add(&c, 5, 2, 50), 0);
	CHECK_EQ_INT(counts__add(&c, 0, 3, 300), 0);
	CHECK_EQ_INT(counts__add(&c, UINT32_MAX - 1, 1, 1), 0);
	counts__get(&c, 0, &n, &w);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(w, 400);
	counts__get(&c, 5, &n, &w);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(w, 50);
	counts__get(&c, UINT32_MAX - 1, &n, &w);
	CHECK_EQ_INT(n, 1);
	counts__get(&c, 6, &n, &w);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(c.n, 3);
	CHECK_EQ_INT(c.total_count, 7);
	CHECK_EQ_INT(c.total_weight, 451);
	/* the one id a slot cannot hold (id + 1 would be the empty marker) */
	CHECK_EQ_INT(counts__add(&c, UINT32_MAX, 1, 1), -EINVAL);
	CHECK_EQ_INT(c.total_count, 7);
	counts__clear(&c);
	CHECK_EQ_INT(c.n, 0);
	CHECK_EQ_INT(c.total_count, 0);
	CHECK_EQ_INT(c.total_weight, 0);
	counts__get(&c, 0, &n, &w);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(counts__add(&c, 0, 1, 1), 0);
	counts__get(&c, 0, &n, &w);
	CHECK_EQ_INT(n, 1);
	counts__free(&c);
	CHECK(c.slots == NULL && c.cap == 0 && c.n == 0);
}

/* 100,000 ids in a scattered order: growth, iteration and merge. */
UNIT_TEST(counts_growth_and_merge)
{
	enum { N = 100000 };
	struct counts a, b;
	uint64_t n, w, seen = 0, sum = 0;
	int bad = 0;

	counts__init(&a);
	counts__init(&b);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t id = (uint32_t)(i * 2654435761u); /* a bijection of the 32-bit ids */

		bad += counts__add(&a, id, i + 1, 2 * (uint64_t)i) != 0;
		if (i % 2)
			bad += counts__add(&b, id, 1, 1) != 0;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(a.n, N);
	CHECK(a.cap >= 2 * a.n); /* load factor at most one half */
	counts_for_each(&a, sc)
	{
		uint32_t i = stack_count__id(sc) * 244002641u; /* inverse of 2654435761 mod 2^32 */

		bad += i >= N || sc->count != i + 1;
		seen++;
		sum += sc->count;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(seen, N);
	CHECK_EQ_INT(sum, a.total_count);
	CHECK_EQ_INT(a.total_count, (uint64_t)N * (N + 1) / 2);

	CHECK_EQ_INT(counts__merge(&b, &a), 0);
	CHECK_EQ_INT(b.n, N);
	CHECK_EQ_INT(b.total_count, a.total_count + N / 2);
	for (uint32_t i = 0; i < N; i++) {
		counts__get(&b, (uint32_t)(i * 2654435761u), &n, &w);
		bad += n != i + 1 + (i % 2) || w != 2 * (uint64_t)i + (i % 2);
	}
	CHECK_EQ_INT(bad, 0);
	counts__free(&a);
	counts__free(&b);
}

/*
 * Releasing: every third of many random stacks goes; the others must
 * still be found under their ids (deleting from an open-addressing table
 * must not cut a probe run short), the released ones are gone, and new
 * stacks take the released ids before any new one.
 */
UNIT_TEST(release_and_reuse)
{
	enum { N = 60000, DEPTH = 9 };
	struct stack_store *ss = stack_store__new(false);
	uint64_t seed = 3, u[DEPTH];
	struct raw_stack a;
	int bad = 0, reused = 0;

	for (uint32_t i = 0; i < N; i++) {
		for (int j = 0; j < DEPTH; j++)
			u[j] = rnd(&seed);
		a = mk(1, u, 1 + i % DEPTH, NULL, 0);
		bad += stack_store__intern(ss, &a) != i;
	}
	for (uint32_t i = 0; i < N; i += 3)
		bad += stack_store__release(ss, i) != 0;
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(stack_store__count(ss), N - N / 3);
	CHECK_EQ_INT(stack_store__released(ss), N / 3);
	CHECK(get(ss, 0) == NULL);
	CHECK_EQ_INT(stack_store__release(ss, 0), -EINVAL);
	/* the same sequence: kept ones found under their ids, released ones
	 * interned anew into released ids */
	seed = 3;
	for (uint32_t i = 0; i < N; i++) {
		int64_t id;

		for (int j = 0; j < DEPTH; j++)
			u[j] = rnd(&seed);
		a = mk(1, u, 1 + i % DEPTH, NULL, 0);
		id = stack_store__intern(ss, &a);
		if (i % 3)
			bad += id != i;
		else
			reused += id >= 0 && id < N && id % 3 == 0;
		bad += !same_stack(get(ss, (uint32_t)id), &a);
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(reused, N / 3);
	CHECK_EQ_INT(stack_store__id_bound(ss), N);
	CHECK_EQ_INT(stack_store__count(ss), N);
	stack_store__free(ss);
}

UNIT_TEST(epochs_and_pins)
{
	struct stack_store *ss = stack_store__new(false);
	uint64_t u1[] = {0x1000}, u2[] = {0x2000};
	struct raw_stack a = mk(1, u1, 1, NULL, 0), b = mk(1, u2, 1, NULL, 0);

	stack_store__set_epoch(ss, 5);
	CHECK_EQ_INT(stack_store__intern(ss, &a), 0);
	CHECK_EQ_INT(stack_store__intern(ss, &b), 1);
	stack_store__set_epoch(ss, 9);
	CHECK_EQ_INT(stack_store__intern(ss, &b), 1); /* seen again */
	CHECK(stack_store__idle_since(ss, 0, 6));
	CHECK(!stack_store__idle_since(ss, 0, 5));
	CHECK(!stack_store__idle_since(ss, 1, 6));
	CHECK(stack_store__idle_since(ss, 1, 10));
	stack_store__pin(ss, 0);
	CHECK(!stack_store__idle_since(ss, 0, 6));
	CHECK_EQ_INT(stack_store__release(ss, 0), -EINVAL);
	CHECK(get(ss, 0) != NULL);
	CHECK(!stack_store__idle_since(ss, 7, 100)); /* unknown id */
	stack_store__free(ss);
}

/*
 * A shed stack keeps its id, flags and key: it is found again by its
 * addresses (through the table's growth too) without them, and leaves
 * every other stack as it was. Released, its id goes to a new stack.
 */
UNIT_TEST(shed_keeps_id_flags_and_key)
{
	enum { N = 5000, DEPTH = 12 };
	struct stack_store *ss = stack_store__new(false);
	uint64_t seed = 11, u[DEPTH];
	struct raw_stack a;
	uint32_t flags;
	int bad = 0;

	for (uint32_t i = 0; i < N; i++) {
		for (int j = 0; j < DEPTH; j++)
			u[j] = rnd(&seed);
		a = mk(1, u, DEPTH, NULL, 0);
		a.flags = i % 2 ? STACK_F_OFFCPU : STACK_F_TRUNCATED;
		bad += stack_store__intern(ss, &a) != i;
	}
	/* every other one, pinned or not; a second shed is no change */
	for (uint32_t i = 0; i < N; i += 2) {
		if (i % 4)
			stack_store__pin(ss, i);
		bad += stack_store__shed(ss, i) != 0;
	}
	CHECK_EQ_INT(stack_store__shed(ss, 0), 0);
	CHECK_EQ_INT(stack_store__shed(ss, N), -EINVAL);
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(stack_store__shed_count(ss), N / 2);
	CHECK_EQ_INT(stack_store__count(ss), N);
	CHECK(get(ss, 0) == NULL);
	CHECK(get(ss, 1) != NULL);
	CHECK(stack_store__flags(ss, 0, &flags) && flags == STACK_F_TRUNCATED);
	CHECK(stack_store__flags(ss, 1, &flags) && flags == STACK_F_OFFCPU);
	CHECK_EQ_INT(stack_store__release(ss, 2), -EINVAL); /* pinned */
	/* the same stacks again, past several doublings of the table (each
	 * shed one was in the table as it grew): all where they were */
	seed = 11;
	for (uint32_t i = 0; i < N; i++) {
		for (int j = 0; j < DEPTH; j++)
			u[j] = rnd(&seed);
		a = mk(1, u, DEPTH, NULL, 0);
		a.flags = i % 2 ? STACK_F_OFFCPU : STACK_F_TRUNCATED;
		bad += stack_store__intern(ss, &a) != i;
		/* ... but with other flags, another stack */
		a.flags = STACK_F_KMODE;
		bad += stack_store__intern(ss, &a) != N + i;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(stack_store__id_bound(ss), 2 * N);
	/* a shed stack released (unpinned: id 0) leaves the table; its id
	 * goes to the next new stack, which has addresses */
	CHECK_EQ_INT(stack_store__release(ss, 0), 0);
	seed = 11;
	for (int j = 0; j < DEPTH; j++)
		u[j] = rnd(&seed);
	a = mk(1, u, DEPTH, NULL, 0);
	a.flags = STACK_F_OFFCPU;
	CHECK_EQ_INT(stack_store__intern(ss, &a), 0);
	CHECK(same_stack(get(ss, 0), &a));
	a.flags = STACK_F_TRUNCATED;
	CHECK_EQ_INT(stack_store__intern(ss, &a), 2 * N);
	stack_store__free(ss);
}

/* A stack interned bare has an id, flags and key but no addresses until
 * unshed; found again either way, and counted shed only while bare. */
UNIT_TEST(intern_bare_then_unshed)
{
	struct stack_store *ss = stack_store__new(false);
	uint64_t u[3] = {0x401000, 0x402000, 0x7f0000001000};
	struct raw_stack a = mk(5, u, 3, NULL, 0), b = a;
	struct stack_key ka, kb;
	uint32_t flags;
	bool added;

	b.flags = 1u << 31; /* no shared flags-only record for it: kept whole */
	ka = stack_store__hash(ss, &a);
	kb = stack_store__hash(ss, &b);
	CHECK_EQ_INT(stack_store__intern_bare(ss, &a, &ka, &added), 0);
	CHECK(added);
	CHECK(get(ss, 0) == NULL);
	CHECK(stack_store__flags(ss, 0, &flags) && flags == 0);
	CHECK_EQ_INT(stack_store__shed_count(ss), 1);
	CHECK_EQ_INT(stack_store__intern_hash(ss, &a, &ka), 0);
	CHECK_EQ_INT(stack_store__intern_bare(ss, &a, &ka, &added), 0);
	CHECK(!added);
	CHECK_EQ_INT(stack_store__unshed(ss, 0, &a), 0);
	CHECK(same_stack(get(ss, 0), &a));
	CHECK_EQ_INT(stack_store__shed_count(ss), 0);
	CHECK_EQ_INT(stack_store__unshed(ss, 0, &a), -EINVAL); /* not shed */
	CHECK_EQ_INT(stack_store__intern(ss, &a), 0);
	CHECK_EQ_INT(stack_store__intern_bare(ss, &b, &kb, &added), 1);
	CHECK(added && same_stack(get(ss, 1), &b));
	CHECK_EQ_INT(stack_store__shed_count(ss), 0);
	CHECK_EQ_INT(stack_store__unshed(ss, 7, &a), -EINVAL);
	stack_store__free(ss);
}

/* Stacks one address apart, in every lane of the key and at either end,
 * are as many stacks; and a store's key is its own (seeded). */
UNIT_TEST(key_tells_one_address_apart)
{
	enum { DEPTH = 29 };
	struct stack_store *ss = stack_store__new(false), *other = stack_store__new(false);
	uint64_t u[DEPTH];
	struct raw_stack a;
	struct stack_key k1, k2;
	int bad = 0;

	for (int j = 0; j < DEPTH; j++)
		u[j] = 0x401000 + 16 * j;
	a = mk(7, u, DEPTH, NULL, 0);
	CHECK_EQ_INT(stack_store__intern(ss, &a), 0);
	for (int j = 0; j < DEPTH; j++) {
		u[j] += 1;
		bad += stack_store__intern(ss, &a) != 1 + j;
		bad += stack_store__intern(ss, &a) != 1 + j;
		u[j] -= 1;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(stack_store__intern(ss, &a), 0);
	a.pid = 8;
	CHECK_EQ_INT(stack_store__intern(ss, &a), DEPTH + 1);
	k1 = stack_store__hash(ss, &a);
	k2 = stack_store__hash(other, &a);
	CHECK(k1.h != k2.h && k1.h2 != k2.h2);
	stack_store__free(ss);
	stack_store__free(other);
}

/* Remapping folds counts into the target ids, keeps totals, and is a no-op
 * for ids outside the map. */
UNIT_TEST(counts_remap)
{
	struct counts c;
	uint32_t map[8] = {0};
	uint64_t n, w;

	counts__init(&c);
	CHECK_EQ_INT(counts__remap(&c, map, 8), 0); /* empty */
	for (uint32_t id = 0; id < 8; id++)
		CHECK_EQ_INT(counts__add(&c, id, id + 1, 10 * (id + 1)), 0);
	CHECK_EQ_INT(counts__add(&c, 100, 7, 70), 0);
	map[3] = 1 + 1; /* 3 -> 1 */
	map[5] = 1 + 1; /* 5 -> 1 */
	map[6] = 7 + 1; /* 6 -> 7 */
	CHECK_EQ_INT(counts__remap(&c, map, 8), 0);
	CHECK_EQ_INT(c.n, 6);
	CHECK_EQ_INT(c.total_count, 36 + 7);
	CHECK_EQ_INT(c.total_weight, 430);
	counts__get(&c, 1, &n, &w);
	CHECK_EQ_INT(n, 2 + 4 + 6);
	CHECK_EQ_INT(w, 120);
	counts__get(&c, 7, &n, &w);
	CHECK_EQ_INT(n, 8 + 7);
	counts__get(&c, 3, &n, &w);
	CHECK_EQ_INT(n, 0);
	counts__get(&c, 100, &n, &w);
	CHECK_EQ_INT(n, 7);
	counts__free(&c);
}

/*
 * The whole run's counts (counts__init_dense): slot i is id i, so the
 * room follows the highest id, not twice the number of ids, and ids come
 * back in order; the same answers as the hashed table otherwise.
 */
UNIT_TEST(counts_dense)
{
	struct counts c, h;
	uint32_t map[1100] = {0};
	uint64_t n, w, prev = 0;
	int bad = 0, seen = 0;

	counts__init_dense(&c);
	counts__init(&h);
	counts__get(&c, 5, &n, &w); /* never added to: no table yet */
	CHECK_EQ_INT(n, 0);
	for (uint32_t id = 0; id < 1000; id++) {
		bad += counts__add(&c, id, id + 1, 2 * id) != 0;
		bad += counts__add(&h, id, id + 1, 2 * id) != 0;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(c.n, 1000);
	CHECK_EQ_INT(c.cap, 1024);
	CHECK(h.cap >= 2000);
	counts_for_each(&c, sc)
	{
		bad += seen && stack_count__id(sc) <= prev;
		prev = stack_count__id(sc);
		seen++;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(seen, 1000);
	for (uint32_t id = 0; id < 1000; id += 37) {
		uint64_t hn, hw;

		counts__get(&c, id, &n, &w);
		counts__get(&h, id, &hn, &hw);
		bad += n != hn || w != hw || n != id + 1;
	}
	CHECK_EQ_INT(bad, 0);
	counts__get(&c, 5000, &n, &w); /* past the room */
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(counts__add(&c, UINT32_MAX, 1, 1), -EINVAL);
	/* merged both ways */
	CHECK_EQ_INT(counts__merge(&h, &c), 0);
	counts__get(&h, 10, &n, &w);
	CHECK_EQ_INT(n, 22);
	/* remapped, also onto ids past the room */
	map[3] = 1 + 1;
	map[4] = 1050 + 1;
	CHECK_EQ_INT(counts__remap(&c, map, 1100), 0);
	CHECK(c.dense && c.cap >= 1051);
	counts__get(&c, 1, &n, &w);
	CHECK_EQ_INT(n, 2 + 4);
	counts__get(&c, 1050, &n, &w);
	CHECK_EQ_INT(n, 5);
	counts__get(&c, 4, &n, &w);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(c.n, 999);
	CHECK_EQ_INT(c.total_count, 1000 * 1001 / 2);
	/* a map whose target moves on too: each count moves once, as a
	 * map applied to the table as it was (not chained) */
	memset(map, 0, sizeof(map));
	map[10] = 20 + 1; /* 10 -> 20 */
	map[20] = 30 + 1; /* 20 -> 30 */
	CHECK_EQ_INT(counts__remap(&c, map, 1100), 0);
	counts__get(&c, 20, &n, &w);
	CHECK_EQ_INT(n, 11);
	counts__get(&c, 30, &n, &w);
	CHECK_EQ_INT(n, 21 + 31);
	counts__get(&c, 10, &n, &w);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(c.n, 998);
	CHECK_EQ_INT(c.total_count, 1000 * 1001 / 2);
	counts__clear(&c);
	CHECK(c.dense && c.n == 0 && c.total_count == 0);
	counts__free(&c);
	CHECK(c.dense && !c.slots);
	counts__free(&h);
}

/* A slot sized like the second before takes as many stacks without a rehash. */
UNIT_TEST(counts_reserve)
{
	struct counts c;
	const struct stack_count *before;
	int bad = 0;

	counts__init(&c);
	CHECK_EQ_INT(counts__reserve(&c, 5000), 0);
	CHECK(c.cap >= 2 * 5001);
	before = c.slots;
	for (uint32_t id = 0; id < 5000; id++)
		bad += counts__add(&c, id * 7919, 1, 1) != 0;
	CHECK_EQ_INT(bad, 0);
	CHECK(c.slots == before);
	/* already room: nothing moves */
	CHECK_EQ_INT(counts__reserve(&c, 100), 0);
	CHECK(c.slots == before);
	CHECK_EQ_INT(c.n, 5000);
	counts__free(&c);
}

UNIT_MAIN()

/*
 * Only the stacks without the flags asked: causal --candidates auto ranks
 * lines by user-mode samples (STACK_F_KMODE left out), whose user frames
 * would otherwise charge kernel time to the line a thread entered it from.
 */
UNIT_TEST(counts_merge_unflagged)
{
	struct stack_store *ss = stack_store__new(false);
	uint64_t u[] = {0x401000, 0x401100};
	struct raw_stack a = mk(42, u, 2, NULL, 0), k = a, off = a;
	struct counts src, dst;
	int64_t ia, ik, io;
	uint64_t n, w;

	CHECK(ss != NULL);
	k.flags = STACK_F_KMODE;
	off.flags = STACK_F_OFFCPU;
	ia = stack_store__intern(ss, &a);
	ik = stack_store__intern(ss, &k);
	io = stack_store__intern(ss, &off);
	CHECK(ia >= 0 && ik >= 0 && io >= 0 && ia != ik);
	counts__init(&src);
	counts__init(&dst);
	CHECK_EQ_INT(counts__add(&src, (uint32_t)ia, 3, 30), 0);
	CHECK_EQ_INT(counts__add(&src, (uint32_t)ik, 5, 50), 0);
	CHECK_EQ_INT(counts__add(&src, (uint32_t)io, 7, 70), 0);
	CHECK_EQ_INT(counts__add(&src, 999, 11, 110), 0); /* unknown to the store */
	CHECK_EQ_INT(counts__merge_unflagged(&dst, &src, ss, STACK_F_KMODE | STACK_F_OFFCPU), 0);
	CHECK_EQ_INT(dst.total_count, 3);
	counts__get(&dst, (uint32_t)ia, &n, &w);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(w, 30);
	counts__get(&dst, (uint32_t)ik, &n, &w);
	CHECK_EQ_INT(n, 0);
	counts__clear(&dst);
	CHECK_EQ_INT(counts__merge_unflagged(&dst, &src, ss, 0), 0);
	CHECK_EQ_INT(dst.total_count, 15);
	counts__free(&src);
	counts__free(&dst);
	stack_store__free(ss);
}
