/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * liveprof.h - the contract between the BPF programs and the daemon.
 *
 * Only fixed-width fields. Every event starts with struct lp_event_hdr so
 * the daemon can dispatch on ->type before it looks at anything else. New
 * event kinds get a new type; existing layouts only grow at their end.
 */
#ifndef LIVEPROF_H
#define LIVEPROF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "interp_cfg.h"

/*
 * liveprof's capabilities, each loaded on its own (user/session/bpf_caps.h).
 * Also the bits of the test hook refuse_caps (maps.bpf.h).
 */
enum lp_cap {
	LP_CAP_SAMPLING,   /* lp_sample_cpu with frame-pointer stacks */
	LP_CAP_KUNWIND,	   /* lp_sample_cpu walking CFI tables in BPF */
	LP_CAP_INTERP,	   /* lp_sample_cpu reading CPython and CRuby frames */
	LP_CAP_OFFCPU,	   /* lp_sched_switch, lp_sched_waking */
	LP_CAP_TRACING,	   /* function, line and return probes */
	LP_CAP_RET_INSN,   /* return probes on `ret` instructions (Go) */
	LP_CAP_USDT,	   /* USDT pairs */
	LP_CAP_PY_TRACE,   /* py: traces */
	LP_CAP_CAUSAL,	   /* causal profiling's delays */
	LP_CAP_TIMER_COST, /* the timer-interrupt bracket of the sample cost */
	LP_CAP_ALLOC,	   /* --alloc (alloc.bpf.c) */
	LP_CAP_NR,
};

#define LP_MAX_USTACK	   127 /* user frames per sample (perf's default max) */
#define LP_MAX_WSTACK	   48  /* user frames of a waker's stack (struct lp_waker) */
#define LP_MAX_KSTACK	   64  /* kernel frames per sample */
#define LP_MAX_CALLS	   8   /* traced calls in flight tagged on a sample (innermost) */
#define LP_MAX_DEPTH	   128 /* traced calls in flight timed per thread (a power of 2) */
#define LP_MAX_PROBES	   256 /* probe ids are < this */
#define LP_MAX_FETCH_OPS   16  /* ops in one value-fetch program */
#define LP_MAX_VALUES	   6   /* captured values per probe hit */
#define LP_STR_LEN	   32  /* bytes kept of a captured C string */
#define LP_COMM_LEN	   16
#define LP_HIST_BUCKETS	   2048 /* log-linear buckets up to ~68 s, see lp_hist_bucket() */
#define LP_HIST_SUB_BITS   6	/* 64 linear sub-buckets per power of two: <= 1.6% width */
#define LP_UPROBE_TRAMP_LO 0x7fffffffe000ULL /* [uprobes] trampoline page on x86-64 */
#define LP_UPROBE_TRAMP_HI 0x7ffffffff000ULL
#define LP_MAX_STACK_COPY  (64 << 10) /* user stack bytes after a sample, a power of 2 */
#define LP_REDZONE	   128	      /* bytes below sp sent along with a stack copy */
#define LP_CALIB_SLOTS	   1024	      /* timer-interrupt lengths kept by the calibration */
#define LP_MAX_PYFRAMES	   48	      /* interpreter frames per sample (python, ruby.bpf.h) */
#define LP_CAUSAL_MAX_DELAY_NS 1000000ULL /* causal: longest delay of one probe hit */
#define LP_CAUSAL_MAX_RANGES 64 /* causal: address ranges of a line candidate */
#define LP_CAUSAL_MAX_LOOPS    (1u << 20)  /* its wait loop's bound (clock reads) */

/* One calibration sample's timed timer interrupt (cost.bpf.h). */
struct lp_calib_slot {
	__u64 bracket_ns; /* the whole bracket; 0: none recorded */
	__u64 kernel_ns;  /* of it, all but the sampler program's own time */
};

