/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sample_cost.h - what one sample costs the thread it interrupts, outside
 * the sampler program's own (measured in BPF) time: calibrated at the
 * start and again in short rounds through the session.
 */
#ifndef LP_USER_SAMPLE_COST_H
#define LP_USER_SAMPLE_COST_H

#include <stdbool.h>
#include <stdint.h>

struct bpf_session;

#define SAMPLE_COST_ROUNDS 32 /* the latest rounds kept */

/* One round of calibration: what its sampled pieces showed. */
struct sample_cost_round {
	uint64_t gap_ns;     /* what one sample adds to a piece of constant work */
	uint64_t spread_ns;  /* its uncertainty per sample (p10..p90 half-ranges) */
	uint64_t bracket_ns; /* median timed timer interrupt (0: not timed) */
	uint64_t irq_ns;     /* charged per sample beyond what BPF times of it */
	uint64_t scale_1024; /* per timed interrupt, its kernel part x this / 1024 more */
};

/* The charge in force: the median of the rounds kept. */
struct sample_cost {
	bool measured;
	bool bracket;	     /* the timer interrupt is timed per sample in BPF */
	uint64_t gap_ns;     /* what one sample adds to a piece of constant work */
	uint64_t spread_ns;  /* its uncertainty per sample (p10..p90 half-ranges) */
	uint64_t bracket_ns; /* median timed timer interrupt (0: not timed) */
	uint64_t irq_ns;     /* charged per sample beyond what BPF times of it */
	uint64_t scale_1024; /* per timed interrupt, its kernel part x this / 1024 more */
	uint64_t samples;    /* pieces with one sample inside */
	uint64_t gaps;	     /* pieces without */
	uint32_t n_rounds;   /* rounds in @rounds, a ring of the latest */
	uint32_t next_round; /* where the next round goes */
	uint32_t ticks;	     /* sample_cost__refine() calls */
	struct sample_cost_round rounds[SAMPLE_COST_ROUNDS];
};

/**
 * sample_cost__calibrate - time what a sample costs the interrupted thread
 * @bpf: the loaded session (its sampler is pointed at the calling thread)
 * @out: the result; out->irq_ns is also written to the BPF side
 *
 * Runs pieces of constant work in the calling thread while the sampler
 * samples it every 100 us: a warm-up round and three more, each up to
 * 0.2 s (about 15 ms on an idle CPU).
 *
 * Return: 0, or a negative errno (then only what BPF times is charged).
 */
int sample_cost__calibrate(struct bpf_session *bpf, struct sample_cost *out);

/**
 * sample_cost__refine - one more round, on the session's schedule
 * @bpf: the loaded session
 * @cost: a calibration sample_cost__calibrate() measured (else nothing runs)
 *
 * Called once a second from the daemon's tick: a round every call for
 * the first 30, then every tenth. The charge becomes the median of the
 * latest rounds, so a stretch of a busy machine at the start does not
 * decide it for the whole session.
 */
void sample_cost__refine(struct bpf_session *bpf, struct sample_cost *cost);

#endif
