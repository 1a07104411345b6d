// SPDX-License-Identifier: GPL-2.0
/*
 * replay.c - the daemon's per-sample ingest path on one core, without BPF.
 *
 * Builds NSTACKS distinct synthetic user stacks (depth 10-40, leaf first,
 * tree-shaped: a stack shares its root part with an earlier one) whose
 * addresses lie in the text of a few modules this process has mapped, then
 * lays out NSAMPLES sample records (pid, tid, n_user, addresses) one after
 * the other, as the ring buffer holds them, the stack of each drawn with a
 * Zipf(1) popularity. The timed loop does, per record, what
 * user/daemon.c:on_sample() does for a frame-pointer sample of a user-mode
 * process: copy the addresses out of the record, the trampoline fix-up
 * scan (fix_trampolines() is static there; same loop here, no call in
 * flight), stack_store__intern(), counts__add() into the total and into
 * the current window slot (slots rotated and cleared as the daemon's
 * once-a-second tick does). Each run starts with an empty store.
 *
 * Then, once, the symbolization the daemon does lazily per distinct stack
 * (stack_symbols__update over the store, fresh symbolizer on our own pid).
 *
 * Output, one line per run, then one "sym" line:
 *   run I samples N distinct D cpu_ns C wall_ns W samples_per_cpu_s R ns_per_sample P
 *   sym stacks D frames F cpu_ns C wall_ns W ns_per_stack S ns_per_sample_amortized A
 *
 * Usage: replay [RUNS [NSAMPLES [NSTACKS]]]   (defaults 5 2000000 10000)
 */
#include <link.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bpf/liveprof.h"
#include "user/profile/stack_store.h"
#include "user/profile/stack_symbols.h"
#include "dwarf/symbolize.h"

#define MAX_FRAMES 127 /* the daemon's MAX_USER_FRAMES order of magnitude */
#define MAX_MODS 6
#define N_SLOTS 10
#define SLOT_SAMPLES 200000 /* samples per window slot before it rotates */

struct rec {
	uint32_t pid, tid;
	uint16_t n_user, n_kernel;
	uint32_t weight_lo;
	char comm[16];
	uint64_t addr[]; /* n_user user addresses, leaf first */
};

struct mod {
	uint64_t lo, hi; /* runtime addresses of the executable segment */
};

static struct mod mods[MAX_MODS];
static int n_mods;
static uint64_t rng = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

static int find_mods(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size, (void)arg;
	for (int i = 0; i < info->dlpi_phnum && n_mods < MAX_MODS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		/* skip the vDSO and tiny objects */
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && ph->p_filesz >= (64 << 10) &&
		    !strstr(info->dlpi_name, "vdso")) {
			mods[n_mods].lo = info->dlpi_addr + ph->p_vaddr;
			mods[n_mods].hi = info->dlpi_addr + ph->p_vaddr + ph->p_filesz;
			n_mods++;
		}
	}
	return 0;
}

