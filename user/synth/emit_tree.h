/* SPDX-License-Identifier: GPL-2.0 */
/*
 * emit_tree.h - the call tree a synthetic program reproduces.
 *
 * The stacks of a profile are merged into a tree rooted at a synthetic node
 * 0: a node is one place in the tree (a path of names from the root), with
 * the samples that ended there (self) and under it (total). Each distinct
 * name becomes one function in the emitted program; the function takes a
 * node id and does that node's work, so a name that appears at several
 * places (or recursively) is still one function.
 */
#ifndef LP_USER_EMIT_TREE_H
#define LP_USER_EMIT_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "user/profile/profile.h"

/* Deeper stacks are cut here (their samples go to the last kept frame):
 * interpreters and small thread stacks cannot recurse much further. */
#define EMIT_MAX_DEPTH 2048

#define EMIT_NONE UINT32_MAX

struct emit_node {
	uint32_t name;	 /* index into emit_tree.names; EMIT_NONE for the root */
	uint32_t parent; /* EMIT_NONE for the root */
	uint32_t first_child, last_child, next_sibling; /* EMIT_NONE when absent */
	uint32_t depth;					/* root = 0 */
	uint64_t self;					/* samples that ended here */
	uint64_t total;					/* self + the totals of the children */
};

struct emit_name {
	char *orig;	/* the frame name from the profile */
	char *ident;	/* the identifier in the target language, see emit_tree__idents() */
	bool renamed;	/* ident differs from orig */
	uint32_t first; /* this name's nodes: tree.name_nodes[first .. first + count) */
	uint32_t count;
	uint64_t self; /* sum of the nodes' self counts: the expected self share */
};

struct emit_tree {
	struct emit_node *nodes; /* nodes[0] is the root; a parent precedes its children */
	size_t n_nodes, cap_nodes;
	struct emit_name *names;
	size_t n_names, cap_names;
	uint32_t *name_nodes; /* node ids grouped by name, in node order */
	uint64_t total;	      /* samples in the tree */
	uint32_t max_depth;
	uint64_t truncated; /* samples whose stack was cut at EMIT_MAX_DEPTH */
};

/* How a language spells identifiers and which ones it keeps for itself. */
struct emit_ident_rules {
	const char *const *reserved; /* NULL-terminated: keywords, builtins, runtime names */
	bool (*is_reserved)(const char *ident); /* extra check, may be NULL */
	const char *internal_prefix;		/* names the emitted runtime uses ("lp_") */
	const char *suffix;			/* appended to a reserved name ("_fn") */
	size_t max_len;				/* identifiers are cut to this length */
};

/**
 * emit_tree__build - merge the stacks of @p into a call tree
 * @t: zeroed by the caller; filled on success, owned by the caller
 *     (emit_tree__free(), also after a failure)
 * @p: the profile; not referenced after the call
 *
 * Return: 0, -EINVAL when @p has no samples, -ENOMEM.
 */
int emit_tree__build(struct emit_tree *t, const struct profile *p);

/** emit_tree__free - free what emit_tree__build() allocated; @t may be zeroed */
void emit_tree__free(struct emit_tree *t);

/**
 * emit_sanitize - turn a frame name into an identifier of a language
 * @name: any string
 * @r: the language's rules
 *
 * Bytes other than [A-Za-z0-9_] become '_', a leading digit gets a '_'
 * prefix, and a reserved word or a name in the runtime's namespace gets
 * @r->suffix. Uniqueness is not handled here (see emit_tree__idents()).
 *
 * Return: a malloc'd identifier owned by the caller, NULL on allocation failure.
 */
char *emit_sanitize(const char *name, const struct emit_ident_rules *r);

/**
 * emit_tree__idents - give every name of @t a unique identifier
 * @t: the tree; names[].ident and names[].renamed are (re)set
 * @r: the language's rules
 *
 * Two names that sanitize alike get "_2", "_3", ... appended to the later one.
 *
 * Return: 0, or -ENOMEM.
 */
int emit_tree__idents(struct emit_tree *t, const struct emit_ident_rules *r);

#endif /* LP_USER_EMIT_TREE_H */
