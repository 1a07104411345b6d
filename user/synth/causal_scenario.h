/* SPDX-License-Identifier: GPL-2.0 */
/*
 * causal_scenario.h - programs with a known causal profile, for checking
 * `liveprof causal` (`liveprof emit --scenario causal-NAME[:FUNC=PCT]`,
 * `liveprof validate --causal NAME`). Each has a progress point
 * (item_done), one function that gates it and one that does not, although
 * the one that does not uses as much CPU or more; and one (tail) whose
 * metric is a percentile of a function's latency, where the function that
 * holds most of the CPU matters least.
 */
#ifndef LP_SYNTH_CAUSAL_SCENARIO_H
#define LP_SYNTH_CAUSAL_SCENARIO_H

#include <stdbool.h>
#include <stdio.h>

#define CAUSAL_SCENARIO_PREFIX "causal-"

struct causal_scenario {
	const char *name;     /* "pipeline", "spin", "lock", "kink" */
	const char *what;     /* one line for the header and --help */
	const char *gating;   /* the function whose speedup speeds the program up */
	const char *idle;     /* the function whose speedup does nothing */
	const char *progress; /* the progress point */
	double gating_impact; /* expected impact of @gating, from the model (approx.) */
	/* a latency point ("handle@p95") that is the metric instead of the
	 * progress point's throughput, or NULL */
	const char *latency;
};

/**
 * causal_scenario_find - the scenario called @name, or NULL
 */
const struct causal_scenario *causal_scenario_find(const char *name);

/** causal_scenario_list - the names, comma separated, for messages */
const char *causal_scenario_list(void);

/**
 * causal_scenario_parse - parse "causal-NAME[:FUNC=PCT]"
 * @sc: receives the scenario
 * @func: receives FUNC, or "" when no function is sped up; @funclen its size
 * @pct: receives PCT (0..90), 0 when none
 *
 * Return: 0, or -EINVAL with a message in @err.
 */
int causal_scenario_parse(const char *spec, const struct causal_scenario **sc, char *func,
			  size_t funclen, double *pct, char *err, size_t errlen);

/**
 * causal_scenario_write_c - write the C program of @sc, with @func's work
 * made @pct % smaller (a real speedup; none when @func is "" or @pct is 0)
 * @seconds: the default run time (the program's first argument overrides it)
 *
 * The program prints "progress SECONDS ITEMS FAST" every 0.25 s on stdout;
 * run as "./prog SECONDS alternate" it turns the speedup on in every other
 * quarter second, for paired real measurements in one process. A latency
 * scenario also prints "latency SECONDS FAST P95_NS CALLS" for the calls of
 * each quarter second, once its mode has changed.
 * Return: 0, or -EIO on a write error.
 */
int causal_scenario_write_c(FILE *f, const struct causal_scenario *sc, const char *func, double pct,
			    double seconds);

#endif
