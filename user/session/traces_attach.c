// SPDX-License-Identifier: GPL-2.0
/*
 * traces_attach.c - --trace: resolve a spec in each target and attach its probes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include "dwarf/elf_symtab.h"
#include "dwarf/fetch_compile.h"
#include "dwarf/probe_resolve.h"
#include "dwarf/proc_maps.h"
#include "user/session/bpf_session.h"
#include "user/session/bpf_caps.h"
#include "user/session/session_core.h"
#include "user/util/log.h"
#include "user/session/traces.h"
#include "user/session/traces_internal.h"
#include "user/util/util.h"

/* ---- add ---- */

int traces_add_link(struct trace *tr, int h)
{
	int *l = realloc(tr->links, (tr->n_links + 1) * sizeof(int));

	if (!l)
		return -ENOMEM;
	tr->links = l;
	tr->links[tr->n_links++] = h;
	return 0;
}

static int compile_values(struct trace *tr, const char *file, uint64_t vaddr,
			  struct fetch_prog *progs, int *n_entry, int *n_ret, char *err,
			  size_t errlen)
{
	int ne = 0, nr = 0;
	struct fetch_prog ret_progs[LP_MAX_VALUES];
	struct fetch_type ret_types[LP_MAX_VALUES];
	char e2[400];

	/* Entry values first, then return values: the BPF side runs the
	 * first n_values at entry and the next n_ret_values at return. */
	for (size_t i = 0; i < tr->spec.n_args; i++) {
		const struct probe_expr *e = &tr->spec.args[i];
		struct fetch_type ty;
		struct fetch_prog p;
		int r;

		if (e->is_ret && (tr->spec.kind == PROBE_SPEC_LINE || tr->spec.has_offset)) {
			snprintf(err, errlen,
				 "'ret' is only valid for a function trace (not a line or an "
				 "offset)");
			return -EINVAL;
		}
		r = fetch_compile(file, vaddr, e, &p, &ty, e2, sizeof(e2));
		if (r) {
			snprintf(err, errlen, "cannot read '%s' in '%s': %s", e->text,
				 tr->spec_text, e2);
			return r;
		}
		if (e->is_ret) {
			ret_progs[nr] = p;
			ret_types[nr++] = ty;
		} else {
			progs[ne] = p;
			tr->values[ne].type = ty;
			snprintf(tr->values[ne].expr, sizeof(tr->values[ne].expr), "%s", e->text);
			ne++;
		}
	}
	for (int i = 0; i < nr; i++) {
		progs[ne + i] = ret_progs[i];
		tr->values[ne + i].type = ret_types[i];
		tr->values[ne + i].at_return = true;
		snprintf(tr->values[ne + i].expr, sizeof(tr->values[ne + i].expr), "ret");
	}
	*n_entry = ne;
	*n_ret = nr;
	tr->n_values = ne + nr;
	tr->n_entry_values = ne;
	return 0;
}

static const char *probe_kind_name(enum bpf_probe_prog prog)
{
	switch (prog) {
	case PROBE_PROG_ENTRY:
		return "entry";
	case PROBE_PROG_RETURN:
		return "return";
	case PROBE_PROG_RET_INSN:
		return "ret-insn";
	default:
		return "hit";
	}
}

/*
 * One uprobe, kept in @tr's links. -v logs each one: the e2e tests check
 * every probed address against a disassembly.
 */
static int attach_one(struct traces *t, struct trace *tr, enum bpf_probe_prog prog, int pid,
		      const struct binary_loc *loc, const struct probe_site *site, int id)
{
	int h = bpf_session__attach_uprobe(t->c->bpf, prog, pid, loc->attach_path,
					   site->file_offset, id);

	if (h < 0)
		return h;
	if (traces_add_link(tr, h)) {
		bpf_session__detach(t->c->bpf, h);
		return -ENOMEM;
	}
	lp_debug("probe '%s': %s at 0x%" PRIx64 " in '%s'", tr->spec_text, probe_kind_name(prog),
		 site->vaddr, loc->mapped_path);
	return 0;
}

