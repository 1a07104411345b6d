/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scenario.h - latency scenarios with ground truth, for checking the split.
 * The text format is documented at the top of scenario.c and in
 * `liveprof emit --help`.
 */
#ifndef LP_USER_SCENARIO_H
#define LP_USER_SCENARIO_H

#include <stddef.h>
#include <stdio.h>

#include "user/synth/emit.h"

enum scenario_wait {
	SCENARIO_CPU = 0, /* the slow cause burns CPU */
	SCENARIO_SLEEP,	  /* it sleeps (nanosleep) */
	SCENARIO_BLOCK,	  /* it blocks on a lock that someone else holds */
};

struct scenario {
	char *handler; /* the function whose calls are split, "handle" */
	char *cause;   /* the function only slow calls make, "slow_path" */
	double rate;   /* calls per second per thread; 0 = back to back */
	unsigned int threads;
	double fast_pct; /* share of fast calls, percent */
	double slow_pct; /* share of slow calls, percent; fast + slow = 100 */
	double work_us;	 /* CPU every call spends in the handler itself */
	double cause_us; /* what the cause adds to a slow call */
	enum scenario_wait wait;
	long long arg_over; /* slow when arg > this; -1: the argument is just 0 or 1 */
	double seconds;	    /* default run time of the program; 0 = forever */
};

/**
 * scenario_parse - parse a scenario spec
 * @sc: filled on success; free with scenario_free() (also after a failure)
 * @buf: the text; @len its length
 * @err: receives "scenario line 3, column 6: unknown keyword 'fsat'" style
 *       messages; may be NULL
 *
 * Return: 0, -EINVAL for a syntax or consistency error, -ENOMEM.
 */
int scenario_parse(struct scenario *sc, const char *buf, size_t len, char *err, size_t errsz);

/**
 * scenario_read_file - scenario_parse() on a file; messages quote @path
 *
 * Return: 0 or a negative errno.
 */
int scenario_read_file(struct scenario *sc, const char *path, char *err, size_t errsz);

/** scenario_free - free the strings of @sc and zero it */
void scenario_free(struct scenario *sc);

/**
 * scenario_write_c - write the C program of scenario @sc
 * @o: out_path, source and duration_s (overrides sc->seconds when > 0) are used
 *
 * The program calls the handler at the given rate; with LIVEPROF_TRUTH=FILE
 * in its environment it writes one "latency_ns slow" line per call to FILE
 * when it exits (after its duration, or on SIGINT/SIGTERM).
 *
 * Return: 0, or a negative errno (write error).
 */
int scenario_write_c(FILE *f, const struct scenario *sc, const struct emit_opts *o);

/**
 * scenario_write_python - write the Python program of scenario @sc
 * (scenario_write_python.c): scenario_write_c()'s semantics and truth file
 * for CPython 3.11+; the handler and the cause are module-level functions
 * of the spec's names, so `--split py:HANDLER@p95` splits it.
 *
 * Return: 0, or a negative errno (write error).
 */
int scenario_write_python(FILE *f, const struct scenario *sc, const struct emit_opts *o);

/* The class of a Ruby scenario's handler and cause: rb:Handler#handle. */
#define SCENARIO_RUBY_CLASS "Handler"

/**
 * scenario_write_ruby - write the Ruby program of scenario @sc
 * (scenario_write_ruby.c): scenario_write_c()'s semantics and truth file for
 * CRuby 3.1; the handler and the cause are methods of class Handler, so
 * `--split rb:Handler#HANDLER@p95` splits it. The program enables an empty
 * TracePoint(:call, :return), without which Ruby 3.1 fires no method probe.
 *
 * Return: 0, or a negative errno (write error).
 */
int scenario_write_ruby(FILE *f, const struct scenario *sc, const struct emit_opts *o);

/* A scenario writer: scenario_write_c() and its kin. */
typedef int scenario_write_fn(FILE *f, const struct scenario *sc, const struct emit_opts *o);

/**
 * scenario_writer - the scenario writer of language @lang
 *
 * Return: the writer for c, python or ruby, or NULL for any other language.
 */
scenario_write_fn *scenario_writer(const char *lang);

/**
 * scenario_check_names - refuse handler or cause names that @lang would
 * need to rename (keywords, builtins, the program's own "_lp_" names): the
 * emitted functions must come back under the spec's names
 * @err: receives the message on -EINVAL
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int scenario_check_names(const struct scenario *sc, const char *lang, char *err, size_t errsz);

/**
 * scenario_write_intro - the program's opening comment, shared by the
 * writers: what the scenario does, how to run it, its truth file
 * @o: source and out_path name the spec and the program in the text
 * @lang: c, python or ruby (a script's comment also names LIVEPROF_READY)
 * @pfx: starts each line (" * " in C, "# " in scripts)
 * @seconds: the program's default run time
 */
void scenario_write_intro(FILE *f, const struct scenario *sc, const struct emit_opts *o,
			  const char *lang, const char *pfx, double seconds);

/**
 * scenario_write_constants - a script's constants of @sc, one "NAME = value"
 * line each, named @pfx + SECONDS, RATE, THREADS, SLOW_FRACTION, ARG_OVER,
 * WORK_NS, CAUSE_NS (the C program's #defines, in ns)
 */
void scenario_write_constants(FILE *f, const struct scenario *sc, const char *pfx, double seconds);

/** scenario_wait_name - "cpu", "sleep" or "block" */
const char *scenario_wait_name(enum scenario_wait w);

/* The text of the format, for --help. */
extern const char scenario_help[];

#endif /* LP_USER_SCENARIO_H */
