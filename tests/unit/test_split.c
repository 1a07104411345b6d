// SPDX-License-Identifier: GPL-2.0
/*
 * test_split.c - slow vs fast calls (user/session/split.c): samples held per
 * call until the call ends, attributed to the outermost call of the split
 * function, classified against the pNN threshold of its latency histogram,
 * and the frames below the split function ranked.
 *
 * The pieces around the split are real: a loaded BPF session, a trace of
 * split_handle() in this very process (traces__add resolves and attaches
 * it), its histogram in the BPF map, and stacks of this binary's functions
 * symbolized from /proc/self/maps. The test stands in for the kernel only
 * where the split is fed: it writes the histogram buckets and hands the
 * split the sample and call-end events the ring buffer would carry, so the
 * ground truth (which call is slow, which frame runs in it) is set here.
 * Needs root (BPF), as `make test` does.
 */
#include <errno.h>
#include <unistd.h>

#include "unit.h"
#include "bpf/liveprof.h"
#include "dwarf/symbolize.h"
#include "user/profile/stack_store.h"
#include "user/profile/stack_symbols.h"
#include "user/session/bpf_session.h"
#include "user/session/options.h"
#include "user/session/session_core.h"
#include "user/session/split.h"
#include "user/session/traces.h"
#include "user/util/util.h"

#define FAST_NS	 10000ULL   /* 10 us */
#define SLOW_NS	 1000000ULL /* 1 ms */
#define N_FAST	 80
#define N_SLOW	 20 /* 20%: p95 of the histogram lies among the slow calls */
#define PER_CALL 3  /* samples per call */
#define SEC	 1000000000ULL

static volatile int sink;

/* The frames of the stacks, each a few instructions long. */
__attribute__((noinline)) void split_handle(void)
{
	sink++;
	sink++;
}
__attribute__((noinline)) void split_slow_leaf(void)
{
	sink++;
	sink++;
}
__attribute__((noinline)) void split_fast_leaf(void)
{
	sink++;
	sink++;
}
__attribute__((noinline)) void split_caller(void)
{
	sink++;
	sink++;
}

static struct {
	struct options opts;
	struct session_core core;
	struct bpf_session *bpf;
	struct traces *traces;
	struct symbolizer *sym;
	struct stack_store *store;
	struct stack_symbols *symbols;
	int probe_id;
	uint32_t slow_stack, fast_stack, deep_stack;
	uint64_t now;
} fx;

static void fx_free(void)
{
	traces__free(fx.traces);
	bpf_session__close(fx.bpf);
	stack_symbols__free(fx.symbols);
	stack_store__free(fx.store);
	symbolizer__free(fx.sym);
}

static uint32_t bucket_of(uint64_t ns)
{
	uint32_t b = 0;

	while (b + 1 < LP_HIST_BUCKETS && traces__bucket_lower(b + 1) <= ns)
		b++;
	return b;
}

/* Intern the stack (leaf first) of function addresses: the leaf as the
 * interrupted instruction, callers as return addresses just inside them. */
static uint32_t intern(void (*const *fns)(void), int n)
{
	struct raw_stack st = {.pid = (uint32_t)getpid(), .tid = (uint32_t)getpid()};
	uint64_t addrs[8];
	int64_t id;

	for (int i = 0; i < n; i++)
		addrs[i] = (uint64_t)(uintptr_t)fns[i] + (i ? 2 : 1);
	st.user = addrs;
	st.n_user = (uint16_t)n;
	memcpy(st.comm, "test_split", 11);
	id = stack_store__intern(fx.store, &st);
	CHECK(id >= 0);
	return (uint32_t)id;
}

/* The session, the trace and the histogram: N_FAST calls at FAST_NS and
 * N_SLOW at SLOW_NS, as the BPF return probe would have counted them. */
