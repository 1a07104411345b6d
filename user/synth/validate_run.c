// SPDX-License-Identifier: GPL-2.0
/*
 * validate_run.c - the processes of `liveprof validate`: the compiler, the
 * emitted program and the liveprof that profiles it.
 */
#include <errno.h>
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

int validate_wait_ready(pid_t pid, const char *prog, const char *ready, double timeout)
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
