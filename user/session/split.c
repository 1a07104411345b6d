// SPDX-License-Identifier: GPL-2.0
/*
 * split.c - join samples with the latency of the call they were taken in.
 *
 * Held samples: call id -> the (stack id, count, weight) entries taken
 * while that call was in flight. When the call ends they move, with its
 * latency, into a log of sampled calls; classes are computed from the
 * log on demand against the current pNN threshold.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user/session/split.h"
#include "user/profile/stack_symbols.h"
#include "user/session/session_core.h"
#include "user/session/split_rank.h"
#include "user/session/traces.h"
#include "user/util/util.h"

#define HELD_MAX_ENTRIES (1u << 20) /* bound on samples waiting for their call */
#define ORPHAN_AFTER_NS	 (60ULL * 1000000000ULL)
#define MIN_WINDOW_CALLS 20 /* fewer sampled calls in the window: use the whole run */

struct entry {
	uint32_t stack_id;
	uint32_t count;
	uint64_t weight;
	uint64_t time_ns; /* when the sample was taken: windows of HTTP scrapes */
};

struct held_call {
	uint64_t call_id; /* 0 = empty slot */
	uint64_t first_ns;
	struct entry *e;
	uint32_t n, cap;
};

struct done_call {
	uint64_t latency_ns; /* net of liveprof's cost, unless --raw-latency */
	uint64_t overhead_ns;
	uint64_t end_ns;
	uint64_t first; /* into the entry pool */
	uint32_t n;
	uint32_t flags;
};

struct split {
	struct traces *traces;	       /* the split function's trace; not owned */
	struct stack_symbols *symbols; /* frames of interned stacks; not owned */
	int window_s;
	int probe_id;
	double pct;
	int when_line;
	struct held_call *held; /* open addressing on call_id */
	size_t held_cap, held_n;
	uint64_t held_entries;
	struct done_call *done;
	size_t n_done, cap_done;
	struct entry *pool;
	uint64_t n_pool, cap_pool;
	uint64_t orphans, dropped, filtered;
};

struct split *split__new(struct traces *traces, struct stack_symbols *symbols, int window_s,
			 int probe_id, double pct, int when_line)
{
	struct split *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->traces = traces;
	s->symbols = symbols;
	s->window_s = window_s > 0 ? window_s : 10;
	s->probe_id = probe_id;
	s->pct = pct;
	s->when_line = when_line;
	s->held_cap = 1024;
	s->held = calloc(s->held_cap, sizeof(*s->held));
	if (!s->held) {
		free(s);
		return NULL;
	}
	return s;
}

void split__free(struct split *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->held_cap; i++)
		free(s->held[i].e);
	free(s->held);
	free(s->done);
	free(s->pool);
	free(s);
}

double split__percentile(const struct split *s)
{
	return s->pct;
}

int split__probe_id(const struct split *s)
{
	return s->probe_id;
}

void split__set_window(struct split *s, int seconds)
{
	if (seconds > 0)
		s->window_s = seconds;
}

void split__set_percentile(struct split *s, double pct)
{
	if (pct > 0 && pct < 100)
		s->pct = pct;
}

static size_t held_slot(const struct split *s, uint64_t call_id)
{
	size_t i = (call_id * 0x9e3779b97f4a7c15ULL >> 17) & (s->held_cap - 1);

	while (s->held[i].call_id && s->held[i].call_id != call_id)
		i = (i + 1) & (s->held_cap - 1);
	return i;
}

/* Remove slot @i and re-seat the run after it (linear probing delete). */
static void held_remove(struct split *s, size_t i)
{
	size_t j = i;

	s->held_entries -= s->held[i].n;
	free(s->held[i].e);
	memset(&s->held[i], 0, sizeof(s->held[i]));
	s->held_n--;
	for (;;) {
		struct held_call tmp;
		size_t k;

		j = (j + 1) & (s->held_cap - 1);
		if (!s->held[j].call_id)
			break;
		tmp = s->held[j];
		memset(&s->held[j], 0, sizeof(s->held[j]));
		k = held_slot(s, tmp.call_id);
		s->held[k] = tmp;
	}
}

static int held_grow(struct split *s)
{
	struct held_call *old = s->held;
	size_t old_cap = s->held_cap;

	s->held = calloc(old_cap * 2, sizeof(*s->held));
	if (!s->held) {
		s->held = old;
		return -ENOMEM;
	}
	s->held_cap = old_cap * 2;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].call_id)
			s->held[held_slot(s, old[i].call_id)] = old[i];
	free(old);
	return 0;
}

