/* SPDX-License-Identifier: GPL-2.0 */
/*
 * validate.h - the pieces of `liveprof validate` (internal to it):
 * validate.c runs programs and liveprof, validate_plan.c decides at which
 * granularity, frequency and length to compare and what the comparison
 * says, validate_scenario.c checks the split and the percentiles of a
 * latency scenario, validate_noise.c models sampling noise.
 */
#ifndef LP_USER_VALIDATE_H
#define LP_USER_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "user/profile/profile.h"
#include "user/synth/emit_tree.h"
#include "user/synth/validate_noise.h"

/* The outcome of a comparison; the exit statuses are in enum lp_exit. */
enum vverdict {
	VERDICT_PASS,
	VERDICT_FAIL,
	VERDICT_INCONCLUSIVE,
};

/* The chance, per validate run, of FAIL when the distance is within tolerance. */
#define VALIDATE_ALPHA 0.001
/* At most this many looks at the samples (each at VALIDATE_ALPHA / looks). */
#define VALIDATE_MAX_LOOKS 3

struct vopts {
	const char *from, *spec, *lang, *liveprof, *keep;
	const char *program;	 /* run this instead of emitting one */
	const char *interpreter; /* python/ruby: run the program with this */
	double seconds;		 /* sampling budget, the upper bound */
	bool seconds_given;
	double tolerance;    /* the distance that still counts as right */
	double freq;	     /* 0: chosen by the planner */
	uint64_t seed;	     /* of the noise simulation */
	const char *causal;  /* --causal NAME: check liveprof causal (validate_causal.c) */
	double speedup;	     /* --speedup PCT: how much faster the variant's function is */
	double real_seconds; /* each run of the real comparison */
};

/*
 * The comparison's cells: functions whose expected share the samples can
 * resolve each have one; the rest share "(other)".
 */
struct vcells {
	size_t n_names;
	uint32_t *cell_of; /* name -> cell */
	size_t n_cells;
	const char **label; /* cell -> a profile name, or "(other functions)" */
	double *expected;   /* cell -> expected share */
	uint64_t *measured; /* cell -> samples, summed over the looks */
	size_t other;	    /* the "(other)" cell, or n_cells when there is none */
	size_t merged;	    /* names in "(other)" with self samples */
};

struct vplan {
	double n_target; /* samples that let the run decide */
	double freq;	 /* Hz */
	double seconds;	 /* of the first look */
};

/**
 * vcells_plan - choose the cells and the first look's frequency and length
 * @vc: zeroed; filled on success, freed with vcells_free() (also on failure)
 * @t: the emitted tree (names[].self are the expected counts)
 * @vo: the budget (seconds), tolerance and a fixed frequency if given
 * @plan: receives the plan
 *
 * Return: 0 or -ENOMEM.
 */
int vcells_plan(struct vcells *vc, const struct emit_tree *t, const struct vopts *vo,
		struct vplan *plan);

/** vcells_free - free what vcells_plan() allocated */
void vcells_free(struct vcells *vc);

struct vresult {
	uint64_t n; /* samples in the cells */
	double tvd; /* observed */
	struct noise_tvd noise;
	enum vverdict verdict;
	double n_needed; /* INCONCLUSIVE: samples that would decide */
};

/**
 * vcells_decide - compare the measured counts with the expectation
 * @vc: cells with their measured counts
 * @tolerance: the distance that still counts as right
 * @alpha: the error probability of this look
 * @seed: of the noise simulation
 * @res: receives the distance, the noise and the verdict
 *
 * Return: 0 or -ENOMEM.
 */
int vcells_decide(const struct vcells *vc, double tolerance, double alpha, uint64_t seed,
		  struct vresult *res);

/** vcells_print - the table of the largest cells, the granularity and the samples */
void vcells_print(const struct vcells *vc, uint64_t elsewhere);

/* Processes (validate_run.c). */

/** validate_spawn - run @argv with @env ("K=V") added; stdout to /dev/null if @quiet
 * Return: the pid, or a negative errno. */
pid_t validate_spawn(char *const argv[], char *const env[], bool quiet);

/** validate_wait - wait for @pid
 * Return: its exit status, 128 + signal, or a negative errno. */
int validate_wait(pid_t pid);

