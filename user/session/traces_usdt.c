// SPDX-License-Identifier: GPL-2.0
/*
 * traces_usdt.c - --trace usdt:[BIN:]PROVIDER:NAME[,RETURN][(argN, ...)]
 * and rb:Class#method: USDT probes, their semaphores and arguments.
 *
 * A plain probe is a hit counter with values, like a line (lp_line_hit).
 * A pair (ENTRY,RETURN) is timed per thread between its two probes
 * (bpf/usdt.bpf.h). rb:Class#method is the pair method__entry,
 * method__return of libruby, filtered in BPF by its class and method name.
 *
 * One USDT probe may have several sites (the compiler copied its code),
 * each naming its arguments its own way ("8@(%rsp)", "8@32(%rsp)"): each
 * site gets its own probe id for its fetch programs, and a pair's calls
 * are timed under the trace's first id (lp_probe_cfg.pair_id).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dwarf/elf_symtab.h"
#include "dwarf/usdt.h"
#include "user/session/bpf_session.h"
#include "user/session/session_core.h"
#include "user/session/traces.h"
#include "user/session/traces_internal.h"
#include "user/util/log.h"
#include "user/util/util.h"

#define RB_LIB "libruby"

bool traces_usdt_is_spec(const char *spec)
{
	return !strncmp(spec, "usdt:", 5) || !strncmp(spec, "rb:", 3) || !strncmp(spec, "py:", 3);
}

/* rb:Class#method: Ruby's method__entry/return pair, for one class and method. */
static int parse_rb(struct trace *tr, const char *spec, char *err, size_t errlen)
{
	const char *cls = spec + 3, *hash = strchr(cls, '#');
	size_t nc = hash ? (size_t)(hash - cls) : 0, nm = hash ? strlen(hash + 1) : 0;
	struct usdt_spec *u = tr->usdt;

	if (!hash || !nc || !nm || strchr(hash + 1, '#')) {
		lp_errf(err, errlen, "bad Ruby spec '%s': expected rb:Class#method", spec);
		return -EINVAL;
	}
	/* BPF reads LP_STR_LEN - 1 bytes of a name: one of that length may
	 * have been cut, so it takes only shorter ones (usdt.bpf.h) */
	if (nc >= LP_STR_LEN - 1 || nm >= LP_STR_LEN - 1) {
		lp_errf(err, errlen,
			"'%s': class and method names of at most %d bytes are supported", spec,
			LP_STR_LEN - 2);
		return -ENAMETOOLONG;
	}
	memcpy(tr->rb_class, cls, nc);
	memcpy(tr->rb_method, hash + 1, nm);
	snprintf(u->binary, sizeof(u->binary), RB_LIB);
	snprintf(u->provider, sizeof(u->provider), "ruby");
	snprintf(u->name, sizeof(u->name), "method__entry");
	snprintf(u->ret_name, sizeof(u->ret_name), "method__return");
	return 0;
}

int traces_usdt_parse(struct trace *tr, const char *spec, char *err, size_t errlen)
{
	tr->usdt = calloc(1, sizeof(*tr->usdt));
	if (!tr->usdt) {
		lp_errf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!strncmp(spec, "rb:", 3))
		return parse_rb(tr, spec, err, errlen);
	if (!strncmp(spec, "py:", 3))
		return traces_py_parse(tr, spec, err, errlen);
	return usdt_spec_parse(spec, tr->usdt, err, errlen);
}

void traces_usdt_free(struct traces *t, struct trace *tr)
{
	if (tr->rb_class[0] && tr->n_ids)
		for (int i = 0; i < tr->n_ids; i++)
			bpf_session__set_str_match(t->c->bpf, tr->ids[i], tr->rb_class,
						   tr->rb_method, false);
	traces_py_free(t, tr);
	free(tr->usdt);
	tr->usdt = NULL;
	free(tr->frame_name);
	tr->frame_name = NULL;
}

/* The probe sites of one spec in one file. */
struct usdt_sites {
	struct usdt_note *notes; /* every note of the file */
	size_t n_notes;
	size_t idx[MAX_IDS_PER_TRACE]; /* entry (or only) sites, then return sites */
	int n_entry, n;
};

/* "p:a, p:b, ..." of @s's notes, for a message. */
static void list_probes(const struct usdt_sites *s, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (size_t i = 0; i < s->n_notes && used + 1 < len; i++) {
		bool dup = false;

		for (size_t j = 0; j < i && !dup; j++)
			dup = !strcmp(s->notes[i].provider, s->notes[j].provider) &&
			      !strcmp(s->notes[i].name, s->notes[j].name);
		if (!dup)
			used += (size_t)snprintf(buf + used, len - used, "%s%s:%s",
						 used ? ", " : "", s->notes[i].provider,
						 s->notes[i].name);
	}
}

