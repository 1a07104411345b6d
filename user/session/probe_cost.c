// SPDX-License-Identifier: GPL-2.0
/*
 * probe_cost.c - calibrate the cost of a function probe (uprobe at the
 * entry + uretprobe) per class of first instruction, on this machine,
 * and of a USDT pair (two uprobes on nops).
 *
 * Each class has a stub in liveprof's own text that starts with the
 * class's instruction and does almost nothing else. liveprof probes its
 * own stub with the same BPF programs as a target's function and times
 * it: the difference is what a traced call of that class pays. The cost
 * differs by an order of magnitude between the instructions the kernel
 * emulates (pushes) and the ones it single-steps out of line, so a guess
 * from one class is wrong for the others.
 *
 * The stubs run in a child forked for the measurement, not in liveprof.
 * Measured in liveprof while its other threads were changing its address
 * space (loading the unwinder's tables), a single-step was 30-40% dearer
 * (12.2-12.6 us) than in the target (9.0-9.2 us) in 3 runs of 8, and
 * right in 8 of 8 without those tables; the kernel's lookup of the probe
 * at a hit likely falls back to locking an address space that changes.
 * The child has an address space of its own.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bpf/liveprof.h"
#include "dwarf/probe_resolve.h"
#include "dwarf/proc_maps.h"
#include "user/session/bpf_session.h"
#include "user/session/probe_cost.h"
#include "user/session/traces.h"
#include "user/util/util.h"

#define BATCH	 40 /* calls per timed batch: ~0.1-0.5 ms */
#define N_BATCH	 10 /* batches per round */
#define ROUNDS	 4  /* each class's cost is the least of its rounds' */
#define STUB_ARG 7

/* The stubs: the class's instruction first, then undo it and return. */
long lp_stub_push_rbp(long x);
long lp_stub_push_rbx(long x);
long lp_stub_push_r12(long x);
long lp_stub_push_r13(long x);
long lp_stub_push_r14(long x);
long lp_stub_push_r15(long x);
long lp_stub_endbr64(long x);
long lp_stub_sub_rsp(long x);
long lp_stub_stepped(long x);
long lp_stub_usdt(long x);

#define LP_STUB_PUSH(reg)                                                                          \
	".globl lp_stub_push_" #reg "\n.hidden lp_stub_push_" #reg "\n.type lp_stub_push_" #reg    \
	",@function\nlp_stub_push_" #reg ":\n\tpush %" #reg "\n\tlea 1(%rdi),%rax\n\tpop %" #reg   \
	"\n\tret\n.size lp_stub_push_" #reg ",.-lp_stub_push_" #reg "\n"

__asm__(".text\n" LP_STUB_PUSH(rbp) LP_STUB_PUSH(rbx) LP_STUB_PUSH(r12) LP_STUB_PUSH(r13)
		LP_STUB_PUSH(r14) LP_STUB_PUSH(
			r15) ".globl lp_stub_endbr64\n.hidden lp_stub_endbr64\n.type "
			     "lp_stub_endbr64,@function\n"
			     "lp_stub_endbr64:\n\t.byte 0xf3,0x0f,0x1e,0xfa\n\tlea "
			     "1(%rdi),%rax\n\tret\n"
			     ".size lp_stub_endbr64,.-lp_stub_endbr64\n"
			     ".globl lp_stub_sub_rsp\n.hidden lp_stub_sub_rsp\n.type "
			     "lp_stub_sub_rsp,@function\n"
			     "lp_stub_sub_rsp:\n\tsub $8,%rsp\n\tlea 1(%rdi),%rax\n\tadd "
			     "$8,%rsp\n\tret\n"
			     ".size lp_stub_sub_rsp,.-lp_stub_sub_rsp\n"
			     ".globl lp_stub_stepped\n.hidden lp_stub_stepped\n.type "
			     "lp_stub_stepped,@function\n"
			     "lp_stub_stepped:\n\tlea 1(%rdi),%rax\n\tnop\n\tnop\n\tret\n"
			     ".size lp_stub_stepped,.-lp_stub_stepped\n"
			     /* a USDT pair's two nops around the work, as <sys/sdt.h> makes them */
			     ".globl lp_stub_usdt\n.hidden lp_stub_usdt\n.type "
			     "lp_stub_usdt,@function\n"
			     "lp_stub_usdt:\n\tnop\n\tlea 1(%rdi),%rax\n\tnop\n\tret\n"
			     ".size lp_stub_usdt,.-lp_stub_usdt\n");

