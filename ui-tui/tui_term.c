// SPDX-License-Identifier: GPL-2.0
/*
 * tui_term.c - the terminal under the UI: curses set up, and restored on
 * every path out (a normal end, exit(), a crash signal), so that a shell
 * is never left raw.
 *
 * Messages that user/ code prints to stderr would scribble over the
 * screen, so stderr is redirected to a pipe for the life of the UI and
 * its lines are shown on the message line.
 */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <curses.h>

#include "ui-tui/tui_internal.h"

#define ESC_DELAY_MS 25 /* a lone Esc is told from an escape sequence this fast */

static struct tui *g_tui; /* for the atexit and crash guards */
static SCREEN *g_screen;
static bool g_curses_on;

/* Send stderr to a pipe we read, so that messages land on the message line. */
static void capture_stderr(struct tui *t)
{
	int fds[2];

	t->err_pipe = t->saved_stderr = -1;
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK))
		return;
	fflush(stderr);
	t->saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (t->saved_stderr < 0 || dup2(fds[1], STDERR_FILENO) < 0) {
		close(fds[0]);
		close(fds[1]);
		if (t->saved_stderr >= 0)
			close(t->saved_stderr);
		t->saved_stderr = -1;
		return;
	}
	/* A full pipe must drop messages, never block the event loop. */
	close(fds[1]);
	t->err_pipe = fds[0];
}

static void restore_stderr(struct tui *t)
{
	if (t->saved_stderr < 0)
		return;
	fflush(stderr);
	dup2(t->saved_stderr, STDERR_FILENO);
	close(t->saved_stderr);
	t->saved_stderr = -1;
	if (t->err_pipe >= 0)
		close(t->err_pipe);
	t->err_pipe = -1;
}

bool tui_term_drain_stderr(struct tui *t)
{
	bool got = false;
	ssize_t n;

	if (t->err_pipe < 0)
		return false;
	fflush(stderr);
	while ((n = read(t->err_pipe, t->err_buf + t->err_len,
			 sizeof(t->err_buf) - 1 - t->err_len)) > 0) {
		char *nl;

		t->err_len += (size_t)n;
		t->err_buf[t->err_len] = 0;
		while ((nl = strchr(t->err_buf, '\n')) || t->err_len == sizeof(t->err_buf) - 1) {
			const char *s = t->err_buf;
			size_t used;

			if (nl)
				*nl = 0;
			used = nl ? (size_t)(nl - t->err_buf) + 1 : t->err_len;
			if (!strncmp(s, "liveprof: ", 10))
				s += 10;
			if (*s)
				set_msg(t, !strstr(s, "warning"), "%s", s);
			memmove(t->err_buf, t->err_buf + used, t->err_len - used + 1);
			t->err_len -= used;
			got = true;
		}
	}
	return got;
}

static void curses_end(void)
{
	if (!g_curses_on)
		return;
	g_curses_on = false;
	endwin();
	if (g_screen)
		delscreen(g_screen);
	g_screen = NULL;
	if (g_tui)
		restore_stderr(g_tui);
}

static void atexit_guard(void)
{
	curses_end();
}

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

static struct sigaction old_crash[sizeof(crash_signals) / sizeof(crash_signals[0])];

/* A crash must not leave the terminal raw; then die the way we were going to. */
static void on_crash(int sig)
{
	if (g_curses_on) {
		g_curses_on = false;
		endwin();
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void crash_guard(bool on)
{
	for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++) {
		if (on) {
			struct sigaction sa = {.sa_handler = on_crash, .sa_flags = SA_RESETHAND};

			sigemptyset(&sa.sa_mask);
			sigaction(crash_signals[i], &sa, &old_crash[i]);
		} else {
			sigaction(crash_signals[i], &old_crash[i], NULL);
		}
	}
}

int tui_term_start(struct tui *t)
{
	static bool registered;

	/* Wide-char curses needs the character set; numbers stay in "C". */
	setlocale(LC_CTYPE, "");
	g_screen = newterm(NULL, stdout, stdin);
	if (!g_screen)
		return -ENOTTY;
	set_term(g_screen);
	g_curses_on = true;
	g_tui = t;
	if (!registered && !atexit(atexit_guard))
		registered = true;
	crash_guard(true);
	cbreak(); /* not raw(): Ctrl-C must still raise SIGINT and set *stop */
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(ESC_DELAY_MS);
	curs_set(0);
	init_colours();
	capture_stderr(t);
	return 0;
}

void tui_term_end(void)
{
	crash_guard(false);
	curses_end();
	g_tui = NULL;
}