static int select_sites(struct usdt_sites *s, const struct usdt_spec *u, const char *name)
{
	int n = 0;

	for (size_t i = 0; i < s->n_notes; i++) {
		if (strcmp(s->notes[i].provider, u->provider) || strcmp(s->notes[i].name, name))
			continue;
		if (s->n == MAX_IDS_PER_TRACE)
			return -E2BIG;
		s->idx[s->n++] = i;
		n++;
	}
	return n ? 0 : -ENOENT;
}

/* Read @path's notes and pick the spec's sites; each must be a nop. */
static int find_sites(struct trace *tr, const char *path, const char *shown, struct usdt_sites *s,
		      char *err, size_t errlen)
{
	const struct usdt_spec *u = tr->usdt;
	char have[600];
	int r;

	memset(s, 0, sizeof(*s));
	r = usdt_notes_read(path, &s->notes, &s->n_notes, err, errlen);
	if (r) {
		traces_name_binary_in(err, errlen, path, shown);
		return r == -ENODATA ? -ENOENT : r;
	}
	r = select_sites(s, u, u->name);
	s->n_entry = s->n;
	if (!r && u->ret_name[0])
		r = select_sites(s, u, u->ret_name);
	if (r) {
		list_probes(s, have, sizeof(have));
		if (r == -E2BIG)
			lp_errf(err, errlen, "'%s' has more than %d sites in '%s'", tr->spec_text,
				MAX_IDS_PER_TRACE, shown);
		else
			lp_errf(err, errlen, "no USDT probe '%s:%s' in '%s' (it has %s)",
				u->provider, s->n_entry ? u->ret_name : u->name, shown, have);
		return r;
	}
	for (int i = 0; i < s->n; i++) {
		const struct usdt_note *nt = &s->notes[s->idx[i]];

		r = usdt_site_is_nop(path, nt->offset);
		if (r != 1) {
			lp_errf(err, errlen,
				"refusing '%s': 0x%" PRIx64 " in '%s' is not a nop, so not the "
				"USDT probe its note says",
				tr->spec_text, nt->vaddr, shown);
			return r < 0 ? r : -EILSEQ;
		}
	}
	return 0;
}

/* The link-time addresses of the %rip-relative arguments' symbols. */
static int resolve_globals(const char *path, struct usdt_arg *args, char syms[][USDT_NAME_MAX],
			   int n, char *err, size_t errlen)
{
	struct elf_symtab *st = NULL;
	int r = 0;

	for (int i = 0; i < n && !r; i++) {
		GElf_Sym sym;

		if (args[i].kind != USDT_ARG_GLOBAL)
			continue;
		if (!st && elf_symtab__open_path(path, &st))
			r = -ENOENT;
		else if (elf_symtab__find_sym(st, syms[i], &sym))
			r = -ENOENT;
		else
			args[i].val += (int64_t)sym.st_value;
		if (r)
			lp_errf(err, errlen, "USDT argument %d names '%s', which has no symbol", i,
				syms[i]);
	}
	elf_symtab__free(st);
	return r;
}

/*
 * The fetch programs of site @nt: Ruby's two strings (class, method) for
 * the filter, else the values asked for at an entry (or only) site, none
 * at a return site. @describe: also set @tr's value descriptions.
 */
