// SPDX-License-Identifier: GPL-2.0
/*
 * validate_plan.c - what `liveprof validate --from` compares, for how long,
 * and what the comparison means.
 *
 * The test. Let D be the distance between the expected self shares and what
 * liveprof would measure with unlimited samples (its systematic error), O
 * the distance observed with n samples, and N the sampling noise, the
 * distance between n samples and their own expectation. The TVD is a metric,
 * so |O - D| <= N, and N <= q (the noise's 1 - alpha quantile, simulated from
 * the expected shares) with probability 1 - alpha. Hence, with T the
 * tolerance:
 *   FAIL          when O > T + q: D > T with confidence 1 - alpha
 *                 (the chance of FAIL when D <= T is at most alpha);
 *   PASS          when O + q <= T: D <= T with confidence 1 - alpha;
 *   INCONCLUSIVE  otherwise: the samples cannot tell; more samples shrink q.
 *
 * The granularity. A function whose expected count is a handful of samples
 * adds noise and no power, so only the largest functions are compared one
 * by one, as many as the budget can resolve (each with at least 10 expected
 * samples, and few enough that the noise stays under the planner's target);
 * the rest share one "(other functions)" cell. The cells are fixed before
 * any sample is seen.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user/synth/validate.h"

/*
 * The share of one CPU an emitted program is assumed to get when planning:
 * on a busy shared machine it got 20-50% (2 cores, several profilers and
 * compilers). Planning for more picks cells the samples then cannot resolve
 * within the budget; an idle machine just decides sooner.
 */
#define PLAN_CPU_SHARE 0.25
/*
 * A program without systematic error passes when mean + q <= T (its TVD is
 * about the noise's mean); the planner wants that at 60% of T, leaving 40%
 * for the emitted program's and liveprof's own small errors.
 */
#define PLAN_NOISE_OF_TOLERANCE 0.6
#define PLAN_MAX_FREQ		999
#define PLAN_DRAWS		400
#define OTHER_LABEL		"(other functions)"

/* A function is compared on its own only with this many expected samples. */
#define PLAN_MIN_COUNT 10
static const double freq_ladder[] = {99, 199, 499, 999};

struct by_share {
	const struct emit_tree *t;
	uint32_t *order; /* names, largest self first */
};