static const struct {
	const char *name;
	long (*stub)(long);
} classes[PIC_NR] = {
	[PIC_PUSH_RBP] = {"push %rbp", lp_stub_push_rbp},
	[PIC_PUSH_RBX] = {"push %rbx", lp_stub_push_rbx},
	[PIC_PUSH_R12] = {"push %r12", lp_stub_push_r12},
	[PIC_PUSH_R13] = {"push %r13", lp_stub_push_r13},
	[PIC_PUSH_R14] = {"push %r14", lp_stub_push_r14},
	[PIC_PUSH_R15] = {"push %r15", lp_stub_push_r15},
	[PIC_PUSH_OTHER] = {"push (other register)", lp_stub_push_rbx},
	[PIC_ENDBR64] = {"endbr64", lp_stub_endbr64},
	[PIC_SUB_RSP] = {"sub $imm,%rsp (single-stepped)", lp_stub_sub_rsp},
	[PIC_STEPPED] = {"single-stepped", lp_stub_stepped},
	[PIC_USDT_PAIR] = {"usdt nop pair", lp_stub_usdt},
	/* lp_stub_stepped: its lea (stepped, like resume_frame's mov), then a nop */
	[PIC_PY_PAIR] = {"py start + usdt return", lp_stub_stepped},
	/* the py: programs themselves on lp_stub_usdt's nops, with a cookie
	 * that owns no py: trace: they return at once, so this is two traps
	 * and emulations, the hits' cost but for the programs' own run,
	 * which BPF times per hit (pytrace.bpf.h) */
	[PIC_PY_TRAPS] = {"py traps", lp_stub_usdt},
	/* the same, twice: each further py: trace's idle programs */
	[PIC_PY_TRAPS2] = {"py traps, two programs each", lp_stub_usdt},
};

#define PY_IDLE_COOKIE 0xffffffffu /* no py: trace's id: its programs stay idle */

#define USDT_STUB_RETURN 5 /* lp_stub_usdt's second nop: after nop (1), lea (4) */
#define PY_STUB_RETURN	 4 /* lp_stub_stepped's first nop: after lea (4) */

