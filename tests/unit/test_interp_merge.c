// SPDX-License-Identifier: GPL-2.0
/*
 * test_interp_merge.c - interp_merge(): each evaluator loop frame of a
 * native stack gives way to the interpreter frames it runs, innermost
 * first, up to the frame its call began with (LP_PYF_ENTRY); frames whose
 * loop is not on the native stack (a C method about to run a block, the
 * block's frame pushed, its loop not begun) go at the leaf.
 */
#include <string.h>
#include "unit.h"
#include "user/session/interp_procs.h"

/* Native pcs: loop frames live in [LOOP, LOOP + 0x100). */
#define LOOP	 0x1000u
#define C_LEAF	 0x5000u /* the C code that pushes the block's frame */
#define C_YIELD	 0x5100u
#define C_EACH	 0x5200u
#define C_START	 0x6000u
#define TAG_BASE 0xf000u

static bool in_loop(void *ctx, uint64_t pc)
{
	(void)ctx;
	return pc >= LOOP && pc < LOOP + 0x100;
}

static uint64_t frame_tag(void *ctx, const struct lp_interp_frame *f)
{
	(void)ctx;
	return TAG_BASE + f->code;
}

static const struct interp_merge_ops ops = {.in_loop = in_loop, .frame_tag = frame_tag};

/* Interpreter frames, innermost first: code ids 1.. and entry flags. */
static void set_frames(struct lp_sample *s, const int *entry, unsigned int n)
{
	s->n_interp = (__u16)n;
	for (unsigned int i = 0; i < n; i++) {
		s->interp[i].code = i + 1;
		s->interp[i].instr = 0x100 | (entry[i] ? LP_PYF_ENTRY : 0);
	}
}

static struct lp_sample sample;

/* Merge @us (@n frames) with the frames of @entry; check it gives @want. */
static void check_merge(const int *entry, unsigned int ni, uint64_t *us, unsigned int n,
			const uint64_t *want, unsigned int n_want)
{
	uint64_t unmerged = 0;

	memset(&sample, 0, sizeof(sample));
	set_frames(&sample, entry, ni);
	CHECK_EQ_INT(interp_merge(&ops, NULL, &sample, us, n, 16, &unmerged), n_want);
	CHECK(!memcmp(us, want, n_want * sizeof(*want)));
	CHECK_EQ_INT(unmerged, 0);
}

/* block(E) | via_each, worker, main-block(E) */
static const int block_entry[] = {1, 0, 0, 1};

/* A block run by Array#each: both loops on the native stack. */
UNIT_TEST(every_call_on_its_loop)
{
	uint64_t us[16] = {LOOP + 0x10, C_YIELD + 1, C_EACH + 1, LOOP + 0x21, C_START + 1};
	static const uint64_t want[] = {TAG_BASE + 1, C_YIELD + 1,  C_EACH + 1, TAG_BASE + 2,
					TAG_BASE + 3, TAG_BASE + 4, C_START + 1};

	check_merge(block_entry, 4, us, 5, want, 7);
}

/* The block's frame is pushed, its loop not begun: it is the leaf. */
UNIT_TEST(block_before_its_loop_goes_at_the_leaf)
{
	uint64_t us[16] = {C_LEAF, C_YIELD + 1, C_EACH + 1, LOOP + 0x21, C_START + 1};
	static const uint64_t want[] = {TAG_BASE + 1, C_LEAF,	    C_YIELD + 1,  C_EACH + 1,
					TAG_BASE + 2, TAG_BASE + 3, TAG_BASE + 4, C_START + 1};

	check_merge(block_entry, 4, us, 5, want, 8);
}

/* No loop frame at all: the native stack stays as it is, counted. */
UNIT_TEST(no_loop_is_unmerged)
{
	static const int entry[] = {1};
	uint64_t us[4] = {C_LEAF, C_START + 1};
	uint64_t unmerged = 0;

	memset(&sample, 0, sizeof(sample));
	set_frames(&sample, entry, 1);
	CHECK_EQ_INT(interp_merge(&ops, NULL, &sample, us, 2, 4, &unmerged), 2);
	CHECK_EQ_INT(unmerged, 1);
	CHECK(us[0] == C_LEAF && us[1] == C_START + 1);
}

UNIT_MAIN()