/*
 * Whether @pt's returns are probed on its ret instructions: 1, 0 (a
 * uretprobe), or a negative errno with the reason in @err. A uretprobe
 * rewrites the return address: on a stack that the Go runtime may move,
 * or one the process may unwind or switch away from (a C++ throw, a
 * coroutine: traces_stacks.c), that kills the target.
 */
static int returns_on_ret_insns(struct traces *t, const struct trace *tr,
				const struct probe_target *pt, int pid, char *err, size_t errlen)
{
	const char *why = pt->is_go ? "is in a Go binary"
				    : "is in a process that may unwind or switch its stack";

	if (!pt->is_go && !traces_uretprobe_unsafe(t, pid, pt->binary_path))
		return 0;
	if (!pt->ret_sites_valid || !pt->n_ret_sites) {
		snprintf(err, errlen,
			 "'%s' %s and its return instructions could not be decoded; refusing a "
			 "uretprobe (it would crash the target)",
			 tr->spec_text, why);
		return -EOPNOTSUPP;
	}
	if (bpf_session__refused(t->c->bpf, LP_CAP_RET_INSN)) {
		snprintf(err, errlen, "'%s' %s, and %s is not available on this kernel: %s",
			 tr->spec_text, why, lp_cap_name(LP_CAP_RET_INSN),
			 bpf_session__refused(t->c->bpf, LP_CAP_RET_INSN));
		return -ENOEXEC;
	}
	if (!bpf_session__has_prog(t->c->bpf, PROBE_PROG_RET_INSN)) {
		/* what liveprof looks at when it starts decides whether that
		 * program is loaded: a -p process's maps then, a launched
		 * command's files before its exec */
		snprintf(err, errlen,
			 "'%s' %s, which it was not when liveprof started, so the program that "
			 "probes returns on ret instructions was not loaded (a return probe would "
			 "crash it); %s",
			 tr->spec_text, why,
			 pid == t->c->child
				 ? "trace it with -p PID once the command has loaded that code"
				 : "liveprof started again now would load it");
		return -ENOEXEC;
	}
	return 1;
}

