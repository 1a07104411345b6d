/* SPDX-License-Identifier: GPL-2.0 */
/*
 * split_rank.h - the significance of a split's ranked frames.
 *
 * Each frame gets Fisher's exact test (its share of the slow samples
 * against its share of the fast samples; z is reported as the normal
 * equivalent of the exact p). Testing many frames at once,
 * some would pass a per-frame test by chance alone, so the p-values are
 * corrected with Holm's step-down method over every frame ranked: the
 * chance that any frame is called significant while no frame differs is at
 * most SPLIT_ALPHA (the family-wise error rate). A frame that is not
 * significant gets the number of samples that would likely decide it.
 */
#ifndef LP_USER_SESSION_SPLIT_RANK_H
#define LP_USER_SESSION_SPLIT_RANK_H

#include <stddef.h>
#include <stdint.h>

#define SPLIT_ALPHA	0.01 /* family-wise error rate of the ranking */
#define SPLIT_POWER	0.8  /* "needs about N samples": to decide with this power */
#define SPLIT_MIN_CLASS 20   /* samples per class before a frame is tested at all */

struct split_frame_rank;
struct split_result;

/**
 * split_rank__z_two_sided - the z with P(|N(0,1)| >= z) = @p
 *
 * Return: z >= 0 (bisection on erfc; 0 for @p >= 1, 40 for @p <= 0).
 */
double split_rank__z_two_sided(double p);

/**
 * split_rank__fisher - two-sided p of Fisher's exact test
 * @a: samples of the slow class that hold the frame, of @n1
 * @b: samples of the fast class that hold the frame, of @n2
 *
 * Return: the p-value, 1 when a class is empty or the frame is in none
 * or all of the samples.
 */
double split_rank__fisher(uint64_t a, uint64_t n1, uint64_t b, uint64_t n2);

/**
 * split_rank__holm - Holm's step-down correction of @m p-values
 * @p: raw p-values
 * @adj: out, the adjusted p-values (same order as @p): a frame is
 *       significant at family-wise level a when adj <= a
 * @order: scratch of @m indices, or NULL to allocate one
 *
 * Return: 0 or -ENOMEM.
 */
int split_rank__holm(const double *p, size_t m, double *adj, size_t *order);

/**
 * split_rank__needed - samples (both classes) that would likely decide a frame
 * @z: the frame's z with @n samples now
 * @n: slow + fast samples now
 * @z_crit: the critical z it must reach
 * @n_small: the smaller class's samples now
 *
 * At the same shares z grows with the square root of the samples: about
 * n * ((z_crit + z_power) / z)^2 give power SPLIT_POWER, and never fewer
 * than SPLIT_MIN_CLASS in the smaller class (an empty class counts as one).
 *
 * Return: the count, or 0 when both classes are big enough and @z is 0 (no
 * difference seen to decide on).
 */
uint64_t split_rank__needed(double z, uint64_t n, double z_crit, uint64_t n_small);

/**
 * split_rank__apply - z, p, Holm-adjusted p, significance and samples needed
 * @r: frames with slow_n / fast_n filled in
 * @m: number of frames (all of them are tested)
 * @n1: slow samples, @n2: fast samples
 * @alpha: the family-wise error rate (SPLIT_ALPHA unless --split-alpha)
 *
 * Return: 0 or -ENOMEM.
 */
int split_rank__apply(struct split_frame_rank *r, size_t m, uint64_t n1, uint64_t n2,
		      double alpha);

/**
 * split_rank__recheck_moved - keep only the stars a biased split cannot fake
 * @r: frames ranked by split_rank__apply()
 * @m: number of frames
 * @n1: slow samples, @n2: fast samples
 * @moved: samples of the calls the bias moved at most, into the slow class
 *         when positive, out of it when negative
 * @alpha: the family-wise error rate
 *
 * Calls moved across the threshold mix the classes. For each significant
 * frame the move is undone in the way that most favours the star (the
 * moved samples all held the frame when it is more in the class they
 * went to, none did otherwise), and Fisher's exact test must still pass
 * at Bonferroni's alpha / @m; otherwise the star is withdrawn.
 */
/* The samples of the calls that may be in either class, per class they are
 * in now: all of them, and those whose stack holds one frame. */
struct split_ambiguous {
	uint64_t slow_total, fast_total;
	uint64_t slow_with, fast_with;
};

/**
 * split_rank__recheck_ambiguous - keep a star only if it survives the
 * ambiguous calls being in the other class
 * @k: a frame ranked by split_rank__apply()
 * @m: number of frames ranked
 * @n1: slow samples, @n2: fast samples
 * @a: the ambiguous calls' samples, all and those holding @k's frame
 * @alpha: the family-wise error rate
 *
 * The move that works most against the star, sample by sample (looser
 * than moving whole calls): for a frame more in the slow class, the
 * ambiguous slow samples that hold it go to the fast class and the
 * ambiguous fast ones that do not go to the slow class; the other way
 * round for a frame more in the fast class. The frame must stay more in
 * its class, and Fisher's exact test must still pass at alpha / @m. Knowing which frames the ambiguous samples
 * hold is what lets a cause that never runs in a call near the threshold
 * keep its star however many such calls there are.
 */
void split_rank__recheck_ambiguous(struct split_frame_rank *k, size_t m, uint64_t n1,
				   uint64_t n2, const struct split_ambiguous *a, double alpha);

void split_rank__recheck_moved(struct split_frame_rank *r, size_t m, uint64_t n1, uint64_t n2,
			       double moved, double alpha);

/**
 * split_rank__top - the frame that most explains the slow calls
 *
 * Return: the first ranked frame (ranks sorted by delta) if its delta is
 * positive, else NULL.
 */
const struct split_frame_rank *split_rank__top(const struct split_result *r);

/**
 * split_rank__needed_total - samples that would decide the split
 *
 * Return: the top frame's split_frame_rank.needed, or (no frame to rank)
 * enough to fill a class too small to test; 0 when the counts decide.
 */
uint64_t split_rank__needed_total(const struct split_result *r);

/**
 * split_rank__verdict - "significant", "inconclusive", "ambiguous" (the
 * calls the correction's error could put in either class hold all but a
 * few samples of a class, so there is nothing to compare with) or "no
 * difference"
 *
 * Return: a static string.
 */
const char *split_rank__verdict(const struct split_result *r);

#endif
