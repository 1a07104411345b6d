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
#define CALIB_SAMPLED	300	     /* pieces with a sample inside */
#define CALIB_MAX_NS	600000000ULL /* give up after 0.6 s */
#define MAX_PIECES	(1u << 16)
#define PIECE_ITERS	2000 /* ~4 us here */
#define CALIB_ROUNDS	3    /* the charge is the median round's (derive_rounds) */

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
 * Time pieces until CALIB_SAMPLED of them had a sample inside (the
 * thread's CPU time drives the samples: on a busy machine that takes
 * longer) or CALIB_MAX_NS passed. @with and @without get the durations,
 * @idx the number of the sample inside each piece of @with.
 */
static void run_pieces(const volatile uint64_t *count, uint64_t *with, uint64_t *idx,
		       size_t *n_with, uint64_t *without, size_t *n_without)
{
	uint64_t start = lp_now_ns();

	*n_with = *n_without = 0;
	while (*n_with < CALIB_SAMPLED && *n_without < MAX_PIECES &&
	       lp_now_ns() - start < CALIB_MAX_NS) {
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
 * From the piece timings to @out. What a sample adds to a piece, beyond
 * the timer interrupt BPF timed for that very sample (when it does), is
 * the residual that is charged per sample as its median; how far one
 * sample's residual strays from it, net of the spread the work itself
 * has (the pieces without a sample), is the correction's uncertainty.
 */
static void derive(struct bpf_session *bpf, uint64_t *with, const uint64_t *idx, size_t nw,
		   uint64_t *without, size_t nwo, struct sample_cost *out)
{
	const volatile uint64_t *br = bpf_session__calib_brackets(bpf, false);
	uint64_t base = median_sorted(without, nwo), *brs = calloc(nw, sizeof(uint64_t));
	uint64_t *ratio = calloc(nw, sizeof(uint64_t));
	size_t nb = 0;
	double s_res, s_work = (double)half_range(without, nwo);

	for (size_t i = 0; br && brs && ratio && i < nw; i++) {
		uint64_t b = idx[i] < LP_CALIB_SLOTS ? br[idx[i]] : 0;

		/* what the sample added, per ns of its timed interrupt, in 1/1024 */
		if (b) {
			ratio[nb] = with[i] > base ? ((with[i] - base) << 10) / b : 0;
			brs[nb++] = b;
		}
	}
	if (!br || !brs || !ratio || nb < nw * 9 / 10)
		nb = 0; /* not timed per sample: the whole cost is calibrated */
	out->bracket = nb > 0;
	out->bracket_ns = nb ? median_sorted(brs, nb) : 0;
	out->scale_1024 = nb ? median_sorted(ratio, nb) : 0;
	out->scale_1024 = out->scale_1024 > 1024 ? out->scale_1024 - 1024 : 0;
	for (size_t i = 0; i < nw; i++) {
		uint64_t b = nb && idx[i] < LP_CALIB_SLOTS ? br[idx[i]] : 0;
		uint64_t charged = base + b + (b * out->scale_1024 >> 10);

		/* what is left after the charge; below zero is kept at 0 (a
		 * sample that slowed its piece less than it is charged) */
		with[i] = with[i] > charged ? with[i] - charged : 0;
	}
	/* outside a timed interrupt (none seen here): the median rest */
	out->irq_ns = (out->bracket_ns * out->scale_1024 >> 10) + median_sorted(with, nw);
	out->gap_ns = out->irq_ns + out->bracket_ns;
	s_res = (double)half_range(with, nw);
	out->spread_ns = s_res > s_work ? (uint64_t)sqrt(s_res * s_res - s_work * s_work) : 0;
	free(brs);
	free(ratio);
}

/*
 * derive() over CALIB_ROUNDS consecutive runs of the sampled pieces, and
 * the round whose cost is the median: on this VM the cost of a sample
 * jumps for tens of ms at a time (one calibration in ten charged 59 us
 * where its neighbours charged 25-35, and over-corrected every call),
 * so one stretch of time must not decide the charge alone.
 */
static void derive_rounds(struct bpf_session *bpf, uint64_t *with, const uint64_t *idx,
			  size_t nw, uint64_t *without, size_t nwo, struct sample_cost *out)
{
	struct sample_cost r[CALIB_ROUNDS];
	size_t m = nw / CALIB_ROUNDS;

	for (size_t k = 0; k < CALIB_ROUNDS; k++)
		derive(bpf, with + k * m, idx + k * m, m, without, nwo, &r[k]);
	for (size_t i = 1; i < CALIB_ROUNDS; i++)
		for (size_t j = i; j > 0 && r[j].gap_ns < r[j - 1].gap_ns; j--) {
			struct sample_cost t = r[j];

			r[j] = r[j - 1];
			r[j - 1] = t;
		}
	lp_debug("sample cost by round: %lu, %lu, %lu ns", (unsigned long)r[0].gap_ns,
		 (unsigned long)r[1].gap_ns, (unsigned long)r[2].gap_ns);
	*out = r[CALIB_ROUNDS / 2];
}

int sample_cost__calibrate(struct bpf_session *bpf, struct sample_cost *out)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = CALIB_PERIOD_NS,
		.disabled = 1,
	};
	uint64_t *with = calloc(CALIB_SAMPLED, sizeof(uint64_t));
	uint64_t *idx = calloc(CALIB_SAMPLED, sizeof(uint64_t));
	uint64_t *without = calloc(MAX_PIECES, sizeof(uint64_t));
	const volatile uint64_t *count = bpf_session__calib_samples(bpf);
	size_t nw = 0, nwo = 0;
	int fd = -1, err = 0;

	memset(out, 0, sizeof(*out));
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
	bpf_session__calib_brackets(bpf, true);
	piece(); /* warm */
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	run_pieces(count, with, idx, &nw, without, &nwo);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	bpf_session__detach_calib(bpf);
	if (nw < CALIB_SAMPLED / 2 || nwo < CALIB_SAMPLED) {
		lp_debug("sample cost: %zu pieces with a sample, %zu without: not calibrated", nw,
			 nwo);
		err = -EAGAIN;
		goto out;
	}
	derive_rounds(bpf, with, idx, nw, without, nwo, out);
	out->samples = nw;
	out->gaps = nwo;
	out->measured = true;
	bpf_session__set_sample_charge(bpf, out->irq_ns, out->scale_1024);
	lp_debug("sample cost: %lu ns per sample (+- %lu), %lu of it timed per sample in BPF, "
		 "%.2f times that charged beyond (%zu pieces with a sample, %zu without)",
		 (unsigned long)out->gap_ns, (unsigned long)out->spread_ns,
		 (unsigned long)out->bracket_ns, (double)out->scale_1024 / 1024, nw, nwo);
out:
	if (fd >= 0)
		close(fd);
	free(with);
	free(idx);
	free(without);
	return err;
}
