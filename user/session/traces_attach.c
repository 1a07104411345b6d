// SPDX-License-Identifier: GPL-2.0
/*
 * traces_attach.c - --trace: resolve a spec in each target and attach its probes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include "user/session/session_core.h"
#include "user/util/log.h"
#include "user/session/traces.h"
#include "user/session/traces_internal.h"
#include "user/util/util.h"

/* ---- where to attach: the binary of the spec in a target's maps ---- */
/* Load bias: where the mapping of file offset 0 starts minus the first PT_LOAD's page. */
static uint64_t load_bias(const struct pm_entry *maps, size_t n, const char *path, const char *file)
{
	struct elf_symtab *st;
	uint64_t lowest = UINT64_MAX, start = UINT64_MAX;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(maps[i].path, path) && maps[i].start < start)
			start = maps[i].start - maps[i].offset;
	if (start == UINT64_MAX || elf_symtab__open_path(file, &st))
		return 0;
	for (size_t i = 0; i < st->nloads; i++)
		if (st->loads[i].vaddr < lowest)
			lowest = st->loads[i].vaddr - (st->loads[i].offset & ~0xfffULL) +
				 0 * st->loads[i].offset;
	elf_symtab__free(st);
	/* start maps file offset 0; the segment with offset 0 has vaddr lowest */
	return lowest == UINT64_MAX ? 0 : start - (lowest & ~0xfffULL);
}

/*
 * Find the file for @spec_binary ("" = the main executable) in @pid's
 * maps. Returns -ENOENT if it is not mapped (yet).
 */
static int locate_binary(int pid, const char *spec_binary, struct binary_loc *loc)
{
	struct pm_entry *maps = NULL;
	size_t n = 0;
	char exe[4096];
	ssize_t len;
	int err = -ENOENT;

	memset(loc, 0, sizeof(*loc));
	if (pid <= 0) {
		if (!spec_binary[0] || spec_binary[0] != '/')
			return -EINVAL;
		snprintf(loc->attach_path, sizeof(loc->attach_path), "%s", spec_binary);
		snprintf(loc->mapped_path, sizeof(loc->mapped_path), "%s", spec_binary);
		return 0;
	}
	if (proc_maps__read(pid, true, &maps, &n))
		return -ESRCH;
	if (!spec_binary[0]) {
		char link[64];

		snprintf(link, sizeof(link), "/proc/%d/exe", pid);
		len = readlink(link, exe, sizeof(exe) - 1);
		if (len <= 0) {
			err = -ESRCH;
			goto out;
		}
		exe[len] = 0;
		if (len > 10 && !strcmp(exe + len - 10, " (deleted)"))
			exe[len - 10] = 0;
		snprintf(loc->mapped_path, sizeof(loc->mapped_path), "%s", exe);
		/* /proc/PID/exe reaches the inode even if the file was
		 * replaced or deleted, and across mount namespaces. */
		snprintf(loc->attach_path, sizeof(loc->attach_path), "/proc/%d/exe", pid);
		loc->bias = load_bias(maps, n, loc->mapped_path, loc->attach_path);
		err = 0;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!maps[i].path[0] || maps[i].path[0] != '/')
			continue;
		if (probe_spec_binary_matches(spec_binary, maps[i].path)) {
			snprintf(loc->mapped_path, sizeof(loc->mapped_path), "%s", maps[i].path);
			snprintf(loc->attach_path, sizeof(loc->attach_path), "/proc/%d/root%s", pid,
				 maps[i].path);
			loc->bias = load_bias(maps, n, loc->mapped_path, loc->attach_path);
			err = 0;
			break;
		}
	}
	/* A path that is not mapped yet: allowed when it exists (attach now,
	 * the uprobe fires once it is loaded). */
	if (err && spec_binary[0] == '/' && !access(spec_binary, R_OK)) {
		snprintf(loc->attach_path, sizeof(loc->attach_path), "%s", spec_binary);
		snprintf(loc->mapped_path, sizeof(loc->mapped_path), "%s", spec_binary);
		err = 0;
	}
out:
	proc_maps__free(maps, n);
	return err;
}

/* ---- add ---- */

