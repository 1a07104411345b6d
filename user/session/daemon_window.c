// SPDX-License-Identifier: GPL-2.0
/*
 * daemon_window.c - the daemon's sliding window (one count table per
 * second, rotated by the tick) and the window subscriptions that HTTP
 * scrapes hold for their duration.
 */
#include <errno.h>
#include <stdlib.h>

#include "user/session/daemon.h"
#include "user/session/split.h"
#include "user/session/traces.h"
#include "user/util/util.h"

int daemon__set_window(struct daemon *d, int seconds)
{
	struct counts *slots;

	if (seconds < 1 || seconds > MAX_WINDOW_SLOTS)
		return -EINVAL;
	slots = calloc(seconds, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (int i = 0; i < d->n_slots; i++)
		counts__free(&d->slots[i]);
	free(d->slots);
	d->slots = slots;
	d->n_slots = seconds;
	d->cur_slot = 0;
	if (d->traces)
		traces__set_window(d->traces, seconds);
	if (d->split)
		split__set_window(d->split, seconds);
	return 0;
}

int daemon__window_counts(struct daemon *d, struct counts *out)
{
	counts__clear(out);
	for (int i = 0; i < d->n_slots; i++)
		if (counts__merge(out, &d->slots[i]))
			return -ENOMEM;
	return 0;
}

int daemon__window_open(struct daemon *d, struct daemon_window *w, uint64_t duration_ns)
{
	if (!duration_ns)
		return -EINVAL;
	counts__init(&w->counts);
	counts__init(&w->holders);
	w->start_ns = lp_now_ns();
	w->end_ns = w->start_ns + duration_ns;
	w->next = d->windows;
	d->windows = w;
	return 0;
}

void daemon__window_close(struct daemon *d, struct daemon_window *w)
{
	for (struct daemon_window **p = &d->windows; *p; p = &(*p)->next) {
		if (*p == w) {
			*p = w->next;
			counts__free(&w->counts);
			counts__free(&w->holders);
			return;
		}
	}
}

int daemon__window_active(const struct daemon *d)
{
	int n = 0;

	for (const struct daemon_window *w = d->windows; w; w = w->next)
		n++;
	return n;
}

void daemon__finish_windows(struct daemon *d, uint64_t now)
{
	struct daemon_window **p = &d->windows;

	while (*p) {
		struct daemon_window *w = *p;

		if (now < w->end_ns) {
			p = &w->next;
			continue;
		}
		*p = w->next;
		w->next = NULL;
		w->done(w, w->ctx); /* may free w */
	}
}
