// SPDX-License-Identifier: GPL-2.0
/*
 * serve_ui.c - the live web UI: its embedded files, and the commands it
 * POSTs (trace, untrace, split, unsplit, window), which go through the
 * session's command API like the TUI's ':' commands.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "user/serve/assets.h"
#include "user/serve/serve_internal.h"

enum MHD_Result serve_ui__asset(struct request *r, const char *path)
{
	if (!strcmp(path, "/"))
		path = "/index.html";
	for (size_t i = 0; i < serve_n_assets; i++)
		if (!strcmp(serve_assets[i].path, path))
			return serve__reply_static(r, 200, serve_assets[i].ctype,
						   serve_assets[i].data, serve_assets[i].len);
	return serve__error(r, 404, "not found");
}

static int run_command(struct daemon *d, const char *cmd, const char *arg, double num, char *msg,
		       size_t len)
{
	char spec[300];
	int err;

	if (!strcmp(cmd, "trace")) {
		err = daemon__trace(d, arg, NULL, msg, len);
		if (err >= 0)
			snprintf(msg, len, "tracing '%s'", arg);
		return err < 0 ? -EINVAL : 0;
	}
	if (!strcmp(cmd, "untrace")) {
		err = daemon__untrace(d, arg, msg, len);
		if (!err)
			snprintf(msg, len, "untraced '%s'", arg);
		return err;
	}
	if (!strcmp(cmd, "split")) {
		snprintf(spec, sizeof(spec), "%s@p%g", arg, num > 0 ? num : 95);
		err = daemon__split(d, spec, NULL, NULL, msg, len);
		if (!err)
			snprintf(msg, len, "splitting '%s' at p%g", arg, num > 0 ? num : 95);
		return err;
	}
	if (!strcmp(cmd, "unsplit")) {
		daemon__unsplit(d);
		snprintf(msg, len, "split stopped");
		return 0;
	}
	if (!strcmp(cmd, "window")) {
		err = num >= 1 && num <= MAX_WINDOW_SLOTS ? daemon__set_window(d, (int)num)
							  : -EINVAL;
		snprintf(msg, len,
			 err ? "invalid window '%g' (1 to %d seconds)"
			     : "window is now %gs (it refills from now)",
			 num, MAX_WINDOW_SLOTS);
		return err;
	}
	snprintf(msg, len, "unknown command '%.32s'", cmd);
	return -ENOENT;
}

/*
 * Body: {"cmd": "trace"|"untrace"|"split"|"unsplit"|"window", "arg": "FUNC",
 * "num": percentile or seconds}. Answer: {"ok": bool, "msg": "..."}.
 */
enum MHD_Result serve_ui__command(struct request *r)
{
	const char *cmd = NULL, *arg = "";
	json_error_t jerr;
	json_t *in, *out;
	double num = 0;
	char msg[320];
	char *s;
	int err;

	in = r->body ? json_loadb(r->body, r->body_len, 0, &jerr) : NULL;
	if (!in || json_unpack(in, "{s:s,s?s,s?F}", "cmd", &cmd, "arg", &arg, "num", &num)) {
		json_decref(in);
		return serve__error(r, 400, "malformed command (JSON with cmd, arg, num)");
	}
	err = run_command(r->sv->d, cmd, arg, num, msg, sizeof(msg));
	json_decref(in);
	out = json_pack("{s:b,s:s}", "ok", !err, "msg", msg);
	s = out ? json_dumps(out, JSON_COMPACT) : NULL;
	json_decref(out);
	if (!s)
		return serve__error(r, 500, "out of memory");
	/* A command that failed is the client's to fix: 422, with the reason. */
	return serve__reply(r, err ? 422 : 200, "application/json", s, strlen(s));
}
