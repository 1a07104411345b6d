// SPDX-License-Identifier: GPL-2.0
/*
 * traces_py.c - --trace py:QUALNAME: calls of a Python function, timed
 * from the start of its frame to its return (bpf/pytrace.bpf.h).
 *
 * Probes in the interpreter, each proven an instruction boundary: where
 * frames start, the jumps into the block before the evaluator's
 * resume_frame label that only starts run (or the label itself), found
 * from its DWARF (dwarf/python_eval.c, python_starts.c); where they
 * return, each site of the USDT probe python:function__return, with its
 * semaphore, or, in a build without USDT, the labels TARGET_RETURN_VALUE
 * and exit_unwind. BPF decides per code object, at its first call,
 * whether its [module.]qualname is traced (map py_names), so functions
 * defined later are traced from their first call.
 *
 * A py: trace is a USDT pair to the rest of liveprof (tr->usdt set, with
 * a return name) with one probe id, the cookie of all its probes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dwarf/python_runtime.h"
#include "dwarf/usdt.h"
#include "user/session/bpf_session.h"
#include "user/session/bpf_caps.h"
#include "user/session/session_core.h"
#include "user/session/traces.h"
#include "user/session/traces_internal.h"
#include "user/util/log.h"
#include "user/util/util.h"

#define PY_RETURN "function__return"

bool traces_py_is(const struct trace *tr)
{
	return tr->py_qual[0] != '\0';
}

int traces_py_parse(struct trace *tr, const char *spec, char *err, size_t errlen)
{
	const char *q = spec + 3;
	size_t n = strlen(q);

	if (!n || n >= LP_STR_LEN - 1) {
		lp_errf(err, errlen,
			"bad Python spec '%s': expected py:QUALNAME (at most %d bytes, e.g. "
			"py:handle or py:Handler.call)",
			spec, LP_STR_LEN - 2);
		return n ? -ENAMETOOLONG : -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		char c = q[i];

		/* identifiers, '.' between them, <locals> and <lambda> */
		if (!(c == '_' || c == '.' || c == '<' || c == '>' || (c >= '0' && c <= '9') ||
		      (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
			lp_errf(err, errlen, "bad Python spec '%s': '%c' is not part of a qualname",
				spec, c);
			return -EINVAL;
		}
	}
	memcpy(tr->py_qual, q, n);
	snprintf(tr->usdt->provider, sizeof(tr->usdt->provider), "python");
	snprintf(tr->usdt->name, sizeof(tr->usdt->name), "resume_frame");
	snprintf(tr->usdt->ret_name, sizeof(tr->usdt->ret_name), PY_RETURN);
	return 0;
}

/*
 * Let @owner's programs do the work of all py: traces, and charge each
 * hit what its program cannot time of it. Measured in the target where
 * it can be: the shortest gap between two hits (bpf/pytrace.bpf.h, the
 * median of the latest ticks' shortest) holds all of that and the least
 * work of the target beside it. In py_charge.py, a start's gap was its
 * calibration on liveprof's nops (below) to within 0-10%, and a return's
 * 0.25 us (30-50%) more: what function__return's raised semaphore makes
 * the interpreter compute (file, name, line), which no nop sees. A gap
 * is believed only up to twice the calibration: a target whose hits
 * never come close together would have it charge its own work.
 * Otherwise the calibration: the trap, and the idle programs of the other
 * attached py: traces (but @gone) that run at each hit too (each trace
 * attaches its own probes; 0.10-0.14 us a program here).
 */
static void py_publish(struct traces *t, const struct trace *owner, const struct trace *gone)
{
	uint64_t ns[2];
	uint32_t consumers = 0;

	for (int i = 0; i < t->n; i++)
		if (t->v[i] != gone && traces_py_is(t->v[i]) && t->v[i]->n_links)
			consumers++;
	for (int k = 0; k < 2; k++) {
		ns[k] = t->py_hit_ns[k] + (consumers > 1 ? (consumers - 1) * t->py_consumer_ns : 0);
		if (t->py_gap_ns[k] && t->py_gap_ns[k] <= 2 * ns[k])
			ns[k] = t->py_gap_ns[k];
	}
	t->py_owner = owner;
	bpf_session__set_py_hit_cost(t->c->bpf, (uint32_t)owner->ids[0], ns[0], ns[1]);
}

