/* SPDX-License-Identifier: GPL-2.0 */
/*
 * draw.h - drawing primitives of the terminal UI: colours, clipped text,
 * bars and list scrolling (draw.c).
 */
#ifndef LP_UI_TUI_DRAW_H
#define LP_UI_TUI_DRAW_H

#include <stddef.h>
#include <stdint.h>
#include <curses.h>

enum colour {
	C_NORMAL,
	C_STATUS,
	C_HEADER,
	C_SELECT,
	C_HOT,
	C_COLD,
	C_MATCH,
	C_ERROR,
	C_INFO,
	C_BAR,
	C_KEY,
	C_THRESH,
	C_ICE1, /* icicle boxes, alternating warm colours */
	C_ICE2,
	C_NR,
};

/* The attribute of each colour, set by init_colours(). */
extern attr_t attrs[C_NR];

void init_colours(void);
void fmt_ns(char *buf, size_t len, uint64_t ns);
int put(int y, int x, int w, attr_t a, const char *s);
int putf(int y, int x, int w, attr_t a, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void fill_row(int y, int x, attr_t a);
void draw_bar(int y, int x, int w, double frac, attr_t a);
void clamp_scroll(int *sel, int *scroll, int n, int rows);
int content_top(void);
int content_rows(void);

#endif
