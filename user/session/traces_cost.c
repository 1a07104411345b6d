// SPDX-License-Identifier: GPL-2.0
/*
 * traces_cost.c - what a traced function's probes cost the target, by the
 * class of its first instruction (probe_cost.c measures each class once,
 * on a copy of that instruction in liveprof's own process).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <unistd.h>

#include "user/session/probe_cost.h"
#include "user/session/session_core.h"
#include "user/session/bpf_session.h"
#include "user/session/traces_internal.h"
#include "user/util/log.h"

/**
 * traces_site_class - class of the first instruction at @offset of @path
 *
 * Return: an enum probe_insn_class (PIC_STEPPED when it cannot be read:
 * the dearest, so an estimate errs on the safe side).
 */
int traces_site_class(const char *path, uint64_t offset)
{
	uint8_t b[16];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return PIC_STEPPED;
	n = pread(fd, b, sizeof(b), (off_t)offset);
	close(fd);
	return n > 0 ? probe_insn_classify(b, (size_t)n) : PIC_STEPPED;
}

/**
 * traces_class_cost - the measured cost of a probe pair on a function whose
 * first instruction is of class @insn_class
 * @measure: measure it now if it has not been tried yet
 *
 * Return: the cost (->measured false, all zero, if it could not be
 * measured), or NULL when it was not tried and @measure is false.
 */
const struct probe_cost *traces_class_cost(struct traces *t, int insn_class, bool measure)
{
	int ret = (insn_class & PIC_RET_INSN) ? 1 : 0, c = insn_class & ~PIC_RET_INSN;
	const char *how = ret ? ", returns on ret" : "";
	struct probe_cost *pc;
	int id, err;

	if (c < 0 || c >= PIC_NR)
		c = PIC_STEPPED;
	if (c > PIC_STEPPED)
		ret = 0; /* a USDT or py: pair has no function return */
	pc = &t->cost[ret][c];
	if (t->cost_tried[ret][c])
		return pc;
	if (!measure)
		return NULL;
	t->cost_tried[ret][c] = true;
	id = traces_alloc_id(t);
	if (id < 0)
		return pc;
	err = probe_cost_measure(t->c->bpf, id, c | (ret ? PIC_RET_INSN : 0), pc);
	t->id_used[id] = false;
	if (err)
		lp_debug("probe cost of '%s'%s: not measured (%d)", probe_insn_class_name(c), how,
			 err);
	else
		lp_debug("probe cost of '%s'%s: %" PRIu64 " ns per call, %" PRIu64
			 " ns of it inside the call",
			 probe_insn_class_name(c), how, pc->cost_ns, pc->self_ns);
	return pc;
}

bool traces_can_measure(const struct traces *t)
{
	return bpf_session__ready_ns(t->c->bpf) != UINT64_MAX;
}

/* traces.h */
void traces__measure_costs(struct traces *t)
{
	for (int i = 0; t && i < t->n; i++) {
		struct trace *tr = t->v[i];
		const struct probe_cost *cost;

		if (!tr->cost_pending)
			continue;
		tr->cost_pending = false;
		cost = traces_class_cost(t, trace_cost_class(tr), true);
		tr->cfg.cost_ns = cost->cost_ns;
		tr->cfg.self_ns = cost->self_ns;
		tr->info.probe_cost_ns = cost->cost_ns;
		bpf_session__set_probe(t->c->bpf, tr->ids[0], &tr->cfg, NULL, 0);
	}
}
