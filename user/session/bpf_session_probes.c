// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_session_probes.c - what the session tells the tracer's probes
 * (their configuration, fetch programs and causal delays) and what it
 * reads back from them (latency histograms, per-probe stats, delayed hits).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "user/session/bpf_session.h"
#include "user/session/bpf_session_internal.h"
#include "liveprof.skel.h"

_Static_assert(FETCH_MAX_OPS == LP_MAX_FETCH_OPS, "fetch program lengths differ");
_Static_assert(FETCH_STR_LEN == LP_STR_LEN, "captured string lengths differ");

/* dwarf/'s fetch program, op by op, in the BPF contract's encoding. */
static int fetch_to_contract(const struct fetch_prog *in, struct lp_fetch_prog *out)
{
	static const __u8 opcode[] = {
		[FETCH_OP_END] = LP_OP_END,	  [FETCH_OP_REG] = LP_OP_REG,
		[FETCH_OP_ADD] = LP_OP_ADD,	  [FETCH_OP_DEREF] = LP_OP_DEREF,
		[FETCH_OP_ADDR] = LP_OP_ADDR,	  [FETCH_OP_CFA] = LP_OP_CFA,
		[FETCH_OP_LOAD] = LP_OP_LOAD,	  [FETCH_OP_STR] = LP_OP_STR,
		[FETCH_OP_RETVAL] = LP_OP_RETVAL,
	};

	if (in->n_ops > LP_MAX_FETCH_OPS)
		return -E2BIG;
	memset(out, 0, sizeof(*out));
	out->n_ops = in->n_ops;
	out->is_signed = in->is_signed;
	for (uint32_t i = 0; i < in->n_ops; i++) {
		if ((unsigned)in->ops[i].op >= sizeof(opcode) / sizeof(opcode[0]))
			return -EINVAL;
		out->ops[i].op = opcode[in->ops[i].op];
		out->ops[i].size = in->ops[i].size;
		out->ops[i].reg = in->ops[i].reg;
		out->ops[i].arg = in->ops[i].arg;
	}
	return 0;
}

int bpf_session__set_probe(struct bpf_session *s, uint32_t id, const struct lp_probe_cfg *cfg,
			   const struct fetch_prog *progs, unsigned int n_progs)
{
	int err;

	if (id >= LP_MAX_PROBES || n_progs > LP_MAX_VALUES)
		return -EINVAL;
	for (unsigned int i = 0; i < n_progs; i++) {
		__u32 key = id * LP_MAX_VALUES + i;
		struct lp_fetch_prog prog;

		err = fetch_to_contract(&progs[i], &prog);
		if (err)
			return err;
		err = bpf_map__update_elem(s->skel->maps.fetch, &key, sizeof(key), &prog,
					   sizeof(prog), BPF_ANY);
		if (err)
			return err;
	}
	return bpf_map__update_elem(s->skel->maps.probes, &id, sizeof(id), cfg, sizeof(*cfg),
				    BPF_ANY);
}

int bpf_session__clear_probe(struct bpf_session *s, uint32_t id)
{
	struct lp_probe_cfg none = {0};
	volatile uint64_t *h = s->hist_mem;
	volatile struct lp_probe_stats *st = s->stats_mem;

	if (id >= LP_MAX_PROBES)
		return -EINVAL;
	for (unsigned int i = 0; i < LP_HIST_BUCKETS; i++)
		h[(size_t)id * LP_HIST_BUCKETS + i] = 0;
	st[id].calls = st[id].max_ns = st[id].untimed = 0;
	return bpf_map__update_elem(s->skel->maps.probes, &id, sizeof(id), &none, sizeof(none),
				    BPF_ANY);
}

const volatile uint64_t *bpf_session__hist(struct bpf_session *s)
{
	return s->hist_mem;
}

const volatile struct lp_probe_stats *bpf_session__probe_stats(struct bpf_session *s)
{
	return s->stats_mem;
}

int bpf_session__map_fd(struct bpf_session *s, const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(s->skel->obj, name);

	return m ? bpf_map__fd(m) : -ENOENT;
}

int bpf_session__set_str_match(struct bpf_session *s, uint32_t id, const char *a, const char *b,
			       bool on)
{
	struct lp_str_key key = {.probe_id = id};
	uint8_t one = 1;

	if (strlen(a) >= LP_STR_LEN - 1 || strlen(b) >= LP_STR_LEN - 1)
		return -ENAMETOOLONG;
	memcpy(key.a, a, strlen(a));
	memcpy(key.b, b, strlen(b));
	if (!on)
		return bpf_map__delete_elem(s->skel->maps.str_match, &key, sizeof(key), 0);
	return bpf_map__update_elem(s->skel->maps.str_match, &key, sizeof(key), &one, sizeof(one),
				    BPF_ANY);
}