#define PY_GAP_MIN_HITS 100 /* gaps of a kind in a tick for its shortest to count */

void traces_py_tick(struct traces *t)
{
	struct lp_py_gaps g;
	uint64_t v[PY_GAP_TICKS];

	if (!t->py_owner || bpf_session__take_py_gaps(t->c->bpf, &g))
		return;
	for (int k = 0; k < 2; k++) {
		if (g.n[k] < PY_GAP_MIN_HITS || !g.min_ns[k])
			continue;
		t->py_gap_ring[k][t->py_gap_next[k]] = g.min_ns[k];
		t->py_gap_next[k] = (t->py_gap_next[k] + 1) % PY_GAP_TICKS;
		if (t->py_gap_n[k] < PY_GAP_TICKS)
			t->py_gap_n[k]++;
		memcpy(v, t->py_gap_ring[k], t->py_gap_n[k] * sizeof(v[0]));
		qsort(v, t->py_gap_n[k], sizeof(v[0]), lp_cmp_u64);
		t->py_gap_ns[k] = v[t->py_gap_n[k] / 2];
	}
	py_publish(t, t->py_owner, NULL);
}

void traces_py_free(struct traces *t, struct trace *tr)
{
	if (!traces_py_is(tr) || !tr->n_ids)
		return;
	bpf_session__set_py_name(t->c->bpf, (uint32_t)tr->ids[0], tr->py_qual, false);
	/* another py: trace's programs do the work of all from now on */
	if (t->py_owner == tr)
		t->py_owner = NULL;
	for (int i = 0; i < t->n; i++)
		if (t->v[i] != tr && traces_py_is(t->v[i]) && t->v[i]->n_links) {
			py_publish(t, t->v[i], tr);
			break;
		}
}

/* "libpython3.11.so.1.0" when @pid maps a libpython, else "" (the executable). */
static void interpreter_file(int pid, char *out, size_t len)
{
	char path[64], line[4608];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = strrchr(line, '/'), *nl;

		if (!p || strncmp(p + 1, "libpython3", 10))
			continue;
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		snprintf(out, len, "%s", p + 1);
		break;
	}
	fclose(f);
}

/* The return sites: every python:function__return note (none is no
 * error: the build may lack USDT), each a nop. */
static int return_sites(const char *path, const char *shown, struct usdt_note **notes, size_t *n,
			size_t *idx, int *n_idx, char *err, size_t errlen)
{
	int r = usdt_notes_read(path, notes, n, err, errlen);

	*n_idx = 0;
	if (r && r != -ENODATA)
		return r;
	for (size_t i = 0; !r && i < *n; i++) {
		if (strcmp((*notes)[i].provider, "python") || strcmp((*notes)[i].name, PY_RETURN))
			continue;
		if (*n_idx == MAX_IDS_PER_TRACE) {
			lp_errf(err, errlen, "'%s' has more than %d python:" PY_RETURN " sites",
				shown, MAX_IDS_PER_TRACE);
			return -E2BIG;
		}
		if (usdt_site_is_nop(path, (*notes)[i].offset) != 1) {
			lp_errf(err, errlen,
				"refusing 0x%" PRIx64 " in '%s': not a nop, so not the "
				"USDT probe its note says",
				(*notes)[i].vaddr, shown);
			return -EILSEQ;
		}
		idx[(*n_idx)++] = i;
	}
	return 0;
}

/*
 * The pair's cost and what a hit of each probe costs a thread beyond its
 * program's own run, which BPF times per hit (pytrace.bpf.h): both are
 * charged to the traced calls around a hit. A probe on a jump or a USDT
 * nop is emulated by the kernel: half of the py: programs' idle run on
 * two nops (class "py traps"; half a "usdt nop pair" if that could not be
 * measured); one on resume_frame or a return label is single-stepped:
 * the rest of a stepped-and-nop pair ("py start + usdt return").
 */
