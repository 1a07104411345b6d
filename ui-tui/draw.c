// SPDX-License-Identifier: GPL-2.0
/*
 * draw.c - drawing primitives of the terminal UI: the colour table,
 * clipped text, filled rows, bars and the scrolling of lists.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <curses.h>

#include "ui-tui/tui_internal.h"

attr_t attrs[C_NR];

/**
 * fmt_ns - format a duration in ns with a unit that keeps it short
 * @buf: the output
 * @len: size of @buf
 * @ns: the duration
 */
void fmt_ns(char *buf, size_t len, uint64_t ns)
{
	if (ns < 10000)
		snprintf(buf, len, "%" PRIu64 "ns", ns);
	else if (ns < 10 * NS_PER_MS)
		snprintf(buf, len, "%.1fus", ns / 1e3);
	else if (ns < 10 * NS_PER_SEC)
		snprintf(buf, len, "%.1fms", ns / 1e6);
	else
		snprintf(buf, len, "%.1fs", ns / 1e9);
}

/**
 * put - draw @s at (@y, @x), clipped to @w columns
 * @y: row
 * @x: column
 * @w: columns at most
 * @a: attribute
 * @s: the text
 *
 * Return: the columns used.
 */
int put(int y, int x, int w, attr_t a, const char *s)
{
	int n;

	if (w <= 0 || y < 0 || y >= LINES || x >= COLS)
		return 0;
	if (x + w > COLS)
		w = COLS - x;
	n = (int)strnlen(s, (size_t)w);
	attron(a);
	mvaddnstr(y, x, s, n);
	attroff(a);
	return n;
}

/**
 * putf - put() with a format
 * @y: row
 * @x: column
 * @w: columns at most
 * @a: attribute
 * @fmt: printf format and its arguments
 *
 * Return: the columns used.
 */
int putf(int y, int x, int w, attr_t a, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return put(y, x, w, a, buf);
}

/**
 * fill_row - fill row @y from column @x to the edge with attribute @a
 * @y: row
 * @x: first column
 * @a: attribute
 */
void fill_row(int y, int x, attr_t a)
{
	if (y < 0 || y >= LINES || x >= COLS)
		return;
	attron(a);
	mvhline(y, x, ' ', COLS - x);
	attroff(a);
}

/**
 * content_top - the first row of a view, below the status line and tabs
 *
 * Return: the row.
 */
int content_top(void)
{
	return 2;
}

/**
 * content_rows - the rows a view may use
 *
 * Return: the rows left by the status line, tabs, message line and help
 * bar; 0 on a tiny terminal.
 */
int content_rows(void)
{
	int n = LINES - 4; /* status, header, message, help bar */

	return n > 0 ? n : 0;
}

/**
 * clamp_scroll - keep @sel on screen by moving @scroll
 * @sel: the selected row, clamped to [0, @n)
 * @scroll: the first row shown
 * @n: rows in the list
 * @rows: rows on screen
 */
void clamp_scroll(int *sel, int *scroll, int n, int rows)
{
	if (*sel >= n)
		*sel = n - 1;
	if (*sel < 0)
		*sel = 0;
	if (*scroll > *sel)
		*scroll = *sel;
	if (rows > 0 && *sel >= *scroll + rows)
		*scroll = *sel - rows + 1;
	if (*scroll > n - rows)
		*scroll = n - rows;
	if (*scroll < 0)
		*scroll = 0;
}

/**
 * draw_bar - a bar of @w cells for @frac, as text so that it survives a
monochrome terminal
 * @y: row
 * @x: column
 * @w: cells
 * @frac: the filled fraction, 0 to 1
 * @a: attribute of the filled cells
 */
void draw_bar(int y, int x, int w, double frac, attr_t a)
{
	int n = (int)(frac * w + 0.5);

	/* A rare bucket still deserves a mark: tails are what we look for. */
	if (n == 0 && frac > 0)
		n = 1;
	if (n > w)
		n = w;
	for (int i = 0; i < w; i++)
		put(y, x + i, 1, i < n ? a : attrs[C_NORMAL], i < n ? "#" : " ");
}

/**
 * init_colours - fill attrs[] for a colour or a monochrome terminal
 *
 * Call after the curses screen is set up.
 */
void init_colours(void)
{
	static const struct {
		short fg, bg;
		attr_t extra, mono;
	} spec[C_NR] = {
		[C_NORMAL] = {-1, -1, 0, 0},
		[C_STATUS] = {COLOR_BLACK, COLOR_CYAN, 0, A_REVERSE},
		[C_HEADER] = {COLOR_BLACK, COLOR_GREEN, 0, A_REVERSE},
		[C_SELECT] = {COLOR_BLACK, COLOR_CYAN, 0, A_REVERSE | A_BOLD},
		[C_HOT] = {COLOR_RED, -1, A_BOLD, A_BOLD},
		[C_COLD] = {COLOR_BLUE, -1, A_BOLD, A_DIM},
		[C_MATCH] = {COLOR_BLACK, COLOR_YELLOW, 0, A_UNDERLINE | A_BOLD},
		[C_ERROR] = {COLOR_RED, -1, A_BOLD, A_BOLD | A_REVERSE},
		[C_INFO] = {COLOR_CYAN, -1, 0, 0},
		[C_BAR] = {COLOR_GREEN, -1, 0, 0},
		[C_KEY] = {COLOR_BLACK, COLOR_WHITE, 0, A_REVERSE},
		[C_THRESH] = {COLOR_YELLOW, -1, A_BOLD, A_BOLD | A_UNDERLINE},
		[C_ICE1] = {COLOR_BLACK, COLOR_RED, 0, A_REVERSE},
		[C_ICE2] = {COLOR_BLACK, COLOR_YELLOW, 0, 0},
	};
	bool colour = has_colors() && start_color() == OK;

	if (colour && use_default_colors() != OK) {
		/* Without -1 as "the terminal's own", pick black on white. */
		assume_default_colors(COLOR_WHITE, COLOR_BLACK);
	}
	for (int i = 0; i < C_NR; i++) {
		if (colour && i && i < COLOR_PAIRS) {
			init_pair((short)i, spec[i].fg, spec[i].bg);
			attrs[i] = COLOR_PAIR(i) | spec[i].extra;
		} else {
			attrs[i] = colour ? spec[i].extra : spec[i].mono;
		}
	}
}
