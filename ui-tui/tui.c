// SPDX-License-Identifier: GPL-2.0
/*
 * tui.c - the interactive terminal UI: Top, Tree, Latency and Split views
 * over the daemon's live state, a status line, a help bar and a command
 * prompt that attaches and detaches probes while the target keeps running.
 *
 * This file holds the main loop and the key dispatch; tui_term.c sets the
 * terminal up and restores it on every path out. The model (model.c), the views
 * (view_*.c), the frame (screen.c), the prompts (prompt.c), the commands
 * (commands.c) and the drawing primitives (draw.c) share tui_internal.h.
 *
 * One loop owns input, data refresh and redraw (htop's ScreenManager):
 *   - it waits on stdin for at most a few milliseconds, then drains the
 *     ring buffer without blocking, so events keep flowing while the user
 *     types and a key is handled as soon as it arrives;
 *   - the view model (call tree, flat table, split) is rebuilt at most
 *     once per daemon tick (one second) or when a command changes what is
 *     shown, never per key: keys only move over the model;
 *   - a frame is drawn with erase + wnoutrefresh + doupdate, which sends
 *     only the difference to the terminal (no flicker).
 *
 */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <curses.h>

#include "ui-tui/tui.h"
#include "ui-tui/tui_internal.h"
#include "user/session/daemon.h"
#include "user/util/util.h"

#define POLL_MS	       20 /* longest wait for a key before draining events */
#define EARLY_BUILD_NS (200 * NS_PER_MS)
#define KEY_IDLE_NS    (300 * NS_PER_MS) /* typing pauses the once-a-second rebuild... */
#define MAX_DEFER_NS   (3 * NS_PER_SEC)	 /* ...for at most this long */

/**
 * set_msg - show a message on the message line for a few seconds
 * @t: the UI state
 * @err: true for an error (red)
 * @fmt: printf format and its arguments
 */
void set_msg(struct tui *t, bool err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->msg, sizeof(t->msg), fmt, ap);
	va_end(ap);
	t->msg_err = err;
	t->msg_ns = lp_now_ns();
}

/**
 * relayout - recompute the visible rows of every view from the model
 * @t: the UI state
 *
 * Return: 0, or -ENOMEM.
 */
int relayout(struct tui *t)
{
	int err = top_rows(&t->m.funcs, t->search, t->sort, &t->top_rows, &t->n_top_rows);

	if (!err)
		err = tree_layout(t);
	if (!err)
		err = diff_layout(t);
	return err;
}

/**
 * rebuild - rebuild the model and the rows; failures go to the message line
 * @t: the UI state
 */
void rebuild(struct tui *t)
{
	int err = model_build(t);

	if (!err)
		err = relayout(t);
	if (err)
		set_msg(t, true, "cannot build the view: %s", strerror(-err));
}

/**
 * move_key - Up/Down/PgUp/PgDn/Home/End on a list
 * @ch: the key
 * @sel: the selected row, clamped to [0, @n)
 * @n: rows in the list
 *
 * Return: true when @ch was a move key.
 */
bool move_key(int ch, int *sel, int n)
{
	int page = content_rows() > 2 ? content_rows() - 2 : 1;

	switch (ch) {
	case KEY_UP:
	case 'k':
		(*sel)--;
		break;
	case KEY_DOWN:
	case 'j':
		(*sel)++;
		break;
	case KEY_PPAGE:
		*sel -= page;
		break;
	case KEY_NPAGE:
		*sel += page;
		break;
	case KEY_HOME:
	case 'g':
		*sel = 0;
		break;
	case KEY_END:
	case 'G':
		*sel = n - 1;
		break;
	default:
		return false;
	}
	if (*sel >= n)
		*sel = n - 1;
	if (*sel < 0)
		*sel = 0;
	return true;
}

/* A name the model gave an inlined frame ("func [inlined]"). */
static bool inlined_name(const char *name)
{
	size_t n = strlen(name), m = strlen(" " TUI_INLINED_MARK);

	return n > m && !strcmp(name + n - m, " " TUI_INLINED_MARK);
}

/**
 * selected_function - the function under the cursor in Top or Tree, or NULL
 * @t: the UI state
 */