enum probe_insn_class probe_insn_classify(const uint8_t *b, size_t n)
{
	if (n >= 1 && b[0] == 0x55)
		return PIC_PUSH_RBP;
	if (n >= 1 && b[0] == 0x53)
		return PIC_PUSH_RBX;
	if (n >= 1 && b[0] >= 0x50 && b[0] <= 0x57)
		return PIC_PUSH_OTHER;
	if (n >= 2 && b[0] == 0x41 && b[1] >= 0x50 && b[1] <= 0x57)
		return b[1] >= 0x54 ? PIC_PUSH_R12 + (b[1] - 0x54) : PIC_PUSH_OTHER;
	if (n >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
		return PIC_ENDBR64;
	/* REX.W 83 /5 ib or 81 /5 id with modrm 0xec: sub $imm,%rsp */
	if (n >= 3 && b[0] == 0x48 && (b[1] == 0x83 || b[1] == 0x81) && b[2] == 0xec)
		return PIC_SUB_RSP;
	return PIC_STEPPED;
}

const char *probe_insn_class_name(enum probe_insn_class c)
{
	return c < PIC_NR ? classes[c].name : "unknown";
}

/* The times of N_BATCH batches of BATCH calls of @fn into @t, in ns. */
static void time_batches(long (*fn)(long), uint64_t *t)
{
	static volatile long sink;

	for (int b = 0; b < N_BATCH; b++) {
		uint64_t t0 = lp_now_ns();

		for (int i = 0; i < BATCH; i++)
			sink += fn(STUB_ARG + i);
		t[b] = lp_now_ns() - t0;
	}
}

/*
 * The process that calls a stub: a child that times a round of batches
 * for each byte it reads and writes the times back, or liveprof itself
 * (pid 0 here) if no child could be made.
 */
struct stub_runner {
	pid_t pid;
	int sock; /* liveprof's end of a socket pair with the child */
	long (*fn)(long);
};

/* The child: only system calls, the stub and the clock (forked from a
 * process with threads, it may take no lock another thread held). */
static void __attribute__((noreturn)) runner_child(int sock, long (*fn)(long))
{
	uint64_t t[N_BATCH];
	char c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	while (read(sock, &c, 1) == 1) {
		time_batches(fn, t);
		if (write(sock, t, sizeof(t)) != (ssize_t)sizeof(t))
			break;
	}
	_exit(0);
}

static void runner_start(struct stub_runner *r, long (*fn)(long))
{
	int sv[2];

	*r = (struct stub_runner){.fn = fn, .sock = -1};
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return;
	r->pid = fork();
	if (r->pid == 0) {
		/* the parent's end closed here too, so that its close is the
		 * last one and the child reads the end of the stream */
		close(sv[0]);
		runner_child(sv[1], fn);
	}
	close(sv[1]);
	if (r->pid < 0) {
		close(sv[0]);
		r->pid = 0;
		return;
	}
	r->sock = sv[0];
}

/* The process to probe: the child, or liveprof. */
static pid_t runner_pid(const struct stub_runner *r)
{
	return r->pid ? r->pid : getpid();
}

/* Lower quartile of a round of batch times, in ns per call; < 0 if the child failed. */
static double runner_time(struct stub_runner *r)
{
	uint64_t t[N_BATCH];
	size_t got = 0;

	if (!r->pid) {
		time_batches(r->fn, t);
	} else {
		/* no SIGPIPE if the child is gone: an error */
		if (send(r->sock, "b", 1, MSG_NOSIGNAL) != 1)
			return -1;
		while (got < sizeof(t)) {
			ssize_t n = read(r->sock, (char *)t + got, sizeof(t) - got);

			if (n <= 0 && !(n < 0 && errno == EINTR))
				return -1;
			got += n > 0 ? (size_t)n : 0;
		}
	}
	qsort(t, N_BATCH, sizeof(t[0]), lp_cmp_u64);
	return (double)t[N_BATCH / 4] / BATCH;
}

static void runner_stop(struct stub_runner *r)
{
	if (!r->pid)
		return;
	close(r->sock); /* the child reads the end and exits */
	while (waitpid(r->pid, NULL, 0) < 0 && errno == EINTR)
		;
	r->pid = 0;
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

/* The probes' histogram of @id: @out = its counts now - @before (NULL: 0). */
static void hist_delta(struct bpf_session *bpf, int id, const uint64_t *before, uint64_t *out)
{
	const volatile uint64_t *h = bpf_session__hist(bpf) + (size_t)id * LP_HIST_BUCKETS;

	for (int b = 0; b < LP_HIST_BUCKETS; b++)
		out[b] = h[b] - (before ? before[b] : 0);
}

/* The median latency of histogram @h (what the probes put inside a call); 0 if empty. */
static uint64_t hist_median(const uint64_t *h)
{
	uint64_t total = 0, acc = 0;

	for (int b = 0; b < LP_HIST_BUCKETS; b++)
		total += h[b];
	for (int b = 0; b < LP_HIST_BUCKETS && total; b++) {
		acc += h[b];
		if (acc * 2 >= total)
			return traces__bucket_value(b);
	}
	return 0;
}

/*
 * The least over ROUNDS rounds of the probed stub's time per call
 * (*@traced) and of the median latency the probes recorded (*@self).
 * Noise only ever adds (another process on the CPU, a slower phase of the
 * host), and it comes and goes in bursts: a round out of one is measured
 * on a quiet machine more often than the whole.
 * Return: 0, -ECHILD if the child failed, or -ENOMEM.
 */
static int time_probed(struct bpf_session *bpf, int id, struct stub_runner *run, double *traced,
		       uint64_t *self)
{
	uint64_t *before = calloc(2 * LP_HIST_BUCKETS, sizeof(*before)), *round;
	int err = 0;

	*traced = -1;
	*self = 0;
	if (!before)
		return -ENOMEM;
	round = before + LP_HIST_BUCKETS;
	for (int r = 0; r < ROUNDS; r++) {
		double t;
		uint64_t m;

		hist_delta(bpf, id, NULL, before);
		t = runner_time(run);
		if (t < 0) {
			err = -ECHILD;
			break;
		}
		hist_delta(bpf, id, before, round);
		m = hist_median(round);
		if (*traced < 0 || t < *traced)
			*traced = t;
		if (m && (!*self || m < *self))
			*self = m;
	}
	free(before);
	return err;
}

/* The offset of @stub's `ret` from its start, or -1. */
static int stub_ret_offset(long (*stub)(long))
{
	const uint8_t *p = (const uint8_t *)stub;
	int off = 0;

	while (off < 64) {
		int len = x86_insn_length(p + off, 16);

		if (len <= 0)
			return -1;
		if (p[off] == 0xc3)
			return off;
		off += len;
	}
	return -1;
}

int probe_cost_measure(struct bpf_session *bpf, int probe_id, int class_flags,
		       struct probe_cost *out)
{
	enum probe_insn_class c = (enum probe_insn_class)(class_flags & ~PIC_RET_INSN);
	bool ret_insn = (class_flags & PIC_RET_INSN) && c <= PIC_STEPPED;
	struct lp_probe_cfg cfg = {.kind = LP_PK_FUNC, .by_index = -1, .pair_id = probe_id};
	bool py = c == PIC_PY_TRAPS || c == PIC_PY_TRAPS2,
	     usdt = c == PIC_USDT_PAIR || c == PIC_PY_PAIR || py;
	uint64_t ret_off = c == PIC_PY_PAIR ? PY_STUB_RETURN : USDT_STUB_RETURN;
	enum bpf_probe_prog p1 = py	? PROBE_PROG_PY_START
				 : usdt ? PROBE_PROG_USDT_ENTRY
					: PROBE_PROG_ENTRY;
	enum bpf_probe_prog p2 = py	    ? PROBE_PROG_PY_RETURN
				 : usdt	    ? PROBE_PROG_USDT_RETURN
				 : ret_insn ? PROBE_PROG_RET_INSN
					    : PROBE_PROG_RETURN;
	uint32_t cookie = py ? PY_IDLE_COOKIE : (uint32_t)probe_id;
	struct stub_runner run = {0};
	double base, traced;
	uint64_t off;
	int h1 = -1, h2 = -1, h3 = -1, h4 = -1, err;

	memset(out, 0, sizeof(*out));
	if (c >= PIC_NR)
		return -EINVAL;
	err = self_offset((void *)classes[c].stub, &off);
	if (err)
		return err;
	/* timed with the probes live: the programs must be loaded */
	err = bpf_session__programs_ready(bpf, true);
	if (err < 0)
		return err;
	err = bpf_session__set_probe(bpf, probe_id, &cfg, NULL, 0);
	if (err)
		return err;
	runner_start(&run, classes[c].stub);
	base = -1;
	for (int r = 0; r < ROUNDS; r++) {
		double t = runner_time(&run);

		if (t >= 0 && (base < 0 || t < base))
			base = t;
	}
	/* a USDT pair: its entry and return programs on the stub's two nops */
	if (py && !bpf_session__has_prog(bpf, PROBE_PROG_PY_START)) {
		err = -ENOEXEC;
		goto out;
	}
	if (ret_insn) {
		int at = stub_ret_offset(classes[c].stub);

		if (at < 0) {
			err = -ENOEXEC;
			goto out;
		}
		ret_off = (uint64_t)at;
	}
	h1 = bpf_session__attach_uprobe(bpf, p1, runner_pid(&run), "/proc/self/exe", off, cookie);
	h2 = bpf_session__attach_uprobe(bpf, p2, runner_pid(&run), "/proc/self/exe",
					usdt || ret_insn ? off + ret_off : off, cookie);
	if (c == PIC_PY_TRAPS2) {
		h3 = bpf_session__attach_uprobe(bpf, p1, runner_pid(&run), "/proc/self/exe", off,
						cookie);
		h4 = bpf_session__attach_uprobe(bpf, p2, runner_pid(&run), "/proc/self/exe",
						off + ret_off, cookie);
		if (h3 < 0 || h4 < 0) {
			err = h3 < 0 ? h3 : h4;
			goto out;
		}
	}
	if (h1 < 0 || h2 < 0) {
		err = h1 < 0 ? h1 : h2;
		goto out;
	}
	err = base < 0 ? -ECHILD : time_probed(bpf, probe_id, &run, &traced, &out->self_ns);
	if (err)
		goto out;
	out->cost_ns = traced > base ? (uint64_t)(traced - base) : 0;
	if (out->self_ns > out->cost_ns)
		out->self_ns = out->cost_ns;
	out->measured = true;
out:
	bpf_session__detach(bpf, h1);
	bpf_session__detach(bpf, h2);
	bpf_session__detach(bpf, h3);
	bpf_session__detach(bpf, h4);
	runner_stop(&run);
	bpf_session__clear_probe(bpf, probe_id);
	return err;
}