/*
 * Per CPU (pytrace.bpf.h): the shortest gaps seen, since user space last
 * took them, between the end of a py: program's timed run and the start
 * of the next one on the same thread inside traced calls, by the kind of
 * the second hit ([0] a frame start, [1] a return), and how many there
 * were. A gap holds everything of the two hits the programs cannot time
 * (the traps, the other programs, what the interpreter computes for the
 * probe) and the target's own work in between; the shortest is the cost
 * of a hit in this target with the least work beside it.
 */
struct lp_py_gaps {
	__u64 min_ns[2]; /* 0: none seen */
	__u64 n[2];
};
_Static_assert(sizeof(struct lp_py_gaps) == 32, "lp_py_gaps layout");

enum lp_event_type {
	LP_EV_SAMPLE = 1,   /* struct lp_sample: on-CPU tick or off-CPU block */
	LP_EV_CALL_END = 2, /* struct lp_call_end: a sampled traced call returned */
	LP_EV_HIT = 3,	    /* struct lp_hit: a probe hit that captures values */
	LP_EV_ALLOC = 4,    /* struct lp_alloc_event (alloc.h): a sampled allocation or its free */
	LP_EV_WAKER = 5,    /* struct lp_waker: who woke the thread of the off-CPU sample before */
};

/* lp_sample.flags */
#define LP_SF_OFFCPU	   (1u << 0) /* weight_ns is time blocked, stack is where it blocked */
#define LP_SF_USTACK_ERR   (1u << 1) /* bpf_get_stack failed for the user stack */
#define LP_SF_KSTACK	   (1u << 2) /* kstack[] is valid */
#define LP_SF_CALLS_OVFL   (1u << 3) /* more calls were in flight than fit in calls[] */
#define LP_SF_KUNWIND	   (1u << 4) /* ustack[] was walked in BPF with CFI tables (unwind.bpf.h) */
#define LP_SF_UTRUNC	   (1u << 5) /* that walk stopped before the outermost frame */
#define LP_SF_UNKNOWN_MAP  (1u << 6) /* a pc was in no mapping the unwinder knows: rescan maps */
#define LP_SF_INTERP_FAULT (1u << 7) /* a read of the interpreter's frames failed */
#define LP_SF_INTERP_TRUNC (1u << 8) /* more interpreter frames than LP_MAX_PYFRAMES */
#define LP_SF_KMODE	   (1u << 9) /* the tick interrupted kernel code (sampler.bpf.h) */

/* Indices into the per-CPU counter array (map "counters"). */
enum lp_counter {
	LP_CNT_SAMPLES = 0,   /* samples of target threads seen by the sampler */
	LP_CNT_LOST,	      /* events dropped because the ring buffer was full */
	LP_CNT_CALLS_DROPPED, /* calls counted but not timed: deeper than LP_MAX_DEPTH */
	LP_CNT_CALLS_UNWOUND, /* stale frames discarded (longjmp, exceptions) */
	LP_CNT_OFFCPU,	      /* off-CPU events emitted */
	LP_CNT_FETCH_FAULTS,  /* value fetches that faulted */
	LP_CNT_UNWIND_CFI,    /* frames the BPF unwinder stepped with a CFI row */
	LP_CNT_UNWIND_FP,     /* frames it stepped with frame pointers (no usable row) */
	LP_CNT_UNWIND_STOP,   /* walks that stopped early (bad read, no progress, no fix-up) */
	LP_CNT_NR,
};

struct lp_event_hdr {
	__u32 type; /* enum lp_event_type */
	__u32 size; /* bytes of the whole event */
};

/*
 * One traced call that was in flight when a sample was taken. The daemon
 * holds the sample until the call's LP_EV_CALL_END arrives, then files it
 * under the call's latency class. ret_addr/ret_slot let the daemon put back
 * the caller's return address where a pending uretprobe left the
 * trampoline address in an unwound stack.
 */
struct lp_call_tag {
	__u32 probe_id;
	__u32 depth;	/* position in the thread's call stack, 0 = outermost */
	__u64 call_id;	/* unique per call, never 0 */
	__u64 ret_addr; /* the real return address (returns.bpf.h), 0 if unknown */
	__u64 ret_slot; /* user address of the stack slot holding it */
};

