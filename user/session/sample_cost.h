/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sample_cost.h - what one sample costs the thread it interrupts, outside
 * the sampler program's own (measured in BPF) time: calibrated once.
 */
#ifndef LP_USER_SAMPLE_COST_H
#define LP_USER_SAMPLE_COST_H

#include <stdbool.h>
#include <stdint.h>

struct bpf_session;

struct sample_cost {
	bool measured;
	bool bracket;	     /* the timer interrupt is timed per sample in BPF */
	uint64_t gap_ns;     /* what one sample adds to a piece of constant work */
	uint64_t spread_ns;  /* its uncertainty per sample (p10..p90 half-ranges) */
	uint64_t bracket_ns; /* median timed timer interrupt (0: not timed) */
	uint64_t irq_ns;     /* charged per sample beyond what BPF times of it */
	uint64_t scale_1024; /* per timed interrupt, its length x this / 1024 more */
	uint64_t samples;    /* pieces with one sample inside */
	uint64_t gaps;	     /* pieces without */
};

/**
 * sample_cost__calibrate - time what a sample costs the interrupted thread
 * @bpf: the loaded session (its sampler is pointed at the calling thread)
 * @out: the result; out->irq_ns is also written to the BPF side
 *
 * Runs pieces of constant work in the calling thread while the sampler
 * samples it every 100 us, for up to 0.6 s (tens of ms on an idle CPU).
 *
 * Return: 0, or a negative errno (then only what BPF times is charged).
 */
int sample_cost__calibrate(struct bpf_session *bpf, struct sample_cost *out);

#endif
