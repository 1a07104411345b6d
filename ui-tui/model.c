// SPDX-License-Identifier: GPL-2.0
/*
 * model.c - what the views show, rebuilt from the daemon's counts: flat
 * functions for Top, the split's classes, the zoomed profile. The call
 * tree and the path set are in model_tree.c.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ui-tui/tui_internal.h"
#include "user/session/daemon.h"
#include "user/profile/profile.h"
#include "user/session/report.h"
#include "user/session/split.h"
#include "user/profile/stack_store.h"
#include "user/util/util.h"
#include "ui-tui/tui_internal.h"

/* ---- flat functions (Top) ------------------------------------------------- */

static void funcs_reset(struct funcs *f)
{
	f->len = 0;
	f->total = 0;
	if (f->ht)
		memset(f->ht, 0, f->ht_cap * sizeof(*f->ht));
}

static void funcs_free(struct funcs *f)
{
	free(f->r);
	free(f->ht);
	memset(f, 0, sizeof(*f));
}

static int funcs_rehash(struct funcs *f, size_t cap)
{
	uint32_t *ht = calloc(cap, sizeof(*ht));

	if (!ht)
		return -ENOMEM;
	for (size_t i = 0; i < f->len; i++) {
		size_t j;

		for (j = model_hash_str(0, f->r[i].name) & (cap - 1); ht[j];
		     j = (j + 1) & (cap - 1))
			;
		ht[j] = (uint32_t)i + 1;
	}
	free(f->ht);
	f->ht = ht;
	f->ht_cap = cap;
	return 0;
}

static struct func_row *funcs_get(struct funcs *f, const char *name)
{
	uint64_t h = model_hash_str(0, name);
	size_t j;

	if (f->ht_cap)
		for (j = h & (f->ht_cap - 1); f->ht[j]; j = (j + 1) & (f->ht_cap - 1))
			if (!strcmp(f->r[f->ht[j] - 1].name, name))
				return &f->r[f->ht[j] - 1];
	if (f->len == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 512;
		struct func_row *r = realloc(f->r, cap * sizeof(*r));

		if (!r)
			return NULL;
		f->r = r;
		f->cap = cap;
	}
	if ((f->len + 1) * 2 > f->ht_cap && funcs_rehash(f, f->ht_cap ? f->ht_cap * 2 : 1024))
		return NULL;
	for (j = h & (f->ht_cap - 1); f->ht[j]; j = (j + 1) & (f->ht_cap - 1))
		;
	f->ht[j] = (uint32_t)f->len + 1;
	f->r[f->len] = (struct func_row){.name = name, .last = UINT64_MAX};
	return &f->r[f->len++];
}

static int funcs_add_profile(struct funcs *f, struct profile *p, bool weight)
{
	/* Row of each frame, looked up once: frames differing only by line
	 * or module share the function's row. */
	uint32_t *row = malloc((p->n_frames ? p->n_frames : 1) * sizeof(*row));

	if (!row)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_frames; i++) {
		struct func_row *r;
		const char *name;

		/* The process root is not a function. */
		if (p->frames[i].kind == FRAME_ROOT) {
			row[i] = NO_NODE;
			continue;
		}
		name = model_frame_label(p, i);
		r = name ? funcs_get(f, name) : NULL;
		if (!r) {
			free(row);
			return -ENOMEM;
		}
		row[i] = (uint32_t)(r - f->r);
	}
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint64_t v = model_sample_value(s, weight);

		f->total += v;
		for (uint32_t k = 0; k < s->depth; k++) {
			struct func_row *r;

			if (row[s->frames[k]] == NO_NODE)
				continue;
			r = &f->r[row[s->frames[k]]];
			/* Recursion must not count a stack twice in cum. */
			if (r->last != i) {
				r->cum += v;
				r->last = i;
			}
			if (k + 1 == s->depth)
				r->self += v;
		}
	}
	free(row);
	return 0;
}

/* ---- model build ---------------------------------------------------------- */

/**
 * use_weight - whether the views count time (off-CPU) or samples
 * @t: the UI state
 *
 * Return: true when values are weights in ns.
 */
bool use_weight(const struct tui *t)
{
	return t->d->core.opts->offcpu;
}

/* The counts the views show: window or whole run, off-CPU filtered out. */
static int view_counts(struct tui *t, const struct counts *src, struct counts *out)
{
	counts__clear(out);
	counts_for_each(src, sc)
	{
		uint32_t id = stack_count__id(sc);

		if (!t->show_offcpu) {
			uint32_t flags;

			if (stack_store__flags(t->d->stacks, id, &flags) &&
			    (flags & STACK_F_OFFCPU))
				continue;
		}
		if (counts__add(out, id, sc->count, sc->weight_ns))
			return -ENOMEM;
	}
	return 0;
}

/**
 * model_drop_split - free the split part of the model
 * @m: the model
 */
void model_drop_split(struct model *m)
{
	if (m->has_split)
		split_result__fini(&m->sr);
	m->has_split = false;
	profile__free(m->slow);
	profile__free(m->fast);
	m->slow = m->fast = NULL;
	tree_reset(&m->dtree);
	funcs_reset(&m->sfuncs);
	funcs_reset(&m->ffuncs);
}

