/* SPDX-License-Identifier: GPL-2.0 */
/*
 * emit.h - synthetic workloads with a known profile: `liveprof emit` writes
 * a program (C, Go, Python or Ruby) that reproduces a profile's call tree,
 * or a latency scenario with ground truth; `liveprof validate` builds one,
 * profiles it with liveprof and compares.
 *
 * The generator interface: emit_tree (emit_tree.h) turns the profile into
 * nodes (name, self work, children with weights); a backend turns the tree
 * into program text.
 */
#ifndef LP_USER_EMIT_H
#define LP_USER_EMIT_H

#include <stdio.h>

#include "user/synth/emit_tree.h"
#include "user/util/exit_codes.h"
#include "user/profile/profile.h"

struct emit_opts {
	double duration_s;    /* run this long, then exit; 0 = forever */
	double utilization;   /* (0, 1]: CPU share of one CPU, per thread */
	unsigned int threads; /* threads running the root loop, >= 1 */
	const char *source;   /* the input file, quoted in the header comment */
	const char *out_path; /* the file being written, for the build commands */
};

struct emit_backend {
	const char *lang; /* "c", "go", "python", "ruby" */
	const struct emit_ident_rules *rules;
	/* Write the program for @t (idents already assigned); 0 or -errno. */
	int (*write)(FILE *f, const struct emit_tree *t, const struct emit_opts *o);
};

extern const struct emit_backend emit_backend_c;
extern const struct emit_backend emit_backend_go;
extern const struct emit_backend emit_backend_python;
extern const struct emit_backend emit_backend_ruby;

/**
 * emit_backend_find - the backend for a language name ("c", "go", ...)
 *
 * Return: the backend, or NULL for an unknown language.
 */
const struct emit_backend *emit_backend_find(const char *lang);

/**
 * emit_prog_path - the program an emitted source file builds to, as a command
 * @src: the source file ("dir/x.c")
 * @buf: receives "dir/x" ("./x" for a bare name); @bufsz its size
 *
 * Return: @buf.
 */
const char *emit_prog_path(const char *src, char *buf, size_t bufsz);

/**
 * emit_build_command - the shell command that builds an emitted file
 * @lang: backend language
 * @src: the emitted source file
 * @buf: receives the command; @bufsz its size
 *
 * Return: @buf; for Python and Ruby, the command that runs the file.
 */
const char *emit_build_command(const char *lang, const char *src, char *buf, size_t bufsz);

/**
 * emit_comment_text - write @s inside a comment, harmlessly
 * @end: the comment terminator of the language ("*\/"), or NULL for line comments
 *
 * Control characters and non-ASCII bytes become '?', and @end is broken up,
 * so a hostile frame name cannot end the comment or the line early.
 */
void emit_comment_text(FILE *f, const char *s, const char *end);

/**
 * emit_script_header - the comment that opens a Python or Ruby program
 * (after its first line): where it comes from, how to run it, renames
 */
void emit_script_header(FILE *f, const struct emit_tree *t, const struct emit_opts *o,
			const char *lang);

/**
 * emit_write_child_calls - one "name(node)" call line per child of node @id
 * (the call syntax Python and Ruby share)
 */
void emit_write_child_calls(FILE *f, const struct emit_tree *t, uint32_t id, const char *indent);

/**
 * emit_write_renames - list the renamed functions, one "orig -> ident" per line
 * @prefix: starts every line (" * ", "// ", "# ")
 * @end: as for emit_comment_text()
 */
void emit_write_renames(FILE *f, const struct emit_tree *t, const char *prefix, const char *end);

/**
 * emit_write_file - emit the program for @p in @lang to @path
 * @err: receives a one-line message on failure (no "liveprof: " prefix)
 *
 * Writes to a temporary file next to @path and renames it, so a reader never
 * sees half a program.
 *
 * Return: 0, -EINVAL for an unusable profile, or another negative errno.
 */
int emit_write_file(const struct emit_backend *b, const struct profile *p,
		    const struct emit_opts *o, const char *path, char *err, size_t errsz);

/**
 * cmd_emit - `liveprof emit`: argv[0] is "emit"
 *
 * Return: the process exit status (enum lp_exit: EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, EXIT_OUTPUT).
 */
int cmd_emit(int argc, char **argv);

/**
 * cmd_validate - `liveprof validate`: argv[0] is "validate"
 *
 * Return: the process exit status (enum lp_exit: EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, EXIT_OUTPUT).
 */
int cmd_validate(int argc, char **argv);

/* lp_now() and lp_spin() of the emitted C programs (emit_c.c, scenario_write.c). */
extern const char emit_c_clock_fn[];
extern const char emit_c_spin_fn[];

#endif /* LP_USER_EMIT_H */
