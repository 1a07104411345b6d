// SPDX-License-Identifier: GPL-2.0
/*
 * view_causal.c - `:causal [-l] SPEC [F1,F2,...] [-d SEC]` and the Causal
 * view (key 6): liveprof causal's experiments (user/session/causal.h), run
 * on the UI's own daemon and BPF object.
 *
 * The experiments take the daemon for up to -d seconds (30 by default):
 * they time windows of 0.1 s, which must not wait for the UI. So the run
 * is one call, and the UI lives inside it through causal_opts.on_wait:
 * every poll of the daemon it redraws (4 times a second) and reads keys,
 * where Esc or q ends the run early with what was measured. Sampling is
 * off during the experiments (a delay injected in a candidate would show
 * as its CPU) and on again after; the profile keeps what it had.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui-tui/tui_internal.h"
#include "user/session/causal.h"
#include "user/session/daemon.h"

#define CAUSAL_REDRAW_NS (250 * NS_PER_MS)
#define CAUSAL_TUI_S	 30.0 /* default -d */
#define CAUSAL_TUI_AUTO	 5    /* candidates picked by CPU share */

struct causal_view {
	struct causal_run run;
	bool have;    /* run holds a finished (or stopped) run */
	bool running; /* inside causal__run */
	volatile sig_atomic_t stop;
	uint64_t started_ns, last_draw_ns;
	double duration_s;
	char spec[256];
	char names[1024]; /* the candidates' names, cand points into it */
	const char *cand[CAUSAL_MAX_CAND];
	int n_cand;
	char err[256];
	int scroll;
};

void causal_free(struct tui *t)
{
	free(t->causal);
	t->causal = NULL;
}

/* The UI inside the run: redraw now and then, and let Esc or q stop it. */
static void on_wait(void *ctx)
{
	struct tui *t = ctx;
	struct causal_view *cv = t->causal;
	uint64_t now = lp_now_ns();
	int ch;

	while ((ch = getch()) != ERR)
		if (ch == TK_ESC || ch == 'q' || ch == 'Q')
			cv->stop = 1;
	if (*t->stop)
		cv->stop = 1;
	if (now - cv->last_draw_ns >= CAUSAL_REDRAW_NS) {
		cv->last_draw_ns = now;
		draw(t);
	}
}

