/* SPDX-License-Identifier: GPL-2.0 */
/*
 * callwork.h - the work of one fast call in the split workloads.
 *
 * A split classes each sampled call by its latency less what its samples
 * cost (18-50 us each on these VMs, measured with an uncertainty of a few
 * us). The calls whose corrected latency lies within that uncertainty of
 * the threshold are ambiguous. If every fast call did the same work, the
 * p95 threshold (in the fast calls' tail, since 1 call in 32 is slow) would
 * sit a few us above nearly all of them and they would all be ambiguous.
 * So a fast call does a random amount of work, uniform over one to three
 * units of about 50 us: about 1% of the fast calls lie in each us near the
 * threshold, whatever the correction, and a slow call (SLOW_UNITS units
 * more) lies milliseconds above it.
 */
#ifndef LP_WORKLOAD_CALLWORK_H
#define LP_WORKLOAD_CALLWORK_H

#include <stdlib.h>

/* loop iterations of about 50 us (0.47 ns each, measured here) */
#define WORK_UNIT 107000UL
/* a slow call's extra work: 100 units, 5 ms, 61% of the calls' work */
#define SLOW_UNITS 100UL

/**
 * fast_work - the loop iterations of one fast call, uniform in [1, 3) units
 * @seed: the calling thread's rand_r() state
 */
static inline unsigned long fast_work(unsigned int *seed)
{
	return WORK_UNIT + (unsigned long)rand_r(seed) % (2 * WORK_UNIT);
}

#endif
