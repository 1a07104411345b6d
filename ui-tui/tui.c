// SPDX-License-Identifier: GPL-2.0
/* Placeholder until the ncurses UI lands: report that no TUI is available. */
#include <errno.h>
#include "ui-tui/tui.h"

int tui_run(struct daemon *d, volatile sig_atomic_t *stop)
{
	(void)d;
	(void)stop;
	return -ENOTTY;
}