static int site_progs(struct trace *tr, const char *path, const struct usdt_note *nt, bool is_ret,
		      bool describe, struct fetch_prog *progs, int *n_progs, char *err,
		      size_t errlen)
{
	char syms[USDT_MAX_ARGS][USDT_NAME_MAX];
	const struct usdt_spec *u = tr->usdt;
	struct usdt_arg args[USDT_MAX_ARGS];
	struct fetch_type ty;
	int n, want, r;

	*n_progs = 0;
	n = usdt_args_parse(nt->args_text, args, syms, err, errlen);
	if (n < 0)
		return n;
	r = resolve_globals(path, args, syms, n, err, errlen);
	if (r)
		return r;
	if (tr->rb_class[0]) {
		if (n < 2) {
			lp_errf(err, errlen, "'%s:%s' has %d arguments, not class and method",
				nt->provider, nt->name, n);
			return -EINVAL;
		}
		usdt_arg_fetch(&args[0], true, &progs[0], &ty);
		usdt_arg_fetch(&args[1], true, &progs[1], &ty);
		*n_progs = 2;
		return 0;
	}
	if (is_ret || u->no_values)
		return 0;
	want = u->n_sel ? u->n_sel : (n < LP_MAX_VALUES ? n : LP_MAX_VALUES);
	for (int i = 0; i < want; i++) {
		int k = u->n_sel ? u->sel[i] : i;
		bool str = u->n_sel && u->sel_str[i];

		if (k >= n) {
			lp_errf(err, errlen, "'%s': '%s:%s' has no arg%d (it has %d arguments)",
				tr->spec_text, nt->provider, nt->name, k, n);
			return -ENOENT;
		}
		usdt_arg_fetch(&args[k], str, &progs[i], &ty);
		if (describe) {
			tr->values[i].type = ty;
			snprintf(tr->values[i].expr, sizeof(tr->values[i].expr), "arg%d%s", k,
				 str ? ":str" : "");
		}
	}
	*n_progs = want;
	if (describe)
		tr->n_values = tr->n_entry_values = want, tr->user_args = (size_t)want;
	return 0;
}

/*
 * What a pair's probes cost, calibrated on liveprof's own pair of nops
 * (probe_cost.c, class "usdt nop pair"): charged to the traced calls
 * around it, and the part inside the call taken off its latency, as for
 * functions. (An entry + uretprobe's calibration, 10 us here, made an
 * outer Ruby method 0 ns.) Measured before the pair's first call is timed
 * (traces_attach.c, attach_func).
 */
static void pair_cost(struct traces *t, struct trace *tr, struct lp_probe_cfg *cfg)
{
	const struct probe_cost *cost = traces_class_cost(t, PIC_USDT_PAIR, traces_can_measure(t));

	tr->insn_class = PIC_USDT_PAIR;
	tr->info.insn_class = probe_insn_class_name(PIC_USDT_PAIR);
	if (cost) {
		cfg->cost_ns = cost->cost_ns;
		cfg->self_ns = cost->self_ns;
		tr->info.probe_cost_ns = cost->cost_ns;
	} else {
		tr->cost_pending = true;
	}
}

/* One probe id per site, configured once (the first process). */
static int configure_sites(struct traces *t, struct trace *tr, const struct usdt_sites *s,
			   const struct binary_loc *loc, char *err, size_t errlen)
{
	bool pair = tr->usdt->ret_name[0];

	for (int i = 0; i < s->n; i++) {
		const struct usdt_note *nt = &s->notes[s->idx[i]];
		struct lp_probe_cfg cfg = {.kind = pair ? LP_PK_FUNC : LP_PK_LINE,
					   .by_index = -1,
					   .module_bias = loc->bias};
		struct fetch_prog progs[LP_MAX_VALUES];
		/* a pending trace reserved its first id already */
		int id = i < tr->n_ids ? tr->ids[i] : traces_alloc_id(t), np, r;

		if (id < 0) {
			lp_errf(err, errlen, "too many probes (at most %d)", LP_MAX_PROBES);
			return id;
		}
		if (i >= tr->n_ids)
			tr->ids[tr->n_ids++] = id;
		r = site_progs(tr, loc->attach_path, nt, i >= s->n_entry, i == 0, progs, &np, err,
			       errlen);
		if (r)
			return r;
		cfg.pair_id = (uint32_t)tr->ids[0];
		cfg.site_vaddr = nt->vaddr;
		if (tr->rb_class[0]) {
			cfg.flags = LP_PCF_STR_MATCH;
			r = bpf_session__set_str_match(t->c->bpf, id, tr->rb_class, tr->rb_method,
						       true);
		} else if (np) {
			cfg.n_values = (uint32_t)np;
			cfg.flags = LP_PCF_EMIT_VALUES;
		}
		if (i == 0 && pair) {
			pair_cost(t, tr, &cfg);
			tr->cfg = cfg;
		}
		if (!r)
			r = bpf_session__set_probe(t->c->bpf, id, &cfg, progs, (unsigned)np);
		if (r) {
			lp_errf(err, errlen, "cannot configure probe: %s", strerror(-r));
			return r;
		}
	}
	return 0;
}

/*
 * Attach every site of @tr. A pair's return sites go in first: a USDT pair
 * has no stack pointer that would show a frame as gone, so a call whose
 * entry fired and whose return came before the return probe was in would
 * stay in flight under every later call for the whole run (and a split
 * would hold each sample for it). A return without its entry is ignored.
 */
