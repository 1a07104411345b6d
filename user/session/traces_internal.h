/* SPDX-License-Identifier: GPL-2.0 */
/*
 * traces_internal.h - the state shared by the traces_*.c files; not an API.
 */
#ifndef LP_SESSION_TRACES_INTERNAL_H
#define LP_SESSION_TRACES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/liveprof.h"
#include "dwarf/fetch_compile.h"
#include "dwarf/probe_resolve.h"
#include "dwarf/usdt.h"
#include "user/session/probe_cost.h"
#include "user/session/traces.h"

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
	/* vals by text: open addressing, index + 1 (0: empty), valid for
	 * vals[0, indexed); a sort of vals sets indexed to 0 */
	uint32_t *index;
	size_t index_cap, indexed;
};

struct trace {
	struct trace_info info;
	char *spec_text;
	char *func_name;
	char *binary;
	struct probe_spec spec;
	struct usdt_spec *usdt;	   /* a usdt: or rb: spec, NULL otherwise */
	char rb_class[LP_STR_LEN]; /* rb:Class#method: the pair's strings */
	char rb_method[LP_STR_LEN];
	char py_qual[LP_STR_LEN]; /* py:QUALNAME: the qualname */
	char *frame_name;	  /* USDT pair: the function of its entry site (rb: the method) */
	int ids[MAX_IDS_PER_TRACE];
	int n_ids;
	int *links; /* bpf_session attach handles */
	int n_links;
	bool pending; /* its library is not loaded yet */
	/* histogram: previous cumulative snapshot, window slots */
	uint64_t *prev;
	uint64_t *slots; /* n_slots * LP_HIST_BUCKETS */
	uint64_t prev_calls;
	double rate; /* calls/s over the last tick */
	struct value_stats values[LP_MAX_VALUES];
	int n_values; /* entry values + return values */
	int n_entry_values;
	int by_index;		 /* value used for --by, -1 */
	size_t user_args;	 /* values the user asked for (the --by one comes after) */
	int insn_class;		 /* enum probe_insn_class of the (first) site's first instruction */
	bool cost_pending;	 /* its class is new: measure at the next tick */
	struct lp_probe_cfg cfg; /* as configured in BPF (functions) */
	double warned_pct;	 /* cost%% last warned about, 0: never */
	/* calls counted but not timed (too deep): previous total, window slots */
	uint64_t prev_untimed;
	uint64_t *untimed_slots; /* n_slots, allocated at the first tick */
};

#define PY_GAP_TICKS 16

struct traces {
	struct session_core *c; /* shared with the daemon, not owned */
	struct trace **v;
	int n;
	bool id_used[LP_MAX_PROBES];
	int n_slots, cur_slot;
	/* per class of first instruction, measured once; [1]: returns probed
	 * on `ret` instructions (PIC_RET_INSN) */
	struct probe_cost cost[2][PIC_NR];
	bool cost_tried[2][PIC_NR];
	uint64_t last_tick_ns;
	bool rb_noted;		 /* the TracePoint note of rb: traces was printed */
	uint64_t py_hit_ns[2];	 /* py: a start probe hit, a return probe hit, but the programs */
	uint64_t py_consumer_ns; /* py: one more idle program at a hit */
	const struct trace *py_owner; /* py: the trace whose programs do the work */
	/* py: the shortest gap between hits of each kind in the target, per
	 * tick (ring of the latest PY_GAP_TICKS), and their median */
	uint64_t py_gap_ring[2][PY_GAP_TICKS];
	int py_gap_n[2], py_gap_next[2];
	uint64_t py_gap_ns[2];
	/* per file (device, inode): may its code move a stack (traces_stacks.c) */
	struct module_verdict *verdicts;
	size_t n_verdicts, cap_verdicts;
	/* the launched command's listed libraries: 0 not read yet, 1 none
	 * moves a stack, 2 one does, 3 no listing (traces_stacks.c) */
	int command_verdict;
};

struct module_verdict {
	dev_t dev;
	ino_t ino;
	bool unsafe;
};

/* traces_py.c: take the py: probes' gaps seen in the target (each tick) */
void traces_py_tick(struct traces *t);

struct binary_loc {
	char attach_path[4200]; /* what to hand to the uprobe API */
	char mapped_path[4096];
	uint64_t bias;	   /* load bias in the first target */
	bool bias_unknown; /* not mapped yet (traces_needed.c): taken at each hit */
};

struct by_group {
	uint64_t value;
	uint64_t *hist;
	uint64_t calls;
};

/* traces_stacks.c */
/*
 * traces_uretprobe_unsafe - whether @pid may move its stack out from
 * under a return probe on a function of @module (it may throw C++
 * exceptions, or switch coroutines), which would kill it: its returns are
 * then probed on `ret` instructions. True for -a (@pid -1): any process
 * may run the code.
 */
bool traces_uretprobe_unsafe(struct traces *t, int pid, const char *module);