/* User registers at the sample, for unwinding the first frame with CFI. */
struct lp_uregs {
	__u64 ip;
	__u64 sp;
	__u64 bp;
};

struct lp_sample {
	struct lp_event_hdr hdr;
	__u32 pid; /* tgid */
	__u32 tid;
	__u32 cpu;
	__u32 flags;	 /* LP_SF_* */
	__u64 time_ns;	 /* bpf_ktime_get_ns() */
	__u64 weight_ns; /* on-CPU: the sampling period; off-CPU: time blocked */
	__u16 n_ustack;	 /* valid entries in ustack[] */
	__u16 n_kstack;	 /* valid entries in kstack[] */
	__u16 n_calls;	 /* valid entries in calls[]: the innermost ones, outermost first */
	__u16 reserved;
	/*
	 * Bytes of user stack copied after this struct, starting at regs.sp
	 * (0: none). When non-zero, the struct is followed by LP_REDZONE
	 * bytes from regs.sp - LP_REDZONE (zeros if unreadable), then by
	 * the stack_len bytes. hdr.size covers both.
	 */
	__u32 stack_len;
	char comm[LP_COMM_LEN];
	__u32 pad; /* explicit, so regs is 8-byte aligned the same on both sides */
	struct lp_uregs regs;
	struct lp_call_tag calls[LP_MAX_CALLS];
	__u64 ustack[LP_MAX_USTACK];
	__u64 kstack[LP_MAX_KSTACK];
	__u16 n_interp; /* valid entries in interp[] */
	__u16 pad2[3];
	struct lp_interp_frame interp[LP_MAX_PYFRAMES];
};

/*
 * Unwind tables for the BPF unwinder (bpf/unwind.bpf.h), built in user
 * space from CFI (dwarf/cfi_table.h) and loaded per module. Rows of every
 * module are concatenated in the array map "unwind_rows"; module i's are
 * unwind_tables[i] = {first_row, n_rows}, sorted by pc, row j covering
 * [pc_j, pc_j+1). pc is an ELF virtual address of the module (a pc in
 * the process minus the mapping's bias).
 */
enum lp_cfa_rule {
	LP_CFA_NONE = 0,  /* no CFI here: frame pointers */
	LP_CFA_RSP,	  /* CFA = rsp + cfa_off */
	LP_CFA_RBP,	  /* CFA = rbp + cfa_off */
	LP_CFA_DEREF_RBP, /* CFA = *(rbp + cfa_off) */
	LP_CFA_PLT,	  /* CFA = rsp + cfa_off (+ 8 if (pc & 15) >= rbp_off) */
	LP_CFA_SIGNAL, /* sigreturn frame: sp, pc, rbp saved at rsp + cfa_off, +8, rsp + rbp_off */
	LP_CFA_END,    /* outermost frame: the walk ends here, cleanly */
	LP_CFA_FALLBACK, /* CFI the unwinder cannot apply: frame pointers */
};

enum lp_rbp_rule {
	LP_RBP_SAME = 0, /* caller's rbp = rbp */
	LP_RBP_AT_CFA,	 /* caller's rbp = *(CFA + rbp_off) */
	LP_RBP_UNDEF,	 /* unknown in the caller */
};

struct lp_unwind_row {
	__u32 pc;
	__s32 cfa_off;
	__s16 rbp_off;
	__u8 cfa_rule; /* enum lp_cfa_rule */
	__u8 rbp_rule; /* enum lp_rbp_rule */
};

/*
 * Array map values are padded to 8 bytes, so the rows map holds blocks of
 * 4 rows (48 bytes): row k is block k / 4, entry k % 4, and the mmap'ed
 * map is one dense array of rows.
 */
