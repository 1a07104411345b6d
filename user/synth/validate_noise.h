/* SPDX-License-Identifier: GPL-2.0 */
/*
 * validate_noise.h - how far a sampled profile lands from the profile it was
 * sampled from by chance alone.
 *
 * Null model: n samples are a multinomial draw from the expected shares p.
 * The total variation distance TVD = 0.5 * sum |p_i - k_i / n| of such a draw
 * has no closed form for its tail, so it is simulated: k_i are drawn as
 * independent Poisson(n p_i) counts and normalised by their sum (a
 * multinomial conditioned on its total, which differs from the fixed-n one
 * only by the total's own +-sqrt(n) wobble). Each draw costs O(cells), not
 * O(n), so 10^5 draws take well under a second.
 */
#ifndef LP_USER_VALIDATE_NOISE_H
#define LP_USER_VALIDATE_NOISE_H

#include <stddef.h>
#include <stdint.h>

struct noise_rng {
	uint64_t s[4];
};

/** noise_rng_seed - seed the xoshiro256** generator from @seed (splitmix64) */
void noise_rng_seed(struct noise_rng *r, uint64_t seed);

/** noise_poisson - one Poisson(@lambda) draw (inversion below 10, else PTRS) */
uint64_t noise_poisson(struct noise_rng *r, double lambda);

struct noise_tvd {
	double mean, sd; /* of the TVD under the null model */
	double quantile; /* its (1 - alpha) quantile */
	double alpha;
	size_t draws;
};

/**
 * noise_tvd_simulate - the distribution of the TVD of n samples drawn from @p
 * @p: expected shares of @k cells, summing to 1 (cells with 0 are allowed)
 * @n: samples per draw (> 0)
 * @alpha: tail probability of the reported quantile, in (0, 0.5)
 * @draws: simulated draws; at least 20 / @alpha gives a quantile with ~20
 *         draws beyond it (fewer: the largest draw is reported)
 * @seed: the generator's seed, so that a run can be repeated exactly
 * @out: receives mean, sd and the quantile
 *
 * Return: 0, or -ENOMEM.
 */
int noise_tvd_simulate(const double *p, size_t k, double n, double alpha, size_t draws,
		       uint64_t seed, struct noise_tvd *out);

/**
 * noise_tvd_expected - the mean TVD by the normal approximation of each cell,
 * 0.5 * sum sqrt(2 p (1 - p) / (pi n)): cheap, for planning only
 */
double noise_tvd_expected(const double *p, size_t k, double n);

#endif