static void py_costs(struct traces *t, struct trace *tr, const struct py_eval_points *pts,
		     struct lp_probe_cfg *cfg)
{
	const struct probe_cost *nop = traces_class_cost(t, PIC_USDT_PAIR, true);
	const struct probe_cost *mix = traces_class_cost(t, PIC_PY_PAIR, true);
	const struct probe_cost *traps = traces_class_cost(t, PIC_PY_TRAPS, true);
	const struct probe_cost *traps2 = traces_class_cost(t, PIC_PY_TRAPS2, true);
	uint64_t emulated = (traps->measured ? traps : nop)->cost_ns / 2;
	/* mix's nop ran the USDT program: half a nop pair */
	uint64_t stepped = mix->cost_ns > nop->cost_ns / 2 ? mix->cost_ns - nop->cost_ns / 2 : 0;
	bool stepped_ret = pts->n_ret > 0; /* labels, not USDT */
	int c = pts->resume || stepped_ret ? PIC_PY_PAIR : PIC_USDT_PAIR;
	const struct probe_cost *pc = c == PIC_PY_PAIR ? mix : nop;

	tr->insn_class = c;
	tr->info.insn_class = probe_insn_class_name(c);
	cfg->cost_ns = pc->cost_ns;
	cfg->self_ns = pc->self_ns;
	tr->info.probe_cost_ns = pc->cost_ns;
	t->py_hit_ns[0] = pts->resume ? stepped : emulated;
	t->py_hit_ns[1] = stepped_ret ? stepped : emulated;
	/* a second idle program at each of the two hits */
	t->py_consumer_ns = traps->measured && traps2->measured && traps2->cost_ns > traps->cost_ns
				    ? (traps2->cost_ns - traps->cost_ns) / 2
				    : 0;
}

/* Configure the trace's one probe id, once. */
static int configure(struct traces *t, struct trace *tr, const struct binary_loc *loc,
		     const struct py_eval_points *pts, char *err, size_t errlen)
{
	struct lp_probe_cfg cfg = {.kind = LP_PK_FUNC, .by_index = -1, .module_bias = loc->bias};
	/* a pending trace reserved its id already */
	int id = tr->n_ids ? tr->ids[0] : traces_alloc_id(t), r;

	if (id < 0) {
		lp_errf(err, errlen, "too many probes (at most %d)", LP_MAX_PROBES);
		return id;
	}
	if (!tr->n_ids)
		tr->ids[tr->n_ids++] = id;
	cfg.pair_id = (uint32_t)id;
	py_costs(t, tr, pts, &cfg);
	tr->cfg = cfg;
	r = bpf_session__set_probe(t->c->bpf, id, &cfg, NULL, 0);
	if (!r)
		r = bpf_session__set_py_name(t->c->bpf, (uint32_t)tr->ids[0], tr->py_qual, true);
	if (r)
		lp_errf(err, errlen, "cannot configure probe: %s", strerror(-r));
	return r;
}

static int attach_one(struct traces *t, struct trace *tr, enum bpf_probe_prog prog, int pid,
		      const struct binary_loc *loc, uint64_t off, uint64_t sema, int id,
		      uint64_t vaddr, char *err, size_t errlen)
{
	int h = bpf_session__attach_uprobe_sema(t->c->bpf, prog, pid, loc->attach_path, off, sema,
						(uint32_t)id);

	if (h >= 0 && traces_add_link(tr, h)) {
		bpf_session__detach(t->c->bpf, h);
		h = -ENOMEM;
	}
	if (h < 0) {
		lp_errf(err, errlen, "cannot attach a uprobe to '%s' at 0x%" PRIx64 " in '%s': %s",
			tr->spec_text, vaddr, loc->mapped_path, strerror(-h));
		return h;
	}
	lp_debug("probe '%s': %s at 0x%" PRIx64 " in '%s'", tr->spec_text,
		 prog == PROBE_PROG_PY_START   ? "frame start"
		 : prog == PROBE_PROG_PY_YIELD ? "generator yield (label)"
		 : sema			       ? "frame return (python:" PY_RETURN ")"
					       : "frame return (label)",
		 vaddr, loc->mapped_path);
	return 0;
}

/*
 * Attach the start probe and the return probes: the USDT sites, else
 * (a build without USDT: pyenv's) the return labels.
 */