/** validate_stop - SIGTERM @pid and reap it */
void validate_stop(pid_t pid);

/**
 * validate_launch_scenario - start a scenario's program and wait until
 * liveprof can attach to it
 * @src, @prog: the emitted source and, for C, the built program
 * @truthp: its LIVEPROF_TRUTH file (with start times)
 * @ready: the file a Python or Ruby program creates once its calls start
 * @dur: its run time in seconds, as text
 * @pid: receives its pid; the caller stops it (validate_stop())
 *
 * Return: 0, or EXIT_NO_TARGET after a message.
 */
int validate_launch_scenario(const struct vopts *vo, const char *src, const char *prog,
			     const char *truthp, const char *ready, const char *dur, pid_t *pid);

/** validate_sleep - sleep @s seconds, across signals */
void validate_sleep(double s);

/** validate_now - CLOCK_MONOTONIC in seconds */
double validate_now(void);

/* Languages (validate_lang.c). */

/* A language validate can emit, build or run, and read back. */
struct vlang {
	const char *name;      /* --lang */
	const char *title;     /* for messages */
	const char *ext;       /* of the emitted source */
	const char *tool;      /* builds (cc, go) or runs (python3, ruby) it */
	const char *tool_desc; /* for messages */
	bool script;	       /* run from source by an interpreter */
};

/** vlang_find - the language called @name, or NULL */
const struct vlang *vlang_find(const char *name);

/**
 * validate_check_tool - whether @vo's compiler or interpreter can be run
 * Return: 0, or EXIT_NO_TARGET after a message that names it.
 */
int validate_check_tool(const struct vopts *vo);

/**
 * validate_build - build the emitted @src into @prog (cc -O0 or go build;
 * nothing for an interpreted language)
 * Return: 0, or EXIT_NO_TARGET after a message.
 */
int validate_build(const char *lang, const char *dir, const char *src, const char *prog);

/**
 * validate_start_program - start the program under test for @seconds
 * @src: the emitted source (what an interpreter runs, unless --program)
 * @prog: the built program (compiled languages)
 * Return: its pid, or a negative errno.
 */
pid_t validate_start_program(const struct vopts *vo, const char *src, const char *prog,
			     const char *seconds);

/** validate_tool - the compiler or interpreter of @vo's language (--interpreter or the default) */
const char *validate_tool(const struct vopts *vo);

/**
 * validate_script_frame_name - the length of NAME when @frame is
 * "NAME (@file:LINE)", a frame of the emitted script that liveprof merged
 *
 * Return: that length, or 0 for any other frame.
 */
size_t validate_script_frame_name(const char *frame, const char *file);

/**
 * validate_leaf_ident - the emitted function a measured sample counts for
 * @t: the emitted tree, with its identifiers
 * @src_base: the file name of the emitted source (interpreted languages'
 *	frames name it)
 * @m, @s: the measured profile and one of its samples
 *
 * Compiled languages: the leaf frame. Interpreted ones: the deepest frame
 * of the emitted script, whatever evaluator frames run below it.
 *
 * Return: the index in @t's names, or -1 when the sample is elsewhere.
 */
long validate_leaf_ident(const struct emit_tree *t, const struct vopts *vo, const char *src_base,
			 const struct profile *m, const struct profile_sample *s);

/**
 * validate_run_liveprof - profile @pid for @seconds at @freq into @out
 * @split: a --split spec or NULL; @json: a --json path or NULL
 * Return: 0, liveprof's own exit status when it is >= 3 (privileges, BPF),
 * else EXIT_NO_TARGET, after a message.
 */
int validate_run_liveprof(const struct vopts *vo, pid_t pid, double freq, double seconds,
			  const char *out, const char *split, const char *json);

/**
 * validate_scenario - `validate --scenario`: the split and the percentiles
 *
 * Return: an exit status (enum lp_exit).
 */
int validate_scenario(const struct vopts *vo, const char *dir);

/**
 * validate_causal - `validate --causal NAME`: predict with liveprof causal,
 * compare with a real speedup of an emitted variant (validate_causal.c)
 *
 * Return: the exit status (0 PASS, 1 FAIL, 10 INCONCLUSIVE).
 */
int validate_causal(const struct vopts *vo, const char *dir);

#endif