static int attach_func(struct traces *t, struct trace *tr, struct probe_target *pt, int pid,
		       const struct binary_loc *loc, char *err, size_t errlen)
{
	struct fetch_prog progs[LP_MAX_VALUES];
	struct lp_probe_cfg cfg = {.kind = LP_PK_FUNC, .by_index = tr->by_index};
	const struct probe_cost *cost;
	int ne = 0, nr = 0, id, h, r;
	bool ret_insn;

	if (pt->is_line || pt->is_offset || !pt->n_sites)
		return -EINVAL; /* a return probe anywhere but an entry corrupts the target */
	r = returns_on_ret_insns(t, tr, pt, pid, err, errlen);
	if (r < 0)
		return r;
	ret_insn = r;
	/* one cost for the trace: the dearer way if its processes differ */
	tr->info.returns_on_ret |= ret_insn;
	if (tr->n_ids == 0) {
		id = traces_alloc_id(t);
		if (id < 0) {
			snprintf(err, errlen, "too many probes (at most %d)", LP_MAX_PROBES);
			return id;
		}
		tr->ids[tr->n_ids++] = id;
		r = compile_values(tr, pt->binary_path, pt->entry_vaddr, progs, &ne, &nr, err,
				   errlen);
		if (r)
			return r;
		cfg.n_values = ne;
		cfg.n_ret_values = nr;
		/* A --by value alone is used in BPF, never sent per call. */
		cfg.flags = tr->user_args ? LP_PCF_EMIT_VALUES : 0;
		if (pt->is_program)
			cfg.flags |= LP_PCF_IN_PROGRAM;
		cfg.module_bias = loc->bias;
		/* a file not mapped yet: the entry takes the bias from where it
		 * fires (values at return are registers, which need none) */
		if (loc->bias_unknown)
			cfg.site_vaddr = pt->entry_vaddr;
		/* What its probes cost, charged to the traced calls around it
		 * and taken out of its own latency (tracer.bpf.h): known
		 * before its first call is timed. A new class is measured now
		 * if the programs are loaded, else by the loaded hook
		 * (daemon_cmd.c) before the probes waiting for them go in. */
		tr->insn_class = traces_site_class(loc->attach_path, pt->entry_offset);
		tr->info.insn_class = probe_insn_class_name(tr->insn_class);
		cost = traces_class_cost(t, trace_cost_class(tr), traces_can_measure(t));
		if (cost) {
			cfg.cost_ns = cost->cost_ns;
			cfg.self_ns = cost->self_ns;
			tr->info.probe_cost_ns = cost->cost_ns;
		}
		tr->cfg = cfg;
		r = bpf_session__set_probe(t->c->bpf, id, &cfg, progs, ne + nr);
		if (r) {
			snprintf(err, errlen, "cannot configure probe: %s", strerror(-r));
			return r;
		}
	}
	id = tr->ids[0];
	/* Returns first: a call that enters between the two attaches then
	 * has neither end (its return finds no frame and is ignored), where
	 * entry first left it a frame whose return was never hijacked,
	 * counted untimed: 25 of them on a hot function at every attach. */
	if (ret_insn) {
		h = 0;
		for (size_t i = 0; i < pt->n_ret_sites && h >= 0; i++)
			h = attach_one(t, tr, PROBE_PROG_RET_INSN, pid, loc, &pt->ret_sites[i], id);
	} else {
		/* [rsp] is the return address only here, at the proven entry */
		h = attach_one(t, tr, PROBE_PROG_RETURN, pid, loc, &pt->sites[0], id);
	}
	if (h < 0)
		goto fail;
	h = attach_one(t, tr, PROBE_PROG_ENTRY, pid, loc, &pt->sites[0], id);
	if (h < 0)
		goto fail;
	/* still loading: measured before these probes go in (see above) */
	if (!traces_class_cost(t, trace_cost_class(tr), false))
		tr->cost_pending = true;
	return 0;
fail:
	snprintf(err, errlen, "cannot attach a uprobe to '%s' in '%s': %s", tr->spec_text,
		 loc->mapped_path, strerror(-h));
	return h;
}

static int attach_line(struct traces *t, struct trace *tr, struct probe_target *pt, int pid,
		       const struct binary_loc *loc, char *err, size_t errlen)
{
	bool per_site = tr->spec.n_args > 0;
	int r, h;

	for (size_t s = 0; s < pt->n_sites; s++) {
		struct fetch_prog progs[LP_MAX_VALUES];
		struct lp_probe_cfg cfg = {
			.kind = LP_PK_LINE, .by_index = -1, .module_bias = loc->bias};
		int ne = 0, nr = 0, id;

		if ((per_site || tr->n_ids == 0) && (int)s >= tr->n_ids) {
			if (tr->n_ids == MAX_IDS_PER_TRACE) {
				snprintf(err, errlen,
					 "'%s' has too many addresses to capture values",
					 tr->spec_text);
				return -E2BIG;
			}
			id = traces_alloc_id(t);
			if (id < 0) {
				snprintf(err, errlen, "too many probes (at most %d)",
					 LP_MAX_PROBES);
				return id;
			}
			tr->ids[tr->n_ids++] = id;
			if (per_site) {
				for (int i = 0; i < tr->n_values; i++)
					fetch_type_free(&tr->values[i].type);
				r = compile_values(tr, pt->binary_path, pt->sites[s].vaddr, progs,
						   &ne, &nr, err, errlen);
				if (r)
					return r;
				cfg.n_values = ne;
				cfg.flags = LP_PCF_EMIT_VALUES;
			}
			r = bpf_session__set_probe(t->c->bpf, id, &cfg, progs, ne);
			if (r) {
				snprintf(err, errlen, "cannot configure probe: %s", strerror(-r));
				return r;
			}
		}
		id = tr->ids[per_site ? s : 0];
		h = attach_one(t, tr, PROBE_PROG_LINE, pid, loc, &pt->sites[s], id);
		if (h < 0) {
			snprintf(err, errlen, "cannot attach a uprobe to '%s' at 0x%" PRIx64 ": %s",
				 tr->spec_text, pt->sites[s].vaddr, strerror(-h));
			return h;
		}
	}
	return 0;
}

