// SPDX-License-Identifier: GPL-2.0
/*
 * commands.c - the commands of the ':' prompt (trace, untrace, split,
 * line, freq, window, offcpu, pause, resume, save, causal, quit) and their
 * dispatch. Each returns H_* flags and reports on the message line.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ui-tui/tui_internal.h"
#include "user/session/daemon.h"
#include "user/profile/profile.h"
#include "user/session/report.h"
#include "user/session/split.h"
#include "user/session/traces.h"

static int cmd_trace(struct tui *t, const char *arg, bool line)
{
	char err[256] = "";
	int id, i;

	if (!arg[0]) {
		set_msg(t, true, line ? "usage: :line FILE:LINE" : "usage: :trace SPEC");
		return 0;
	}
	if (line && !strchr(arg, ':')) {
		set_msg(t, true, "'%s' is not FILE:LINE", arg);
		return 0;
	}
	id = daemon__trace(t->d, arg, NULL, err, sizeof(err));
	if (id < 0) {
		set_msg(t, true, "%s", err);
		return 0;
	}
	i = traces__find(t->d->traces, id);
	t->lat_sel = i >= 0 ? i : 0;
	t->view = VIEW_LATENCY;
	set_msg(t, false, "tracing '%s' (probe %d)", arg, id);
	return H_REBUILD;
}

static int cmd_untrace(struct tui *t, const char *arg)
{
	char err[256] = "";

	if (!arg[0]) {
		set_msg(t, true, "usage: :untrace SPEC");
		return 0;
	}
	/* The model may point into the split the daemon is about to drop. */
	model_drop_split(&t->m);
	if (daemon__untrace(t->d, arg, err, sizeof(err))) {
		set_msg(t, true, "%s", err);
		return 0;
	}
	set_msg(t, false, "untraced '%s'", arg);
	return H_REBUILD;
}

static int cmd_split(struct tui *t, char *arg)
{
	char *func = strtok(arg, " \t"), *p = strtok(NULL, " \t");
	char spec[300], err[256] = "";
	double pct;

	if (!func) {
		set_msg(t, true, "usage: :split FUNC [pNN]");
		return 0;
	}
	/* ":split f p99" and ":split f@p99" are the same spec. */
	snprintf(spec, sizeof(spec), "%s%s%s", func, p && *p != '@' ? "@" : "", p ? p : "");
	if (split_spec_parse(spec, err, sizeof(err), &pct, err, sizeof(err))) {
		set_msg(t, true, "%s", err);
		return 0;
	}
	model_drop_split(&t->m);
	if (daemon__split(t->d, spec, NULL, NULL, err, sizeof(err))) {
		set_msg(t, true, "%s", err);
		return 0;
	}
	t->view = VIEW_SPLIT;
	t->split_mode = SPLIT_RANKS;
	t->split_scroll = 0;
	set_msg(t, false, "splitting '%s' at p%g: ranks fill in as sampled calls end", func, pct);
	return H_REBUILD;
}

static int cmd_freq(struct tui *t, const char *arg)
{
	char *end;
	long hz = strtol(arg, &end, 10);
	int err;

	if (!arg[0] || *end || hz < 1 || hz > 100000) {
		set_msg(t, true, "usage: :freq HZ (1 to 100000)");
		return 0;
	}
	err = daemon__set_freq(t->d, (unsigned int)hz);
	if (err) {
		set_msg(t, true, "cannot sample at %ld Hz: %s", hz, strerror(-err));
		return 0;
	}
	set_msg(t, false, "sampling at %ld Hz", hz);
	return H_REDRAW;
}

static int cmd_window(struct tui *t, const char *arg)
{
	char *end;
	long sec = strtol(arg, &end, 10);
	int err;

	if (!arg[0] || *end || sec < 1 || sec > MAX_WINDOW_SLOTS) {
		set_msg(t, true, "usage: :window SEC (1 to %d)", MAX_WINDOW_SLOTS);
		return 0;
	}
	err = daemon__set_window(t->d, (int)sec);
	if (err) {
		set_msg(t, true, "cannot set the window: %s", strerror(-err));
		return 0;
	}
	t->window = true;
	set_msg(t, false, "window is now %lds (it refills from now)", sec);
	return H_REBUILD;
}