#define LP_UNWIND_ROWS_PER_BLOCK 4
struct lp_unwind_rows4 {
	struct lp_unwind_row r[LP_UNWIND_ROWS_PER_BLOCK];
};

struct lp_unwind_table {
	__u32 first_row; /* index in unwind_rows */
	__u32 n_rows;
};

#define LP_UNWIND_MAX_MAPS 256	       /* executable mappings per process, a power of 2 */
#define LP_UNWIND_NO_TABLE 0xffffffffu /* mapping without a table: frame pointers */

/* One executable mapping of a process: [start, end), pc - bias = ELF vaddr. */
struct lp_unwind_map {
	__u64 start;
	__u64 end;
	__u64 bias;
	__u32 table_id; /* index in unwind_tables, or LP_UNWIND_NO_TABLE */
	__u32 reserved;
};

/* Map "unwind_procs", key tgid: its executable mappings sorted by start. */
struct lp_unwind_proc {
	__u32 n_maps;
	__u32 reserved;
	struct lp_unwind_map maps[LP_UNWIND_MAX_MAPS];
};

/* Sent at return only for calls that had a sample taken inside them. */
struct lp_call_end {
	struct lp_event_hdr hdr;
	__u32 pid;
	__u32 tid;
	__u32 probe_id;
	__u32 flags; /* LP_CF_* */
	__u64 call_id;
	__u64 start_ns;
	__u64 latency_ns;
	__u64 by_value; /* the --by value captured at entry, if any */
	/*
	 * What samples and nested traced calls' probes cost this call,
	 * already subtracted from latency_ns (unless raw latency was asked
	 * for, then 0 was subtracted and this says what would have been).
	 */
	__u64 overhead_ns;
};

/*
 * Sent right after the off-CPU sample of a thread that another thread of
 * its process woke from a futex wait (a mutex's holder releasing it, a
 * condition variable's signal): the waker's user stack at the futex call,
 * i.e. where the lock was released. time_ns is the sample's, to pair them.
 */
struct lp_waker {
	struct lp_event_hdr hdr;
	__u32 pid; /* the woken thread's tgid, also the waker's */
	__u32 tid; /* the woken thread */
	__u32 waker_tid;
	__u32 n_ustack;
	__u64 time_ns;
	__u64 ustack[LP_MAX_WSTACK]; /* leaf first */
};

#define LP_CF_LINE_HIT (1u << 0) /* the --when line was hit during the call */
#define LP_CF_HAS_BY   (1u << 1)

/*
 * Value fetch programs. A captured value is computed by a few ops that
 * the generic interpreter in BPF runs in a bounded loop. Computed in user
 * space from DWARF location expressions; no compiler at run time.
 */
enum lp_fetch_opcode {
	LP_OP_END = 0,
	LP_OP_REG,    /* acc = regs[arg]            (DWARF register number) */
	LP_OP_ADD,    /* acc += (s64)arg                                    */
	LP_OP_DEREF,  /* acc = *(u64 *)acc  (user memory)                   */
	LP_OP_ADDR,   /* acc = arg + load bias of the probed module         */
	LP_OP_CFA,    /* acc = CFA at the probe (sp + arg)                  */
	LP_OP_LOAD,   /* value = read `size` bytes at acc (final)          */
	LP_OP_STR,    /* value = C string at acc (final, LP_STR_LEN)        */
	LP_OP_RETVAL, /* acc = return value register (uretprobe only)       */
};

struct lp_fetch_op {
	__u8 op;   /* enum lp_fetch_opcode */
	__u8 size; /* LOAD: 1, 2, 4 or 8 */
	__u16 reg; /* REG: DWARF register number */
	__u32 reserved;
	__s64 arg;
};

struct lp_fetch_prog {
	__u32 n_ops;
	__u32 is_signed;
	struct lp_fetch_op ops[LP_MAX_FETCH_OPS];
};