static int cmp_self(const void *a, const void *b, void *arg)
{
	const struct emit_tree *t = arg;
	uint64_t x = t->names[*(const uint32_t *)a].self, y = t->names[*(const uint32_t *)b].self;

	if (x != y)
		return x < y ? 1 : -1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* The one-sided standard normal quantile z with P(Z > z) = p, by bisection. */
static double normal_upper(double p)
{
	double lo = 0, hi = 40;
	int i;

	for (i = 0; i < 100; i++) {
		double mid = 0.5 * (lo + hi);

		if (0.5 * erfc(mid / M_SQRT2) > p)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

/* Keep the @k largest names with self samples (at least one); the rest go to "(other)". */
static void build_cells(struct vcells *vc, const struct emit_tree *t, const uint32_t *order,
			size_t k)
{
	size_t i, kept = 0;

	vc->merged = 0;
	for (i = 0; i < t->n_names; i++) {
		uint32_t nm = order[i];
		double e = (double)t->names[nm].self / (double)t->total;

		if (t->names[nm].self && (kept < k || kept == 0)) {
			vc->cell_of[nm] = (uint32_t)kept;
			vc->label[kept] = t->names[nm].orig;
			vc->expected[kept++] = e;
		} else {
			vc->cell_of[nm] = UINT32_MAX;
			vc->merged += t->names[nm].self != 0;
		}
	}
	vc->n_cells = kept;
	vc->other = kept;
	if (kept == t->n_names)
		return;
	/* Functions without self samples still get theirs measured: "(other)". */
	vc->label[kept] = OTHER_LABEL;
	vc->expected[kept] = 0;
	for (i = 0; i < t->n_names; i++) {
		if (vc->cell_of[i] == UINT32_MAX) {
			vc->cell_of[i] = (uint32_t)kept;
			vc->expected[kept] += (double)t->names[i].self / (double)t->total;
		}
	}
	vc->n_cells = kept + 1;
}

/*
 * For planning: the noise's mean plus its 1 - alpha bound, mean + z sd, from
 * a small simulation (the decision itself simulates the tail).
 */
static int quick_bound(const struct vcells *vc, double n, double z, double *q)
{
	struct noise_tvd nt;
	int ret = noise_tvd_simulate(vc->expected, vc->n_cells, n, 0.01, PLAN_DRAWS, 7, &nt);

	if (!ret)
		*q = 2 * nt.mean + z * nt.sd;
	return ret;
}

int vcells_plan(struct vcells *vc, const struct emit_tree *t, const struct vopts *vo,
		struct vplan *plan)
{
	double fhi = vo->freq ? vo->freq : PLAN_MAX_FREQ, n_avail, q = 0, want, z;
	uint32_t *order = malloc(t->n_names * sizeof(*order));
	size_t i, lo, hi = 0;
	int ret = 0;

	vc->n_names = t->n_names;
	vc->cell_of = calloc(t->n_names, sizeof(*vc->cell_of));
	vc->label = calloc(t->n_names + 1, sizeof(*vc->label));
	vc->expected = calloc(t->n_names + 1, sizeof(*vc->expected));
	vc->measured = calloc(t->n_names + 1, sizeof(*vc->measured));
	if (!order || !vc->cell_of || !vc->label || !vc->expected || !vc->measured) {
		free(order);
		return -ENOMEM;
	}
	for (i = 0; i < t->n_names; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, t->n_names, sizeof(*order), cmp_self, (void *)t);
	z = normal_upper(VALIDATE_ALPHA / VALIDATE_MAX_LOOKS);
	want = PLAN_NOISE_OF_TOLERANCE * vo->tolerance;
	n_avail = vo->seconds * fhi * PLAN_CPU_SHARE;
	/*
	 * The finest granularity whose noise the budget can bring under "want":
	 * the most functions, largest first, each resolvable (PLAN_MIN_COUNT
	 * expected samples), by bisection on their number.
	 */
	for (i = 0; i < t->n_names && t->names[order[i]].self; i++)
		if ((double)t->names[order[i]].self / (double)t->total * n_avail >= PLAN_MIN_COUNT)
			hi = i + 1;
	lo = 1;
	hi = hi ? hi : 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo + 1) / 2;

		build_cells(vc, t, order, mid);
		ret = quick_bound(vc, n_avail, z, &q);
		if (ret)
			break;
		if (q <= want)
			lo = mid;
		else
			hi = mid - 1;
	}
	build_cells(vc, t, order, lo);
	if (!ret)
		ret = quick_bound(vc, n_avail, z, &q);
	free(order);
	if (ret)
		return ret;
	/* With the cells fixed, the noise shrinks as 1 / sqrt(n). */
	plan->n_target = n_avail * (q / want) * (q / want);
	plan->freq = fhi;
	if (!vo->freq) {
		for (i = 0; i < sizeof(freq_ladder) / sizeof(freq_ladder[0]); i++) {
			plan->freq = freq_ladder[i];
			if (plan->n_target / (plan->freq * PLAN_CPU_SHARE) <= vo->seconds / 2)
				break;
		}
	}
	/*
	 * The first look takes half the target: a gross error fails there, and
	 * a right program often passes (the noise's bound is then about 85% of
	 * T); the next look is sized from what the first one saw.
	 */
	plan->seconds = 0.5 * plan->n_target / (plan->freq * PLAN_CPU_SHARE);
	plan->seconds = fmin(vo->seconds, fmax(3, ceil(plan->seconds)));
	return 0;
}

void vcells_free(struct vcells *vc)
{
	free(vc->cell_of);
	free(vc->label);
	free(vc->expected);
	free(vc->measured);
	memset(vc, 0, sizeof(*vc));
}

int vcells_decide(const struct vcells *vc, double tolerance, double alpha, uint64_t seed,
		  struct vresult *res)
{
	double dist = 0, sys, mu, q;
	size_t i;
	int ret;

	memset(res, 0, sizeof(*res));
	for (i = 0; i < vc->n_cells; i++)
		res->n += vc->measured[i];
	if (!res->n) {
		res->verdict = VERDICT_INCONCLUSIVE;
		return 0;
	}
	for (i = 0; i < vc->n_cells; i++)
		dist += fabs(vc->expected[i] - (double)vc->measured[i] / (double)res->n);
	res->tvd = 0.5 * dist;
	/* About 20 draws beyond the quantile keep its own error small. */
	ret = noise_tvd_simulate(vc->expected, vc->n_cells, (double)res->n, alpha,
				 (size_t)ceil(20 / alpha), seed, &res->noise);
	if (ret)
		return ret;
	mu = res->noise.mean;
	q = res->noise.quantile;
	if (res->tvd > tolerance + q)
		res->verdict = VERDICT_FAIL;
	else if (res->tvd + q <= tolerance)
		res->verdict = VERDICT_PASS;
	else
		res->verdict = VERDICT_INCONCLUSIVE;
	/*
	 * Samples that would decide, assuming the systematic part of O stays
	 * (O - mean) and the noise shrinks as 1 / sqrt(n): PASS needs
	 * sys + mean + q <= T, FAIL needs sys + mean - q > T.
	 */
	sys = fmax(0, res->tvd - mu);
	if (sys < tolerance)
		res->n_needed = (double)res->n * pow((mu + q) / (tolerance - sys), 2);
	else if (sys > tolerance)
		res->n_needed = (double)res->n * pow((q - mu) / (sys - tolerance), 2);
	else
		res->n_needed = INFINITY;
	return 0;
}

struct row {
	const char *label;
	double expected, measured;
};

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->expected != y->expected)
		return x->expected < y->expected ? 1 : -1;
	return strcmp(x->label, y->label);
}

