// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_caps.c - liveprof's capabilities and the kernel: the programs each
 * needs, the reason a kernel refused one, and `liveprof --check`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <bpf/libbpf.h>

#include "user/session/bpf_caps.h"
#include "user/session/bpf_session.h"
#include "user/session/uprobe_multi.h"
#include "user/util/util.h"
#include "liveprof.skel.h"
#include "alloc.skel.h"

static const struct {
	const char *key;  /* LIVEPROF_TEST_REFUSE's name for it */
	const char *name; /* the user's */
} caps[LP_CAP_NR] = {
	[LP_CAP_SAMPLING] = {"sampling", "sampling (frame-pointer stacks)"},
	[LP_CAP_KUNWIND] = {"kunwind", "stacks unwound in the kernel (--call-graph dwarf)"},
	[LP_CAP_INTERP] = {"interp", "Python and Ruby frames"},
	[LP_CAP_OFFCPU] = {"offcpu", "off-CPU profiling (--offcpu)"},
	[LP_CAP_TRACING] = {"tracing", "function and line tracing (--trace, --split)"},
	[LP_CAP_RET_INSN] = {"retinsn", "return probes on ret instructions (Go targets)"},
	[LP_CAP_USDT] = {"usdt", "USDT tracing (--trace usdt:)"},
	[LP_CAP_PY_TRACE] = {"pytrace", "Python function tracing (--trace py:)"},
	[LP_CAP_CAUSAL] = {"causal", "causal profiling (liveprof causal)"},
	[LP_CAP_TIMER_COST] = {"timercost", "timer-interrupt cost bracket"},
	[LP_CAP_ALLOC] = {"alloc", "allocation profiling (--alloc)"},
};

/* Each program of liveprof.bpf.c and the capability it serves. */
static const struct {
	const char *prog;
	enum lp_cap cap;
} prog_caps[] = {
	{"lp_sample_cpu", LP_CAP_SAMPLING},	{"lp_sched_switch", LP_CAP_OFFCPU},
	{"lp_sched_waking", LP_CAP_OFFCPU},	{"lp_func_entry", LP_CAP_TRACING},
	{"lp_func_return", LP_CAP_TRACING},	{"lp_line_hit", LP_CAP_TRACING},
	{"lp_func_ret_insn", LP_CAP_RET_INSN},	{"lp_usdt_entry", LP_CAP_USDT},
	{"lp_usdt_return", LP_CAP_USDT},	{"lp_py_start", LP_CAP_PY_TRACE},
	{"lp_py_return", LP_CAP_PY_TRACE},	{"lp_py_yield", LP_CAP_PY_TRACE},
	{"lp_causal_tick", LP_CAP_CAUSAL},	{"lp_timer_entry", LP_CAP_TIMER_COST},
	{"lp_timer_exit", LP_CAP_TIMER_COST},
};

const char *lp_cap_name(enum lp_cap c)
{
	return c < LP_CAP_NR ? caps[c].name : "?";
}

enum lp_cap lp_cap_of_prog(const char *prog_name)
{
	for (size_t i = 0; i < sizeof(prog_caps) / sizeof(prog_caps[0]); i++)
		if (!strcmp(prog_caps[i].prog, prog_name))
			return prog_caps[i].cap;
	return LP_CAP_NR;
}

unsigned int lp_cap_test_mask(void)
{
	const char *env = getenv("LIVEPROF_TEST_REFUSE");
	unsigned int mask = 0;

	for (const char *p = env; p && *p; p += strcspn(p, ","), p += *p == ',') {
		size_t n = strcspn(p, ",");

		for (int c = 0; c < LP_CAP_NR; c++)
			if (strlen(caps[c].key) == n && !strncmp(p, caps[c].key, n))
				mask |= 1u << c;
	}
	return mask;
}

static __thread struct lp_load_failure last_failure;
static __thread bool have_failure;

/*
 * The verifier's reason in @log: its last line before the statistics
 * ("processed N insns"), which is the first error it met (it stops there).
 */
static void reason_from_log(const char *log, char *out, size_t size)
{
	const char *end = strstr(log, "\nprocessed ");
	const char *stop = end ? end : log + strlen(log);
	const char *line = stop;

	while (line > log && line[-1] == '\n')
		line--;
	stop = line;
	while (line > log && line[-1] != '\n')
		line--;
	snprintf(out, size, "%.*s", (int)(stop - line), line);
}