/* Per-probe configuration, in map "probes" indexed by probe id. */
struct lp_probe_cfg {
	__u32 kind;	    /* LP_PK_* */
	__u32 flags;	    /* LP_PCF_* */
	__u32 n_values;	    /* entry fetch programs, in "fetch" at probe_id * LP_MAX_VALUES */
	__s32 by_index;	    /* entry value index grouped by --by, -1 for none */
	__u32 when_of;	    /* with LP_PCF_WHEN: mark in-flight calls of this probe LINE_HIT */
	__u32 n_ret_values; /* fetch programs run at return, after the entry ones */
	__u64 module_bias;  /* load bias of the probed module in the target */
	/*
	 * Calibrated probe costs of this site (0 if unknown): cost_ns is what
	 * one entry+return pair adds to the calls around it, self_ns the part
	 * of it that falls inside the call's own measured latency.
	 */
	__u64 cost_ns;
	__u64 self_ns;
	/*
	 * A USDT site (usdt.bpf.h): the probe id its calls are timed and
	 * paired under (the trace's first id). Its own id holds its fetch
	 * programs, as each site of one USDT probe names its arguments its
	 * own way.
	 */
	__u32 pair_id;
	__u32 reserved;
	/*
	 * A USDT site, or the entry of a function in a file not mapped yet:
	 * its link-time address. The module's load bias is then the hit's ip
	 * minus this, known at every hit: module_bias is not known when a
	 * launched command is probed before its exec.
	 */
	__u64 site_vaddr;
};

#define LP_PCF_EMIT_VALUES (1u << 0) /* send an LP_EV_HIT with the values of every hit */
#define LP_PCF_WHEN	   (1u << 1) /* a --when line: when_of names the split function */
#define LP_PCF_STR_MATCH   (1u << 2) /* USDT pair: fire only for the strings of fetch 0, 1 */
/* a function of a program's own file, never of a library: its address is
 * its own until the process execs (tracer.bpf.h, entry_probe_id) */
#define LP_PCF_IN_PROGRAM (1u << 3)

/*
 * Key of map "str_match": a USDT pair with LP_PCF_STR_MATCH times a hit
 * only if the C strings its fetch programs 0 and 1 read (zero-padded,
 * LP_STR_LEN - 2 bytes at most) are a key with its probe id: Ruby's
 * method__entry/return carry the class and the method name.
 */
struct lp_str_key {
	__u32 probe_id;
	__u32 pad;
	char a[LP_STR_LEN];
	char b[LP_STR_LEN];
};

/*
 * Per probe, in the mmap'ed array map "probe_stats": line probes count
 * their hits here; functions keep their count in the histogram and only
 * the exact maximum latency here.
 */
struct lp_probe_stats {
	__u64 calls;
	__u64 max_ns;
	__u64 untimed; /* functions: calls counted but not timed (too deep) */
	__u64 reserved;
};

enum lp_probe_kind {
	LP_PK_NONE = 0,
	LP_PK_FUNC, /* entry + return: latency */
	LP_PK_LINE, /* hit counter (and values) */
};

struct lp_value {
	__u64 u64;
	char str[LP_STR_LEN];
};

/* A probe hit that captured values (line probes, functions with args). */
struct lp_hit {
	struct lp_event_hdr hdr;
	__u32 pid;
	__u32 tid;
	__u32 probe_id;
	__u32 n_values;
	__u64 time_ns;
	__u64 call_id;	 /* the traced call (entry or return), 0 for line hits */
	__u32 at_return; /* values fetched at return (ret) */
	__u32 reserved;
	__u64 fault_mask; /* bit i set: value i could not be read */
	struct lp_value values[LP_MAX_VALUES];
};

/* Key of map "by_hist": calls of probe_id with value and latency bucket (--by). */
struct lp_by_key {
	__u32 probe_id;
	__u32 bucket;
	__u64 value;
};