static int cmd_offcpu(struct tui *t, const char *arg)
{
	bool on;

	if (!strcmp(arg, "on"))
		on = true;
	else if (!strcmp(arg, "off"))
		on = false;
	else {
		set_msg(t, true, "usage: :offcpu on|off");
		return 0;
	}
	/* The off-CPU program is loaded at start or not at all. */
	if (!t->d->core.opts->offcpu) {
		set_msg(t, true,
			on ? "off-CPU was not loaded: restart liveprof with --offcpu"
			   : "off-CPU is already off (not loaded)");
		return 0;
	}
	t->show_offcpu = on;
	set_msg(t, false, "off-CPU samples %s", on ? "shown" : "hidden");
	return H_REBUILD;
}

/**
 * set_paused - pause or resume sampling
 * @t: the UI state
 * @paused: true to pause
 *
 * Return: H_* flags; 0 on failure, with a message.
 */
int set_paused(struct tui *t, bool paused)
{
	int err;

	err = daemon__pause(t->d, paused);
	if (err == -EALREADY) {
		set_msg(t, false, "already %s", paused ? "paused" : "live");
		return H_REDRAW;
	}
	if (err) {
		set_msg(t, true, "cannot %s: %s", paused ? "pause" : "resume", strerror(-err));
		return 0;
	}
	set_msg(t, false, paused ? "paused: the view is frozen" : "live");
	return paused ? H_REDRAW : H_REBUILD;
}

static int cmd_save(struct tui *t, const char *path)
{
	struct profile *p, *zoomed = NULL;
	uint64_t samples;
	const char *what;
	int err;

	if (!path[0]) {
		set_msg(t, true, "usage: :save FILE (.folded, .svg or .pb.gz)");
		return 0;
	}
	if (report__format_of(path) < 0) {
		set_msg(t, true, "unknown format of '%s': use .folded, .svg or .pb.gz", path);
		return 0;
	}
	/* The current view: slow or fast calls in Split, else what is shown. */
	p = t->m.prof;
	if (t->view == VIEW_SPLIT && t->m.has_split)
		p = t->split_mode == SPLIT_FAST ? t->m.fast : t->m.slow;
	if (!p) {
		set_msg(t, true, "nothing to save yet");
		return 0;
	}
	if (t->view == VIEW_TREE && t->n_zoom) {
		p = zoomed = zoomed_profile(t);
		if (!p) {
			set_msg(t, true, "cannot save: out of memory");
			return 0;
		}
	}
	samples = p->total_count;
	what = p == t->m.slow	? ", slow calls"
	       : p == t->m.fast ? ", fast calls"
	       : zoomed		? ", zoomed frame"
				: "";
	err = report__write_file(t->d, p, path);
	profile__free(zoomed);
	if (err) {
		set_msg(t, true, "cannot write '%s': %s", path, strerror(-err));
		return 0;
	}
	set_msg(t, false, "wrote '%s' (%" PRIu64 " samples%s)", path, samples, what);
	return H_REDRAW;
}

/**
 * run_command - parse and run one command line of the ':' prompt
 * @t: the UI state
 * @line: the line, without the ':'; split in place
 *
 * Return: H_* flags; errors go to the message line.
 */
int run_command(struct tui *t, char *line)
{
	char *cmd, *arg;

	while (isspace((unsigned char)*line))
		line++;
	cmd = line;
	while (*line && !isspace((unsigned char)*line))
		line++;
	if (*line)
		*line++ = 0;
	while (isspace((unsigned char)*line))
		line++;
	arg = line;
	for (char *e = arg + strlen(arg); e > arg && isspace((unsigned char)e[-1]);)
		*--e = 0;
	if (!cmd[0])
		return 0;
	if (!strcmp(cmd, "trace"))
		return cmd_trace(t, arg, false);
	if (!strcmp(cmd, "line"))
		return cmd_trace(t, arg, true);
	if (!strcmp(cmd, "untrace"))
		return cmd_untrace(t, arg);
	if (!strcmp(cmd, "split"))
		return cmd_split(t, arg);
	if (!strcmp(cmd, "freq"))
		return cmd_freq(t, arg);
	if (!strcmp(cmd, "window"))
		return cmd_window(t, arg);
	if (!strcmp(cmd, "offcpu"))
		return cmd_offcpu(t, arg);
	if (!strcmp(cmd, "pause"))
		return set_paused(t, true);
	if (!strcmp(cmd, "resume"))
		return set_paused(t, false);
	if (!strcmp(cmd, "save"))
		return cmd_save(t, arg);
	if (!strcmp(cmd, "causal"))
		return tui_causal_command(t, arg);
	if (!strcmp(cmd, "quit") || !strcmp(cmd, "q"))
		return H_QUIT;
	set_msg(t, true, "unknown command '%s' (? lists them)", cmd);
	return 0;
}