const char *selected_function(struct tui *t)
{
	if (t->view == VIEW_TOP && t->n_top_rows) {
		const char *name = t->m.funcs.r[t->top_rows[t->top_sel]].name;

		/* Markers such as "[off-cpu]" are not functions to probe,
		 * nor is an inlined copy (it has no entry of its own). */
		return name[0] == '[' || inlined_name(name) ? NULL : name;
	}
	if (t->view == VIEW_TREE && tree_cursor(t) != NO_NODE) {
		const struct tnode *nd = &t->m.tree.n[tree_cursor(t)];

		/* The process root and markers are not functions to probe. */
		if (nd->depth <= 1 || nd->name[0] == '[' || inlined_name(nd->name))
			return NULL;
		return nd->name;
	}
	return NULL;
}

/**
 * offer - pre-fill the ':' prompt with @cmd on the selected function
 * @t: the UI state
 * @cmd: the command
 * @suffix: appended after the function
 *
 * Return: H_REDRAW.
 */
int offer(struct tui *t, const char *cmd, const char *suffix)
{
	const char *fn = selected_function(t);
	char buf[LINE_MAX_LEN];

	if (!fn) {
		set_msg(t, true, "select a function first");
		return H_REDRAW;
	}
	/* Pre-fill the prompt rather than act: probing is an intrusion. */
	snprintf(buf, sizeof(buf), "%s %s%s", cmd, fn, suffix);
	prompt_open(&t->cmd, ':', buf);
	return H_REDRAW;
}

static int handle_key(struct tui *t, int ch)
{
	int r = 0;

	if (ch == KEY_RESIZE)
		return H_REDRAW;
	if (t->cmd.active)
		return cmd_key(t, ch);
	if (t->find.active)
		return find_key(t, ch);
	if (t->help) {
		t->help = false;
		return H_REDRAW;
	}
	switch (t->view) {
	case VIEW_TOP:
		r = top_key(t, ch);
		break;
	case VIEW_TREE:
		r = tree_key(t, ch);
		break;
	case VIEW_LATENCY:
		r = latency_key(t, ch);
		break;
	case VIEW_SPLIT:
		r = split_key(t, ch);
		break;
	case VIEW_SOURCE:
		r = source_key(t, ch);
		break;
	case VIEW_CAUSAL:
		r = causal_key(t, ch);
		break;
	default:
		break;
	}
	if (r)
		return r;
	switch (ch) {
	case 'q':
	case 'Q':
		return H_QUIT;
	case '?':
	case KEY_F(1):
		t->help = true;
		return H_REDRAW;
	case ':':
		prompt_open(&t->cmd, ':', "");
		return H_REDRAW;
	case '/':
		prompt_open(&t->find, '/', t->search);
		return H_REDRAW;
	case TK_ESC:
		t->search[0] = 0;
		return H_RELAYOUT | H_REDRAW;
	case '1':
	case '2':
	case '3':
	case '4':
		t->view = (enum view)(ch - '1');
		return H_REDRAW;
	case '5':
		return source_open(t);
	case '6':
		t->view = VIEW_CAUSAL;
		return H_REDRAW;
	case TK_TAB:
		t->view = (t->view + 1) % VIEW_NR;
		return H_REDRAW;
	case KEY_BTAB:
		t->view = (t->view + VIEW_NR - 1) % VIEW_NR;
		return H_REDRAW;
	case 't':
		return offer(t, "trace", "");
	case 'S':
		return offer(t, "split", " p95");
	case 'w':
		t->window = !t->window;
		set_msg(t, false, "showing %s", t->window ? "the window" : "the whole run");
		return H_REBUILD;
	case 'p':
		return set_paused(t, !t->d->paused);
	case TK_CTRL_L:
		clearok(curscr, TRUE);
		return H_REDRAW;
	default:
		return 0;
	}
}

static void tui_free(struct tui *t)
{
	model_free(&t->m);
	source_free(t);
	causal_free(t);
	pathset_free(&t->expand);
	free(t->top_rows);
	free(t->tree_rows);
	free(t->diff_rows);
	for (int i = 0; i < t->cmd.n_hist; i++)
		free(t->cmd.hist[i]);
	for (int i = 0; i < t->find.n_hist; i++)
		free(t->find.hist[i]);
}

/* Samples per second, from the daemon's own count at each tick. */
static bool on_tick(struct tui *t)
{
	struct daemon *d = t->d;
	uint64_t now;

	if (d->last_tick_ns == t->last_tick_seen)
		return false;
	now = lp_now_ns();
	if (t->prev_rate_ns && now > t->prev_rate_ns)
		t->samples_per_s = (double)(d->samples - t->prev_samples) * 1e9 /
				   (double)(now - t->prev_rate_ns);
	t->prev_samples = d->samples;
	t->prev_rate_ns = now;
	t->last_tick_seen = d->last_tick_ns;
	return true;
}