/* Bucket of a latency in ns: exact below 64 ns, 64 sub-buckets per octave above. */
static inline __u32 lp_hist_bucket(__u64 v)
{
	__u32 msb = 0;
	__u64 t = v;

	if (v < (1ULL << LP_HIST_SUB_BITS))
		return (__u32)v;
	/* 64 - clz, written so the BPF backend needs no builtin */
	if (t >> 32) {
		msb += 32;
		t >>= 32;
	}
	if (t >> 16) {
		msb += 16;
		t >>= 16;
	}
	if (t >> 8) {
		msb += 8;
		t >>= 8;
	}
	if (t >> 4) {
		msb += 4;
		t >>= 4;
	}
	if (t >> 2) {
		msb += 2;
		t >>= 2;
	}
	if (t >> 1) {
		msb += 1;
	}
	{
		__u32 shift = msb - LP_HIST_SUB_BITS;
		__u32 sub = (__u32)(v >> shift) & ((1u << LP_HIST_SUB_BITS) - 1);
		__u32 b = ((shift + 1) << LP_HIST_SUB_BITS) + sub;

		return b < LP_HIST_BUCKETS ? b : LP_HIST_BUCKETS - 1;
	}
}

/*
 * The layouts both compilers must agree on (clang -target bpf and gcc):
 * a change that moves a field fails the build on both sides.
 */
#define LP_ASSERT_SIZE(t, n) _Static_assert(sizeof(t) == (n), "size of " #t)
#define LP_ASSERT_AT(t, f, n)                                                                      \
	_Static_assert(__builtin_offsetof(t, f) == (n), "offset of " #t "." #f)
LP_ASSERT_SIZE(struct lp_event_hdr, 8);
LP_ASSERT_SIZE(struct lp_call_tag, 32);
LP_ASSERT_SIZE(struct lp_uregs, 24);
LP_ASSERT_AT(struct lp_sample, time_ns, 24);
LP_ASSERT_AT(struct lp_sample, n_ustack, 40);
LP_ASSERT_AT(struct lp_sample, stack_len, 48);
LP_ASSERT_AT(struct lp_sample, comm, 52);
LP_ASSERT_AT(struct lp_sample, regs, 72);
LP_ASSERT_AT(struct lp_sample, ustack, 96 + 32 * LP_MAX_CALLS);
LP_ASSERT_AT(struct lp_sample, interp,
	     96 + 32 * LP_MAX_CALLS + 8 * (LP_MAX_USTACK + LP_MAX_KSTACK) + 8);
LP_ASSERT_SIZE(struct lp_interp_frame, 24);
LP_ASSERT_SIZE(struct lp_py_cfg, 56);
LP_ASSERT_SIZE(struct lp_rb_cfg, 40);
LP_ASSERT_SIZE(struct lp_call_end, 64);
LP_ASSERT_SIZE(struct lp_fetch_op, 16);
LP_ASSERT_SIZE(struct lp_fetch_prog, 8 + 16 * LP_MAX_FETCH_OPS);
LP_ASSERT_SIZE(struct lp_probe_cfg, 64);
LP_ASSERT_SIZE(struct lp_probe_stats, 32);
LP_ASSERT_SIZE(struct lp_value, 8 + LP_STR_LEN);
LP_ASSERT_AT(struct lp_hit, values, 56);
LP_ASSERT_SIZE(struct lp_by_key, 16);
LP_ASSERT_SIZE(struct lp_str_key, 8 + 2 * LP_STR_LEN);
_Static_assert((LP_MAX_DEPTH & (LP_MAX_DEPTH - 1)) == 0, "LP_MAX_DEPTH is a power of 2");
LP_ASSERT_SIZE(struct lp_unwind_row, 12);
LP_ASSERT_SIZE(struct lp_unwind_rows4, 48);
LP_ASSERT_SIZE(struct lp_unwind_table, 8);
LP_ASSERT_SIZE(struct lp_unwind_map, 32);
LP_ASSERT_AT(struct lp_unwind_proc, maps, 8);
_Static_assert((LP_UNWIND_MAX_MAPS & (LP_UNWIND_MAX_MAPS - 1)) == 0, "a power of 2");

#endif /* LIVEPROF_H */