static uint64_t ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* user/daemon.c:fix_trampolines(), for a sample with no call in flight */
static unsigned int fix_trampolines(uint64_t *us, unsigned int n, int n_calls, uint64_t *fixed)
{
	int call = n_calls - 1;
	unsigned int out = 0;

	for (unsigned int i = 0; i < n; i++) {
		if (us[i] >= LP_UPROBE_TRAMP_LO && us[i] < LP_UPROBE_TRAMP_HI) {
			if (call < 0)
				continue;
			us[i] = 0;
			call--;
			(*fixed)++;
		}
		us[out++] = us[i];
	}
	return out;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 5;
	size_t nsamples = argc > 2 ? strtoull(argv[2], NULL, 0) : 2000000;
	size_t nstacks = argc > 3 ? strtoull(argv[3], NULL, 0) : 10000;
	uint32_t pid = (uint32_t)getpid();
	uint64_t **stk, *cdf, fixed = 0, total_frames = 0;
	uint8_t *depth;
	char *buf;
	size_t *off, bytes = 0, distinct = 0;
	struct stack_store *store = NULL;
	double sum;

	dl_iterate_phdr(find_mods, NULL);
	if (n_mods < 2) {
		fprintf(stderr, "replay: found %d executable modules\n", n_mods);
		return 1;
	}

	/* NSTACKS distinct stacks; root part copied from an earlier stack */
	stk = calloc(nstacks, sizeof(*stk));
	depth = calloc(nstacks, 1);
	for (size_t i = 0; i < nstacks; i++) {
		unsigned d = 10 + rnd() % 31, shared = 0;

		stk[i] = malloc(d * sizeof(uint64_t));
		depth[i] = (uint8_t)d;
		if (i) {
			size_t j = rnd() % i;

			shared = (unsigned)(rnd() % (d < depth[j] ? d : depth[j]));
			shared = shared > d - 2 ? d - 2 : shared; /* at least 2 own frames */
			/* root part = the last @shared entries (leaf first) */
			memcpy(stk[i] + d - shared, stk[j] + depth[j] - shared, shared * 8);
		}
		for (unsigned k = 0; k < d - shared; k++) {
			const struct mod *m = &mods[rnd() % n_mods];

			stk[i][k] = m->lo + rnd() % (m->hi - m->lo);
		}
		total_frames += d;
	}

	/* Zipf(1) popularity: rank r has weight 1 / (r + 1) */
	cdf = malloc(nstacks * sizeof(*cdf));
	sum = 0;
	for (size_t r = 0; r < nstacks; r++)
		sum += 1.0 / (double)(r + 1);
	{
		double acc = 0;

		for (size_t r = 0; r < nstacks; r++) {
			acc += 1.0 / (double)(r + 1) / sum;
			cdf[r] = (uint64_t)(acc * (double)UINT64_MAX);
		}
		cdf[nstacks - 1] = UINT64_MAX;
	}

	/* the sample records, laid out as consecutive ring-buffer entries */
	off = malloc(nsamples * sizeof(*off));
	{
		size_t *which = malloc(nsamples * sizeof(*which));

		for (size_t i = 0; i < nsamples; i++) {
			uint64_t u = rnd();
			size_t lo = 0, hi = nstacks - 1;

			while (lo < hi) {
				size_t mid = (lo + hi) / 2;

				if (cdf[mid] < u)
					lo = mid + 1;
				else
					hi = mid;
			}
			which[i] = lo; /* rank == stack index (stacks are random anyway) */
			off[i] = bytes;
			bytes += sizeof(struct rec) + depth[lo] * 8;
		}
		buf = malloc(bytes);
		if (!buf || !off) {
			perror("replay");
			return 1;
		}
		for (size_t i = 0; i < nsamples; i++) {
			struct rec *r = (struct rec *)(buf + off[i]);

			r->pid = pid;
			r->tid = pid + (uint32_t)(i & 3);
			r->n_user = depth[which[i]];
			r->n_kernel = 0;
			r->weight_lo = 0;
			memcpy(r->comm, "replay", 7);
			memcpy(r->addr, stk[which[i]], r->n_user * 8);
		}
		free(which);
	}
	printf("setup modules %d stacks %zu mean_depth %.1f samples %zu record_bytes %zu\n", n_mods,
	       nstacks, (double)total_frames / (double)nstacks, nsamples, bytes);
	fflush(stdout);

	for (int run = 0; run < runs; run++) {
		struct counts total, slots[N_SLOTS];
		unsigned cur = 0;
		uint64_t c0, w0, c1, w1;

		if (store)
			stack_store__free(store);
		store = stack_store__new(false);
		counts__init_dense(&total);
		for (int s = 0; s < N_SLOTS; s++)
			counts__init(&slots[s]);
		c0 = ns(CLOCK_THREAD_CPUTIME_ID);
		w0 = ns(CLOCK_MONOTONIC);
		for (size_t i = 0; i < nsamples; i++) {
			const struct rec *r = (const struct rec *)(buf + off[i]);
			uint64_t us[MAX_FRAMES];
			unsigned nu = r->n_user < MAX_FRAMES ? r->n_user : MAX_FRAMES;
			struct raw_stack rs = {0};
			int64_t id;

			memcpy(us, r->addr, nu * sizeof(uint64_t));
			nu = fix_trampolines(us, nu, 0, &fixed);
			rs.pid = r->pid;
			rs.tid = r->tid;
			rs.n_user = (uint16_t)nu;
			rs.n_kernel = r->n_kernel;
			rs.user = us;
			rs.kernel = us + nu;
			memcpy(rs.comm, r->comm, sizeof(rs.comm));
			id = stack_store__intern(store, &rs);
			if (id < 0 || counts__add(&total, (uint32_t)id, 1, 0) ||
			    counts__add(&slots[cur], (uint32_t)id, 1, 0)) {
				fprintf(stderr, "replay: out of memory\n");
				return 1;
			}
			if ((i + 1) % SLOT_SAMPLES == 0) { /* the daemon's tick */
				size_t last = slots[cur].n;

				cur = (cur + 1) % N_SLOTS;
				counts__clear(&slots[cur]);
				counts__reserve(&slots[cur], last);
			}
		}
		c1 = ns(CLOCK_THREAD_CPUTIME_ID);
		w1 = ns(CLOCK_MONOTONIC);
		distinct = stack_store__count(store);
		if (total.total_count != nsamples) {
			fprintf(stderr, "replay: counted %llu of %zu\n",
				(unsigned long long)total.total_count, nsamples);
			return 1;
		}
		printf("run %d samples %zu distinct %zu cpu_ns %llu wall_ns %llu samples_per_cpu_s %.0f "
		       "ns_per_sample %.1f\n",
		       run + 1, nsamples, distinct, (unsigned long long)(c1 - c0),
		       (unsigned long long)(w1 - w0), (double)nsamples * 1e9 / (double)(c1 - c0),
		       (double)(c1 - c0) / (double)nsamples);
		fflush(stdout);
		counts__free(&total);
		for (int s = 0; s < N_SLOTS; s++)
			counts__free(&slots[s]);
	}

	/* lazy symbolization, once per distinct stack */
	{
		struct stack_symbols_opts o = {0};
		struct stack_symbols *ssy = stack_symbols__new(&o);
		struct symbolizer *sym = symbolizer__new(false);
		uint64_t c0, w0, c1, w1;
		int err;

		if (!ssy || !sym || symbolizer__add_pid(sym, (int)pid) < 0) {
			fprintf(stderr, "replay: symbolizer setup failed\n");
			return 1;
		}
		c0 = ns(CLOCK_THREAD_CPUTIME_ID);
		w0 = ns(CLOCK_MONOTONIC);
		err = stack_symbols__update(ssy, store, sym, NULL, NULL);
		c1 = ns(CLOCK_THREAD_CPUTIME_ID);
		w1 = ns(CLOCK_MONOTONIC);
		if (err) {
			fprintf(stderr, "replay: stack_symbols__update: %d\n", err);
			return 1;
		}
		printf("sym stacks %zu frames %llu cpu_ns %llu wall_ns %llu ns_per_stack %.0f "
		       "ns_per_sample_amortized %.1f\n",
		       distinct, (unsigned long long)total_frames, (unsigned long long)(c1 - c0),
		       (unsigned long long)(w1 - w0), (double)(c1 - c0) / (double)distinct,
		       (double)(c1 - c0) / (double)nsamples);
		stack_symbols__free(ssy);
		symbolizer__free(sym);
	}
	stack_store__free(store);
	return fixed ? 2 : 0;
}
