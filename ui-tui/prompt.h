/* SPDX-License-Identifier: GPL-2.0 */
/*
 * prompt.h - the ':' command and '/' search prompts of the terminal UI:
 * line editing, history, completion (prompt.c).
 */
#ifndef LP_UI_TUI_PROMPT_H
#define LP_UI_TUI_PROMPT_H

#include <stdbool.h>

struct tui;

#define HISTORY_MAX  64
#define LINE_MAX_LEN 512

struct prompt {
	bool active;
	char lead; /* ':' or '/' */
	char buf[LINE_MAX_LEN];
	int len, cur;
	char *hist[HISTORY_MAX];
	int n_hist, hist_pos;
	char saved[LINE_MAX_LEN]; /* the line being typed while browsing history */
};

void prompt_open(struct prompt *p, char lead, const char *text);
void prompt_set(struct prompt *p, const char *text);
void draw_prompt(const struct prompt *p);
int cmd_key(struct tui *t, int ch);
int find_key(struct tui *t, int ch);

#endif