static bool fx_init(void)
{
	/* the sanitized build maps libstdc++ (libasan needs it), so its own
	 * functions' returns are probed on their ret instructions
	 * (traces_unwinds.c): that program must be loaded too */
	struct bpf_session_opts bo = {.tracing = true, .ret_insn_returns = true};
	struct stack_symbols_opts so = {0};
	volatile uint64_t *h;
	char err[512];
	int rc;

	if (fx.traces)
		return true;
	if (geteuid() != 0) {
		fprintf(stderr, "  test_split needs root (it loads BPF)\n");
		return false;
	}
	rc = bpf_session__open(&fx.bpf, &bo);
	CHECK_EQ_INT(rc, 0);
	if (rc)
		return false;
	fx.core.opts = &fx.opts;
	fx.core.bpf = fx.bpf;
	fx.core.procs[0].pid = getpid();
	fx.core.procs[0].alive = true;
	snprintf(fx.core.procs[0].name, sizeof(fx.core.procs[0].name), "test_split");
	fx.core.n_procs = 1;
	fx.traces = traces__new(&fx.core, 10);
	fx.probe_id = traces__add(fx.traces, "split_handle", err, sizeof(err));
	if (fx.probe_id < 0) {
		fprintf(stderr, "  traces__add: %s\n", err);
		unit_failed_checks++;
		return false;
	}
	h = (volatile uint64_t *)bpf_session__hist(fx.bpf) + (size_t)fx.probe_id * LP_HIST_BUCKETS;
	h[bucket_of(FAST_NS)] += N_FAST;
	h[bucket_of(SLOW_NS)] += N_SLOW;

	fx.sym = symbolizer__new(false);
	fx.store = stack_store__new(false);
	fx.symbols = stack_symbols__new(&so);
	CHECK(fx.sym && fx.store && fx.symbols);
	CHECK_EQ_INT(symbolizer__add_pid(fx.sym, getpid()), 0);
	fx.slow_stack =
		intern((void (*const[])(void)){split_slow_leaf, split_handle, split_caller}, 3);
	fx.fast_stack =
		intern((void (*const[])(void)){split_fast_leaf, split_handle, split_caller}, 3);
	/* recursion: split_handle -> split_handle -> split_slow_leaf */
	fx.deep_stack = intern(
		(void (*const[])(void)){split_slow_leaf, split_handle, split_handle, split_caller},
		4);
	CHECK_EQ_INT(stack_symbols__update(fx.symbols, fx.store, fx.sym, NULL, NULL), 0);
	fx.now = lp_now_ns();
	atexit(fx_free);
	return true;
}

static struct lp_sample sample_in(uint64_t call_id, uint64_t t)
{
	struct lp_sample ev = {.pid = (uint32_t)getpid(), .time_ns = t, .weight_ns = 1000000};

	ev.n_calls = 1;
	ev.calls[0] = (struct lp_call_tag){.probe_id = (uint32_t)fx.probe_id, .call_id = call_id};
	return ev;
}

static struct lp_call_end end_of(uint64_t call_id, uint64_t start, uint64_t latency, uint32_t flags)
{
	return (struct lp_call_end){.pid = (uint32_t)getpid(),
				    .probe_id = (uint32_t)fx.probe_id,
				    .flags = flags,
				    .call_id = call_id,
				    .start_ns = start,
				    .latency_ns = latency};
}

/*
 * A call's latency as the events carry it: in the bucket the histogram
 * counted it in, at its top, where an error of one bucket in the
 * threshold would show.
 */
static uint64_t latency_in_bucket_of(uint64_t ns)
{
	return traces__bucket_lower(bucket_of(ns) + 1) - 1;
}

static uint64_t slow_latency(void)
{
	return latency_in_bucket_of(SLOW_NS);
}

static uint64_t fast_latency(void)
{
	return latency_in_bucket_of(FAST_NS);
}

static const struct split_frame_rank *rank_of(const struct split_result *r, const char *frame)
{
	for (int i = 0; i < r->n_ranks; i++)
		if (!strcmp(r->ranks[i].frame, frame))
			return &r->ranks[i];
	return NULL;
}

static struct split *new_split(int when_line)
{
	struct split *s;