void lp_load_failure_note(const char *msg)
{
	const char *p = strstr(msg, "prog '");
	const char *log = strstr(msg, "-- BEGIN PROG LOAD LOG --\n");

	/* libbpf warns "load failed: <errno>", then prints the log, then
	 * "failed to load": the reason comes first */
	if (log) {
		reason_from_log(log + strlen("-- BEGIN PROG LOAD LOG --\n"), last_failure.reason,
				sizeof(last_failure.reason));
		return;
	}
	if (!p)
		return;
	p += strlen("prog '");
	if (strstr(msg, "BPF program load failed: ")) {
		snprintf(last_failure.reason, sizeof(last_failure.reason), "%s",
			 strstr(msg, "load failed: ") + strlen("load failed: "));
		last_failure.reason[strcspn(last_failure.reason, "\n")] = 0;
	} else if (strstr(msg, "': failed to load")) {
		snprintf(last_failure.prog, sizeof(last_failure.prog), "%.*s",
			 (int)strcspn(p, "'"), p);
		have_failure = true;
	}
}

bool lp_load_failure_take(struct lp_load_failure *out)
{
	if (!have_failure)
		return false;
	*out = last_failure;
	if (!out->reason[0])
		snprintf(out->reason, sizeof(out->reason), "refused by the verifier");
	memset(&last_failure, 0, sizeof(last_failure));
	have_failure = false;
	return true;
}

/* One capability's programs and the constants that make the verifier see them. */
struct cap_check {
	enum lp_cap cap;
	const char *progs[3];
	bool kernel_unwind, interp_frames;
};

static const struct cap_check checks[] = {
	{LP_CAP_SAMPLING, {"lp_sample_cpu"}, false, false},
	{LP_CAP_KUNWIND, {"lp_sample_cpu"}, true, false},
	{LP_CAP_INTERP, {"lp_sample_cpu"}, true, true},
	{LP_CAP_OFFCPU, {"lp_sched_switch", "lp_sched_waking"}, true, true},
	{LP_CAP_TRACING, {"lp_func_entry", "lp_func_return", "lp_line_hit"}, true, false},
	{LP_CAP_RET_INSN, {"lp_func_ret_insn"}, true, false},
	{LP_CAP_USDT, {"lp_usdt_entry", "lp_usdt_return"}, true, false},
	{LP_CAP_PY_TRACE, {"lp_py_start", "lp_py_return", "lp_py_yield"}, true, false},
	{LP_CAP_CAUSAL, {"lp_causal_tick"}, true, false},
	{LP_CAP_TIMER_COST, {"lp_timer_entry", "lp_timer_exit"}, true, false},
};

#define CHECK_LOG_SIZE (1 << 16)

/* What one load of a capability's programs found. */
struct cap_result {
	bool ok;
	char reason[336];
	char stats[3][96]; /* per program: insns processed, stack depth */
	double ms;
};

/* The verifier's statistics in @log: "N insns, stack A+B+C". */
static void stats_from_log(const char *log, char *out, size_t size)
{
	const char *p = strstr(log, "processed ");
	const char *d = strstr(log, "stack depth ");
	unsigned long insns = 0;

	if (p)
		insns = strtoul(p + strlen("processed "), NULL, 10);
	snprintf(out, size, "%lu insns, stack %.*s", insns, d ? (int)strcspn(d + 12, "\n") : 1,
		 d ? d + 12 : "?");
}

/* Open liveprof.bpf.c with only @c's programs, its constants set. */
static struct liveprof_bpf *open_for(const struct cap_check *c, bool stats, char logs[][CHECK_LOG_SIZE])
{
	struct liveprof_bpf *k = liveprof_bpf__open();
	struct bpf_program *p;