static int attach_sites(struct traces *t, struct trace *tr, const struct usdt_sites *s, int pid,
			const struct binary_loc *loc, char *err, size_t errlen)
{
	bool pair = tr->usdt->ret_name[0];

	for (int k = 0; k < s->n; k++) {
		/* returns (i >= n_entry) first, then the entries */
		int i = pair ? (k + s->n_entry) % s->n : k;
		const struct usdt_note *nt = &s->notes[s->idx[i]];
		enum bpf_probe_prog prog = !pair	    ? PROBE_PROG_LINE
					   : i < s->n_entry ? PROBE_PROG_USDT_ENTRY
							    : PROBE_PROG_USDT_RETURN;
		int h = bpf_session__attach_uprobe_sema(t->c->bpf, prog, pid, loc->attach_path,
							nt->offset, nt->sema_offset,
							(uint32_t)tr->ids[i]);

		if (h >= 0 && traces_add_link(tr, h)) {
			bpf_session__detach(t->c->bpf, h);
			h = -ENOMEM;
		}
		if (h < 0) {
			/* the kernel refuses the reference counter of a semaphore
			 * it cannot find in a writable mapping of the file */
			lp_errf(err, errlen,
				"cannot attach a uprobe to '%s' at 0x%" PRIx64 " in '%s'%s: %s",
				tr->spec_text, nt->vaddr, loc->mapped_path,
				nt->sema_offset ? " with its semaphore" : "", strerror(-h));
			return h;
		}
		lp_debug("probe '%s': usdt %s at 0x%" PRIx64 " in '%s' (semaphore at 0x%" PRIx64
			 ")",
			 tr->spec_text, i < s->n_entry ? nt->name : "return", nt->vaddr,
			 loc->mapped_path, nt->sema_vaddr);
	}
	return 0;
}

/*
 * The stack frame a pair's calls stand in, for the split: a Ruby method's
 * frame is "Class#method", qualified as Ruby's full label is (ruby_procs.c:
 * the class the method is defined in, which is the class the USDT probe
 * names for an instance method); a C program's pair by the function that
 * holds its entry probe.
 */
static char *pair_frame(const struct trace *tr, const char *path, uint64_t vaddr)
{
	char rb[2 * LP_STR_LEN + 2];
	struct elf_symtab *st = NULL;
	const struct elf_sym *sym;
	char *name = NULL;

	if (tr->rb_class[0]) {
		snprintf(rb, sizeof(rb), "%s#%s", tr->rb_class, tr->rb_method);
		return strdup(rb);
	}
	if (elf_symtab__open_path(path, &st))
		return NULL;
	sym = elf_symtab__lookup(st, vaddr);
	if (sym && sym->name)
		name = strdup(sym->name);
	elf_symtab__free(st);
	return name;
}

int traces_usdt_attach_in(struct traces *t, struct trace *tr, int pid, char *err, size_t errlen)
{
	struct binary_loc loc;
	struct usdt_sites s;
	bool pre_exec;
	int r;

	if (traces_py_is(tr))
		return traces_py_attach_in(t, tr, pid, err, errlen);
	r = traces_locate_spec(t, tr, pid, tr->usdt->binary, &loc, &pre_exec, err, errlen);
	if (r == -EAGAIN)
		return 0;
	if (r)
		return r;
	r = find_sites(tr, loc.attach_path, loc.mapped_path, &s, err, errlen);
	if (!r && tr->n_links && tr->n_ids != s.n) {
		lp_errf(err, errlen, "'%s' has %d sites in process %d, %d elsewhere", tr->spec_text,
			s.n, pid, tr->n_ids);
		r = -EINVAL;
	}
	if (!r && !tr->n_links)
		r = configure_sites(t, tr, &s, &loc, err, errlen);
	if (!r)
		r = attach_sites(t, tr, &s, pid, &loc, err, errlen);
	if (!r) {
		if (!tr->func_name)
			tr->func_name = strdup(tr->spec_text);
		if (!tr->binary)
			tr->binary = strdup(loc.mapped_path);
		tr->info.n_sites = s.n_entry;
		if (tr->rb_class[0] && !t->rb_noted) {
			/* once per session: it holds for every rb: trace */
			t->rb_noted = true;
			lp_info("note: '%s': Ruby 3.1 fires method__entry/return for Ruby methods "
				"only while the process has a TracePoint for :call/:return enabled",
				tr->spec_text);
		}
		if (!tr->frame_name && tr->usdt->ret_name[0])
			tr->frame_name = pair_frame(tr, loc.attach_path, s.notes[s.idx[0]].vaddr);
		tr->pending = false;
	}
	free(s.notes);
	return r;
}
