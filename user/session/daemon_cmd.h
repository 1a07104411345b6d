/* SPDX-License-Identifier: GPL-2.0 */
/*
 * daemon_cmd.h - the commands a front end sends to a running session:
 * trace, untrace, split, unsplit. The web UI sends them; they do what the
 * TUI's ':' commands do, with a one-line message for the user.
 */
#ifndef LP_SESSION_DAEMON_CMD_H
#define LP_SESSION_DAEMON_CMD_H

#include <stddef.h>

struct daemon;

/**
 * daemon__trace - trace @spec (as --trace), unless it is already traced
 * @msg: a one-line message for the user, on success and on failure
 *
 * Return: the probe id (>= 0), or a negative errno (-EEXIST: already traced).
 */
int daemon__trace(struct daemon *d, const char *spec, char *msg, size_t len);

/**
 * daemon__untrace - detach the trace of @spec (its spec or function name);
 * a split of it goes too
 *
 * Return: 0, or a negative errno (-ENOENT: not traced).
 */
int daemon__untrace(struct daemon *d, const char *spec, char *msg, size_t len);

/**
 * daemon__split - split @func at the @pct percentile (0 < pct < 100),
 * tracing it first if needed; a split of another function is replaced
 *
 * Return: 0, or a negative errno.
 */
int daemon__split(struct daemon *d, const char *func, double pct, char *msg, size_t len);

/** daemon__unsplit - stop splitting; the trace stays */
void daemon__unsplit(struct daemon *d);

#endif