	if (!fx_init()) {
		unit_failed_checks++;
		return NULL;
	}
	s = split__new(fx.traces, fx.symbols, 10, fx.probe_id, 95, when_line);
	CHECK(s != NULL);
	return s;
}

/* Calls of histogram @h at @ns, @n of them. */
static void hist_add(uint64_t *h, uint64_t ns, uint64_t n)
{
	h[bucket_of(ns)] += n;
}

/* Where slow calls begin: the edge of the percentile's bucket that leaves
 * the slow share nearest the one asked for, both classes kept. */
UNIT_TEST(slow_from_nearest_share)
{
	static uint64_t h[LP_HIST_BUCKETS];
	uint64_t peak_hi = traces__bucket_lower(bucket_of(4000) + 1);

	CHECK_EQ_INT(traces__hist_slow_from(h, 95), 0);
	/* one call in 100 at each of 100 spread latencies: p95 is the 95th's
	 * bucket; counting it slow gives 6%, fast 5%, nearer 5% */
	for (int i = 1; i <= 100; i++)
		hist_add(h, 1000 * (uint64_t)i, 1);
	CHECK_EQ_INT(traces__hist_slow_from(h, 95), traces__bucket_lower(bucket_of(95000) + 1));
	/* p94.5: 6% and 5% are as near; the bucket is slow (more slow calls) */
	CHECK_EQ_INT(traces__hist_slow_from(h, 94.5), traces__bucket_lower(bucket_of(95000)));
	/* 97% of the calls in one bucket, the rest in the next: p95 there,
	 * counted slow it would leave no fast call */
	memset(h, 0, sizeof(h));
	hist_add(h, 4000, 970);
	hist_add(h, peak_hi, 30);
	CHECK_EQ_INT(traces__hist_slow_from(h, 95), peak_hi);
	/* ... a few faster calls: counted slow, 99.9% would be; fast, 3% */
	hist_add(h, 3000, 1);
	CHECK_EQ_INT(traces__hist_slow_from(h, 95), peak_hi);
	/* every call in one bucket: nothing tells them apart, none is slow */
	memset(h, 0, sizeof(h));
	hist_add(h, 4000, 1000);
	CHECK_EQ_INT(traces__hist_slow_from(h, 95), peak_hi);
	/* 20% of the calls alike and slow: counted fast, none would be */
	hist_add(h, 1000000, 250);
	CHECK_EQ_INT(traces__hist_slow_from(h, 95), traces__bucket_lower(bucket_of(1000000)));
}

