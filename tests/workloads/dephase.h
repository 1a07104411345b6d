/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dephase.h - a random pause of CPU work between a workload's rounds.
 *
 * A workload that repeats one fixed round (fast(), then slow()) is
 * periodic; when a round lasts about a whole number of the sampler's
 * periods (1 ms at 999 Hz), the samples lock onto a few places in the
 * round and stop being independent draws of its shares, and a correct
 * profile then misses the truth by more than binomial noise. A pause of
 * random CPU length after each round moves the sampler's phase by a
 * random amount; over a few rounds the phase is uniform. It must burn
 * CPU: the cpu-clock sampler counts the thread's CPU time, so a sleep
 * would not move the phase at all. The pause has its own frame,
 * dephase(), under main, outside every function a test counts.
 */
#ifndef LP_WORKLOAD_DEPHASE_H
#define LP_WORKLOAD_DEPHASE_H

#include <stdlib.h>

/**
 * dephase - burn a random number of loop iterations in [0, @max_iters)
 * @seed: the caller's rand_r() state
 * @max_iters: the longest pause, about one unit of the round's work
 */
__attribute__((noinline, noclone)) void dephase(unsigned int *seed, unsigned long max_iters)
{
	volatile unsigned long acc = 0;
	unsigned long n = (unsigned long)rand_r(seed) % max_iters;

	for (unsigned long i = 0; i < n; i++)
		acc += i;
}

#endif
