// SPDX-License-Identifier: GPL-2.0
/*
 * sample_cost.c - calibrate what a sample costs the thread it interrupts,
 * beyond what BPF times of it.
 *
 * The calling thread runs pieces of constant work (~4 us each) while the
 * real sampler samples it every 100 us of its CPU time, and reads the
 * count of its samples around each piece. The median piece with exactly
 * one sample inside, minus the median piece with none, is what a sample
 * adds to a call: the interrupt, perf, the sampler, and the caches it
 * leaves cold. Medians, because preemption on a busy machine only ever
 * adds time to a piece, whatever its class. BPF times the timer
 * interrupt around each sample (cost.bpf.h); the calibration finds what
 * lies beyond it as a share of it, so the per-sample charge follows the
 * machine's load and the sampling rate: a sample at 100 Hz costs about
 * twice what one at 10 kHz does here, its timed interrupt and the rest
 * alike.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include "user/session/bpf_session.h"
#include "user/util/log.h"
#include "user/session/sample_cost.h"
#include "user/util/util.h"

#define CALIB_PERIOD_NS 100000ULL    /* one sample per 100 us of the thread's CPU */
#define ROUND_SAMPLED	100	     /* pieces with a sample inside, per round */
#define ROUND_MAX_NS	200000000ULL /* a round gives up after 0.2 s */
#define MAX_PIECES	(1u << 15)
#define PIECE_ITERS	2000 /* ~4 us here */
#define FIRST_ROUNDS	3    /* at the start, after the warm-up round */
#define REFINE_EARLY	30   /* ticks with a round each, then every REFINE_EVERY */
#define REFINE_EVERY	10

static volatile unsigned long sink;

/*
 * Half the p10..p90 range of sorted @v, as a normal distribution would
 * have it, from its quartiles (x 1.2816 / 0.6745): preemption on a busy
 * machine stretches a few pieces by milliseconds, and only the quartiles
 * are safe from up to a quarter of such outliers.
 */
static uint64_t half_range(const uint64_t *v, size_t n)
{
	return (uint64_t)((v[n * 3 / 4] - v[n / 4]) / 2 * (1.2816 / 0.6745));
}

__attribute__((noinline)) static void piece(void)
{
	volatile unsigned long acc = 0;

	for (unsigned long i = 0; i < PIECE_ITERS; i++)
		acc += i ^ (i >> 2);
	sink += acc;
}

/*
 * Time pieces until ROUND_SAMPLED of them had a sample inside (the
 * thread's CPU time drives the samples: on a busy machine that takes
 * longer) or ROUND_MAX_NS passed. @with and @without get the durations,
 * @idx the number of the sample inside each piece of @with.
 */
static void run_pieces(const volatile uint64_t *count, uint64_t *with, uint64_t *idx,
		       size_t *n_with, uint64_t *without, size_t *n_without)
{
	uint64_t start = lp_now_ns();

	*n_with = *n_without = 0;
	while (*n_with < ROUND_SAMPLED && *n_without < MAX_PIECES &&
	       lp_now_ns() - start < ROUND_MAX_NS) {
		uint64_t c0 = *count, t0 = lp_now_ns(), t1, c1;

		piece();
		t1 = lp_now_ns();
		c1 = *count;
		if (c1 == c0) {
			without[(*n_without)++] = t1 - t0;
		} else if (c1 == c0 + 1) {
			idx[*n_with] = c0;
			with[(*n_with)++] = t1 - t0;
		}
	}
}

static uint64_t median_sorted(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), lp_cmp_u64);
	return v[n / 2];
}

/*
 * From the piece timings to @out. What a sample adds to a piece beyond the
 * timer interrupt BPF timed for that very sample (when it does), per ns
 * of the kernel's part of that interrupt (all but the sampler program's
 * own time, cost.bpf.h), is the share charged beyond it; what is left
 * after that charge is the residual, charged per sample as its median;
 * how far one sample's residual strays from it, net of the spread the
 * work itself has (the pieces without a sample), is the correction's
 * uncertainty.
 */
/* Calibration sample @idx's timed interrupt; zeros when not recorded. */
static struct lp_calib_slot slot_at(const volatile struct lp_calib_slot *slots, uint64_t idx)
{
	struct lp_calib_slot c = {0};

	if (slots && idx < LP_CALIB_SLOTS) {
		c.bracket_ns = slots[idx].bracket_ns;
		c.kernel_ns = slots[idx].kernel_ns;
	}
	return c;
}