int bpf_session__set_py_name(struct bpf_session *s, uint32_t id, const char *name, bool on)
{
	char key[LP_STR_LEN] = {0};
	int r;

	if (strlen(name) >= LP_STR_LEN - 1)
		return -ENAMETOOLONG;
	memcpy(key, name, strlen(name));
	if (on)
		r = bpf_map__update_elem(s->skel->maps.py_names, key, sizeof(key), &id, sizeof(id),
					 BPF_ANY);
	else
		r = bpf_map__delete_elem(s->skel->maps.py_names, key, sizeof(key), 0);
	/* code objects decided before now are decided again at their next call */
	__atomic_fetch_add(&s->skel->bss->py_names_gen, 1, __ATOMIC_RELAXED);
	return r;
}

void bpf_session__set_py_hit_cost(struct bpf_session *s, uint32_t owner_id, uint64_t start_ns,
				  uint64_t return_ns)
{
	__atomic_store_n(&s->skel->bss->py_owner_id, owner_id, __ATOMIC_RELAXED);
	__atomic_store_n(&s->skel->bss->py_start_hit_ns, start_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&s->skel->bss->py_return_hit_ns, return_ns, __ATOMIC_RELAXED);
}

int bpf_session__take_py_gaps(struct bpf_session *s, struct lp_py_gaps *out)
{
	struct lp_py_gaps *v = calloc(s->nr_cpus, sizeof(*v));
	__u32 zero = 0;
	int err;

	memset(out, 0, sizeof(*out));
	if (!v)
		return -ENOMEM;
	err = bpf_map__lookup_elem(s->skel->maps.py_gaps, &zero, sizeof(zero), v,
				   s->nr_cpus * sizeof(*v), 0);
	for (int c = 0; !err && c < s->nr_cpus; c++)
		for (int k = 0; k < 2; k++) {
			if (v[c].min_ns[k] && (!out->min_ns[k] || v[c].min_ns[k] < out->min_ns[k]))
				out->min_ns[k] = v[c].min_ns[k];
			out->n[k] += v[c].n[k];
		}
	if (!err) {
		/* a hit between the read and this write is lost: one of many */
		memset(v, 0, s->nr_cpus * sizeof(*v));
		err = bpf_map__update_elem(s->skel->maps.py_gaps, &zero, sizeof(zero), v,
					   s->nr_cpus * sizeof(*v), 0);
	}
	free(v);
	return err;
}

int bpf_session__by_hist_fd(struct bpf_session *s)
{
	return bpf_map__fd(s->skel->maps.by_hist);
}

int bpf_session__set_causal_delay(struct bpf_session *s, uint32_t id, uint64_t ns)
{
	if (id >= LP_MAX_PROBES)
		return -EINVAL;
	if (ns > LP_CAUSAL_MAX_DELAY_NS)
		ns = LP_CAUSAL_MAX_DELAY_NS;
	/* Debts of the previous setting lapse: a window starts clean. */
	__atomic_fetch_add(&s->skel->bss->causal_epoch, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->skel->bss->causal_delay_ns[id], ns, __ATOMIC_RELAXED);
	return 0;
}

uint64_t bpf_session__causal_hits(struct bpf_session *s)
{
	return __atomic_load_n(&s->skel->bss->causal_delayed_hits, __ATOMIC_RELAXED);
}

uint64_t bpf_session__causal_yields(struct bpf_session *s)
{
	return __atomic_load_n(&s->skel->bss->causal_yielded_hits, __ATOMIC_RELAXED);
}

uint64_t bpf_session__causal_waited_ns(struct bpf_session *s)
{
	return __atomic_load_n(&s->skel->bss->causal_waited_ns, __ATOMIC_RELAXED);
}

int bpf_session__set_causal_line(struct bpf_session *s, uint32_t tgid, const uint64_t *lo,
				 const uint64_t *hi, int n, uint64_t delay_ns)
{
	struct liveprof_bpf__bss *b = s->skel->bss;

	if (n < 0 || n > LP_CAUSAL_MAX_RANGES)
		return -EINVAL;
	if (delay_ns > LP_CAUSAL_MAX_DELAY_NS)
		delay_ns = LP_CAUSAL_MAX_DELAY_NS;
	/* No line while the ranges change: a tick sees the old set or none. */
	__atomic_store_n(&b->causal_line_n, 0, __ATOMIC_SEQ_CST);
	for (int i = 0; i < n; i++) {
		b->causal_line_lo[i] = lo[i];
		b->causal_line_hi[i] = hi[i];
	}
	__atomic_fetch_add(&b->causal_epoch, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&b->causal_line_delay_ns, delay_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&b->causal_line_tgid, tgid, __ATOMIC_RELAXED);
	__atomic_store_n(&b->causal_line_n, (uint32_t)n, __ATOMIC_SEQ_CST);
	return 0;
}

void bpf_session__causal_line_counts(struct bpf_session *s, uint64_t *ticks, uint64_t *user,
				     uint64_t *hits)
{
	*user = __atomic_load_n(&s->skel->bss->causal_line_user, __ATOMIC_RELAXED);
	*ticks = __atomic_load_n(&s->skel->bss->causal_line_ticks, __ATOMIC_RELAXED);
	*hits = __atomic_load_n(&s->skel->bss->causal_line_hits, __ATOMIC_RELAXED);
}