	if (!k)
		return NULL;
	bpf_object__for_each_program (p, k->obj) {
		bool mine = false;

		for (int i = 0; i < 3 && c->progs[i]; i++) {
			if (strcmp(bpf_program__name(p), c->progs[i]))
				continue;
			mine = true;
			if (stats) {
				bpf_program__set_log_level(p, 4);
				bpf_program__set_log_buf(p, logs[i], CHECK_LOG_SIZE);
			}
			/* as bpf_session_choose_uprobe_kind() loads them */
			if ((c->cap == LP_CAP_TRACING || c->cap == LP_CAP_RET_INSN) &&
			    uprobe_multi_supported())
				bpf_program__set_expected_attach_type(p, LP_ATTACH_UPROBE_MULTI);
		}
		bpf_program__set_autoload(p, mine);
	}
	k->rodata->offcpu_enabled = true;
	k->rodata->kernel_unwind = c->kernel_unwind;
	k->rodata->interp_frames = c->interp_frames;
	k->rodata->uprobes_possible = true;
	k->rodata->rescue_copy_bytes = c->kernel_unwind ? 4096 : 0;
	k->rodata->max_frames = LP_MAX_USTACK;
	k->rodata->refuse_caps = lp_cap_test_mask();
	/* the smallest maps that still load: only the verifier is asked */
	bpf_map__set_max_entries(k->maps.unwind_rows, 1);
	bpf_map__set_max_entries(k->maps.events, 1 << 20);
	return k;
}

static void check_one(const struct cap_check *c, struct cap_result *r)
{
	static char logs[3][CHECK_LOG_SIZE];
	struct lp_load_failure f;
	struct liveprof_bpf *k;
	uint64_t t0 = lp_now_ns();

	memset(r, 0, sizeof(*r));
	memset(logs, 0, sizeof(logs));
	k = open_for(c, true, logs);
	r->ok = k && !liveprof_bpf__load(k);
	r->ms = (lp_now_ns() - t0) / 1e6;
	liveprof_bpf__destroy(k);
	if (r->ok) {
		for (int i = 0; i < 3 && c->progs[i]; i++)
			stats_from_log(logs[i], r->stats[i], sizeof(r->stats[i]));
		return;
	}
	/* again without a log of ours, so that libbpf asks for the verifier's
	 * whole log and its last line gives the reason */
	lp_load_failure_take(&f);
	k = open_for(c, false, NULL);
	if (k && liveprof_bpf__load(k) && lp_load_failure_take(&f))
		snprintf(r->reason, sizeof(r->reason), "%s: %s", f.prog, f.reason);
	else
		snprintf(r->reason, sizeof(r->reason), "%s", k ? "refused" : strerror(errno));
	liveprof_bpf__destroy(k);
}

static void check_alloc(struct cap_result *r)
{
	struct alloc_bpf *a = alloc_bpf__open();
	struct lp_load_failure f;
	uint64_t t0 = lp_now_ns();

	memset(r, 0, sizeof(*r));
	r->ok = a && !alloc_bpf__load(a);
	r->ms = (lp_now_ns() - t0) / 1e6;
	if (!r->ok && lp_load_failure_take(&f))
		snprintf(r->reason, sizeof(r->reason), "%s: %s", f.prog, f.reason);
	else if (!r->ok)
		snprintf(r->reason, sizeof(r->reason), "%s", a ? "refused" : strerror(errno));
	alloc_bpf__destroy(a);
}

int lp_check_kernel(FILE *out, bool verbose)
{
	struct cap_result r;
	struct utsname u;
	bool sampling = false;

	bpf_session__log_init(false);
	uname(&u);
	fprintf(out, "kernel %s %s\n", u.release, u.version);
	fprintf(out, "  %-52s %s\n", "BTF (/sys/kernel/btf/vmlinux)",
		access("/sys/kernel/btf/vmlinux", R_OK) ? "no: liveprof needs CONFIG_DEBUG_INFO_BTF"
							: "yes");
	fprintf(out, "  %-52s %s\n", "uprobe_multi links (6.6)",
		uprobe_multi_supported() ? "yes" : "no: one link per probe instead");
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		const struct cap_check *c = &checks[i];

		check_one(c, &r);
		if (c->cap == LP_CAP_SAMPLING)
			sampling = r.ok;
		fprintf(out, "  %-52s %s%s", lp_cap_name(c->cap), r.ok ? "yes" : "no: ",
			r.ok ? "" : r.reason);
		if (verbose && r.ok)
			fprintf(out, "  (%.0f ms)", r.ms);
		fputc('\n', out);
		for (int p = 0; verbose && r.ok && p < 3 && c->progs[p]; p++)
			fprintf(out, "      %-20s %s\n", c->progs[p], r.stats[p]);
	}
	check_alloc(&r);
	fprintf(out, "  %-52s %s%s\n", lp_cap_name(LP_CAP_ALLOC), r.ok ? "yes" : "no: ",
		r.ok ? "" : r.reason);
	return sampling ? 0 : 5;
}