void split__on_sample(struct split *s, uint32_t stack_id, const struct lp_sample *ev,
		      uint64_t count)
{
	const struct lp_call_tag *tag = NULL;
	struct held_call *h;
	size_t i;

	/* The outermost call of the split function is the request whose
	 * latency the sample explains (inner recursive calls are part of it). */
	for (unsigned int k = 0; k < ev->n_calls && k < LP_MAX_CALLS; k++) {
		if ((int)ev->calls[k].probe_id == s->probe_id) {
			tag = &ev->calls[k];
			break;
		}
	}
	if (!tag)
		return;
	if (s->held_entries >= HELD_MAX_ENTRIES) {
		s->dropped++;
		return;
	}
	if ((s->held_n + 1) * 2 > s->held_cap && held_grow(s)) {
		s->dropped++;
		return;
	}
	i = held_slot(s, tag->call_id);
	h = &s->held[i];
	if (!h->call_id) {
		h->call_id = tag->call_id;
		h->first_ns = ev->time_ns;
		s->held_n++;
	}
	if (h->n == h->cap) {
		uint32_t cap = h->cap ? h->cap * 2 : 4;
		struct entry *e = realloc(h->e, cap * sizeof(*e));

		if (!e) {
			s->dropped++;
			return;
		}
		h->e = e;
		h->cap = cap;
	}
	h->e[h->n++] = (struct entry){stack_id, (uint32_t)count, ev->weight_ns, ev->time_ns};
	s->held_entries++;
}

