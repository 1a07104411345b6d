/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tui.h - the interactive terminal UI over a running daemon.
 */
#ifndef LP_UI_TUI_H
#define LP_UI_TUI_H

#include <signal.h>

struct daemon;

/**
 * tui_run - run the UI until the user quits, *@stop is set (SIGINT) or the
 * targets exit. Keeps draining the daemon's events while the user types.
 * Restores the terminal on every exit path.
 *
 * Return: 0, or a negative errno if the terminal could not be set up.
 */
int tui_run(struct daemon *d, volatile sig_atomic_t *stop);

#endif
