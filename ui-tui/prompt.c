// SPDX-License-Identifier: GPL-2.0
/*
 * prompt.c - the two prompts on the bottom line: ':' for commands, with
 * history and Tab completion, and '/' for the incremental search; line
 * editing and drawing.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curses.h>

#include "ui-tui/tui_internal.h"
#include "user/session/daemon.h"
#include "user/session/traces.h"

#define MAX_COMPLETIONS 64

/**
 * prompt_open - activate @p with @text typed, the cursor at its end
 * @p: the prompt
 * @lead: ':' or '/'
 * @text: the initial line
 */
void prompt_open(struct prompt *p, char lead, const char *text)
{
	p->active = true;
	p->lead = lead;
	snprintf(p->buf, sizeof(p->buf), "%s", text);
	p->len = p->cur = (int)strlen(p->buf);
	p->hist_pos = p->n_hist;
}

/**
 * prompt_set - replace the line of @p, the cursor at its end
 * @p: the prompt
 * @text: the new line
 */
void prompt_set(struct prompt *p, const char *text)
{
	snprintf(p->buf, sizeof(p->buf), "%s", text);
	p->len = p->cur = (int)strlen(p->buf);
}

static void prompt_insert(struct prompt *p, const char *s)
{
	size_t n = strlen(s);

	if (p->len + (int)n >= (int)sizeof(p->buf))
		return;
	memmove(p->buf + p->cur + n, p->buf + p->cur, (size_t)(p->len - p->cur) + 1);
	memcpy(p->buf + p->cur, s, n);
	p->len += (int)n;
	p->cur += (int)n;
}

static void history_add(struct prompt *p, const char *line)
{
	char *copy;

	if (!line[0] || (p->n_hist && !strcmp(p->hist[p->n_hist - 1], line)))
		return;
	copy = strdup(line);
	if (!copy)
		return; /* history is a convenience: losing an entry is fine */
	if (p->n_hist == HISTORY_MAX) {
		free(p->hist[0]);
		memmove(p->hist, p->hist + 1, (HISTORY_MAX - 1) * sizeof(p->hist[0]));
		p->n_hist--;
	}
	p->hist[p->n_hist++] = copy;
}

static void history_move(struct prompt *p, int dir)
{
	int pos = p->hist_pos + dir;

	if (pos < 0 || pos > p->n_hist)
		return;
	if (p->hist_pos == p->n_hist)
		snprintf(p->saved, sizeof(p->saved), "%s", p->buf);
	p->hist_pos = pos;
	prompt_set(p, pos == p->n_hist ? p->saved : p->hist[pos]);
}

static const char *const commands[] = {"trace",	 "untrace", "split",  "line", "freq",	"window",
				       "offcpu", "pause",   "resume", "save", "causal", "quit"};

static void complete(struct tui *t, struct prompt *p)
{
	const char *cands[MAX_COMPLETIONS];
	char word[LINE_MAX_LEN], first[32] = "";
	int n = 0, start, common;

	/* Complete only at the end of the line: mid-line edits are rare. */
	if (p->cur != p->len)
		return;
	for (start = p->cur; start > 0 && !isspace((unsigned char)p->buf[start - 1]); start--)
		;
	snprintf(word, sizeof(word), "%.*s", p->cur - start, p->buf + start);
	sscanf(p->buf, "%31s", first);
	if (start == 0) {
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (!strncmp(commands[i], word, strlen(word)))
				cands[n++] = commands[i];
	} else if (!strcmp(first, "offcpu")) {
		static const char *const onoff[] = {"on", "off"};

		for (int i = 0; i < 2; i++)
			if (!strncmp(onoff[i], word, strlen(word)))
				cands[n++] = onoff[i];
	} else if (!strcmp(first, "untrace")) {
		struct traces *tr = t->d->traces;

		for (int i = 0; tr && i < traces__count(tr) && n < MAX_COMPLETIONS; i++)
			if (!strncmp(traces__info(tr, i)->spec, word, strlen(word)))
				cands[n++] = traces__info(tr, i)->spec;
	} else if (!strcmp(first, "trace") || !strcmp(first, "split") ||
		   !strcmp(first, "causal")) {
		n = daemon__complete(t->d, word, cands, MAX_COMPLETIONS);
	}
	if (!n) {
		set_msg(t, true, "no completion for '%s'", word);
		return;
	}
	common = (int)strlen(cands[0]);
	for (int i = 1; i < n; i++) {
		int k = 0;

		while (k < common && cands[i][k] == cands[0][k])
			k++;
		common = k;
	}
	if (common > p->cur - start) {
		char add[LINE_MAX_LEN];

		snprintf(add, sizeof(add), "%.*s", common - (p->cur - start),
			 cands[0] + (p->cur - start));
		prompt_insert(p, add);
	}
	if (n == 1) {
		prompt_insert(p, " ");
		t->msg[0] = 0;
	} else {
		char list[512] = "";
		size_t used = 0;

		for (int i = 0; i < n && used + 2 < sizeof(list); i++)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s ", cands[i]);
		set_msg(t, false, "%d%s: %s", n, n == MAX_COMPLETIONS ? "+" : "", list);
	}
}