static int model_build_split(struct tui *t)
{
	struct model *m = &t->m;
	struct daemon *d = t->d;
	struct counts c;
	int err;

	model_drop_split(m);
	if (!d->split)
		return 0;
	memset(&m->sr, 0, sizeof(m->sr));
	err = daemon__split_compute(d, t->window, use_weight(t), &m->sr);
	if (err)
		return err;
	m->has_split = true;
	m->split_gen = d->split_gen;
	counts__init(&c);
	err = view_counts(t, &m->sr.slow, &c);
	if (!err)
		m->slow = report__build_profile(d, &c);
	if (!err && !(err = view_counts(t, &m->sr.fast, &c)))
		m->fast = report__build_profile(d, &c);
	counts__free(&c);
	if (err)
		return err;
	if (!m->slow || !m->fast)
		return -ENOMEM;
	err = tree_add_profile(&m->dtree, m->slow, 0, use_weight(t));
	if (!err)
		err = tree_add_profile(&m->dtree, m->fast, 1, use_weight(t));
	if (!err)
		err = tree_sort(&m->dtree);
	if (!err)
		err = funcs_add_profile(&m->sfuncs, m->slow, use_weight(t));
	if (!err)
		err = funcs_add_profile(&m->ffuncs, m->fast, use_weight(t));
	return err;
}

/**
 * model_build - rebuild the model of @t from the daemon
 * @t: the UI state
 *
 * Names new stacks first. Builds the window or the whole run, with or
 * without off-CPU samples, as @t says.
 *
 * Return: 0, or a negative errno; the model is then partial but consistent.
 */
int model_build(struct tui *t)
{
	struct model *m = &t->m;
	struct daemon *d = t->d;
	struct counts win, c;
	uint64_t t0 = lp_now_ns();
	int err;

	/* New stacks arrive between ticks; name them before building. */
	daemon__symbolize_new(d);
	counts__init(&win);
	counts__init(&c);
	err = t->window ? daemon__window_counts(d, &win) : 0;
	if (!err)
		err = view_counts(t, t->window ? &win : &d->total, &c);
	profile__free(m->prof);
	m->prof = NULL;
	tree_reset(&m->tree);
	funcs_reset(&m->funcs);
	if (!err) {
		m->prof = report__build_profile(d, &c);
		if (!m->prof)
			err = -ENOMEM;
	}
	counts__free(&win);
	counts__free(&c);
	if (!err)
		err = tree_add_profile(&m->tree, m->prof, 0, use_weight(t));
	if (!err)
		err = tree_sort(&m->tree);
	if (!err)
		err = funcs_add_profile(&m->funcs, m->prof, use_weight(t));
	if (!err)
		err = model_build_split(t);
	t->rebuild_due = false;
	m->built_samples = d->samples + d->offcpu_events;
	m->built_ns = lp_now_ns();
	m->build_cost_ns = m->built_ns - t0;
	return err;
}

/**
 * model_free - free everything the model holds and zero it
 * @m: the model
 */
void model_free(struct model *m)
{
	model_drop_split(m);
	profile__free(m->prof);
	tree_free(&m->tree);
	tree_free(&m->dtree);
	funcs_free(&m->funcs);
	funcs_free(&m->sfuncs);
	funcs_free(&m->ffuncs);
	memset(m, 0, sizeof(*m));
}

/**
 * zoomed_profile - the samples under the zoomed frame, whole stacks kept so
that the file still says where the frame was called from
 * @t: the UI state; the Tree view must be zoomed
 *
 * Return: a new profile the caller frees, or NULL on allocation failure.
 */
struct profile *zoomed_profile(struct tui *t)
{
	struct profile *src = t->m.prof;
	uint64_t want = t->zoom[t->n_zoom - 1];
	size_t nf = src->n_frames ? src->n_frames : 1;
	uint64_t *fh = malloc(nf * sizeof(*fh));
	int64_t *map = malloc(nf * sizeof(*map));
	uint32_t *buf = NULL;
	uint32_t cap = 0;
	struct profile *p = profile__new(src->name);
	int err = p && fh && map ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < src->n_frames; i++) {
		const char *name = model_frame_label(src, i);

		if (!name)
			err = -ENOMEM;
		fh[i] = name ? model_hash_str(0, name) : 0;
		map[i] = -1;
	}
	for (size_t i = 0; !err && i < src->n_samples; i++) {
		const struct profile_sample *s = &src->samples[i];
		uint64_t path = t->m.tree.n[0].path;
		bool under = false;

		/* The same path hashes as the tree's: a sample is under the
		 * zoomed frame when one of its prefixes hashes to its path. */
		for (uint32_t k = 0; k < s->depth && !under; k++) {
			path = model_path_of(path, fh[s->frames[k]]);
			under = path == want;
		}
		if (!under)
			continue;
		if (s->depth > cap) {
			uint32_t *b = realloc(buf, s->depth * sizeof(*b));

			if (!b) {
				err = -ENOMEM;
				break;
			}
			buf = b;
			cap = s->depth;
		}
		for (uint32_t k = 0; k < s->depth && !err; k++) {
			uint32_t f = s->frames[k];

			if (map[f] < 0)
				map[f] = profile__intern_frame(p, &src->frames[f]);
			if (map[f] < 0)
				err = (int)map[f];
			buf[k] = (uint32_t)map[f];
		}
		if (!err)
			err = profile__add(p, buf, s->depth, s->count, s->weight_ns, s->labels,
					   s->n_labels);
	}
	free(fh);
	free(map);
	free(buf);
	if (err) {
		profile__free(p);
		return NULL;
	}
	p->period_ns = src->period_ns;
	p->duration_ns = src->duration_ns;
	return p;
}