void vcells_print(const struct vcells *vc, uint64_t elsewhere)
{
	struct row *rows = calloc(vc->n_cells ? vc->n_cells : 1, sizeof(*rows));
	double smallest = 0;
	uint64_t n = 0;
	size_t i, kept;

	for (i = 0; i < vc->n_cells; i++)
		n += vc->measured[i];
	if (rows && n) {
		for (i = 0; i < vc->n_cells; i++) {
			rows[i].label = vc->label[i];
			rows[i].expected = vc->expected[i];
			rows[i].measured = (double)vc->measured[i] / (double)n;
		}
		qsort(rows, vc->n_cells, sizeof(*rows), cmp_row);
		printf("%-40s %9s %9s %8s\n", "function (self share)", "expected", "measured",
		       "diff");
		for (i = 0; i < vc->n_cells && i < 40; i++)
			printf("%-40.40s %8.2f%% %8.2f%% %+7.2f%%\n", rows[i].label,
			       100 * rows[i].expected, 100 * rows[i].measured,
			       100 * (rows[i].measured - rows[i].expected));
		if (vc->n_cells > 40)
			printf("(%zu more cells not shown)\n", vc->n_cells - 40);
	}
	free(rows);
	kept = vc->other < vc->n_cells ? vc->n_cells - 1 : vc->n_cells;
	for (i = 0; i < kept; i++)
		smallest = i ? fmin(smallest, vc->expected[i]) : vc->expected[i];
	printf("granularity: leaf-function level, %zu function%s compared one by one (each >= "
	       "%.2f%% expected)",
	       kept, kept == 1 ? "" : "s", 100 * smallest);
	if (vc->other < vc->n_cells)
		printf(", %zu smaller one%s merged into %s (%.1f%% expected)", vc->merged,
		       vc->merged == 1 ? "" : "s", OTHER_LABEL, 100 * vc->expected[vc->other]);
	printf("\nsamples: %llu in the profile's functions, %llu elsewhere (left out)\n",
	       (unsigned long long)n, (unsigned long long)elsewhere);
}