UNIT_TEST(classify_and_rank)
{
	struct split *s = new_split(-1);
	const struct split_frame_rank *k;
	uint64_t held, orphans, dropped;
	struct split_result r;

	if (!s)
		return;
	for (uint64_t i = 0; i < N_FAST + N_SLOW; i++) {
		bool slow = i % 5 == 0;
		uint64_t start = fx.now + i * 1000;

		for (int k = 0; k < PER_CALL; k++) {
			struct lp_sample ev = sample_in(100 + i, start + k);

			split__on_sample(s, slow ? fx.slow_stack : fx.fast_stack, &ev, 1);
		}
	}
	split__stats(s, &held, &orphans, &dropped);
	CHECK_EQ_INT(held, (N_FAST + N_SLOW) * PER_CALL); /* nothing ended yet */
	for (uint64_t i = 0; i < N_FAST + N_SLOW; i++) {
		bool slow = i % 5 == 0;
		struct lp_call_end e = end_of(100 + i, fx.now + i * 1000,
					      slow ? slow_latency() : fast_latency(), 0);

		split__on_call_end(s, &e);
	}
	split__stats(s, &held, &orphans, &dropped);
	CHECK(held == 0 && orphans == 0 && dropped == 0);

	CHECK_EQ_INT(split__compute(s, false, false, &r), 0);
	CHECK_STR(r.function, "split_handle");
	/* p95 is among the slow calls, all in one bucket: counted fast, none
	 * would be slow; so they are, the nearest share that leaves both */
	CHECK_EQ_INT(r.threshold_ns, traces__bucket_lower(bucket_of(SLOW_NS)));
	CHECK_EQ_INT(r.all_slow_calls, N_SLOW);
	CHECK_EQ_INT(r.all_fast_calls, N_FAST);
	CHECK_EQ_INT(r.slow_calls, N_SLOW);
	CHECK_EQ_INT(r.fast_calls, N_FAST);
	CHECK_EQ_INT(r.slow_samples, N_SLOW * PER_CALL);
	CHECK_EQ_INT(r.fast_samples, N_FAST * PER_CALL);
	/* only what runs below the split function is ranked */
	CHECK_EQ_INT(r.n_ranks, 2);
	CHECK(rank_of(&r, "split_handle") == NULL && rank_of(&r, "split_caller") == NULL);
	CHECK(r.n_ranks > 0 && !strcmp(r.ranks[0].frame, "split_slow_leaf"));
	k = rank_of(&r, "split_slow_leaf");
	CHECK(k && k->slow_share == 1 && k->fast_share == 0 && k->significant);
	k = rank_of(&r, "split_fast_leaf");
	CHECK(k && k->slow_share == 0 && k->fast_share == 1 && k->delta == -1);
	split_result__fini(&r);

	/* at p10 the threshold moves and the log is re-read: p10 is among the
	 * fast calls, whose bucket counted slow would leave no fast call */
	split__set_percentile(s, 10);
	CHECK_EQ_INT(split__compute(s, false, false, &r), 0);
	CHECK_EQ_INT(r.threshold_ns, traces__bucket_lower(bucket_of(FAST_NS) + 1));
	CHECK_EQ_INT(r.slow_calls, N_SLOW);
	CHECK_EQ_INT(r.fast_calls, N_FAST);
	split_result__fini(&r);
	split__free(s);
}

/* A sample inside a recursive call belongs to the outermost call; the
 * inner call's end is not the request's end. */
UNIT_TEST(outermost_call_and_recursion)
{
	struct split *s = new_split(-1);
	struct lp_sample ev;
	struct lp_call_end inner, outer;
	uint64_t held, orphans, dropped;
	struct split_result r;

	if (!s)
		return;
	ev = sample_in(7, fx.now);
	ev.n_calls = 2;
	ev.calls[1] =
		(struct lp_call_tag){.probe_id = (uint32_t)fx.probe_id, .depth = 1, .call_id = 8};
	split__on_sample(s, fx.deep_stack, &ev, 1);
	/* a sample tagged only with other probes' calls is not this split's */
	ev.calls[0].probe_id = ev.calls[1].probe_id = (uint32_t)fx.probe_id + 1;
	split__on_sample(s, fx.fast_stack, &ev, 1);
	split__stats(s, &held, &orphans, &dropped);
	CHECK_EQ_INT(held, 1);
	inner = end_of(8, fx.now, fast_latency(), 0);
	split__on_call_end(s, &inner);
	split__stats(s, &held, &orphans, &dropped);
	CHECK_EQ_INT(held, 1);
	outer = end_of(7, fx.now, slow_latency(), 0);
	split__on_call_end(s, &outer);
	split__stats(s, &held, &orphans, &dropped);
	CHECK_EQ_INT(held, 0);
	CHECK_EQ_INT(split__compute(s, false, false, &r), 0);
	CHECK_EQ_INT(r.slow_calls, 1);
	CHECK_EQ_INT(r.fast_calls, 0);
	CHECK_EQ_INT(r.slow_samples, 1);
	CHECK(rank_of(&r, "split_slow_leaf") != NULL);
	split_result__fini(&r);
	split__free(s);
}

UNIT_TEST(when_line_filters_calls)
{
	struct split *s = new_split(3);
	struct lp_sample ev;
	struct lp_call_end e;
	struct split_result r;

	if (!s)
		return;
	for (uint64_t c = 1; c <= 2; c++) {
		ev = sample_in(c, fx.now);
		split__on_sample(s, fx.slow_stack, &ev, 1);
		e = end_of(c, fx.now, slow_latency(), c == 2 ? LP_CF_LINE_HIT : 0);
		split__on_call_end(s, &e);
	}
	CHECK_EQ_INT(split__compute(s, false, false, &r), 0);
	CHECK_EQ_INT(r.filtered, 1);
	CHECK_EQ_INT(r.slow_calls, 1);
	CHECK_EQ_INT(r.slow_samples, 1);
	split_result__fini(&r);
	split__free(s);
}

