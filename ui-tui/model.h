/* SPDX-License-Identifier: GPL-2.0 */
/*
 * model.h - the view model of the terminal UI: call trees and flat
 * function tables built from the daemon's counts (model.c).
 */
#ifndef LP_UI_TUI_MODEL_H
#define LP_UI_TUI_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "user/session/split.h"

struct profile;
struct tui;

#define NO_NODE UINT32_MAX

/* One call-tree node; [0] is the profile (or slow calls), [1] fast calls. */
struct tnode {
	const char *name;
	uint64_t path; /* hash of the names from the root: survives rebuilds */
	uint64_t total[2], self[2];
	uint32_t parent, first_child, next_sibling;
	uint16_t depth;
	bool match, sub_match;
};

/*
 * A hash slot holds the path itself, so that a lookup touches one cache
 * line and not the node: with 10^5 nodes, memory is what a rebuild costs.
 * Two different paths with one 64-bit hash are not worth a string compare
 * (odds about n^2 / 2^65).
 */
struct tslot {
	uint64_t path;
	uint32_t id1; /* node index + 1; 0: empty */
};

struct tree {
	struct tnode *n;
	size_t len, cap;
	struct tslot *ht; /* path -> node, open addressing */
	size_t ht_cap;
	uint64_t grand[2];
};

struct func_row {
	const char *name;
	uint64_t self, cum;
	uint64_t last; /* sample stamp: count a function once per stack */
};

struct funcs {
	struct func_row *r;
	size_t len, cap;
	uint32_t *ht;
	size_t ht_cap;
	uint64_t total;
};

struct model {
	struct profile *prof;
	struct tree tree;
	struct funcs funcs;
	/* the split, when there is one */
	bool has_split;
	uint64_t split_gen; /* the daemon's split_gen when sr was computed */
	struct split_result sr;
	struct profile *slow, *fast;
	struct tree dtree;
	struct funcs sfuncs, ffuncs;
	uint64_t built_ns, build_cost_ns;
	uint64_t built_samples; /* d->samples when built */
};

/* A tiny u64 -> i8 map for the expand/collapse state of tree paths. */
struct pathset {
	uint64_t *keys;
	int8_t *vals;
	size_t cap, len;
};

int pathset_get(const struct pathset *s, uint64_t key);
int pathset_set(struct pathset *s, uint64_t key, int val);
void pathset_free(struct pathset *s);

uint32_t tree_find(const struct tree *tr, uint64_t path);
void tree_mark_search(struct tree *tr, const char *needle);
int push_row(uint32_t **rows, size_t *n, size_t *cap, uint32_t id);

bool use_weight(const struct tui *t);
int model_build(struct tui *t);
void model_drop_split(struct model *m);
void model_free(struct model *m);
struct profile *zoomed_profile(struct tui *t);

#endif
