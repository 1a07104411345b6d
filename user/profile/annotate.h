/* SPDX-License-Identifier: GPL-2.0 */
/*
 * annotate.h - samples per source line and per instruction of the hot
 * functions of a profile, as perf annotate shows them: the model behind
 * -o annotate.txt and the TUI's Source view.
 *
 * A sample counts as self for the function whose code it was in (the
 * innermost real function; inlined code counts for the function it was
 * inlined into, under the line of the call) and as total for every
 * function on its stack, once per sample however often the function
 * recurses. Frame addresses of callers are return addresses minus one,
 * so they land on the call instruction.
 */
#ifndef LP_USER_ANNOTATE_H
#define LP_USER_ANNOTATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dwarf/src_func.h"
#include "user/profile/profile.h"

struct annot_line {
	int line;
	uint64_t self, total;
	bool has_code;
	bool loop;	     /* holds a backward jump inside the function */
	bool branch;	     /* holds a forward conditional jump */
	int depth;	     /* least nesting (lexical blocks, inlined scopes) of its code */
	const char *inlined; /* a function inlined at this line (owned by sf), NULL if none */
};

struct annot_func {
	struct src_func *sf; /* instructions and source text */
	char *module;	     /* basename of the binary */
	char *path;	     /* the binary as mapped */
	uint64_t self, total;
	uint64_t *insn_self, *insn_total; /* parallel to sf->insns */
	struct annot_line *lines;	  /* sf->first_line .. sf->last_line */
	int n_lines;
	uint64_t unplaced_self, unplaced_total; /* at no line of the function's own file */
	bool has_source;			/* sf->lines holds the text */
};

struct annotate {
	struct annot_func *funcs; /* hottest first (self, then total) */
	size_t n;
	uint64_t total; /* samples in the profile */
};

/* Binaries and their DWARF kept open between builds (the Source view rebuilds each second). */
struct annotate_cache;

/** annotate_cache__new - an empty cache; NULL without memory */
struct annotate_cache *annotate_cache__new(void);

/** annotate_cache__free - close every binary of @bc; NULL is a no-op */
void annotate_cache__free(struct annotate_cache *bc);

struct annotate_opts {
	struct annotate_cache *cache; /* NULL: open the binaries for this build only */
	const char *func;	      /* only functions of this name; NULL: the hottest */
	int max_funcs;		      /* <= 0: 10 */
	double min_pct;		      /* hot: at least this % of all samples in self; <= 0: 1 */
};

/**
 * annotate__build - the per-line and per-instruction samples of @p's hot functions
 * @o: may be NULL for the defaults
 * @out: set to the result, free with annotate__free()
 *
 * Binaries are reopened from the frames' paths; one whose build-id no
 * longer matches the profile's is skipped. Sources are looked for as
 * src_func__load_source() does.
 *
 * Return: 0 (possibly with no functions), or -ENOMEM.
 */
int annotate__build(const struct profile *p, const struct annotate_opts *o, struct annotate **out);

/** annotate__free - free @a; NULL is a no-op */
void annotate__free(struct annotate *a);

/**
 * annotate__line - the entry of @line in @f, or NULL if outside the function
 */
const struct annot_line *annotate__line(const struct annot_func *f, int line);

/**
 * write_annotate - write @p like perf annotate --stdio
 *
 * Per function: where its debug info and source came from (or where the
 * source was looked for), then each source line with self and total
 * samples and their share of the function's, loop/branch/inline marks,
 * then the instructions with their samples.
 *
 * Return: 0, or a negative errno.
 */
int write_annotate(const struct profile *p, FILE *out, const struct annotate_opts *o);

#endif /* LP_USER_ANNOTATE_H */