/*
 * Whether the file @path exists as process @pid sees it (its root may be
 * a container's) or as we do. A library named by a path that is in
 * neither is a mistake to say at once, not a library to wait for.
 */
static bool path_exists_for(int pid, const char *path)
{
	char in_root[PATH_MAX + 32];

	if (!access(path, F_OK))
		return true;
	snprintf(in_root, sizeof(in_root), "/proc/%d/root%s%s", pid, path[0] == '/' ? "" : "/",
		 path);
	return !access(in_root, F_OK);
}

int traces_locate_spec(struct traces *t, struct trace *tr, int pid, const char *binary,
		       struct binary_loc *loc, bool *pre_exec, char *err, size_t errlen)
{
	int r = -ENOENT;

	*pre_exec = false;
	if (!binary[0] && pid == t->c->child && t->c->opts->command) {
		r = traces_locate_command(pid, t->c->opts->command[0], loc);
		*pre_exec = !r;
	}
	if (r)
		r = traces_locate_binary(pid, binary, loc);
	/* a function (or USDT probe) of a library a launched command will
	 * map: on the file now, rather than when it shows up in the maps,
	 * calls later; both take the load bias from where they fire */
	if (r == -ENOENT && binary[0] &&
	    (tr->usdt || (tr->spec.kind == PROBE_SPEC_FUNC && !tr->spec.has_offset)) &&
	    pid == t->c->child && t->c->opts->command && traces_child_before_exec(pid) &&
	    !traces_locate_needed(t->c->opts->command[0], binary, loc))
		r = 0;
	if (r == -ENOENT && strchr(binary, '/') && !path_exists_for(pid, binary)) {
		snprintf(err, errlen, "no such file '%s' in '%s'", binary, tr->spec_text);
		return r;
	}
	if (r == -ENOENT && binary[0]) {
		tr->pending = true; /* attach when the library shows up */
		return -EAGAIN;
	}
	if (r == -ESRCH) {
		snprintf(err, errlen, "process %d exited before '%s' could be attached", pid,
			 tr->spec_text);
		return r;
	}
	if (r)
		snprintf(err, errlen, "cannot find the binary of '%s' in process %d", tr->spec_text,
			 pid);
	return r;
}

int traces_resolve_in(struct traces *t, struct trace *tr, int pid, struct binary_loc *loc,
		      struct probe_target *pt, char *err, size_t errlen)
{
	bool pre_exec;
	int r = traces_locate_spec(t, tr, pid, tr->spec.binary, loc, &pre_exec, err, errlen);

	if (r)
		return r;
	r = probe_resolve(loc->attach_path, &tr->spec, pt, err, errlen);
	if (r)
		traces_name_binary_in(err, errlen, loc->attach_path, loc->mapped_path);
	/* libraries are not mapped before the exec: only the file itself counts */
	if (!tr->spec.binary[0] && pid > 0 && !pre_exec &&
	    (r || tr->spec.kind == PROBE_SPEC_LINE) && r != -ENOMEM)
		r = traces_resolve_bare(tr, pid, r, loc, pt, err, errlen);
	return r;
}

