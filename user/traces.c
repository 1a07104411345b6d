// SPDX-License-Identifier: GPL-2.0
/*
 * traces.c - --trace: resolve, attach, and summarise.
 *
 * A trace owns one or more probe ids: a function trace has one; a line
 * trace has one per address when it captures values (each address may
 * keep the variable somewhere else), otherwise one for all its
 * addresses. Latency comes from the in-kernel histogram of each id,
 * read as per-second deltas into a ring of slots for the window.
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
#include "user/bpf_session.h"
#include "user/daemon.h"
#include "user/log.h"
#include "user/split.h"
#include "user/traces.h"

#define MAX_IDS_PER_TRACE 64
#define MAX_LINKS	  4096
#define VALUE_TOP	  16

struct value_count {
	char text[64];
	uint64_t count;
};

struct value_stats {
	char expr[PROBE_NAME_MAX];
	struct fetch_type type;
	bool at_return;
	struct value_count *vals; /* distinct values, unordered */
	size_t n, cap;
	uint64_t faults;
};

struct trace {
	struct trace_info info;
	char *spec_text;
	char *func_name;
	char *binary;
	struct probe_spec spec;
	int ids[MAX_IDS_PER_TRACE];
	int n_ids;
	int *links; /* bpf_session attach handles */
	int n_links;
	bool pending; /* its library is not loaded yet */
	bool warned_overhead;
	/* histogram: previous cumulative snapshot, window slots */
	uint64_t *prev;
	uint64_t *slots; /* n_slots * LP_HIST_BUCKETS */
	uint64_t prev_calls;
	double rate; /* calls/s over the last tick */
	struct value_stats values[LP_MAX_VALUES];
	int n_values; /* entry values + return values */
	int n_entry_values;
	int by_index;	  /* value used for --by, -1 */
	size_t user_args; /* values the user asked for (the --by one comes after) */
	bool emulated;	  /* first instruction is emulated by the kernel (push %rbp) */
};

struct traces {
	struct daemon *d;
	struct trace **v;
	int n;
	bool id_used[LP_MAX_PROBES];
	int n_slots, cur_slot;
	uint64_t cost_emulated_ns, cost_stepped_ns; /* measured per probe hit */
	bool cost_measured;
	uint64_t last_tick_ns;
};

struct traces *traces__new(struct daemon *d)
{
	struct traces *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->d = d;
	t->n_slots = d->n_slots ? d->n_slots : 10;
	t->last_tick_ns = daemon__now_ns();
	return t;
}

static void trace_free(struct traces *t, struct trace *tr)
{
	if (!tr)
		return;
	for (int i = 0; i < tr->n_links; i++)
		bpf_session__detach(t->d->bpf, tr->links[i]);
	for (int i = 0; i < tr->n_ids; i++) {
		bpf_session__clear_probe(t->d->bpf, tr->ids[i]);
		t->id_used[tr->ids[i]] = false;
	}
	for (int i = 0; i < tr->n_values; i++) {
		fetch_type_free(&tr->values[i].type);
		free(tr->values[i].vals);
	}
	free(tr->links);
	free(tr->prev);
	free(tr->slots);
	free(tr->spec_text);
	free(tr->func_name);
	free(tr->binary);
	free(tr);
}

void traces__free(struct traces *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n; i++)
		trace_free(t, t->v[i]);
	free(t->v);
	free(t);
}

static int alloc_id(struct traces *t)
{
	for (int i = 0; i < LP_MAX_PROBES; i++) {
		if (!t->id_used[i]) {
			t->id_used[i] = true;
			bpf_session__clear_probe(t->d->bpf, i);
			return i;
		}
	}
	return -ENOSPC;
}

/* ---- where to attach: the binary of the spec in a target's maps ---- */

struct binary_loc {
	char attach_path[4200]; /* what to hand to the uprobe API */
	char mapped_path[4096];
	uint64_t bias; /* load bias in the first target */
};

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

/* ---- probe cost ---- */

/* Two functions for calibration: one starts with push %rbp (emulated by
 * the kernel), the other with an instruction that must be single-stepped. */
__attribute__((noinline, naked)) int lp_cost_probe_push(int x)
{
	(void)x;
	__asm__ volatile("push %rbp\n\tmov %rsp, %rbp\n\tlea 1(%rdi), %eax\n\tpop %rbp\n\tret\n");
}

