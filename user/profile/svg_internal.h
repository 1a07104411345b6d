/* SPDX-License-Identifier: GPL-2.0 */
/*
 * svg_internal.h - shared between write_svg.c and svg_tree.c only; not an
 * API. The tree of frame paths that a flamegraph is drawn from.
 */
#ifndef LP_PROFILE_SVG_INTERNAL_H
#define LP_PROFILE_SVG_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "user/profile/writers.h"

#define NO_NODE UINT32_MAX

struct node {
	const char *name;
	uint64_t name_hash;
	uint32_t parent;
	uint32_t depth;
	enum frame_kind kind;
	bool inlined; /* an inlined function: drawn in aqua, as flamegraph.pl draws "_[i]" */
	uint64_t value;
	uint64_t offcpu; /* part of value from off-CPU samples */
	uint64_t other;	 /* diff: value of the same path in the fast profile */
};

struct tree {
	struct node *nodes;
	size_t n, cap;
	uint32_t *slots; /* open addressing on (parent, name, kind): node index + 1 */
	size_t n_slots;
};

/**
 * svg_tree_build - merge the samples of @p into a new tree @t
 * @weight: add up weight_ns instead of counts
 *
 * Node 0 is the root, "all". Free @t with svg_tree_free().
 *
 * Return: 0 or -ENOMEM (then @t holds nothing).
 */
int svg_tree_build(struct tree *t, const struct profile *p, bool weight);

/**
 * svg_tree_overlay - add @p's values to the paths of @t they share, in node.other
 * @weight: add up weight_ns instead of counts
 * @total: receives the total value of @p
 *
 * Return: 0 or -ENOMEM.
 */
int svg_tree_overlay(struct tree *t, const struct profile *p, bool weight, uint64_t *total);

/**
 * svg_tree_free - free what svg_tree_build() allocated in @t
 */
void svg_tree_free(struct tree *t);

#endif