static struct tui *tui_new(struct daemon *d, volatile sig_atomic_t *stop)
{
	struct tui *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->d = d;
	t->stop = stop;
	t->window = true;
	t->show_offcpu = true;
	t->last_tick_seen = d->last_tick_ns;
	t->prev_samples = d->samples;
	t->prev_rate_ns = lp_now_ns();
	t->err_pipe = t->saved_stderr = -1;
	return t;
}

/*
 * Wait for a key or POLL_MS, read the daemon's events and decide what the
 * new data calls for. Sets t->quit once every target has exited.
 * Return: H_REBUILD / H_REDRAW flags.
 */
static int wait_and_poll(struct tui *t)
{
	struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
	struct daemon *d = t->d;
	int flags = 0, err;

	/* Wait for a key, not for the ring buffer: input must feel instant. */
	poll(&pfd, 1, POLL_MS);
	err = daemon__poll(d, 0);
	if (err && err != -EINTR && !t->msg_err)
		set_msg(t, true, "reading events: %s", strerror(-err));
	if (on_tick(t)) {
		if (!daemon__targets_alive(d)) {
			t->quit = true;
			return flags;
		}
		flags |= H_REDRAW;
		/* Paused means frozen: the window still slides underneath. */
		if (!d->paused)
			t->rebuild_due = true;
	}
	/*
	 * A rebuild with tens of thousands of stacks takes tens of ms:
	 * while keys are coming, let them have the CPU, but never show
	 * data older than MAX_DEFER_NS.
	 */
	if (t->rebuild_due && (lp_now_ns() - t->last_key_ns >= KEY_IDLE_NS ||
			       lp_now_ns() - t->m.built_ns >= MAX_DEFER_NS))
		flags |= H_REBUILD | H_REDRAW;
	/* Until the first samples show, do not make the user wait a tick. */
	if (!t->m.funcs.total && !d->paused &&
	    d->samples + d->offcpu_events != t->m.built_samples &&
	    lp_now_ns() - t->m.built_ns >= EARLY_BUILD_NS)
		flags |= H_REBUILD | H_REDRAW;
	return flags;
}

/*
 * Handle every key waiting. Sets t->quit on a quit key.
 * Return: H_REDRAW if there was any key.
 */
static int read_keys(struct tui *t)
{
	int flags = 0, ch;

	while ((ch = getch()) != ERR) {
		int r;

		if (!t->key_ns)
			t->key_ns = lp_now_ns();
		t->last_key_ns = t->key_ns;
		r = handle_key(t, ch);
		flags |= H_REDRAW;
		if (r & H_QUIT) {
			t->quit = true;
			break;
		}
		/* The next key of a burst (Space then Down) must see
		 * the rows this one changed. */
		if (r & H_REBUILD)
			rebuild(t);
		else if (r & H_RELAYOUT && relayout(t))
			set_msg(t, true, "out of memory");
	}
	return flags;
}

/**
 * tui_run - run the interactive UI over daemon @d until the user quits,
 * *@stop is set (SIGINT/SIGTERM) or every target has exited
 * @d: a running daemon; the UI polls it, adds and removes traces and the
 *     split, and leaves it running for the caller's final report
 * @stop: set asynchronously by the caller's signal handler
 *
 * The terminal is restored on every path out (return, exit(), crash).
 *
 * Return: 0, or -ENOTTY if the terminal cannot be driven by curses (the
 * caller falls back to batch mode), or -ENOMEM.
 */
int tui_run(struct daemon *d, volatile sig_atomic_t *stop)
{
	struct tui *t = tui_new(d, stop);
	int err;

	if (!t)
		return -ENOMEM;
	err = tui_term_start(t);
	if (err) {
		free(t);
		return err;
	}
	rebuild(t);
	draw(t);
	while (!*stop && !t->quit) {
		int flags = wait_and_poll(t);

		if (t->quit)
			break;
		flags |= read_keys(t);
		if (t->quit)
			break;
		if (tui_term_drain_stderr(t))
			flags |= H_REDRAW;
		if (flags & H_REBUILD)
			rebuild(t);
		if (flags & H_REDRAW)
			draw(t);
	}
	tui_term_end();
	tui_free(t);
	free(t);
	return 0;
}