__attribute__((noinline, naked)) int lp_cost_probe_step(int x)
{
	(void)x;
	__asm__ volatile("lea 1(%rdi), %eax\n\tret\n");
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t time_calls(int (*fn)(int), int n)
{
	volatile int acc = 0;
	uint64_t t0 = mono_ns();

	for (int i = 0; i < n; i++)
		acc += fn(i);
	return mono_ns() - t0;
}

static int self_offset(void *fn, uint64_t *off)
{
	struct pm_entry *maps = NULL;
	size_t n = 0;
	uint64_t a = (uint64_t)fn;
	int err = -ENOENT;

	if (proc_maps__read(getpid(), true, &maps, &n))
		return -ESRCH;
	for (size_t i = 0; i < n; i++) {
		if (a >= maps[i].start && a < maps[i].end) {
			*off = a - maps[i].start + maps[i].offset;
			err = 0;
			break;
		}
	}
	proc_maps__free(maps, n);
	return err;
}

/* Measure what an entry+return probe pair costs per call on this machine. */
static void measure_cost(struct traces *t)
{
	int (*fns[2])(int) = {lp_cost_probe_push, lp_cost_probe_step};
	uint64_t *out[2] = {&t->cost_emulated_ns, &t->cost_stepped_ns};
	const int n = 2000;

	t->cost_measured = true;
	for (int k = 0; k < 2; k++) {
		uint64_t off, base, traced;
		int h1, h2, id = alloc_id(t);

		*out[k] = k ? 10000 : 1000; /* documented fallbacks if probing fails */
		if (id < 0 || self_offset((void *)fns[k], &off))
			continue;
		base = time_calls(fns[k], n);
		h1 = bpf_session__attach_uprobe(t->d->bpf, PROBE_PROG_ENTRY, getpid(),
						"/proc/self/exe", off, id);
		h2 = bpf_session__attach_uprobe(t->d->bpf, PROBE_PROG_RETURN, getpid(),
						"/proc/self/exe", off, id);
		if (h1 >= 0 && h2 >= 0) {
			traced = time_calls(fns[k], n);
			*out[k] = traced > base ? (traced - base) / n : 0;
		}
		bpf_session__detach(t->d->bpf, h1);
		bpf_session__detach(t->d->bpf, h2);
		t->id_used[id] = false;
	}
	lp_debug("probe cost: %" PRIu64 " ns per call (emulated), %" PRIu64 " ns (single-stepped)",
		 t->cost_emulated_ns, t->cost_stepped_ns);
}

/* Is the first instruction at @offset of @path `push %rbp` (emulated)? */
static bool first_insn_emulated(const char *path, uint64_t offset)
{
	unsigned char b[2] = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool r;

	if (fd < 0)
		return false;
	r = pread(fd, b, 2, offset) == 2 && (b[0] == 0x55 || (b[0] == 0xf3 && b[1] == 0x0f));
	close(fd);
	return r;
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
			  struct lp_fetch_prog *progs, int *n_entry, int *n_ret, char *err,
			  size_t errlen)
{
	int ne = 0, nr = 0;
	struct lp_fetch_prog ret_progs[LP_MAX_VALUES];
	struct fetch_type ret_types[LP_MAX_VALUES];
	char e2[400];

	/* Entry values first, then return values: the BPF side runs the
	 * first n_values at entry and the next n_ret_values at return. */
	for (size_t i = 0; i < tr->spec.n_args; i++) {
		const struct probe_expr *e = &tr->spec.args[i];
		struct fetch_type ty;
		struct lp_fetch_prog p;
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
	struct lp_fetch_prog progs[LP_MAX_VALUES];
	struct lp_probe_cfg cfg = {.kind = LP_PK_FUNC, .by_index = tr->by_index};
	int ne = 0, nr = 0, id, h, r;

	if (tr->n_ids == 0) {
		id = alloc_id(t);
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
		r = bpf_session__set_probe(t->d->bpf, id, &cfg, progs, ne + nr);
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
	h = bpf_session__attach_uprobe(t->d->bpf, PROBE_PROG_ENTRY, pid, loc->attach_path,
				       pt->entry_offset, id);
	if (h < 0 || add_link(tr, h))
		goto fail;
	if (pt->is_go) {
		for (size_t i = 0; i < pt->n_ret_sites; i++) {
			h = bpf_session__attach_uprobe(t->d->bpf, PROBE_PROG_RET_INSN, pid,
						       loc->attach_path,
						       pt->ret_sites[i].file_offset, id);
			if (h < 0 || add_link(tr, h))
				goto fail;
		}
	} else {
		h = bpf_session__attach_uprobe(t->d->bpf, PROBE_PROG_RETURN, pid, loc->attach_path,
					       pt->entry_offset, id);
		if (h < 0 || add_link(tr, h))
			goto fail;
	}
	tr->emulated = first_insn_emulated(loc->attach_path, pt->entry_offset);
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
		struct lp_fetch_prog progs[LP_MAX_VALUES];
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
			id = alloc_id(t);
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
			r = bpf_session__set_probe(t->d->bpf, id, &cfg, progs, ne);
			if (r) {
				snprintf(err, errlen, "cannot configure probe: %s", strerror(-r));
				return r;
			}
		}
		id = tr->ids[per_site ? s : 0];
		h = bpf_session__attach_uprobe(t->d->bpf, PROBE_PROG_LINE, pid, loc->attach_path,
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
	char path[4096], *dirs, *dir, *save = NULL;
	const char *env = getenv("PATH");
	int err = -ENOENT;

	if (stat("/proc/self/exe", &self) ||
	    stat((snprintf(path, sizeof(path), "/proc/%d/exe", pid), path), &child) ||
	    self.st_dev != child.st_dev || self.st_ino != child.st_ino)
		return -ENOENT; /* it has exec'd already */
	memset(loc, 0, sizeof(*loc));
	if (strchr(cmd, '/')) {
		if (!realpath(cmd, loc->mapped_path))
			return -ENOENT;
		snprintf(loc->attach_path, sizeof(loc->attach_path), "%s", loc->mapped_path);
		return 0;
	}
	dirs = strdup(env && *env ? env : "/usr/local/bin:/usr/bin:/bin");
	if (!dirs)
		return -ENOMEM;
	for (dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(path, sizeof(path), "%s/%s", *dir ? dir : ".", cmd);
		if (!access(path, X_OK) && realpath(path, loc->mapped_path)) {
			snprintf(loc->attach_path, sizeof(loc->attach_path), "%s",
				 loc->mapped_path);
			err = 0;
			break;
		}
	}
	free(dirs);
	return err;
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

	if (!tr->spec.binary[0] && pid == t->d->child && t->d->opts->command)
		r = locate_command(pid, t->d->opts->command[0], &loc);
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

static int attach_all(struct traces *t, struct trace *tr, char *err, size_t errlen)
{
	struct daemon *d = t->d;
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

	if (!t->cost_measured)
		measure_cost(t);
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
	if (!r && t->d->opts->all && tr->spec.binary[0] != '/') {
		snprintf(err, errlen, "with -a, name the binary by path: --trace /path/to/bin:%s",
			 spec);
		r = -EINVAL;
	}
	if (!r)
		r = attach_all(t, tr, err, errlen);
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
	tr->info.probe_cost_ns = tr->emulated ? t->cost_emulated_ns : t->cost_stepped_ns;
	if (!tr->n_ids) {
		/* pending: reserve the id now so it is stable */
		int id = alloc_id(t);

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
		if (t->d->split && split__probe_id(t->d->split) == tr->ids[0])
			return -EBUSY;
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
		struct lp_probe_cfg cfg = {
			.kind = LP_PK_LINE, .by_index = -1, .when_of = (uint32_t)func_id + 1};

		/* Values of a line used as --when are not captured. */
		bpf_session__set_probe(t->d->bpf, t->v[li]->ids[k], &cfg, NULL, 0);
	}
	return 0;
}

/* ---- histogram arithmetic ---- */

uint64_t traces__bucket_lower(uint32_t b)
{
	uint32_t shift, sub;

	if (b < (1u << LP_HIST_SUB_BITS))
		return b;
	shift = (b >> LP_HIST_SUB_BITS) - 1;
	sub = b & ((1u << LP_HIST_SUB_BITS) - 1);
	if (shift > 56)
		return UINT64_MAX / 2;
	return ((uint64_t)(1u << LP_HIST_SUB_BITS) + sub) << shift;
}

uint64_t traces__bucket_value(uint32_t b)
{
	uint64_t lo = traces__bucket_lower(b), hi = traces__bucket_lower(b + 1);

	/* The middle of the bucket halves the worst-case error: <= 0.8%. */
	return hi > lo ? lo + (hi - lo) / 2 : lo;
}

int traces__count(struct traces *t)
{
	return t ? t->n : 0;
}

const struct trace_info *traces__info(struct traces *t, int i)
{
	return t && i >= 0 && i < t->n ? &t->v[i]->info : NULL;
}

int traces__find(struct traces *t, int id)
{
	for (int i = 0; t && i < t->n; i++)
		for (int k = 0; k < t->v[i]->n_ids; k++)
			if (t->v[i]->ids[k] == id)
				return i;
	return -1;
}

int traces__histogram(struct traces *t, int i, bool window, uint64_t *out)
{
	const volatile uint64_t *h = bpf_session__hist(t->d->bpf);
	struct trace *tr;

	if (i < 0 || i >= t->n)
		return -ENOENT;
	tr = t->v[i];
	memset(out, 0, LP_HIST_BUCKETS * sizeof(uint64_t));
	if (window) {
		for (int s = 0; s < t->n_slots; s++)
			for (int b = 0; b < LP_HIST_BUCKETS; b++)
				out[b] += tr->slots[(size_t)s * LP_HIST_BUCKETS + b];
		return 0;
	}
	for (int k = 0; k < tr->n_ids; k++)
		for (int b = 0; b < LP_HIST_BUCKETS; b++)
			out[b] += h[(size_t)tr->ids[k] * LP_HIST_BUCKETS + b];
	return 0;
}

static uint64_t hist_percentile(const uint64_t *h, uint64_t total, double pct)
{
	uint64_t want, cum = 0;

	if (!total)
		return 0;
	want = (uint64_t)ceil(total * pct / 100.0);
	if (want < 1)
		want = 1;
	for (int b = 0; b < LP_HIST_BUCKETS; b++) {
		cum += h[b];
		if (cum >= want)
			return traces__bucket_value(b);
	}
	return 0;
}

uint64_t traces__percentile(struct traces *t, int i, double pct, bool window)
{
	uint64_t *h = calloc(LP_HIST_BUCKETS, sizeof(uint64_t)), total = 0, r;

	if (!h || traces__histogram(t, i, window, h)) {
		free(h);
		return 0;
	}
	for (int b = 0; b < LP_HIST_BUCKETS; b++)
		total += h[b];
	r = hist_percentile(h, total, pct);
	free(h);
	return r;
}

/* Calls (or line hits) so far. Functions count them in their histogram only. */
static uint64_t trace_calls(struct traces *t, struct trace *tr)
{
	const volatile struct lp_probe_stats_view *st = bpf_session__probe_stats(t->d->bpf);
	const volatile uint64_t *h = bpf_session__hist(t->d->bpf);
	uint64_t calls = 0;

	for (int k = 0; k < tr->n_ids; k++) {
		if (tr->info.kind == TRACE_LINE) {
			calls += st[tr->ids[k]].calls;
			continue;
		}
		for (int b = 0; b < LP_HIST_BUCKETS; b++)
			calls += h[(size_t)tr->ids[k] * LP_HIST_BUCKETS + b];
	}
	return calls;
}

int traces__summary(struct traces *t, int i, bool window, struct trace_summary *out)
{
	const volatile struct lp_probe_stats_view *st = bpf_session__probe_stats(t->d->bpf);
	uint64_t *h, total = 0, sum = 0, maxb = 0;
	struct trace *tr;
	double span;

	memset(out, 0, sizeof(*out));
	if (i < 0 || i >= t->n)
		return -ENOENT;
	tr = t->v[i];
	h = calloc(LP_HIST_BUCKETS, sizeof(uint64_t));
	if (!h)
		return -ENOMEM;
	traces__histogram(t, i, window, h);
	for (int b = 0; b < LP_HIST_BUCKETS; b++) {
		total += h[b];
		sum += h[b] * traces__bucket_value(b);
		if (h[b])
			maxb = b;
	}
	span = window ? t->n_slots
		      : ((t->d->end_ns ? t->d->end_ns : daemon__now_ns()) - t->d->start_ns) / 1e9;
	if (tr->info.kind == TRACE_LINE) {
		/* line probes count hits; no latency */
		out->calls = window ? 0 : trace_calls(t, tr);
		if (window) {
			out->calls = (uint64_t)(tr->rate * t->n_slots);
		}
	} else {
		out->calls = total;
		out->p50 = hist_percentile(h, total, 50);
		out->p90 = hist_percentile(h, total, 90);
		out->p95 = hist_percentile(h, total, 95);
		out->p99 = hist_percentile(h, total, 99);
		out->p999 = hist_percentile(h, total, 99.9);
		out->mean = total ? (double)sum / total : 0;
		out->max = total ? (window ? traces__bucket_lower(maxb + 1) : 0) : 0;
		if (!window)
			for (int k = 0; k < tr->n_ids; k++)
				if (st[tr->ids[k]].max_ns > out->max)
					out->max = st[tr->ids[k]].max_ns;
	}
	out->rate = span > 0 ? out->calls / span : 0;
	free(h);
	return 0;
}

void traces__set_window(struct traces *t, int seconds)
{
	if (!t || seconds < 1 || seconds == t->n_slots)
		return;
	for (int i = 0; i < t->n; i++) {
		uint64_t *s = calloc((size_t)seconds * LP_HIST_BUCKETS, sizeof(uint64_t));

		if (!s)
			return;
		free(t->v[i]->slots);
		t->v[i]->slots = s;
	}
	t->n_slots = seconds;
	t->cur_slot = 0;
}

void traces__tick(struct traces *t, uint64_t now_ns)
{
	const volatile uint64_t *h = bpf_session__hist(t->d->bpf);
	double dt = (now_ns - t->last_tick_ns) / 1e9;
	char err[512];

	if (dt <= 0.05)
		return;
	t->last_tick_ns = now_ns;
	t->cur_slot = (t->cur_slot + 1) % t->n_slots;
	for (int i = 0; i < t->n; i++) {
		struct trace *tr = t->v[i];
		uint64_t *slot = tr->slots + (size_t)t->cur_slot * LP_HIST_BUCKETS, calls;

		if (tr->pending) {
			attach_all(t, tr, err, sizeof(err));
			if (!tr->pending)
				lp_debug("attached '%s' (its library is loaded now)",
					 tr->spec_text);
		}
		for (int b = 0; b < LP_HIST_BUCKETS; b++) {
			uint64_t cur = 0;

			for (int k = 0; k < tr->n_ids; k++)
				cur += h[(size_t)tr->ids[k] * LP_HIST_BUCKETS + b];
			slot[b] = cur >= tr->prev[b] ? cur - tr->prev[b] : 0;
			tr->prev[b] = cur;
		}
		calls = trace_calls(t, tr);
		tr->rate = (calls - tr->prev_calls) / dt;
		tr->prev_calls = calls;
		tr->info.probe_cost_ns = tr->emulated ? t->cost_emulated_ns : t->cost_stepped_ns;
		tr->info.est_overhead_pct = tr->rate * tr->info.probe_cost_ns / 1e9 * 100;
		if (tr->info.detached)
			continue;
		if (t->d->opts->max_overhead_pct > 0 &&
		    tr->info.est_overhead_pct > t->d->opts->max_overhead_pct) {
			lp_warn("detaching '%s': %.0f calls/s x %" PRIu64
				" ns = %.1f%% of a CPU, above --max-overhead %g%%",
				tr->spec_text, tr->rate, tr->info.probe_cost_ns,
				tr->info.est_overhead_pct, t->d->opts->max_overhead_pct);
			for (int k = 0; k < tr->n_links; k++)
				bpf_session__detach(t->d->bpf, tr->links[k]);
			tr->n_links = 0;
			tr->info.detached = true;
		} else if (tr->info.est_overhead_pct > 5 && !tr->warned_overhead) {
			tr->warned_overhead = true;
			lp_warn("'%s' costs about %.1f%% of a CPU (%.0f calls/s x %" PRIu64
				" ns per probe hit); --max-overhead PCT detaches it",
				tr->spec_text, tr->info.est_overhead_pct, tr->rate,
				tr->info.probe_cost_ns);
		}
	}
}

/* ---- captured values ---- */

static void format_value(const struct fetch_type *ty, const struct lp_value *v, char *buf,
			 size_t len)
{
	uint64_t u = v->u64;
	int64_t s;

	if (ty->size && ty->size < 8 && ty->kind != FETCH_STRING) {
		u &= (1ULL << (ty->size * 8)) - 1;
		s = ty->is_signed && (u >> (ty->size * 8 - 1))
			    ? (int64_t)(u | ~((1ULL << (ty->size * 8)) - 1))
			    : (int64_t)u;
	} else {
		s = (int64_t)u;
	}
	switch (ty->kind) {
	case FETCH_STRING: {
		char tmp[LP_STR_LEN + 1];
		size_t j = 0;

		for (size_t i = 0; i < LP_STR_LEN && v->str[i]; i++)
			tmp[j++] = (unsigned char)v->str[i] >= 0x20 && v->str[i] != 0x7f ? v->str[i]
											 : '?';
		tmp[j] = 0;
		snprintf(buf, len, "\"%s\"", tmp);
		break;
	}
	case FETCH_PTR:
		snprintf(buf, len, "0x%" PRIx64, u);
		break;
	case FETCH_ENUM:
		for (size_t i = 0; i < ty->n_enums; i++) {
			if (ty->enums[i].value == s) {
				snprintf(buf, len, "%s", ty->enums[i].name);
				return;
			}
		}
		snprintf(buf, len, "%" PRId64, s);
		break;
	case FETCH_CHAR:
		if (u >= 0x20 && u < 0x7f)
			snprintf(buf, len, "'%c'", (char)u);
		else
			snprintf(buf, len, "%" PRId64, s);
		break;
	case FETCH_BOOL:
		snprintf(buf, len, "%s", u ? "true" : "false");
		break;
	case FETCH_INT:
		snprintf(buf, len, "%" PRId64, s);
		break;
	default:
		snprintf(buf, len, "%" PRIu64, u);
	}
}

static void count_value(struct value_stats *vs, const char *text)
{
	for (size_t i = 0; i < vs->n; i++) {
		if (!strcmp(vs->vals[i].text, text)) {
			vs->vals[i].count++;
			return;
		}
	}
	/* Bound the table: past 4096 distinct values the rest is "other". */
	if (vs->n >= 4096)
		text = "(other)";
	if (vs->n == vs->cap) {
		size_t cap = vs->cap ? vs->cap * 2 : 16;
		struct value_count *n = realloc(vs->vals, cap * sizeof(*n));

		if (!n)
			return;
		vs->vals = n;
		vs->cap = cap;
	}
	snprintf(vs->vals[vs->n].text, sizeof(vs->vals[vs->n].text), "%s", text);
	vs->vals[vs->n++].count = 1;
}

void traces__on_hit(struct traces *t, const struct lp_hit *h)
{
	int i = traces__find(t, h->probe_id);
	struct trace *tr;
	int first, n;

	if (i < 0)
		return;
	tr = t->v[i];
	first = h->at_return ? tr->n_entry_values : 0;
	n = h->at_return ? tr->n_values - tr->n_entry_values : tr->n_entry_values;
	for (int k = 0; k < n && k < (int)h->n_values && k < LP_MAX_VALUES; k++) {
		struct value_stats *vs = &tr->values[first + k];
		char buf[64];

		/* the --by value rides along but is not a user value */
		if (!h->at_return && k == tr->by_index && (size_t)tr->by_index >= tr->user_args)
			continue;
		if (h->fault_mask & (1ULL << k)) {
			vs->faults++;
			count_value(vs, "(fault)");
			continue;
		}
		format_value(&vs->type, &h->values[k], buf, sizeof(buf));
		count_value(vs, buf);
	}
}

static int cmp_value_count(const void *a, const void *b)
{
	const struct value_count *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : strcmp(x->text, y->text);
}

/* ---- --by ---- */

struct by_group {
	uint64_t value;
	uint64_t *hist;
	uint64_t calls;
};

static int read_by_groups(struct traces *t, struct trace *tr, struct by_group **out)
{
	int fd = bpf_session__by_hist_fd(t->d->bpf), n = 0;
	struct lp_by_key key, next;
	struct by_group *g = NULL;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		uint64_t count;
		int j;

		key = next;
		prev = &key;
		if ((int)key.probe_id != tr->ids[0] || bpf_map_lookup_elem(fd, &key, &count))
			continue;
		for (j = 0; j < n && g[j].value != key.value; j++)
			;
		if (j == n) {
			struct by_group *ng;

			if (n >= 256) /* enough groups to print */
				continue;
			ng = realloc(g, (n + 1) * sizeof(*g));
			if (!ng)
				break;
			g = ng;
			g[n].value = key.value;
			g[n].calls = 0;
			g[n].hist = calloc(LP_HIST_BUCKETS, sizeof(uint64_t));
			if (!g[n].hist)
				break;
			n++;
		}
		if (key.bucket < LP_HIST_BUCKETS)
			g[j].hist[key.bucket] += count;
		g[j].calls += count;
	}
	*out = g;
	return n;
}

static int cmp_by_group(const void *a, const void *b)
{
	const struct by_group *x = a, *y = b;

	return x->value < y->value ? -1 : x->value > y->value;
}

static void fmt_ns(uint64_t ns, char *buf, size_t len)
{
	if (ns >= 10000000000ULL)
		snprintf(buf, len, "%.1fs", ns / 1e9);
	else if (ns >= 10000000)
		snprintf(buf, len, "%.1fms", ns / 1e6);
	else if (ns >= 10000)
		snprintf(buf, len, "%.1fus", ns / 1e3);
	else
		snprintf(buf, len, "%" PRIu64 "ns", ns);
}

static void print_histogram(const uint64_t *h, FILE *f)
{
	/* Group into power-of-two rows like bpftrace's hist(). */
	uint64_t rows[64] = {0}, max = 0;
	int lo = 64, hi = -1;

	for (int b = 0; b < LP_HIST_BUCKETS; b++) {
		uint64_t v = traces__bucket_lower(b);
		int r = v ? 63 - __builtin_clzll(v) : 0;

		if (!h[b])
			continue;
		rows[r] += h[b];
		lo = r < lo ? r : lo;
		hi = r > hi ? r : hi;
	}
	for (int r = lo; r <= hi; r++)
		max = rows[r] > max ? rows[r] : max;
	for (int r = lo; r <= hi && max; r++) {
		char a[32], b[32];
		int w = (int)(rows[r] * 40 / max);

		fmt_ns(1ULL << r, a, sizeof(a));
		fmt_ns(2ULL << r, b, sizeof(b));
		fprintf(f, "    [%7s, %7s) %8" PRIu64 " |%-40.*s|\n", a, b, rows[r], w,
			"@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@");
	}
}

void traces__print(struct traces *t, FILE *f, bool histograms)
{
	char c[7][16];

	if (!t || !t->n)
		return;
	fprintf(f, "\n%-28s %10s %9s %9s %9s %9s %9s %9s %9s %7s\n", "trace", "calls", "rate/s",
		"p50", "p90", "p95", "p99", "p99.9", "max", "cost%");
	for (int i = 0; i < t->n; i++) {
		struct trace *tr = t->v[i];
		struct trace_summary s;

		traces__summary(t, i, false, &s);
		if (tr->info.kind == TRACE_LINE) {
			fprintf(f,
				"%-28.28s %10" PRIu64 " %9.0f %9s %9s %9s %9s %9s %9s %6.2f%%%s\n",
				tr->spec_text, s.calls, s.rate, "-", "-", "-", "-", "-", "-",
				tr->info.est_overhead_pct, tr->info.detached ? " detached" : "");
		} else {
			fmt_ns(s.p50, c[0], 16);
			fmt_ns(s.p90, c[1], 16);
			fmt_ns(s.p95, c[2], 16);
			fmt_ns(s.p99, c[3], 16);
			fmt_ns(s.p999, c[4], 16);
			fmt_ns(s.max, c[5], 16);
			fprintf(f,
				"%-28.28s %10" PRIu64 " %9.0f %9s %9s %9s %9s %9s %9s %6.2f%%%s\n",
				tr->spec_text, s.calls, s.rate, c[0], c[1], c[2], c[3], c[4], c[5],
				tr->info.est_overhead_pct, tr->info.detached ? " detached" : "");
		}
		if (tr->pending)
			fprintf(f, "    (waiting for '%s' to be loaded)\n", tr->spec.binary);
	}
	for (int i = 0; i < t->n; i++) {
		struct trace *tr = t->v[i];

		if (histograms && tr->info.kind == TRACE_FUNC) {
			uint64_t *h = calloc(LP_HIST_BUCKETS, sizeof(uint64_t));

			if (h && !traces__histogram(t, i, false, h)) {
				fprintf(f, "\n  %s latency:\n", tr->spec_text);
				print_histogram(h, f);
			}
			free(h);
		}
		for (int k = 0; k < tr->n_values; k++) {
			struct value_stats *vs = &tr->values[k];

			if (!vs->n)
				continue;
			qsort(vs->vals, vs->n, sizeof(*vs->vals), cmp_value_count);
			fprintf(f, "\n  %s: %s%s (%s)\n", tr->spec_text, vs->expr,
				vs->at_return ? " at return" : "", vs->type.name);
			for (size_t j = 0; j < vs->n && j < VALUE_TOP; j++)
				fprintf(f, "    %-32s %10" PRIu64 "\n", vs->vals[j].text,
					vs->vals[j].count);
			if (vs->n > VALUE_TOP)
				fprintf(f, "    ... %zu more values\n", vs->n - VALUE_TOP);
		}
		if (tr->by_index >= 0) {
			struct by_group *g = NULL;
			int n = read_by_groups(t, tr, &g);
			struct value_stats *vs = &tr->values[tr->by_index];

			qsort(g, n, sizeof(*g), cmp_by_group);
			fprintf(f, "\n  %s latency by %s:\n  %-20s %10s %9s %9s %9s\n",
				tr->spec_text, vs->expr, vs->expr, "calls", "p50", "p95", "p99");
			for (int j = 0; j < n; j++) {
				struct lp_value v = {.u64 = g[j].value};
				char val[64];

				format_value(&vs->type, &v, val, sizeof(val));
				fmt_ns(hist_percentile(g[j].hist, g[j].calls, 50), c[0], 16);
				fmt_ns(hist_percentile(g[j].hist, g[j].calls, 95), c[1], 16);
				fmt_ns(hist_percentile(g[j].hist, g[j].calls, 99), c[2], 16);
				fprintf(f, "  %-20s %10" PRIu64 " %9s %9s %9s\n", val, g[j].calls,
					c[0], c[1], c[2]);
				free(g[j].hist);
			}
			free(g);
		}
	}
}

json_t *traces__json(struct traces *t)
{
	json_t *arr = json_array();

	for (int i = 0; t && i < t->n; i++) {
		struct trace *tr = t->v[i];
		struct trace_summary s, w;
		json_t *o = json_object(), *vals = json_array();

		traces__summary(t, i, false, &s);
		traces__summary(t, i, true, &w);
		json_object_set_new(o, "spec", json_string(tr->spec_text));
		json_object_set_new(o, "function", json_string(tr->info.func));
		json_object_set_new(o, "kind",
				    json_string(tr->info.kind == TRACE_LINE ? "line" : "function"));
		json_object_set_new(o, "binary",
				    json_string(tr->info.binary ? tr->info.binary : ""));
		json_object_set_new(o, "sites", json_integer(tr->info.n_sites));
		json_object_set_new(o, "calls", json_integer(s.calls));
		json_object_set_new(o, "rate", json_real(s.rate));
		if (tr->info.kind == TRACE_FUNC) {
			json_object_set_new(o, "p50_ns", json_integer(s.p50));
			json_object_set_new(o, "p90_ns", json_integer(s.p90));
			json_object_set_new(o, "p95_ns", json_integer(s.p95));
			json_object_set_new(o, "p99_ns", json_integer(s.p99));
			json_object_set_new(o, "p999_ns", json_integer(s.p999));
			json_object_set_new(o, "max_ns", json_integer(s.max));
			json_object_set_new(o, "mean_ns", json_real(s.mean));
			json_object_set_new(
				o, "window",
				json_pack("{s:I,s:I,s:I,s:I}", "calls", (json_int_t)w.calls,
					  "p50_ns", (json_int_t)w.p50, "p95_ns", (json_int_t)w.p95,
					  "p99_ns", (json_int_t)w.p99));
		}
		json_object_set_new(o, "probe_cost_ns", json_integer(tr->info.probe_cost_ns));
		json_object_set_new(o, "overhead_pct", json_real(tr->info.est_overhead_pct));
		json_object_set_new(o, "detached", json_boolean(tr->info.detached));
		for (int k = 0; k < tr->n_values; k++) {
			struct value_stats *vs = &tr->values[k];
			json_t *v = json_object(), *top = json_array();

			if (!vs->n && k == tr->by_index)
				continue;
			qsort(vs->vals, vs->n, sizeof(*vs->vals), cmp_value_count);
			for (size_t j = 0; j < vs->n && j < 64; j++)
				json_array_append_new(
					top, json_pack("{s:s,s:I}", "value", vs->vals[j].text,
						       "count", (json_int_t)vs->vals[j].count));
			json_object_set_new(v, "expr", json_string(vs->expr));
			json_object_set_new(v, "type", json_string(vs->type.name));
			json_object_set_new(v, "at_return", json_boolean(vs->at_return));
			json_object_set_new(v, "faults", json_integer(vs->faults));
			json_object_set_new(v, "top", top);
			json_array_append_new(vals, v);
		}
		json_object_set_new(o, "values", vals);
		if (tr->by_index >= 0) {
			struct by_group *g = NULL;
			int n = read_by_groups(t, tr, &g);
			json_t *by = json_array();

			qsort(g, n, sizeof(*g), cmp_by_group);
			for (int j = 0; j < n; j++) {
				struct lp_value v = {.u64 = g[j].value};
				char val[64];

				format_value(&tr->values[tr->by_index].type, &v, val, sizeof(val));
				json_array_append_new(
					by, json_pack("{s:s,s:I,s:I,s:I,s:I}", "value", val,
						      "calls", (json_int_t)g[j].calls, "p50_ns",
						      (json_int_t)hist_percentile(g[j].hist,
										  g[j].calls, 50),
						      "p95_ns",
						      (json_int_t)hist_percentile(g[j].hist,
										  g[j].calls, 95),
						      "p99_ns",
						      (json_int_t)hist_percentile(g[j].hist,
										  g[j].calls, 99)));
				free(g[j].hist);
			}
			free(g);
			json_object_set_new(o, "by", by);
		}
		json_array_append_new(arr, o);
	}
	return arr;
}

int traces__complete(struct traces *t, const char *prefix, const char **out, int max)
{
	struct elf_symtab *st;
	char exe[64];
	static char *names[256];
	int n = 0;

	if (!t || !t->d->n_procs)
		return 0;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", t->d->procs[0].pid);
	if (elf_symtab__open_path(exe, &st))
		return 0;
	for (int i = 0; i < 256; i++) {
		free(names[i]);
		names[i] = NULL;
	}
	/* elf_symtab loads symbols on the first lookup */
	elf_symtab__lookup(st, 0);
	for (size_t i = 0; i < st->nsyms && n < max && n < 256; i++) {
		if (strncmp(st->syms[i].name, prefix, strlen(prefix)))
			continue;
		names[n] = strdup(st->syms[i].name);
		if (names[n])
			out[n] = names[n], n++;
	}
	elf_symtab__free(st);
	return n;
}