static int log_call(struct split *s, const struct held_call *h, const struct lp_call_end *e)
{
	struct done_call *dc;

	if (s->n_done == s->cap_done) {
		size_t cap = s->cap_done ? s->cap_done * 2 : 1024;
		struct done_call *n = realloc(s->done, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->done = n;
		s->cap_done = cap;
	}
	if (s->n_pool + h->n > s->cap_pool) {
		uint64_t cap = (s->cap_pool ? s->cap_pool * 2 : 4096) + h->n;
		struct entry *n = realloc(s->pool, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->pool = n;
		s->cap_pool = cap;
	}
	memcpy(s->pool + s->n_pool, h->e, h->n * sizeof(*h->e));
	dc = &s->done[s->n_done++];
	dc->latency_ns = e->latency_ns;
	dc->overhead_ns = e->overhead_ns;
	dc->end_ns = e->start_ns + e->latency_ns;
	dc->first = s->n_pool;
	dc->n = h->n;
	dc->flags = e->flags;
	s->n_pool += h->n;
	return 0;
}

void split__on_call_end(struct split *s, const struct lp_call_end *e)
{
	size_t i;

	if ((int)e->probe_id != s->probe_id)
		return;
	i = held_slot(s, e->call_id);
	if (!s->held[i].call_id)
		return; /* an inner recursive call, or its samples were dropped */
	if (s->when_line >= 0 && !(e->flags & LP_CF_LINE_HIT))
		s->filtered++;
	else if (log_call(s, &s->held[i], e))
		s->dropped += s->held[i].n;
	held_remove(s, i);
}

void split__tick(struct split *s, uint64_t now_ns)
{
	/* Calls that never returned (thread died, target killed) expire. */
	for (size_t i = 0; i < s->held_cap; i++) {
		if (s->held[i].call_id && now_ns - s->held[i].first_ns > ORPHAN_AFTER_NS) {
			s->orphans++;
			held_remove(s, i);
			i = (size_t)-1; /* the table moved: rescan */
		}
	}
}

void split__stats(const struct split *s, uint64_t *held, uint64_t *orphans, uint64_t *dropped)
{
	*held = s->held_entries;
	*orphans = s->orphans;
	*dropped = s->dropped;
}

/* ---- ranking ---- */

struct frame_acc {
	const char *name;	 /* interned in the frame table: pointer identity */
	uint64_t slow_v, fast_v; /* value of stacks containing it */
	uint64_t slow_n, fast_n; /* sample counts of stacks containing it */
	uint64_t on_n, off_n;
};

struct acc_table {
	struct frame_acc *v;
	size_t cap, n;
};

static struct frame_acc *acc_get(struct acc_table *t, const char *name)
{
	size_t i;

	if ((t->n + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct frame_acc *v = calloc(cap, sizeof(*v));

		if (!v)
			return NULL;
		for (size_t k = 0; k < t->cap; k++) {
			if (!t->v[k].name)
				continue;
			i = ((uintptr_t)t->v[k].name >> 3) * 0x9e3779b97f4a7c15ULL % cap;
			while (v[i].name)
				i = (i + 1) % cap;
			v[i] = t->v[k];
		}
		free(t->v);
		t->v = v;
		t->cap = cap;
	}
	i = ((uintptr_t)name >> 3) * 0x9e3779b97f4a7c15ULL % t->cap;
	while (t->v[i].name && t->v[i].name != name)
		i = (i + 1) % t->cap;
	if (!t->v[i].name) {
		t->v[i].name = name;
		t->n++;
	}
	return &t->v[i];
}

/* Is @name the split function's frame ("handle", or "handle (x.c:12)" with --lines)? */
static bool is_split_frame(const char *name, const char *func)
{
	size_t n = strlen(func);

	return !strncmp(name, func, n) && (name[n] == '\0' || name[n] == ' ');
}

static int accumulate(struct split *s, struct acc_table *t, const struct counts *c, bool slow,
		      bool use_weight, const char *func)
{
	counts_for_each(c, sc)
	{
		const struct frame *frames;
		const char *seen[512];
		uint32_t depth, n_seen = 0;
		uint64_t v = use_weight ? sc->weight_ns : sc->count;
		bool off = false;

		if (stack_symbols__frames(s->symbols, stack_count__id(sc), &frames, &depth))
			continue;
		uint32_t first = 0;

		for (uint32_t i = 0; i < depth; i++)
			off |= frames[i].kind == FRAME_MARKER &&
			       !strcmp(frames[i].name, "[off-cpu]");
		/* The split function and its callers are in every sample of both
		 * classes by construction: only what runs below it can explain
		 * a difference. */
		first = depth ? depth - 1 : 0;
		for (uint32_t i = 0; i < depth; i++) {
			if (is_split_frame(frames[i].name, func)) {
				first = i + 1;
				break;
			}
		}
		/* Not found (a sample in the return path, a cut stack): only the
		 * leaf is known to run inside the call. Markers stay with it. */
		while (first > 0 && first < depth && frames[first].kind == FRAME_MARKER &&
		       !is_split_frame(frames[first - 1].name, func) &&
		       frames[first - 1].kind != FRAME_ROOT)
			first--;
		for (uint32_t i = first; i < depth; i++) {
			struct frame_acc *a;
			bool dup = false;

			if (frames[i].kind == FRAME_ROOT)
				continue;
			/* Inclusive: a frame counts once per stack, even under recursion. */
			for (uint32_t k = 0; k < n_seen && !dup; k++)
				dup = seen[k] == frames[i].name;
			if (dup)
				continue;
			if (n_seen < 512)
				seen[n_seen++] = frames[i].name;
			a = acc_get(t, frames[i].name);
			if (!a)
				return -ENOMEM;
			if (slow) {
				a->slow_v += v;
				a->slow_n += sc->count;
			} else {
				a->fast_v += v;
				a->fast_n += sc->count;
			}
			if (off)
				a->off_n += sc->count;
			else
				a->on_n += sc->count;
		}
	}
	return 0;
}

static int cmp_rank(const void *a, const void *b)
{
	const struct split_frame_rank *x = a, *y = b;

	if (x->delta != y->delta)
		return x->delta < y->delta ? 1 : -1;
	return strcmp(x->frame, y->frame);
}

static uint64_t hist_median(const uint64_t *hist, uint64_t total)
{
	uint64_t acc = 0;

	for (int b = 0; b < LP_HIST_BUCKETS && total; b++) {
		acc += hist[b];
		if (acc * 2 >= total)
			return traces__bucket_value(b);
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t hist_quantile(const uint64_t *hist, uint64_t total, double q)
{
	uint64_t acc = 0;

	for (int b = 0; b < LP_HIST_BUCKETS && total; b++) {
		acc += hist[b];
		if ((double)acc >= q * (double)total)
			return traces__bucket_value(b);
	}
	return 0;
}

/*
 * How far the correction of sampled calls can be trusted, seen in the
 * calls themselves. Sampling favours long calls, so without correction
 * errors the sampled calls' net latencies are never shorter than the
 * calls' in general: their lower quartile is at least that of all calls.
 * An error of spread sigma pulls it down by about 0.674 sigma, so the gap
 * between the two lower quartiles bounds the error; the uncertainty
 * reported is its p10..p90 half-range (1.2816 sigma). When it reaches the
 * gap between the threshold and the median, a sampled call's class is
 * decided by the correction's error rather than by the call: say so, and
 * star nothing. (The calibration's own spread, sample_cost.spread_ns, is
 * reported beside it; on a busy VM it overstates what the calls show.)
 */
static void correction_check(const struct split *s, uint64_t since, const uint64_t *hist,
			     uint64_t total, struct split_result *r)
{
	const struct session_core *c = traces__core(s->traces);
	uint64_t *lat = calloc(s->n_done ? s->n_done : 1, sizeof(uint64_t)), q_all, q_smp;
	double sum = 0;
	size_t n = 0;

	r->raw_latency = c->opts->raw_latency;
	r->calib_spread_ns = c->sample_cost.spread_ns;
	for (size_t i = 0; lat && i < s->n_done; i++) {
		const struct done_call *dc = &s->done[i];

		if (dc->end_ns < since)
			continue;
		sum += dc->overhead_ns;
		lat[n++] = dc->latency_ns;
	}
	if (n) {
		qsort(lat, n, sizeof(*lat), cmp_u64);
		q_all = hist_quantile(hist, total, 0.25);
		q_smp = lat[n / 4];
		r->correction_ns = sum / n;
		r->correction_unc_ns =
			q_all > q_smp ? (double)(q_all - q_smp) * (1.2816 / 0.6745) : 0;
		r->correction_exceeds =
			!r->raw_latency && r->threshold_ns > r->median_ns &&
			r->correction_unc_ns >= (double)(r->threshold_ns - r->median_ns);
	}
	free(lat);
}

int split__compute(struct split *s, bool window, bool use_weight, struct split_result *r)
{
	int ti = traces__find(s->traces, s->probe_id);
	uint64_t now = lp_now_ns(), since = 0, *hist;
	uint64_t slow_v = 0, fast_v = 0;
	struct acc_table t = {0};
	size_t in_window = 0;
	int err;

	memset(r, 0, sizeof(*r));
	counts__init(&r->slow);
	counts__init(&r->fast);
	if (ti < 0)
		return -ENOENT;
	if (window) {
		since = now - (uint64_t)s->window_s * 1000000000ULL;
		for (size_t i = 0; i < s->n_done; i++)
			in_window += s->done[i].end_ns >= since;
		if (in_window < MIN_WINDOW_CALLS) {
			window = false;
			since = 0;
		}
	}
	r->function = traces__info(s->traces, ti)->func;
	r->held = s->held_entries;
	r->orphans = s->orphans;
	r->dropped = s->dropped;
	r->filtered = s->filtered;
	r->percentile = s->pct;
	r->threshold_ns = traces__percentile(s->traces, ti, s->pct, window);

	/* Every call, sampled or not, from the histogram. */
	hist = calloc(LP_HIST_BUCKETS, sizeof(uint64_t));
	if (!hist)
		return -ENOMEM;
	traces__histogram(s->traces, ti, window, hist);
	for (int b = 0; b < LP_HIST_BUCKETS; b++) {
		if (traces__bucket_value(b) >= r->threshold_ns)
			r->all_slow_calls += hist[b];
		else
			r->all_fast_calls += hist[b];
	}
	r->median_ns = hist_median(hist, r->all_slow_calls + r->all_fast_calls);
	correction_check(s, since, hist, r->all_slow_calls + r->all_fast_calls, r);
	free(hist);

	for (size_t i = 0; i < s->n_done; i++) {
		const struct done_call *dc = &s->done[i];
		bool slow = dc->latency_ns >= r->threshold_ns;
		struct counts *c = slow ? &r->slow : &r->fast;

		if (dc->end_ns < since)
			continue;
		slow ? r->slow_calls++ : r->fast_calls++;
		for (uint32_t k = 0; k < dc->n; k++) {
			const struct entry *e = &s->pool[dc->first + k];

			if (counts__add(c, e->stack_id, e->count, e->weight))
				return -ENOMEM;
		}
	}
	r->slow_samples = r->slow.total_count;
	r->fast_samples = r->fast.total_count;
	slow_v = use_weight ? r->slow.total_weight : r->slow.total_count;
	fast_v = use_weight ? r->fast.total_weight : r->fast.total_count;

	err = accumulate(s, &t, &r->slow, true, use_weight, r->function);
	if (!err)
		err = accumulate(s, &t, &r->fast, false, use_weight, r->function);
	if (err) {
		free(t.v);
		return err;
	}
	r->ranks = calloc(t.n ? t.n : 1, sizeof(*r->ranks));
	if (!r->ranks) {
		free(t.v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t.cap; i++) {
		struct frame_acc *a = &t.v[i];
		struct split_frame_rank *k;

		if (!a->name)
			continue;
		k = &r->ranks[r->n_ranks++];
		k->frame = a->name;
		k->slow_share = slow_v ? (double)a->slow_v / slow_v : 0;
		k->fast_share = fast_v ? (double)a->fast_v / fast_v : 0;
		k->delta = k->slow_share - k->fast_share;
		k->offcpu = a->off_n > a->on_n;
		k->slow_n = a->slow_n;
		k->fast_n = a->fast_n;
	}
	free(t.v);
	/* z tests with Holm's correction over every frame ranked (split_rank.c) */
	err = split_rank__apply(r->ranks, r->n_ranks, r->slow_samples, r->fast_samples);
	if (err)
		return err;
	/* classes decided by the correction's error: nothing can be significant */
	for (int i = 0; i < r->n_ranks && r->correction_exceeds; i++)
		r->ranks[i].significant = false;
	qsort(r->ranks, r->n_ranks, sizeof(*r->ranks), cmp_rank);
	return 0;
}

int split__compute_range(struct split *s, uint64_t since_ns, uint64_t until_ns,
			 struct split_result *r)
{
	int ti = traces__find(s->traces, s->probe_id);

	memset(r, 0, sizeof(*r));
	counts__init(&r->slow);
	counts__init(&r->fast);
	if (ti < 0)
		return -ENOENT;
	r->function = traces__info(s->traces, ti)->func;
	r->percentile = s->pct;
	r->threshold_ns = traces__percentile(s->traces, ti, s->pct, false);
	/* Calls end after their samples: any call ending before the range
	 * starts has none in it, the rest are checked sample by sample. */
	for (size_t i = 0; i < s->n_done; i++) {
		const struct done_call *dc = &s->done[i];
		bool slow = dc->latency_ns >= r->threshold_ns, any = false;
		struct counts *c = slow ? &r->slow : &r->fast;

		if (dc->end_ns < since_ns)
			continue;
		for (uint32_t k = 0; k < dc->n; k++) {
			const struct entry *e = &s->pool[dc->first + k];

			if (e->time_ns < since_ns || e->time_ns >= until_ns)
				continue;
			if (counts__add(c, e->stack_id, e->count, e->weight))
				return -ENOMEM;
			any = true;
		}
		if (any)
			slow ? r->slow_calls++ : r->fast_calls++;
	}
	r->slow_samples = r->slow.total_count;
	r->fast_samples = r->fast.total_count;
	return 0;
}

void split_result__fini(struct split_result *r)
{
	counts__free(&r->slow);
	counts__free(&r->fast);
	free(r->ranks);
	memset(r, 0, sizeof(*r));
}

void split__print(const struct split_result *r, FILE *f, int rows)
{
	const struct split_frame_rank *top = split_rank__top(r);

	fprintf(f,
		"\nsplit of %s at p%g: slow >= %.1f us; sampled calls: %" PRIu64 " slow, %" PRIu64
		" fast (of %" PRIu64 " / %" PRIu64 "); samples: %" PRIu64 " slow, %" PRIu64
		" fast\n",
		r->function, r->percentile, r->threshold_ns / 1e3, r->slow_calls, r->fast_calls,
		r->all_slow_calls, r->all_fast_calls, r->slow_samples, r->fast_samples);
	if (r->orphans || r->dropped || r->filtered)
		fprintf(f,
			"  %" PRIu64 " calls never returned (expired), %" PRIu64
			" samples dropped, %" PRIu64 " calls filtered out by --when\n",
			r->orphans, r->dropped, r->filtered);
	if (r->raw_latency)
		fprintf(f,
			"  raw latencies (--raw-latency): sampled calls include what sampling "
			"cost them (%.1f us per sampled call)\n",
			r->correction_ns / 1e3);
	else
		fprintf(f,
			"  latencies net of liveprof's own cost: %.1f +- %.1f us subtracted per "
			"sampled call (median call %.1f us)\n",
			r->correction_ns / 1e3, r->correction_unc_ns / 1e3, r->median_ns / 1e3);
	if (r->correction_exceeds)
		fprintf(f,
			"  calls too short to class: the correction's uncertainty (%.1f us) is not "
			"below the gap between the threshold and the median (%.1f us); nothing is "
			"marked significant\n",
			r->correction_unc_ns / 1e3,
			((double)r->threshold_ns - (double)r->median_ns) / 1e3);
	fprintf(f, "  %-40s %8s %8s %9s %7s %9s\n", "frame (more in slow calls first)", "slow%",
		"fast%", "delta", "z", "p(Holm)");
	for (int i = 0; i < r->n_ranks && i < rows; i++) {
		const struct split_frame_rank *k = &r->ranks[i];

		if (k->delta <= 0 && i > 0)
			break;
		fprintf(f, "  %-40.40s %7.1f%% %7.1f%% %+8.1f%% %7.1f %9.1e%s%s\n", k->frame,
			100 * k->slow_share, 100 * k->fast_share, 100 * k->delta, k->z, k->p_holm,
			k->significant ? " *" : "", k->offcpu ? " (off-cpu)" : "");
	}
	fprintf(f,
		"  (* significant: z test per frame, Holm's correction over the %d frames ranked, "
		"family-wise error rate %g%%)\n",
		r->n_ranks, 100 * SPLIT_ALPHA);
	if (split_rank__needed_total(r))
		fprintf(f,
			"  inconclusive: needs about %" PRIu64 " samples (have %" PRIu64
			")%s%s%s\n",
			split_rank__needed_total(r), r->slow_samples + r->fast_samples,
			top ? " to tell whether '" : " in each class to rank frames",
			top ? top->frame : "", top ? "' explains the slow calls" : "");
	else if (!top || !top->significant)
		fprintf(f, "  no frame is more frequent in slow calls than in fast ones\n");
}

json_t *split__json(const struct split_result *r, int rows)
{
	json_t *o = json_object(), *top = json_array();

	json_object_set_new(o, "function", json_string(r->function));
	json_object_set_new(o, "percentile", json_real(r->percentile));
	json_object_set_new(o, "threshold_ns", json_integer(r->threshold_ns));
	json_object_set_new(o, "slow_calls", json_integer(r->slow_calls));
	json_object_set_new(o, "fast_calls", json_integer(r->fast_calls));
	json_object_set_new(o, "all_slow_calls", json_integer(r->all_slow_calls));
	json_object_set_new(o, "all_fast_calls", json_integer(r->all_fast_calls));
	json_object_set_new(o, "slow_samples", json_integer(r->slow_samples));
	json_object_set_new(o, "fast_samples", json_integer(r->fast_samples));
	json_object_set_new(o, "held_samples", json_integer(r->held));
	json_object_set_new(o, "orphan_calls", json_integer(r->orphans));
	json_object_set_new(o, "dropped_samples", json_integer(r->dropped));
	json_object_set_new(o, "filtered_calls", json_integer(r->filtered));
	json_object_set_new(o, "raw_latency", json_boolean(r->raw_latency));
	json_object_set_new(o, "median_ns", json_integer(r->median_ns));
	json_object_set_new(o, "correction_ns", json_real(r->correction_ns));
	json_object_set_new(o, "correction_uncertainty_ns", json_real(r->correction_unc_ns));
	json_object_set_new(o, "calibration_spread_ns", json_integer(r->calib_spread_ns));
	json_object_set_new(o, "correction_exceeds_signal", json_boolean(r->correction_exceeds));
	for (int i = 0; i < r->n_ranks && i < rows; i++) {
		const struct split_frame_rank *k = &r->ranks[i];

		json_array_append_new(
			top,
			json_pack("{s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:b,s:I,s:b}", "frame", k->frame,
				  "slow_share", k->slow_share, "fast_share", k->fast_share, "delta",
				  k->delta, "z", k->z, "p", k->p, "p_holm", k->p_holm,
				  "significant", k->significant, "needed_samples",
				  (json_int_t)(k->needed > INT64_MAX ? INT64_MAX : k->needed),
				  "offcpu", k->offcpu));
	}
	json_object_set_new(o, "top_frames", top);
	json_object_set_new(o, "significance",
			    json_pack("{s:s,s:s,s:f,s:i}", "test", "two-proportion z", "correction",
				      "holm", "alpha", SPLIT_ALPHA, "frames_tested", r->n_ranks));
	json_object_set_new(o, "verdict", json_string(split_rank__verdict(r)));
	if (split_rank__needed_total(r))
		json_object_set_new(
			o, "needed_samples",
			json_integer((json_int_t)(split_rank__needed_total(r) > INT64_MAX
							  ? INT64_MAX
							  : split_rank__needed_total(r))));
	return o;
}