static int add_link(struct trace *tr, int h)
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

		if (e->is_ret && tr->spec.kind == PROBE_SPEC_LINE) {
			snprintf(err, errlen, "'ret' is only valid for a function trace");
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

static int attach_func(struct traces *t, struct trace *tr, struct probe_target *pt, int pid,
		       const struct binary_loc *loc, char *err, size_t errlen)
{
	struct fetch_prog progs[LP_MAX_VALUES];
	struct lp_probe_cfg cfg = {.kind = LP_PK_FUNC, .by_index = tr->by_index};
	const struct probe_cost *cost;
	int ne = 0, nr = 0, id, h, r;

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
		cfg.module_bias = loc->bias;
		/* What its probes cost, charged to the traced calls around it
		 * and taken out of its own latency (tracer.bpf.h); measured
		 * after attaching when its class is new, so that the target
		 * is not left running untraced meanwhile. */
		tr->insn_class = traces_site_class(loc->attach_path, pt->entry_offset);
		tr->info.insn_class = probe_insn_class_name(tr->insn_class);
		cost = traces_class_cost(t, tr->insn_class, false);
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
	if (pt->is_go) {
		/* uretprobes rewrite the return address on a stack that the Go
		 * runtime may move: that crashes the target. Probe each ret
		 * instruction instead. */
		if (!pt->ret_sites_valid || !pt->n_ret_sites) {
			snprintf(err, errlen,
				 "'%s' is in a Go binary and its return instructions could not be "
				 "decoded; refusing a uretprobe (it would crash the target)",
				 tr->spec_text);
			return -EOPNOTSUPP;
		}
	}
	h = bpf_session__attach_uprobe(t->c->bpf, PROBE_PROG_ENTRY, pid, loc->attach_path,
				       pt->entry_offset, id);
	if (h < 0 || add_link(tr, h))
		goto fail;
	if (pt->is_go) {
		for (size_t i = 0; i < pt->n_ret_sites; i++) {
			h = bpf_session__attach_uprobe(t->c->bpf, PROBE_PROG_RET_INSN, pid,
						       loc->attach_path,
						       pt->ret_sites[i].file_offset, id);
			if (h < 0 || add_link(tr, h))
				goto fail;
		}
	} else {
		h = bpf_session__attach_uprobe(t->c->bpf, PROBE_PROG_RETURN, pid, loc->attach_path,
					       pt->entry_offset, id);
		if (h < 0 || add_link(tr, h))
			goto fail;
	}
	if (!traces_class_cost(t, tr->insn_class, false)) {
		cost = traces_class_cost(t, tr->insn_class, true);
		tr->cfg.cost_ns = cost->cost_ns;
		tr->cfg.self_ns = cost->self_ns;
		tr->info.probe_cost_ns = cost->cost_ns;
		bpf_session__set_probe(t->c->bpf, id, &tr->cfg, NULL, 0);
	}
	return 0;
fail:
	snprintf(err, errlen, "cannot attach a uprobe to '%s' in '%s': %s", tr->spec_text,
		 loc->mapped_path, strerror(h < 0 ? -h : ENOMEM));
	return h < 0 ? h : -ENOMEM;
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
		h = bpf_session__attach_uprobe(t->c->bpf, PROBE_PROG_LINE, pid, loc->attach_path,
					       pt->sites[s].file_offset, id);
		if (h < 0 || add_link(tr, h)) {
			snprintf(err, errlen, "cannot attach a uprobe to '%s' at 0x%" PRIx64 ": %s",
				 tr->spec_text, pt->sites[s].vaddr, strerror(h < 0 ? -h : ENOMEM));
			return h < 0 ? h : -ENOMEM;
		}
	}
	return 0;
}

/*
 * A launched command is probed before it execs (main.c releases it only
 * once everything is attached), so its /proc/PID/exe is still liveprof.
 * Probe the file it is about to exec instead: @cmd searched in $PATH like
 * execvp does. Returns 0 and fills @loc, or -ENOENT.
 */
static int locate_command(int pid, const char *cmd, struct binary_loc *loc)
{
	struct stat self, child;
	char path[4096];
	int err;

	if (stat("/proc/self/exe", &self) ||
	    stat((snprintf(path, sizeof(path), "/proc/%d/exe", pid), path), &child) ||
	    self.st_dev != child.st_dev || self.st_ino != child.st_ino)
		return -ENOENT; /* it has exec'd already */
	memset(loc, 0, sizeof(*loc));
	err = lp_path_search(cmd, loc->mapped_path, sizeof(loc->mapped_path));
	if (err)
		return err;
	snprintf(loc->attach_path, sizeof(loc->attach_path), "%s", loc->mapped_path);
	return 0;
}

/* Messages name the file as the user knows it, not as /proc/PID/exe. */
static void name_binary_in(char *err, size_t errlen, const char *proc_path, const char *path)
{
	char *at = strstr(err, proc_path), tail[1024];

	if (!at || !path[0] || !strcmp(proc_path, path))
		return;
	snprintf(tail, sizeof(tail), "%s", at + strlen(proc_path));
	snprintf(at, errlen - (size_t)(at - err), "%s%s", path, tail);
}

static int attach_in(struct traces *t, struct trace *tr, int pid, char *err, size_t errlen)
{
	struct binary_loc loc;
	struct probe_target pt;
	int r = -ENOENT;

	if (!tr->spec.binary[0] && pid == t->c->child && t->c->opts->command)
		r = locate_command(pid, t->c->opts->command[0], &loc);
	if (r)
		r = locate_binary(pid, tr->spec.binary, &loc);
	if (r == -ENOENT && tr->spec.binary[0]) {
		tr->pending = true; /* attach when the library shows up */
		return 0;
	}
	if (r == -ESRCH) {
		snprintf(err, errlen, "process %d exited before '%s' could be attached", pid,
			 tr->spec_text);
		return r;
	}
	if (r) {
		snprintf(err, errlen, "cannot find the binary of '%s' in process %d", tr->spec_text,
			 pid);
		return r;
	}
	r = probe_resolve(loc.attach_path, &tr->spec, &pt, err, errlen);
	if (r) {
		name_binary_in(err, errlen, loc.attach_path, loc.mapped_path);
		return r;
	}
	if (!tr->func_name)
		tr->func_name = strdup(pt.func ? pt.func : tr->spec_text);
	if (!tr->binary)
		tr->binary = strdup(loc.mapped_path);
	tr->info.n_sites = pt.is_line ? (int)pt.n_sites : 1;
	if (pt.is_line)
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
	r = probe_spec_parse(spec, &tr->spec, err, errlen);
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
	if (!r && t->c->opts->all && tr->spec.binary[0] != '/') {
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
	tr->info.kind = tr->spec.kind == PROBE_SPEC_LINE ? TRACE_LINE : TRACE_FUNC;
	if (tr->info.kind == TRACE_LINE) /* an entry probe alone, a single-stepped one at worst */
		tr->info.probe_cost_ns = traces_class_cost(t, PIC_STEPPED, true)->cost_ns / 2;
	if (!tr->n_ids) {
		/* pending: reserve the id now so it is stable */
		int id = traces_alloc_id(t);

		if (id >= 0)
			tr->ids[tr->n_ids++] = id;
	}
	tr->info.id = tr->ids[0];
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