/* traces.c */
void trace_free(struct traces *t, struct trace *tr);
int traces_alloc_id(struct traces *t);

/* traces_attach.c */
int traces_attach_all(struct traces *t, struct trace *tr, char *err, size_t errlen);
int traces_add_link(struct trace *tr, int h);
/*
 * traces_locate_spec - the file of @binary ("" for the main executable,
 * or the command about to be exec'd: *@pre_exec) in @pid
 *
 * Return: 0; -EAGAIN when a named library is not mapped yet (@tr is then
 * pending); other errors with a message in @err.
 */
int traces_locate_spec(struct traces *t, struct trace *tr, int pid, const char *binary,
		       struct binary_loc *loc, bool *pre_exec, char *err, size_t errlen);
/* Resolve @tr's spec for @pid: its binary, or any module for a bare spec
 * (@pt then owned by the caller). -EAGAIN: a library not mapped yet. */
int traces_resolve_in(struct traces *t, struct trace *tr, int pid, struct binary_loc *loc,
		      struct probe_target *pt, char *err, size_t errlen);

/* traces_locate.c */
int traces_locate_binary(int pid, const char *spec_binary, struct binary_loc *loc);
int traces_locate_command(int pid, const char *cmd, struct binary_loc *loc);
/* Whether launched command @pid has not exec'd yet: its exe is liveprof's. */
bool traces_child_before_exec(int pid);
/* The library @spec_binary names among the files launched command @cmd
 * will map (command_libs.h): 0 and @loc, -ENOENT, or -ENOMEM. */
int traces_locate_needed(const char *cmd, const char *spec_binary, struct binary_loc *loc);
void traces_name_binary_in(char *err, size_t errlen, const char *proc_path, const char *path);
/*
 * traces_resolve_bare - a spec that names no binary, in @pid's other modules
 * @main_r: what resolving it in the main executable (@loc, @pt) returned
 *
 * A function is looked for elsewhere only when the main executable lacks
 * it; a line always (code of one source line in two modules is ambiguous).
 * On success @loc and @pt describe the one module that has it (@pt owned by
 * the caller, the main executable's freed); otherwise the message is in
 * @err and @pt is freed.
 */
int traces_resolve_bare(struct trace *tr, int pid, int main_r, struct binary_loc *loc,
			struct probe_target *pt, char *err, size_t errlen);

/* traces_usdt.c */
/* Is @spec a usdt: or rb: spec (traces_usdt.c handles it, not dwarf/'s resolver)? */
bool traces_usdt_is_spec(const char *spec);
/* Parse @spec into @tr->usdt (allocated; rb: fills the libruby pair): 0 or -errno, @err set. */
int traces_usdt_parse(struct trace *tr, const char *spec, char *err, size_t errlen);
/*
 * Find @tr's probe sites in @pid's file, configure them (once) and attach
 * them with their semaphores: 0 (also when the library is not mapped
 * yet: @tr is then pending), or -errno with @err set.
 */
int traces_usdt_attach_in(struct traces *t, struct trace *tr, int pid, char *err, size_t errlen);
/* traces_py.c: py:QUALNAME, a USDT pair to the rest (tr->usdt set) */
bool traces_py_is(const struct trace *tr);
/* Parse "py:QUALNAME" into @tr (tr->usdt allocated already): 0 or -errno, @err set. */
int traces_py_parse(struct trace *tr, const char *spec, char *err, size_t errlen);
/* Attach @tr's probes in @pid (0 while its interpreter is not mapped yet). */
int traces_py_attach_in(struct traces *t, struct trace *tr, int pid, char *err, size_t errlen);
/* Forget @tr's qualname in BPF. */
void traces_py_free(struct traces *t, struct trace *tr);
/* Forget @tr's string filters and what traces_usdt_parse() allocated. */
void traces_usdt_free(struct traces *t, struct trace *tr);

/* traces.c: take @tr's probes off, for good (its counts stay) */
void traces_detach(struct traces *t, struct trace *tr);

/* traces_cost.c */
uint64_t traces_attach_time(const struct traces *t);
/* Whether a probe cost can be measured now: the programs are loaded. */
bool traces_can_measure(const struct traces *t);
int traces_site_class(const char *path, uint64_t offset);
const struct probe_cost *traces_class_cost(struct traces *t, int insn_class, bool measure);

/* The class whose cost @tr's probes pay: its first instruction's, and how
 * its returns are probed. */
static inline int trace_cost_class(const struct trace *tr)
{
	return tr->insn_class | (tr->info.returns_on_ret ? PIC_RET_INSN : 0);
}

/* traces_hist.c */
uint64_t traces_hist_percentile(const uint64_t *h, uint64_t total, double pct);

/* traces_values.c */
void traces_format_value(const struct fetch_type *ty, const struct lp_value *v, char *buf,
			 size_t len);
int traces_read_by_groups(struct traces *t, struct trace *tr, struct by_group **out);

#endif
