// SPDX-License-Identifier: GPL-2.0
/*
 * validate_run.c - the processes of `liveprof validate`: the compiler, the
 * emitted program and the liveprof that profiles it.
 */
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "user/util/exit_codes.h"
#include "user/util/log.h"
#include "user/util/util.h"
#include "user/synth/validate.h"

pid_t validate_spawn(char *const argv[], char *const env[], bool quiet)
{
	pid_t pid;

	/* The child's freopen() would write our buffered report a second time. */
	fflush(stdout);
	pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		for (; env && *env; env++)
			putenv(*env);
		if (quiet && !freopen("/dev/null", "w", stdout))
			_exit(127);
		execvp(argv[0], argv);
		fprintf(stderr, "liveprof: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

int validate_wait(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

void validate_stop(pid_t pid)
{
	kill(pid, SIGTERM);
	validate_wait(pid);
}

void validate_sleep(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

double validate_now(void)
{
	return (double)lp_now_ns() * 1e-9;
}

int validate_run_liveprof(const struct vopts *vo, pid_t pid, double freq, double seconds,
			  const char *out, const char *split, const char *json)
{
	char pidbuf[32], fbuf[32], dbuf[32];
	char *argv[20];
	int n = 0, ret;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(fbuf, sizeof(fbuf), "%g", freq);
	snprintf(dbuf, sizeof(dbuf), "%g", seconds);
	argv[n++] = (char *)vo->liveprof;
	argv[n++] = "-p";
	argv[n++] = pidbuf;
	argv[n++] = "-F";
	argv[n++] = fbuf;
	argv[n++] = "-d";
	argv[n++] = dbuf;
	if (split) {
		argv[n++] = "--split";
		argv[n++] = (char *)split;
		/* The truth is the program's own clock, which sees every cost of
		 * sampling and probing: compare it with latencies as measured. */
		argv[n++] = "--raw-latency";
	}
	if (json) {
		argv[n++] = "--json";
		argv[n++] = (char *)json;
	}
	argv[n++] = "-o";
	argv[n++] = (char *)out;
	argv[n++] = "--no-tui";
	/* emitted programs inline their spin loop: its samples are the caller's */
	argv[n++] = "--no-inline";
	argv[n] = NULL;
	/* Its report goes to stdout; ours is the comparison. Errors still show. */
	ret = validate_wait(validate_spawn(argv, NULL, true));
	if (!ret)
		return 0;
	if (split)
		lp_err("validate: liveprof --split %s -p %s failed (exit %d)", split, pidbuf, ret);
	else
		lp_err("validate: liveprof -p %s failed (exit %d)", pidbuf, ret);
	/* Its own status says why (privileges, BPF); a plain runtime error is ours. */
	return ret > EXIT_USAGE && ret < 128 ? ret : EXIT_NO_TARGET;
}

/*
 * Wait until the program @pid (running @prog) has created @ready (its calls
 * have started), at most @timeout seconds; 0 or EXIT_NO_TARGET after a
 * message (then the program is stopped or gone).
 */
static int wait_ready(pid_t pid, const char *prog, const char *ready, double timeout)
{
	double end = validate_now() + timeout;
	int st;

	while (access(ready, F_OK) != 0) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			lp_err("validate: '%s' exited (%s %d) before it started its calls", prog,
			       WIFEXITED(st) ? "status" : "signal",
			       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			return EXIT_NO_TARGET;
		}
		if (validate_now() > end) {
			lp_err("validate: '%s' did not start its calls in %g s", prog, timeout);
			validate_stop(pid);
			return EXIT_NO_TARGET;
		}
		validate_sleep(0.02);
	}
	return 0;
}

/*
 * Start the program with its truth file @truthp for @dur seconds; a script
 * creates @ready once it starts its calls. Its pid or -errno.
 */
static pid_t scenario_start(const struct vopts *vo, const char *src, const char *prog,
			    const char *truthp, const char *ready, const char *dur)
{
	char envt[4200], envr[4200];
	char *env[] = {envt, "LIVEPROF_TRUTH_TIMES=1", envr, NULL};

	snprintf(envt, sizeof(envt), "LIVEPROF_TRUTH=%s", truthp);
	snprintf(envr, sizeof(envr), "LIVEPROF_READY=%s", ready);
	if (vlang_find(vo->lang)->script) {
		char *argv[] = {(char *)validate_tool(vo), (char *)src, (char *)dur, NULL};

		return validate_spawn(argv, env, true);
	} else {
		char *argv[] = {(char *)prog, (char *)dur, NULL};

		return validate_spawn(argv, env, true);
	}
}

int validate_launch_scenario(const struct vopts *vo, const char *src, const char *prog,
			     const char *truthp, const char *ready, const char *dur, pid_t *pid)
{
	bool script = vlang_find(vo->lang)->script;
	int ret;

	unlink(ready);
	*pid = scenario_start(vo, src, prog, truthp, ready, dur);
	if (*pid < 0) {
		lp_err("validate: cannot run '%s': %s", script ? src : prog, strerror((int)-*pid));
		return EXIT_NO_TARGET;
	}
	/*
	 * A script must be running its calls when liveprof attaches: py: and
	 * rb: traces need the interpreter's process (python3 may be pyenv's
	 * shim, which execs it later), which liveprof recognizes at its first
	 * sample. It says when: however slow the interpreter is to start, the
	 * probes go in while its calls run. Calls before the probes are in do
	 * not count (the truth is cut to liveprof's window) but tell what the
	 * probes cost (interp_cost()).
	 */
	if (script) {
		ret = wait_ready(*pid, src, ready, 30);
		if (ret)
			return ret;
	}
	validate_sleep(0.3);
	return 0;
}