static void derive(struct bpf_session *bpf, uint64_t *with, const uint64_t *idx, size_t nw,
		   uint64_t *without, size_t nwo, struct sample_cost_round *out)
{
	const volatile struct lp_calib_slot *slots = bpf_session__calib_slots(bpf, false);
	uint64_t base = median_sorted(without, nwo), bracket = 0, kernel = 0, resid;
	uint64_t *brs = calloc(nw, sizeof(uint64_t)), *ks = calloc(nw, sizeof(uint64_t));
	uint64_t *ratio = calloc(nw, sizeof(uint64_t));
	size_t nb = 0;
	double s_res, s_work = (double)half_range(without, nwo);

	for (size_t i = 0; slots && brs && ks && ratio && i < nw; i++) {
		struct lp_calib_slot c = slot_at(slots, idx[i]);
		uint64_t b = c.bracket_ns, k = c.kernel_ns;

		/* what the sample added beyond its bracket, per ns of the
		 * kernel's part of it, in 1/1024 */
		if (b && k) {
			ratio[nb] = with[i] > base + b ? ((with[i] - base - b) << 10) / k : 0;
			brs[nb] = b;
			ks[nb++] = k;
		}
	}
	if (!slots || !brs || !ks || !ratio || nb < nw * 9 / 10)
		nb = 0; /* not timed per sample: the whole cost is calibrated */
	if (nb) {
		bracket = median_sorted(brs, nb);
		kernel = median_sorted(ks, nb);
	}
	out->bracket_ns = bracket;
	out->scale_1024 = nb ? median_sorted(ratio, nb) : 0;
	for (size_t i = 0; i < nw; i++) {
		struct lp_calib_slot c = nb ? slot_at(slots, idx[i]) : (struct lp_calib_slot){0};
		uint64_t charged = base + c.bracket_ns + (c.kernel_ns * out->scale_1024 >> 10);

		/* what is left after the charge; below zero is kept at 0 (a
		 * sample that slowed its piece less than it is charged) */
		with[i] = with[i] > charged ? with[i] - charged : 0;
	}
	resid = median_sorted(with, nw);
	out->gap_ns = bracket + (kernel * out->scale_1024 >> 10) + resid;
	/* outside a timed interrupt (none seen here): all but what BPF times
	 * of the sample, its own time */
	out->irq_ns = out->gap_ns - (bracket > kernel ? bracket - kernel : 0);
	s_res = (double)half_range(with, nw);
	out->spread_ns = s_res > s_work ? (uint64_t)sqrt(s_res * s_res - s_work * s_work) : 0;
	free(brs);
	free(ks);
	free(ratio);
}

static int cmp_gap(const void *a, const void *b)
{
	const struct sample_cost_round *x = a, *y = b;

	return x->gap_ns < y->gap_ns ? -1 : x->gap_ns > y->gap_ns;
}

static int cmp_scale(const void *a, const void *b)
{
	const struct sample_cost_round *x = a, *y = b;

	return x->scale_1024 < y->scale_1024 ? -1 : x->scale_1024 > y->scale_1024;
}

static int cmp_spread(const void *a, const void *b)
{
	const struct sample_cost_round *x = a, *y = b;

	return x->spread_ns < y->spread_ns ? -1 : x->spread_ns > y->spread_ns;
}

/*
 * The charge in force from the rounds kept: the median share charged
 * beyond a timed interrupt (what BPF applies to every sample), with the
 * rest charged outside one from the same round; the median cost and
 * spread, reported. On this VM the cost of a sample jumps for tens to
 * hundreds of ms at a time (one calibration in three under a loaded make
 * test charged 58-74 us where its neighbours charged 27-34, and
 * over-corrected every call of its session), and the timed interrupt
 * alone runs 15 us while liveprof starts and 11 us in the session that
 * follows, the share beyond it staying within 0.82-0.85: rounds spread
 * over the session outvote such a stretch.
 */