static int attach_in(struct traces *t, struct trace *tr, int pid, char *err, size_t errlen)
{
	struct binary_loc loc;
	struct probe_target pt;
	int r;

	if (tr->usdt)
		return traces_usdt_attach_in(t, tr, pid, err, errlen);
	r = traces_resolve_in(t, tr, pid, &loc, &pt, err, errlen);
	if (r == -EAGAIN)
		return 0;
	if (r)
		return r;
	if (!tr->func_name)
		tr->func_name = strdup(pt.func ? pt.func : tr->spec_text);
	if (!tr->binary)
		tr->binary = strdup(loc.mapped_path);
	tr->info.n_sites = pt.is_line ? (int)pt.n_sites : 1;
	/* an offset or a line is a hit counter: never a return probe there */
	if (pt.is_line || pt.is_offset)
		r = attach_line(t, tr, &pt, pid, &loc, err, errlen);
	else
		r = attach_func(t, tr, &pt, pid, &loc, err, errlen);
	probe_target_free(&pt);
	tr->pending = false;
	return r;
}

int traces_attach_all(struct traces *t, struct trace *tr, char *err, size_t errlen)
{
	const struct session_core *d = t->c;
	int r = 0, done = 0;

	if (d->opts->all)
		return attach_in(t, tr, -1, err, errlen);
	for (int i = 0; i < d->n_procs; i++) {
		if (!d->procs[i].alive)
			continue;
		/* One uprobe per process: pid -1 would also fire in strangers. */
		r = attach_in(t, tr, d->procs[i].pid, err, errlen);
		if (r)
			return r;
		done++;
	}
	if (!done && !tr->pending) {
		snprintf(err, errlen, "no live target process to attach '%s' to", tr->spec_text);
		return -ESRCH;
	}
	return 0;
}

int traces__add(struct traces *t, const char *spec, char *err, size_t errlen)
{
	return traces__add_by(t, spec, NULL, err, errlen);
}

/**
 * traces_attach_time - when probes attached now go in: now, or 0 while the
 * session's programs are still loading (bpf_session__programs_ready), for
 * traces__programs_ready() to stamp
 * @t: the traces
 */
uint64_t traces_attach_time(const struct traces *t)
{
	return bpf_session__ready_ns(t->c->bpf) == UINT64_MAX ? 0 : lp_now_ns();
}

void traces__programs_ready(struct traces *t)
{
	uint64_t ready = bpf_session__ready_ns(t ? t->c->bpf : NULL);

	for (int i = 0; t && ready != UINT64_MAX && i < t->n; i++)
		if (!t->v[i]->pending && !t->v[i]->info.attached_ns)
			t->v[i]->info.attached_ns = ready;
}

