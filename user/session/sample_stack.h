/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sample_stack.h - the user stack of a sample, for the daemon's intake.
 */
#ifndef LP_USER_SESSION_SAMPLE_STACK_H
#define LP_USER_SESSION_SAMPLE_STACK_H

#include <stdint.h>

#include "bpf/liveprof.h"

struct daemon;

/**
 * sample_stack__user - the user stack of sample @s, leaf first
 * @d: the daemon (unwinder, symbolizer, probe sites, counters)
 * @s: the sample
 * @mem: what follows it: the red zone, then the copy of the user stack
 * @us: filled with up to MAX_USER_FRAMES pcs
 * @flags: STACK_F_TRUNCATED or STACK_F_UNWIND_ERROR added when so
 *
 * dwarf and auto unwind every sample with CFI over the copy; fp takes the
 * kernel's frame-pointer walk and puts back with CFI the caller a
 * frameless leaf hides. Samples in the [uprobes] page or one past a
 * probe's breakpoint are first moved to the state they stand for
 * (stack_fixup__state()).
 *
 * Return: the number of pcs in @us.
 */
unsigned int sample_stack__user(struct daemon *d, const struct lp_sample *s, const void *mem,
				uint64_t *us, uint32_t *flags);

#endif