static void combine(struct bpf_session *bpf, struct sample_cost *c)
{
	struct sample_cost_round r[SAMPLE_COST_ROUNDS];
	uint32_t n = c->n_rounds;

	memcpy(r, c->rounds, n * sizeof(r[0]));
	qsort(r, n, sizeof(r[0]), cmp_spread);
	c->spread_ns = r[n / 2].spread_ns;
	qsort(r, n, sizeof(r[0]), cmp_scale);
	c->bracket_ns = r[n / 2].bracket_ns;
	c->irq_ns = r[n / 2].irq_ns;
	c->scale_1024 = r[n / 2].scale_1024;
	c->bracket = c->bracket_ns > 0;
	c->measured = true;
	qsort(r, n, sizeof(r[0]), cmp_gap);
	c->gap_ns = r[n / 2].gap_ns;
	bpf_session__set_sample_charge(bpf, c->irq_ns, c->scale_1024);
	lp_debug("sample cost: %lu ns per sample (+- %lu; rounds %lu..%lu ns), %lu of it timed "
		 "per sample in BPF, %.2f times its kernel part charged beyond (%u rounds, %lu "
		 "pieces with a sample, %lu without)",
		 (unsigned long)c->gap_ns, (unsigned long)c->spread_ns, (unsigned long)r[0].gap_ns,
		 (unsigned long)r[n - 1].gap_ns, (unsigned long)c->bracket_ns,
		 (double)c->scale_1024 / 1024, n, (unsigned long)c->samples,
		 (unsigned long)c->gaps);
}

/*
 * One round: point the sampler at this thread every 100 us of its CPU,
 * time pieces, and derive the cost into @out. -EAGAIN when the thread got
 * too little CPU to tell (fewer than half the sampled pieces wanted).
 */
static int one_round(struct bpf_session *bpf, struct sample_cost *c, struct sample_cost_round *out)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = CALIB_PERIOD_NS,
		.disabled = 1,
	};
	uint64_t *with = calloc(ROUND_SAMPLED, sizeof(uint64_t));
	uint64_t *idx = calloc(ROUND_SAMPLED, sizeof(uint64_t));
	uint64_t *without = calloc(MAX_PIECES, sizeof(uint64_t));
	const volatile uint64_t *count = bpf_session__calib_samples(bpf);
	size_t nw = 0, nwo = 0;
	int fd = -1, err = 0;

	if (!with || !idx || !without) {
		err = -ENOMEM;
		goto out;
	}
	fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	err = bpf_session__attach_calib(bpf, fd, (uint32_t)syscall(SYS_gettid));
	if (err)
		goto out;
	bpf_session__calib_slots(bpf, true);
	piece(); /* warm */
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	run_pieces(count, with, idx, &nw, without, &nwo);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	/* The link owned the event and closed it: a second close() would
	 * hit whatever took the number since, in another thread (a socket
	 * libmicrohttpd just accepted, which then aborts it). */
	bpf_session__detach_calib(bpf);
	fd = -1;
	if (nw < ROUND_SAMPLED / 2 || nwo < ROUND_SAMPLED) {
		lp_debug("sample cost: %zu pieces with a sample, %zu without: no round", nw, nwo);
		err = -EAGAIN;
		goto out;
	}
	derive(bpf, with, idx, nw, without, nwo, out);
	c->samples += nw;
	c->gaps += nwo;
out:
	if (fd >= 0)
		close(fd);
	free(with);
	free(idx);
	free(without);
	return err;
}

/* One round into the ring of rounds kept, and the charge from them. */
static int add_round(struct bpf_session *bpf, struct sample_cost *c)
{
	struct sample_cost_round r;
	int err = one_round(bpf, c, &r);

	if (err)
		return err;
	c->rounds[c->next_round] = r;
	c->next_round = (c->next_round + 1) % SAMPLE_COST_ROUNDS;
	if (c->n_rounds < SAMPLE_COST_ROUNDS)
		c->n_rounds++;
	combine(bpf, c);
	return 0;
}

int sample_cost__calibrate(struct bpf_session *bpf, struct sample_cost *out)
{
	struct sample_cost_round warm;
	int err;

	memset(out, 0, sizeof(*out));
	/* The process's first round costs a third less than every later
	 * one here, the same in each fresh liveprof: it is not kept. */
	err = one_round(bpf, out, &warm);
	if (err)
		return err;
	out->samples = out->gaps = 0;
	for (int k = 0; k < FIRST_ROUNDS; k++) {
		int e = add_round(bpf, out);

		if (e && !out->n_rounds && k == FIRST_ROUNDS - 1)
			err = e;
	}
	return out->n_rounds ? 0 : err;
}

void sample_cost__refine(struct bpf_session *bpf, struct sample_cost *cost)
{
	if (!cost->measured)
		return;
	cost->ticks++;
	if (cost->ticks <= REFINE_EARLY || cost->ticks % REFINE_EVERY == 0)
		add_round(bpf, cost);
}