int traces__add_by(struct traces *t, const char *spec, const char *by, char *err, size_t errlen)
{
	struct trace *tr, **v;
	int r;

	tr = calloc(1, sizeof(*tr));
	if (!tr) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	tr->by_index = -1;
	tr->spec_text = strdup(spec);
	tr->prev = calloc(LP_HIST_BUCKETS, sizeof(uint64_t));
	tr->slots = calloc((size_t)t->n_slots * LP_HIST_BUCKETS, sizeof(uint64_t));
	if (!tr->spec_text || !tr->prev || !tr->slots) {
		trace_free(t, tr);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (traces_usdt_is_spec(spec)) {
		r = traces_usdt_parse(tr, spec, err, errlen);
		if (!r && by) {
			snprintf(err, errlen, "--by takes a function trace, not '%s'", spec);
			r = -EINVAL;
		}
	} else {
		r = probe_spec_parse(spec, &tr->spec, err, errlen);
	}
	tr->user_args = tr->spec.n_args;
	if (!r && by) {
		/* The --by value is fetched like an argument at entry. */
		if (tr->spec.n_args == PROBE_MAX_ARGS) {
			snprintf(err, errlen, "too many values in '%s' to add --by", spec);
			r = -E2BIG;
		} else {
			r = probe_expr_parse(by, &tr->spec.args[tr->spec.n_args], err, errlen);
			if (!r && tr->spec.args[tr->spec.n_args].is_ret) {
				snprintf(err, errlen,
					 "--by needs a value known at entry, not 'ret'");
				r = -EINVAL;
			}
			if (!r) {
				int entry_before = 0;

				for (size_t i = 0; i < tr->spec.n_args; i++)
					entry_before += !tr->spec.args[i].is_ret;
				tr->by_index = entry_before;
				tr->spec.n_args++;
			}
		}
	}
	if (!r && t->c->opts->all && traces_py_is(tr)) {
		/* the interpreter's frames are read per process: -p or a command */
		snprintf(err, errlen, "'%s' needs -p PID or a command, not -a", spec);
		r = -EINVAL;
	} else if (!r && t->c->opts->all &&
		   (tr->usdt ? tr->usdt->binary : tr->spec.binary)[0] != '/') {
		snprintf(err, errlen, "with -a, name the binary by path: --trace /path/to/bin:%s",
			 spec);
		r = -EINVAL;
	}
	if (!r)
		r = traces_attach_all(t, tr, err, errlen);
	if (r) {
		trace_free(t, tr);
		return r;
	}
	v = realloc(t->v, (t->n + 1) * sizeof(*v));
	if (!v) {
		trace_free(t, tr);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t->v = v;
	t->v[t->n++] = tr;
	tr->info.spec = tr->spec_text;
	tr->info.func = tr->func_name ? tr->func_name : tr->spec_text;
	tr->info.binary = tr->binary ? tr->binary : tr->spec.binary;
	tr->info.frame = tr->frame_name;
	/* an offset is a hit counter like a line: no return probe, no latency */
	tr->info.kind =
		tr->spec.kind == PROBE_SPEC_LINE || tr->spec.has_offset ? TRACE_LINE : TRACE_FUNC;
	if (tr->usdt) /* a USDT probe alone counts hits; a pair is timed */
		tr->info.kind = tr->usdt->ret_name[0] ? TRACE_FUNC : TRACE_LINE;
	if (tr->info.kind == TRACE_LINE) /* an entry probe alone, a single-stepped one at worst */
		tr->info.probe_cost_ns =
			traces_class_cost(t, tr->usdt ? PIC_USDT_PAIR : PIC_STEPPED, true)
				->cost_ns /
			2;
	if (!tr->n_ids) {
		/* pending: reserve the id now so it is stable */
		int id = traces_alloc_id(t);

		if (id >= 0)
			tr->ids[tr->n_ids++] = id;
	}
	tr->info.id = tr->ids[0];
	if (!tr->pending)
		tr->info.attached_ns = traces_attach_time(t);
	return tr->ids[0];
}

int traces__remove(struct traces *t, const char *spec)
{
	for (int i = 0; i < t->n; i++) {
		struct trace *tr = t->v[i];

		if (strcmp(tr->spec_text, spec) && (!tr->func_name || strcmp(tr->func_name, spec)))
			continue;
		trace_free(t, tr);
		memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof(*t->v));
		t->n--;
		return 0;
	}
	return -ENOENT;
}

int traces__set_when(struct traces *t, int func_id, int line_id)
{
	int li = traces__find(t, line_id);

	if (li < 0)
		return -ENOENT;
	for (int k = 0; k < t->v[li]->n_ids; k++) {
		struct lp_probe_cfg cfg = {.kind = LP_PK_LINE,
					   .flags = LP_PCF_WHEN,
					   .by_index = -1,
					   .when_of = (uint32_t)func_id};

		/* Values of a line used as --when are not captured. */
		bpf_session__set_probe(t->c->bpf, t->v[li]->ids[k], &cfg, NULL, 0);
	}
	return 0;
}