UNIT_TEST(orphans_expire)
{
	struct split *s = new_split(-1);
	struct lp_sample ev;
	uint64_t held, orphans, dropped;

	if (!s)
		return;
	ev = sample_in(42, fx.now);
	split__on_sample(s, fx.slow_stack, &ev, 2);
	split__tick(s, fx.now + 59 * SEC);
	split__stats(s, &held, &orphans, &dropped);
	CHECK(held == 1 && orphans == 0);
	split__tick(s, fx.now + 61 * SEC);
	split__stats(s, &held, &orphans, &dropped);
	CHECK(held == 0 && orphans == 1 && dropped == 0);
	split__free(s);
}

/*
 * 5,000 calls in flight at once (the held table grows from 1,024 slots),
 * ended in a scrambled order: removing one must never hide another, so
 * every call is found when it ends and every sample lands in its class.
 */
UNIT_TEST(many_calls_in_flight)
{
	enum { N = 5000 };
	struct split *s = new_split(-1);
	uint64_t held, orphans, dropped, n_slow = 0;
	struct split_result r;

	if (!s)
		return;
	for (uint64_t c = 1; c <= N; c++) {
		struct lp_sample ev = sample_in(c << 20, fx.now + c);

		split__on_sample(s, c % 3 ? fx.fast_stack : fx.slow_stack, &ev, 1);
	}
	for (uint64_t i = 0; i < N; i++) {
		uint64_t c = 1 + (i * 7919) % N; /* 7919 is prime: a permutation of 1..N */
		struct lp_call_end e =
			end_of(c << 20, fx.now, c % 3 ? fast_latency() : slow_latency(), 0);

		n_slow += c % 3 == 0;
		split__on_call_end(s, &e);
		if (i == N / 2) {
			split__stats(s, &held, &orphans, &dropped);
			CHECK_EQ_INT(held, N - N / 2 - 1);
		}
	}
	split__stats(s, &held, &orphans, &dropped);
	CHECK(held == 0 && dropped == 0);
	CHECK_EQ_INT(split__compute(s, false, false, &r), 0);
	CHECK_EQ_INT(r.slow_calls, n_slow);
	CHECK_EQ_INT(r.fast_calls, N - n_slow);
	CHECK_EQ_INT(r.slow_samples, n_slow);
	split_result__fini(&r);
	split__free(s);
}

/* A range of sample times (an HTTP scrape's window): only the samples in it. */
UNIT_TEST(compute_range)
{
	struct split *s = new_split(-1);
	struct lp_call_end e;
	struct split_result r;

	if (!s)
		return;
	for (uint64_t k = 1; k <= 3; k++) {
		struct lp_sample ev = sample_in(5, fx.now + k * SEC);

		split__on_sample(s, fx.slow_stack, &ev, 1);
	}
	e = end_of(5, fx.now, slow_latency(), 0);
	e.start_ns = fx.now + 4 * SEC - e.latency_ns; /* ends after its last sample */
	split__on_call_end(s, &e);
	CHECK_EQ_INT(
		split__compute_range(s, fx.now + SEC + SEC / 2, fx.now + 2 * SEC + SEC / 2, &r), 0);
	CHECK_EQ_INT(r.slow_calls, 1);
	CHECK_EQ_INT(r.slow_samples, 1);
	CHECK_EQ_INT(r.fast_samples, 0);
	split_result__fini(&r);
	CHECK_EQ_INT(split__compute_range(s, fx.now + 5 * SEC, fx.now + 6 * SEC, &r), 0);
	CHECK_EQ_INT(r.slow_calls + r.fast_calls, 0);
	split_result__fini(&r);
	split__free(s);
}

UNIT_MAIN()
