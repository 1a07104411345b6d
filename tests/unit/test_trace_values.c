// SPDX-License-Identifier: GPL-2.0
/*
 * test_trace_values.c - the values of a traced argument, counted per
 * distinct value (user/session/traces_values.c) and read back sorted
 * (traces__values, traces_print.c).
 *
 * A counter-like argument (a round number, a request id) has a new value
 * at every hit: the table keeps MAX_DISTINCT (4,096) of them and counts the
 * rest as "(other)". Each hit used to scan the table, and at 4,096 entries
 * and tens of thousands of hits a second the daemon fell behind its ring
 * buffer for good (tests/e2e/test_usdt.py hung in -d 2 on a USDT argument
 * holding the round number). The counts here come from the hits the test
 * makes; the sort of a read must not lose the table's index.
 */
#include "unit.h"
#include "bpf/liveprof.h"
#include "user/session/traces.h"
#include "user/session/traces_internal.h"

#define PROBE_ID     7
#define MAX_DISTINCT 4096

static struct trace tr;
static struct trace *trs[1] = {&tr};
static struct traces t = {.v = trs, .n = 1};

static void hit(int64_t v)
{
	struct lp_hit h = {.probe_id = PROBE_ID, .n_values = 1};

	h.values[0].u64 = (uint64_t)v;
	traces__on_hit(&t, &h);
}

/* The count of @text in the trace's values, read as the TUI does; -1: absent. */
static int64_t count_of(const char *text)
{
	static struct trace_value_row rows[MAX_DISTINCT + 8];
	const char *expr;
	int n = traces__values(&t, 0, 0, &expr, rows, MAX_DISTINCT + 8);

	for (int i = 0; i < n; i++)
		if (!strcmp(rows[i].text, text))
			return (int64_t)rows[i].count;
	return -1;
}

static void setup(void)
{
	memset(&tr, 0, sizeof(tr));
	tr.ids[0] = PROBE_ID;
	tr.n_ids = 1;
	tr.n_values = tr.n_entry_values = 1;
	tr.by_index = -1;
	tr.values[0].type.kind = FETCH_INT;
	tr.values[0].type.size = 8;
	tr.values[0].type.is_signed = true;
	snprintf(tr.values[0].expr, sizeof(tr.values[0].expr), "arg0");
}

static void teardown(void)
{
	free(tr.values[0].vals);
	free(tr.values[0].index);
}

UNIT_TEST(repeated_values_counted_once_each)
{
	setup();
	for (int round = 0; round < 5; round++)
		for (int v = -50; v < 50; v++)
			for (int k = 0; k <= (v & 3); k++) /* v & 3 + 1 hits per round */
				hit(v);
	CHECK_EQ_INT(tr.values[0].n, 100);
	CHECK_EQ_INT(count_of("-50"), 5 * 3); /* -50 & 3 == 2 */
	CHECK_EQ_INT(count_of("49"), 5 * 2);
	CHECK_EQ_INT(count_of("0"), 5);
	/* the read sorted the table: hits after it still find their entries */
	hit(0);
	hit(-50);
	CHECK_EQ_INT(tr.values[0].n, 100);
	CHECK_EQ_INT(count_of("0"), 6);
	CHECK_EQ_INT(count_of("-50"), 16);
	teardown();
}

UNIT_TEST(past_4096_distinct_values_the_rest_is_other)
{
	setup();
	for (int v = 0; v < 3 * MAX_DISTINCT; v++)
		hit(v);
	CHECK_EQ_INT(tr.values[0].n, MAX_DISTINCT + 1);
	CHECK_EQ_INT(count_of("(other)"), 2 * MAX_DISTINCT);
	/* values seen before the table filled are still counted as themselves */
	hit(17);
	hit(MAX_DISTINCT - 1);
	hit(MAX_DISTINCT); /* one that came too late: (other) */
	CHECK_EQ_INT(count_of("17"), 2);
	CHECK_EQ_INT(count_of("4095"), 2);
	CHECK_EQ_INT(count_of("4096"), -1);
	CHECK_EQ_INT(count_of("(other)"), 2 * MAX_DISTINCT + 1);
	teardown();
}

UNIT_TEST(faults_counted_as_a_value)
{
	struct lp_hit h = {.probe_id = PROBE_ID, .n_values = 1, .fault_mask = 1};

	setup();
	traces__on_hit(&t, &h);
	traces__on_hit(&t, &h);
	hit(3);
	CHECK_EQ_INT(tr.values[0].faults, 2);
	CHECK_EQ_INT(count_of("(fault)"), 2);
	CHECK_EQ_INT(count_of("3"), 1);
	teardown();
}

UNIT_MAIN()
