/* SPDX-License-Identifier: GPL-2.0 */
/*
 * interp_procs.h - what python_procs.c and ruby_procs.c share: the table
 * of the processes looked at (by pid, looked at again after an exec), the
 * files asked once each whether they are an interpreter liveprof knows,
 * the cache of named interpreter frames, and the merge of an
 * interpreter's frames into a native stack where its evaluator loop's C
 * frames stand.
 */
#ifndef LP_SESSION_INTERP_PROCS_H
#define LP_SESSION_INTERP_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/liveprof.h"

struct sym_mapping;

/* What a language's merge did so far. */
struct interp_stats {
	uint64_t frames;	     /* interpreter frames merged into stacks */
	uint64_t frames_unnamed;     /* of those, whose code object or iseq could not be read */
	uint64_t frames_unqualified; /* Ruby: named, but their method's class could not be read */
	uint64_t samples_unmerged;   /* samples with interpreter frames but no loop frame */
	uint64_t read_faults;	     /* samples whose frame walk in BPF hit a failed read */
	int procs;		     /* processes recognized as the interpreter */
};

/* A process looked at: an interpreter of a known version or not. */
struct interp_proc {
	uint32_t pid; /* 0: free slot */
	char comm[LP_COMM_LEN];
	const void *file;	/* the language's file entry; NULL: not one we know */
	uint64_t bias;		/* runtime address - ELF address in that file */
	uint64_t look_again_ns; /* not 0: look at it again from then on */
};

/* Direct-mapped: a colliding frame replaces the one there (named again). */
#define INTERP_TAG_SLOTS 8192

struct interp_tag {
	uint32_t pid;			/* 0: empty */
	uint64_t code, instr, aux, tag; /* aux: lp_interp_frame.aux (Ruby's method) */
};

struct interp_table {
	struct interp_proc *procs; /* open addressing by pid, a power of 2 */
	size_t cap, used;
	struct interp_tag *tags;
};

/** interp_table__init - allocate an empty table; 0 or -ENOMEM */
int interp_table__init(struct interp_table *t);

/** interp_table__free - free what interp_table__init() allocated */
void interp_table__free(struct interp_table *t);

/** interp_table__find - @pid's entry, or the free slot where it would go */
struct interp_proc *interp_table__find(const struct interp_table *t, uint32_t pid);

/**
 * interp_table__visit - the entry of a sampled process, and whether it
 * must be looked at (again): new, exec'd (@comm changed), or its
 * look_again_ns has come
 * @exec: set when the entry was a known interpreter that exec'd: the
 *	caller forgets what it cached of it (interp_table__forget())
 *
 * Return: the entry (pid and comm set), or NULL without memory.
 */
struct interp_proc *interp_table__visit(struct interp_table *t, uint32_t pid, const char *comm,
					bool *look, bool *exec);

/** interp_table__forget - drop the named frames of @pid from the cache */
void interp_table__forget(struct interp_table *t, uint32_t pid);

/**
 * interp_tag__slot - the cache slot of frame (@code, @instr, @aux) of @pid
 * Return: the slot; it holds that frame when its pid, code, instr and aux
 * match.
 */
struct interp_tag *interp_tag__slot(const struct interp_table *t, uint32_t pid, uint64_t code,
				    uint64_t instr, uint64_t aux);

/* The files asked whether they are an interpreter, each once. */
struct interp_file {
	char *path;
	int err; /* of the language's runtime finder: 0 = one we know */
};

struct interp_files {
	void *items; /* @size bytes each, a struct interp_file first */
	size_t n, size;
};

/**
 * interp_files__get - the entry of @path, and whether it is new (to be
 * filled by the caller, path set, the rest zero)
 * Return: the entry, or NULL without memory.
 */
void *interp_files__get(struct interp_files *fs, const char *path, bool *added);

/** interp_files__free - free the entries and their paths */
void interp_files__free(struct interp_files *fs);

/** interp_base_starts - whether the file name of @path begins with @prefix */
bool interp_base_starts(const char *path, const char *prefix);

/**
 * interp_bias_of - runtime address - ELF address of the file mapped by @m
 * Return: 0 or a negative errno (the file cannot be read).
 */
int interp_bias_of(const struct sym_mapping *m, uint64_t *bias);

/* How a language's merge sees the stack. */
struct interp_merge_ops {
	/* whether @pc is in the evaluator loop's code */
	bool (*in_loop)(void *ctx, uint64_t pc);
	/* the stack entry of interpreter frame @f */
	uint64_t (*frame_tag)(void *ctx, const struct lp_interp_frame *f);
	/* optional: whether the frame at @pc, just leafward of a loop frame,
	 * belongs to the loop and goes with it */
	bool (*part_of_loop)(void *ctx, uint64_t pc);
};

/**
 * interp_merge - replace each evaluator loop frame of the native stack
 * @us (@n entries, leaf first, room for @max) by the interpreter frames
 * it runs: those of sample @s, split at the frames marked LP_PYF_ENTRY
 * (one group per loop call, innermost first; the outermost call takes
 * whatever is left)
 * @unmerged: counted when the sample has interpreter frames but its stack
 *	no loop frame
 *
 * Return: the new number of entries.
 */
unsigned int interp_merge(const struct interp_merge_ops *ops, void *ctx, const struct lp_sample *s,
			  uint64_t *us, unsigned int n, unsigned int max, uint64_t *unmerged);

#endif /* LP_SESSION_INTERP_PROCS_H */
