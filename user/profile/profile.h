/* SPDX-License-Identifier: GPL-2.0 */
/*
 * profile.h - a symbolized profile: the one input of every writer.
 *
 * Frames are interned (same name/module/file/line -> same id). A sample is
 * a stack of frame ids, root first, with a count (samples), a weight in
 * nanoseconds (on-CPU: count * period; off-CPU: time blocked) and up to
 * PROFILE_MAX_LABELS string labels (pprof labels: class=slow, function=f).
 * Identical stacks with identical labels are merged.
 */
#ifndef LP_USER_PROFILE_H
#define LP_USER_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define PROFILE_MAX_LABELS 4

enum frame_kind {
	FRAME_USER = 0,
	FRAME_KERNEL,
	FRAME_ROOT,   /* synthetic root: process name */
	FRAME_MARKER, /* synthetic marker: "[off-cpu]", "[truncated]" */
};

struct frame {
	const char *name;     /* never NULL: "func", or "[module+0xoff]" when unknown */
	const char *module;   /* basename of the module, may be NULL */
	const char *path;     /* full path of the module, may be NULL */
	const char *build_id; /* hex, may be NULL or "" */
	const char *file;     /* source file, may be NULL */
	int line;	      /* 0 if unknown */
	uint64_t addr;	      /* module-relative address, 0 for synthetic frames */
	enum frame_kind kind;
	bool inlined;
};

struct label {
	const char *key; /* interned */
	const char *value;
};

struct profile_sample {
	uint32_t *frames; /* frame ids, root first */
	uint32_t depth;
	uint64_t count;
	uint64_t weight_ns;
	uint32_t n_labels;
	struct label labels[PROFILE_MAX_LABELS];
};

struct profile {
	char *name;	    /* what was profiled, e.g. "myserver (pid 42)" */
	uint64_t period_ns; /* sampling period, 0 if not sampled */
	uint64_t duration_ns;
	struct frame *frames;
	size_t n_frames, cap_frames;
	struct profile_sample *samples;
	size_t n_samples, cap_samples;
	uint64_t total_count;
	void *index; /* private: hash tables for interning */
};

/**
 * profile__new - create an empty profile
 * @name: a description of what was profiled, copied
 *
 * Return: the profile, or NULL on allocation failure.
 */
struct profile *profile__new(const char *name);

/** profile__free - free a profile and everything it owns */
void profile__free(struct profile *p);

/**
 * profile__intern_str - copy a string into the profile's string table
 *
 * Return: a pointer owned by the profile (same pointer for equal strings),
 * NULL for a NULL input or on allocation failure.
 */
const char *profile__intern_str(struct profile *p, const char *s);

/**
 * profile__intern_frame - find or add a frame, copying its strings
 *
 * Return: the frame id, or a negative errno.
 */
int64_t profile__intern_frame(struct profile *p, const struct frame *f);

/**
 * profile__add - add @count samples of the stack @frames (root first)
 * @labels: may be NULL when @n_labels is 0; keys and values are copied
 *
 * Return: 0, or a negative errno.
 */
int profile__add(struct profile *p, const uint32_t *frames, uint32_t depth, uint64_t count,
		 uint64_t weight_ns, const struct label *labels, uint32_t n_labels);

/**
 * profile__label - value of label @key on @s, or NULL
 */
const char *profile__label(const struct profile_sample *s, const char *key);

/**
 * profile__merge - add every sample of @src to @dst
 *
 * Frames and strings are re-interned in @dst; @src is not modified.
 *
 * Return: 0, or a negative errno (@dst may then hold part of @src).
 */
int profile__merge(struct profile *dst, const struct profile *src);

#endif /* LP_USER_PROFILE_H */