/* "-l SPEC", "SPEC", "F1,F2", "-d SEC" in any order after the options. */
static int parse_args(struct causal_view *cv, char *arg, bool *latency)
{
	char *tok, *save = NULL;
	int words = 0;

	*latency = false;
	cv->duration_s = CAUSAL_TUI_S;
	cv->n_cand = 0;
	for (tok = strtok_r(arg, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		if (!strcmp(tok, "-l")) {
			*latency = true;
		} else if (!strcmp(tok, "-d")) {
			char *end, *v = strtok_r(NULL, " \t", &save);

			cv->duration_s = v ? strtod(v, &end) : 0;
			if (!v || *end || cv->duration_s < 5 || cv->duration_s > 3600)
				return -EINVAL;
		} else if (words == 0) {
			snprintf(cv->spec, sizeof(cv->spec), "%s", tok);
			words++;
		} else if (words == 1) {
			char *name, *s2 = NULL;

			snprintf(cv->names, sizeof(cv->names), "%s", tok);
			for (name = strtok_r(cv->names, ",", &s2);
			     name && cv->n_cand < CAUSAL_MAX_CAND; name = strtok_r(NULL, ",", &s2))
				cv->cand[cv->n_cand++] = name;
			words++;
		} else {
			return -EINVAL;
		}
	}
	return words ? 0 : -EINVAL;
}

/**
 * tui_causal_command - run `:causal`; the UI shows the Causal view throughout
 * @arg: the command's arguments, split in place
 *
 * Return: H_* flags.
 */
int tui_causal_command(struct tui *t, char *arg)
{
	struct causal_opts o = {
		.auto_n = CAUSAL_TUI_AUTO,
		.sample_s = 1.0,
		.window_s = 0.1,
		.delay_pct = 25,
		.target_half = 0.1,
		.max_overhead_pct = 30,
		.no_progress_s = 3,
		.on_wait = on_wait,
		.wait_ctx = t,
	};
	struct causal_view *cv = t->causal;
	bool latency;
	int err;

	if (!cv && !(cv = t->causal = calloc(1, sizeof(*cv)))) {
		set_msg(t, true, "out of memory");
		return 0;
	}
	if (parse_args(cv, arg, &latency)) {
		set_msg(t, true, "usage: :causal [-l] SPEC[@pNN] [F1,F2,...] [-d SEC (5-3600)]");
		return 0;
	}
	o.progress = latency ? NULL : cv->spec;
	o.latency = latency ? cv->spec : NULL;
	o.candidates = cv->n_cand ? cv->cand : NULL;
	o.n_candidates = cv->n_cand;
	o.duration_s = cv->duration_s;
	cv->err[0] = 0;
	cv->stop = 0;
	cv->have = false;
	cv->running = true;
	cv->scroll = 0;
	cv->started_ns = cv->last_draw_ns = lp_now_ns();
	t->view = VIEW_CAUSAL;
	set_msg(t, false, "causal: experiments for '%s'; Esc stops them", cv->spec);
	draw(t);
	err = causal__run(t->d, &o, &cv->run, &cv->stop, cv->err, sizeof(cv->err));
	cv->running = false;
	cv->have = !err || cv->run.n_cand > 0;
	if (daemon__targets_alive(t->d) && daemon__set_freq(t->d, t->d->freq))
		set_msg(t, true, "causal: cannot sample again");
	else if (err)
		set_msg(t, true, "causal: %s", cv->err);
	else
		set_msg(t, false, "causal: %d candidates in %.1f s%s", cv->run.n_cand,
			cv->run.elapsed_s, cv->stop ? " (stopped)" : "");
	return H_REBUILD | H_REDRAW;
}

/* One row per candidate while the run goes on. */
static void draw_progress(const struct causal_view *cv, int y0, int h)
{
	double el = (double)(lp_now_ns() - cv->started_ns) / 1e9;
	char line[512];
	int y = y0;

	snprintf(line, sizeof(line), "causal: progress point '%s', %.0f of %.0f s; Esc stops",
		 cv->spec, el, cv->duration_s);
	put(y++, 0, COLS, attrs[C_HEADER], line);
	if (!cv->run.n_cand) {
		put(y, 0, COLS, attrs[C_NORMAL], "measuring the progress point's rate...");
		return;
	}
	for (int i = 0; i < cv->run.n_cand && y < y0 + h; i++) {
		const struct causal_cand *c = &cv->run.cand[i];
		const char *state = c->skipped[0]	       ? c->skipped
				    : c->seconds > 0	       ? causal_verdict_name(c->verdict)
				    : c->n_pairs || c->mean_ns ? "running"
							       : "waiting";

		snprintf(line, sizeof(line), "%-32.32s cpu %5.1f%%  %3d pairs  %s", c->function,
			 c->cpu_share, c->n_pairs, state);
		put(y++, 0, COLS, attrs[C_NORMAL], line);
	}
}

void draw_causal(struct tui *t, int y0, int h)
{
	struct causal_view *cv = t->causal;
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f;
	int y = y0, skip;

	if (!cv || (!cv->running && !cv->have)) {
		put(y0, 0, COLS, attrs[C_NORMAL],
		    cv && cv->err[0] ? cv->err
				     : "no causal profile yet: :causal SPEC [F1,F2,...] runs one "
				       "(SPEC: the progress point, a function)");
		return;
	}
	if (cv->running) {
		draw_progress(cv, y0, h);
		return;
	}
	f = open_memstream(&buf, &len);
	if (!f)
		return;
	causal__print(&cv->run, f);
	fclose(f);
	skip = cv->scroll;
	for (line = strtok_r(buf, "\n", &save); line && y < y0 + h;
	     line = strtok_r(NULL, "\n", &save)) {
		if (skip-- > 0)
			continue;
		put(y, 0, COLS, y == y0 ? attrs[C_HEADER] : attrs[C_NORMAL], line);
		y++;
	}
	free(buf);
}

int causal_key(struct tui *t, int ch)
{
	struct causal_view *cv = t->causal;

	if (!cv)
		return 0;
	if (ch == KEY_DOWN || ch == 'j') {
		cv->scroll++;
		return H_REDRAW;
	}
	if ((ch == KEY_UP || ch == 'k') && cv->scroll > 0) {
		cv->scroll--;
		return H_REDRAW;
	}
	return 0;
}