static int attach_all(struct traces *t, struct trace *tr, int pid, const struct binary_loc *loc,
		      const struct py_eval_points *pts, const struct usdt_note *notes,
		      const size_t *idx, int n_ret, char *err, size_t errlen)
{
	const char *refused = bpf_session__refused(t->c->bpf, LP_CAP_PY_TRACE);
	int r = 0;

	if (refused) {
		lp_errf(err, errlen, "'%s': %s is not available on this kernel: %s",
			tr->spec_text, lp_cap_name(LP_CAP_PY_TRACE), refused);
		return -ENOEXEC;
	}
	if (!bpf_session__has_prog(t->c->bpf, PROBE_PROG_PY_START)) {
		lp_errf(err, errlen,
			"'%s': the target did not look like CPython when liveprof started, so "
			"the py: programs were not loaded; start liveprof with --trace %s",
			tr->spec_text, tr->spec_text);
		return -ENOEXEC;
	}
	for (int i = 0; !r && i < pts->n_start; i++)
		r = attach_one(t, tr, PROBE_PROG_PY_START, pid, loc, pts->start[i].offset, 0,
			       tr->ids[0], pts->start[i].vaddr, err, errlen);

	for (int i = 0; !r && i < n_ret; i++) {
		const struct usdt_note *nt = &notes[idx[i]];

		r = attach_one(t, tr, PROBE_PROG_PY_RETURN, pid, loc, nt->offset, nt->sema_offset,
			       tr->ids[0], nt->vaddr, err, errlen);
	}
	for (int i = 0; !r && !n_ret && i < pts->n_ret; i++)
		r = attach_one(t, tr, PROBE_PROG_PY_RETURN, pid, loc, pts->ret[i].offset, 0,
			       tr->ids[0], pts->ret[i].vaddr, err, errlen);
	/* function__return fires at yields too; the labels need this one */
	if (!r && !n_ret)
		r = attach_one(t, tr, PROBE_PROG_PY_YIELD, pid, loc, pts->yield.offset, 0,
			       tr->ids[0], pts->yield.vaddr, err, errlen);
	return r;
}

int traces_py_attach_in(struct traces *t, struct trace *tr, int pid, char *err, size_t errlen)
{
	struct usdt_note *notes = NULL;
	size_t n_notes = 0, idx[MAX_IDS_PER_TRACE];
	struct py_eval_points pts;
	struct binary_loc loc;
	char lib[256];
	bool pre_exec;
	int r, n_ret = 0;

	if (t->c->opts->no_interp) {
		lp_errf(err, errlen, "'%s' reads Python frames: not with --no-interp",
			tr->spec_text);
		return -EINVAL;
	}
	interpreter_file(pid, lib, sizeof(lib));
	r = traces_locate_spec(t, tr, pid, lib, &loc, &pre_exec, err, errlen);
	if (r == -EAGAIN)
		return 0;
	if (r)
		return r;
	r = return_sites(loc.attach_path, loc.mapped_path, &notes, &n_notes, idx, &n_ret, err,
			 errlen);
	if (!r)
		r = python_eval_points(loc.attach_path, !n_ret, &pts, err, errlen);
	if (!r)
		lp_debug("probe '%s': %d frame start point(s) %s", tr->spec_text, pts.n_start,
			 pts.resume ? "at resume_frame (BPF tells starts from resumes)"
				    : "(the jumps into the block only starts run)");
	if (!r && !tr->n_links)
		r = configure(t, tr, &loc, &pts, err, errlen);
	if (!r)
		r = attach_all(t, tr, pid, &loc, &pts, notes, idx, n_ret, err, errlen);
	if (!r) {
		/* its programs do the work of all py: traces, now that they are in */
		py_publish(t, tr, NULL);
		if (!tr->func_name)
			tr->func_name = strdup(tr->spec_text);
		if (!tr->binary)
			tr->binary = strdup(loc.mapped_path);
		if (!tr->frame_name) /* Python frames are named by their qualname */
			tr->frame_name = strdup(tr->py_qual);
		tr->info.n_sites = 1;
		tr->pending = false;
	}
	free(notes);
	return r;
}