/* Edit keys shared by both prompts; returns true when @ch was one. */
static bool prompt_edit(struct prompt *p, int ch)
{
	switch (ch) {
	case KEY_LEFT:
		if (p->cur > 0)
			p->cur--;
		return true;
	case KEY_RIGHT:
		if (p->cur < p->len)
			p->cur++;
		return true;
	case KEY_HOME:
	case TK_CTRL_A:
		p->cur = 0;
		return true;
	case KEY_END:
	case TK_CTRL_E:
		p->cur = p->len;
		return true;
	case TK_CTRL_U:
		memmove(p->buf, p->buf + p->cur, (size_t)(p->len - p->cur) + 1);
		p->len -= p->cur;
		p->cur = 0;
		return true;
	case TK_CTRL_W: {
		int s = p->cur;

		while (s > 0 && p->buf[s - 1] == ' ')
			s--;
		while (s > 0 && p->buf[s - 1] != ' ')
			s--;
		memmove(p->buf + s, p->buf + p->cur, (size_t)(p->len - p->cur) + 1);
		p->len -= p->cur - s;
		p->cur = s;
		return true;
	}
	case KEY_BACKSPACE:
	case TK_DEL:
	case TK_BS:
		if (p->cur > 0) {
			memmove(p->buf + p->cur - 1, p->buf + p->cur,
				(size_t)(p->len - p->cur) + 1);
			p->cur--;
			p->len--;
		}
		return true;
	case KEY_DC:
		if (p->cur < p->len) {
			memmove(p->buf + p->cur, p->buf + p->cur + 1, (size_t)(p->len - p->cur));
			p->len--;
		}
		return true;
	default:
		if (ch >= ' ' && ch < TK_DEL) {
			char s[2] = {(char)ch, 0};

			prompt_insert(p, s);
			return true;
		}
		return false;
	}
}

/**
 * draw_prompt - draw @p on the bottom line with the cursor in it
 * @p: the active prompt
 */
void draw_prompt(const struct prompt *p)
{
	int y = LINES - 1, start = 0;

	fill_row(y, 0, attrs[C_NORMAL]);
	/* Scroll long lines so the cursor stays visible. */
	if (p->cur + 2 > COLS)
		start = p->cur + 2 - COLS;
	mvaddch(y, 0, (chtype)p->lead);
	put(y, 1, COLS - 1, attrs[C_NORMAL], p->buf + start);
	move(y, 1 + p->cur - start);
}

/**
 * cmd_key - handle a key while the ':' prompt is active
 * @t: the UI state
 * @ch: the key
 *
 * Return: H_* flags; Enter runs the command.
 */
int cmd_key(struct tui *t, int ch)
{
	struct prompt *p = &t->cmd;
	char line[LINE_MAX_LEN];

	switch (ch) {
	case TK_ESC:
		p->active = false;
		return H_REDRAW;
	case TK_LF:
	case TK_CR:
	case KEY_ENTER:
		p->active = false;
		snprintf(line, sizeof(line), "%s", p->buf);
		history_add(p, line);
		return run_command(t, line) | H_REDRAW;
	case KEY_UP:
		history_move(p, -1);
		return H_REDRAW;
	case KEY_DOWN:
		history_move(p, 1);
		return H_REDRAW;
	case TK_TAB:
		complete(t, p);
		return H_REDRAW;
	case KEY_BACKSPACE:
	case TK_DEL:
	case TK_BS:
		/* Backspace on an empty line leaves the prompt, like vi. */
		if (!p->len) {
			p->active = false;
			return H_REDRAW;
		}
		prompt_edit(p, ch);
		return H_REDRAW;
	default:
		prompt_edit(p, ch);
		return H_REDRAW;
	}
}

/**
 * find_key - handle a key while the '/' prompt is active
 * @t: the UI state
 * @ch: the key
 *
 * Return: H_* flags; the search follows every key.
 */
int find_key(struct tui *t, int ch)
{
	struct prompt *p = &t->find;

	switch (ch) {
	case TK_ESC:
		p->active = false;
		t->search[0] = 0;
		return H_RELAYOUT | H_REDRAW;
	case TK_LF:
	case TK_CR:
	case KEY_ENTER:
		p->active = false;
		history_add(p, p->buf);
		if (t->view == VIEW_TREE) {
			tree_layout(t);
			tree_select_match(t, false);
		}
		if (t->view == VIEW_SOURCE)
			source_find(t, false);
		return H_RELAYOUT | H_REDRAW;
	case KEY_UP:
		history_move(p, -1);
		break;
	case KEY_DOWN:
		history_move(p, 1);
		break;
	default:
		prompt_edit(p, ch);
		break;
	}
	/* Incremental: the filter follows every key, the model does not move. */
	snprintf(t->search, sizeof(t->search), "%s", p->buf);
	t->top_sel = t->top_scroll = 0;
	return H_RELAYOUT | H_REDRAW;
}
