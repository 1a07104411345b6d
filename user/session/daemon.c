// SPDX-License-Identifier: GPL-2.0
/*
 * daemon.c - event intake and the one-second tick.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>

#include "bpf/liveprof.h"
#include "dwarf/unwind.h"

_Static_assert(UNWIND_TRAMP_LO == LP_UPROBE_TRAMP_LO && UNWIND_TRAMP_HI == LP_UPROBE_TRAMP_HI,
	       "the unwinder and the contract disagree on the trampoline page");
#include "user/session/alloc.h"
#include "user/session/bpf_session.h"
#include "user/session/daemon.h"
#include "user/util/log.h"
#include "user/session/split.h"
#include "user/session/stack_fixup.h"
#include "user/session/traces.h"
#include "user/util/util.h"

const char *daemon__process_name(void *ctx, uint32_t pid)
{
	struct daemon *d = ctx;

	for (int i = 0; i < d->core.n_procs; i++)
		if (d->core.procs[i].pid == (int)pid && d->core.procs[i].name[0])
			return d->core.procs[i].name;
	return NULL;
}

static void read_comm(int pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

int daemon__add_target(struct daemon *d, int pid)
{
	struct target_proc *p;
	int err;

	if (d->core.n_procs == MAX_PIDS)
		return -E2BIG;
	p = &d->core.procs[d->core.n_procs];
	p->pid = pid;
	p->alive = true;
	if (pid == d->core.child && d->child_exe) {
		/* Not exec'd yet (it waits for us): name it after its command. */
		const char *b = strrchr(d->child_exe, '/');

		snprintf(p->name, sizeof(p->name), "%.15s", b ? b + 1 : d->child_exe);
	} else {
		read_comm(pid, p->name, sizeof(p->name));
	}
	err = bpf_session__add_pid(d->core.bpf, pid);
	if (err)
		return err;
	/* Failing to read the maps now is not fatal: the process may be
	 * exec'ing; the tick retries. */
	symbolizer__add_pid(d->sym, pid);
	unwinder__add_pid(d->unwind, pid);
	d->core.n_procs++;
	if (d->alloc) {
		char msg[256];

		err = alloc__attach(d->alloc, pid, msg, sizeof(msg));
		if (err < 0)
			lp_warn("%s", msg);
	}
	return 0;
}

/*
 * A pending uretprobe replaced its frame's return address with the
 * trampoline. Walking leaf to root, the k-th trampoline address belongs
 * to the k-th innermost call in flight above @sp; put the saved address
 * back (calls whose slot is below @sp have returned already).
 */
static unsigned int fix_trampolines(struct daemon *d, uint64_t *us, unsigned int n,
				    const struct lp_sample *s, uint64_t sp)
{
	int call = (int)(s->n_calls < LP_MAX_CALLS ? s->n_calls : LP_MAX_CALLS) - 1;
	unsigned int out = 0;

	while (call >= 0 && s->calls[call].ret_slot < sp)
		call--;
	for (unsigned int i = 0; i < n; i++) {
		if (us[i] >= LP_UPROBE_TRAMP_LO && us[i] < LP_UPROBE_TRAMP_HI) {
			/* No saved address left (a uretprobe that is not ours):
			 * drop the frame rather than show the trampoline. */
			if (call < 0)
				continue;
			us[i] = s->calls[call--].ret_addr;
			d->tramp_fixed++;
		}
		us[out++] = us[i];
	}
	return out;
}

/*
 * A frame-pointer chain through code that uses rbp as data (a thread's
 * first instructions in clone3, say) can point at itself: the kernel then
 * repeats one bogus address until its depth limit. Recursion also repeats
 * return addresses, but those resolve to a function; a run of the same
 * address that resolves to nothing is cut, and the stack marked truncated.
 */
static unsigned int cut_fp_loop(struct daemon *d, uint32_t pid, uint64_t *us, unsigned int n,
				uint32_t *flags)
{
	for (unsigned int i = 2; i < n; i++) {
		struct sym_frame sf;

		if (us[i] != us[i - 1] || us[i] != us[i - 2])
			continue;
		if (symbolizer__resolve(d->sym, (int)pid, us[i] - 1, &sf, 1) == 1 && sf.func)
			continue;
		*flags |= STACK_F_TRUNCATED;
		return i > 2 ? i - 2 : 1; /* keep what came before the loop */
	}
	return n;
}

/*
 * The user stack of sample @s, leaf first, into @us (MAX_USER_FRAMES
 * entries); @stack is the copy of the user stack that follows the sample.
 * Sets STACK_F_TRUNCATED in @flags when the stack is known to go on.
 *
 * dwarf and auto unwind every sample with CFI over the copy: measured
 * with tests/bench/bench_unwind.py, that costs a few microseconds per
 * sample more than frame pointers plus the leaf fix, and it is the only
 * way that is right for mixed stacks: deciding per module whether frame
 * pointers can be trusted would still have to find the frames a no-FP
 * caller hides in the middle of the chain, which takes CFI anyway. Frame
 * pointers remain the fallback when CFI has nothing to go on (no copy,
 * as for off-CPU samples; a process whose maps are gone).
 *
 * fp takes the kernel's frame-pointer walk and, from a small copy, puts
 * back with CFI the caller a frameless leaf hides.
 */
/* Whether a probe's breakpoint is at @addr of @pid (see stack_fixup__state). */
static bool at_probe_site(void *ctx, uint32_t pid, uint64_t addr)
{
	struct daemon *d = ctx;
	uint64_t dev, ino, off;

	if (!d->traces || symbolizer__file_pos(d->sym, (int)pid, addr, &dev, &ino, &off))
		return false;
	return bpf_session__probe_site(d->core.bpf, dev, ino, off);
}

/* The address in @pid of the function entry probe @probe_id sits on, or 0. */
static uint64_t probe_entry_pc(struct daemon *d, uint32_t pid, uint32_t probe_id)
{
	struct bpf_probe_site site[4];
	int n = bpf_session__entry_sites(d->core.bpf, probe_id, site, 4);

	for (int i = 0; i < n; i++) {
		uint64_t a = symbolizer__addr_of(d->sym, (int)pid, site[i].dev, site[i].ino,
						 site[i].offset);

		if (a)
			return a;
	}
	return 0;
}

/*
 * What the unwinder reads besides the copy: the slots a pending uretprobe
 * overwrote, with what was there before, and the red zone below sp,
 * served as fix-ups since the unwinder reads memory from sp upwards only:
 * an epilogue's CFI finds the registers it just popped there, and without
 * them the step is refused.
 */
static void fill_input(const struct lp_sample *s, const struct ustate *st, struct unwind_input *in,
		       struct unwind_regs *regs, struct unwind_fixup *fx)
{
	regs->ip = st->regs.ip;
	regs->sp = st->regs.sp;
	regs->bp = st->regs.bp;
	in->fixups = fx;
	in->regs = regs;
	in->stack = st->stack;
	in->stack_len = st->stack_len;
	in->nr_fixups = 0;
	for (unsigned int i = 0; i < s->n_calls && i < LP_MAX_CALLS; i++) {
		fx[in->nr_fixups].slot = s->calls[i].ret_slot;
		fx[in->nr_fixups].ret = s->calls[i].ret_addr;
		in->nr_fixups++;
	}
	if (!st->redzone)
		return;
	for (unsigned int i = 0; i < LP_REDZONE / 8; i++) {
		fx[in->nr_fixups].slot = st->regs.sp - LP_REDZONE + 8 * i;
		memcpy(&fx[in->nr_fixups].ret, st->redzone + 8 * i, 8);
		in->nr_fixups++;
	}
}

/*
 * The kernel's frame-pointer walk, mended. It walked from the sampled ip:
 * in the trampoline the caller is running again (its ip replaces the
 * trampoline's); at a traced function's entry the frame pointer is still
 * the caller's, so the leaf, then the caller's own pc, come before the
 * chain. @lead: the @n_lead leaf pcs of USTATE_ENTRY.
 */
static unsigned int fp_user(struct daemon *d, const struct lp_sample *s, const struct ustate *st,
			    const struct unwind_input *in, const uint64_t *lead,
			    unsigned int n_lead, uint64_t *us, uint32_t *flags)
{
	unsigned int nu = s->n_ustack < LP_MAX_USTACK ? s->n_ustack : LP_MAX_USTACK;
	uint64_t t0;
	int n;

	memcpy(us, s->ustack, nu * sizeof(uint64_t));
	if (nu && (st->kind == USTATE_RETURNED || st->kind == USTATE_TRAPPED)) {
		us[0] = st->regs.ip;
	} else if (nu && st->kind == USTATE_ENTRY) {
		memmove(&us[n_lead + 1], &us[1], (nu - 1) * sizeof(uint64_t));
		memcpy(us, lead, n_lead * sizeof(uint64_t));
		us[n_lead] = st->regs.ip;
		nu += n_lead;
	}
	nu = fix_trampolines(d, us, nu, s, st->regs.sp);
	nu = cut_fp_loop(d, s->pid, us, nu, flags);
	if (st->stack_len && nu && (st->kind == USTATE_PLAIN || st->kind == USTATE_TRAPPED)) {
		t0 = lp_now_ns();
		n = unwinder__fix_leaf_input(d->unwind, s->pid, in, us, (int)nu, MAX_USER_FRAMES);
		d->unwind_ns += lp_now_ns() - t0;
		if (n > (int)nu)
			d->leaf_fixed++;
		if (n > 0)
			nu = (unsigned int)n;
	}
	/* bpf_get_stack stops at LP_MAX_USTACK frames, not at the root. */
	if (s->n_ustack >= LP_MAX_USTACK)
		*flags |= STACK_F_TRUNCATED;
	d->unwound_fp++;
	return nu;
}

static unsigned int unwind_user(struct daemon *d, const struct lp_sample *s, const void *mem,
				uint64_t *us, uint32_t *flags)
{
	struct unwind_fixup fx[LP_MAX_CALLS + LP_REDZONE / 8];
	struct unwind_regs regs;
	struct unwind_input in;
	unsigned int nu = s->n_ustack < LP_MAX_USTACK ? s->n_ustack : LP_MAX_USTACK, lead = 0;
	uint64_t lead_pcs[2];
	struct ustate st;
	bool truncated = false;
	uint64_t t0;
	int n;

	stack_fixup__state(s, mem, at_probe_site, d, &st);
	if (st.kind == USTATE_LOST && s->regs.ip - LP_UPROBE_TRAMP_LO < UPROBE_XOL_SLOT_BYTES) {
		/* in the trampoline, with no return address to go back to */
		*flags |= STACK_F_UNWIND_ERROR;
		return 0;
	}
	if (st.kind != USTATE_PLAIN && st.kind != USTATE_LOST)
		d->uprobe_page_fixed++;
	if (st.kind == USTATE_ENTRY) {
		uint64_t fn = probe_entry_pc(d, s->pid, st.probe_id);

		lead_pcs[lead++] = st.leaf_pc;
		/* single-stepping the function's first instruction: name it
		 * (+ 1, since callers' pcs are looked up at pc - 1) */
		if (fn && st.leaf_pc != fn)
			lead_pcs[lead++] = fn + 1;
	}
	fill_input(s, &st, &in, &regs, fx);
	if (d->core.opts->call_graph != CALL_GRAPH_FP && st.stack_len &&
	    !(s->flags & LP_SF_OFFCPU) && st.kind != USTATE_LOST) {
		memcpy(us, lead_pcs, lead * sizeof(uint64_t));
		t0 = lp_now_ns();
		n = unwinder__unwind_input(d->unwind, s->pid, &in, us + lead,
					   MAX_USER_FRAMES - lead, &truncated);
		d->unwind_ns += lp_now_ns() - t0;
		/*
		 * Only the ip, yet frame pointers know more, and not for want
		 * of stack: CFI found nothing to go on. The frame-pointer chain
		 * is better only where the leaf's module keeps frame pointers;
		 * elsewhere rbp is data and the chain garbage (seen with
		 * python3.11), so keep the one true frame and say it is cut.
		 */
		if (n == 1 && !truncated && nu > 1 &&
		    unwinder__module_has_fp(d->unwind, s->pid, st.regs.ip) >= 50)
			n = 0;
		if (n > 0) {
			n += (int)lead;
			/* A full buffer also means the outermost frame is missing. */
			if (truncated || (n == 1 && nu > 1) || n == MAX_USER_FRAMES)
				*flags |= STACK_F_TRUNCATED;
			d->unwound_dwarf++;
			return (unsigned int)n;
		}
	}
	return fp_user(d, s, &st, &in, lead_pcs, lead, us, flags);
}

static int on_sample(struct daemon *d, const struct lp_sample *s, size_t size)
{
	uint64_t us[MAX_USER_FRAMES];
	unsigned int nu, nk, cut;
	struct raw_stack rs = {0};
	uint32_t flags;
	int64_t id;
	uint64_t count;

	if (size < sizeof(*s) || (s->stack_len && s->stack_len + LP_REDZONE > size - sizeof(*s))) {
		d->events_bad++;
		return 0;
	}
	/* liveprof's own calibration thread (sample_cost.c), never a target */
	if (s->pid == (uint32_t)getpid())
		return 0;
	flags = (s->flags & LP_SF_OFFCPU) ? STACK_F_OFFCPU : 0;
	nu = unwind_user(d, s, s + 1, us, &flags);
	/* whatever the unwinder said, a caller must be code */
	cut = stack_fixup__cut(d->sym, s->pid, us, nu);
	if (cut < nu) {
		nu = cut;
		flags |= STACK_F_UNWIND_ERROR;
	}
	if (flags & STACK_F_UNWIND_ERROR)
		d->unwind_errors++;
	nk = s->n_kstack < LP_MAX_KSTACK ? s->n_kstack : LP_MAX_KSTACK;
	if (flags & STACK_F_TRUNCATED)
		d->truncated++;

	rs.pid = s->pid;
	rs.tid = s->tid;
	rs.flags = flags;
	rs.n_user = nu;
	rs.n_kernel = nk;
	rs.user = us;
	rs.kernel = (const uint64_t *)s->kstack;
	memcpy(rs.comm, s->comm, sizeof(rs.comm));
	id = stack_store__intern(d->stacks, &rs);
	if (id < 0)
		return (int)id;

	/* An off-CPU event is one block, weighed by its duration. */
	count = 1;
	if (s->flags & LP_SF_OFFCPU)
		d->offcpu_events++;
	else
		d->samples++;
	if (counts__add(&d->total, id, count, s->weight_ns) ||
	    counts__add(&d->slots[d->cur_slot], id, count, s->weight_ns))
		return -ENOMEM;
	for (struct daemon_window *w = d->windows; w; w = w->next)
		if (s->time_ns >= w->start_ns && s->time_ns < w->end_ns &&
		    counts__add(&w->counts, id, count, s->weight_ns))
			return -ENOMEM;
	if (d->split && s->n_calls)
		split__on_sample(d->split, (uint32_t)id, s, count);
	return 0;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct daemon *d = ctx;
	const struct lp_event_hdr *h = data;

	if (size < sizeof(*h)) {
		d->events_bad++;
		return 0;
	}
	switch (h->type) {
	case LP_EV_SAMPLE:
		return on_sample(d, data, size);
	case LP_EV_CALL_END:
		if (size >= sizeof(struct lp_call_end) && d->split)
			split__on_call_end(d->split, data);
		return 0;
	case LP_EV_HIT:
		if (size >= sizeof(struct lp_hit) && d->traces)
			traces__on_hit(d->traces, data);
		return 0;
	default:
		d->events_bad++;
		return 0;
	}
}

int daemon__init(struct daemon *d, struct options *o, struct bpf_session *bpf)
{
	struct stack_symbols_opts so = {
		.per_thread = o->per_thread,
		.lines = o->lines,
		.inline_frames = !o->no_inline,
	};
	int err;

	memset(d, 0, sizeof(*d));
	d->core.opts = o;
	d->core.bpf = bpf;
	d->freq = o->freq;
	/* DWARF for inline chains by default, as perf does; cached per address */
	d->sym = symbolizer__new(o->lines || !o->no_inline);
	d->stacks = stack_store__new(o->per_thread);
	d->core.symbols = stack_symbols__new(&so);
	d->unwind = unwinder__new();
	if (!d->sym || !d->stacks || !d->core.symbols || !d->unwind)
		return -ENOMEM;
	counts__init(&d->total);
	err = daemon__set_window(d, (int)(o->window_s + 0.5));
	if (err)
		return err;
	d->core.start_ns = d->last_tick_ns = lp_now_ns();
	return bpf_session__set_ringbuf_cb(bpf, on_event, d);
}

int daemon__set_window(struct daemon *d, int seconds)
{
	struct counts *slots;

	if (seconds < 1 || seconds > MAX_WINDOW_SLOTS)
		return -EINVAL;
	slots = calloc(seconds, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (int i = 0; i < d->n_slots; i++)
		counts__free(&d->slots[i]);
	free(d->slots);
	d->slots = slots;
	d->n_slots = seconds;
	d->cur_slot = 0;
	if (d->traces)
		traces__set_window(d->traces, seconds);
	if (d->split)
		split__set_window(d->split, seconds);
	return 0;
}

void daemon__fini(struct daemon *d)
{
	while (d->windows)
		daemon__window_close(d, d->windows);
	alloc__close(d->alloc); /* its ring is no longer polled from here on */
	d->alloc = NULL;
	split__free(d->split);
	traces__free(d->traces);
	for (int i = 0; i < d->n_slots; i++)
		counts__free(&d->slots[i]);
	free(d->slots);
	counts__free(&d->total);
	unwinder__free(d->unwind);
	stack_symbols__free(d->core.symbols);
	stack_store__free(d->stacks);
	symbolizer__free(d->sym);
	memset(d, 0, sizeof(*d));
}

/* An exited process that its parent has not reaped yet still answers kill(0). */
static bool is_zombie(int pid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

bool daemon__targets_alive(struct daemon *d)
{
	bool any = false;

	if (d->core.opts->all)
		return true;
	if (d->core.child) {
		int st;
		pid_t r = waitpid(d->core.child, &st, WNOHANG);

		if (r == d->core.child) {
			d->child_exited = true;
			d->child_status = st;
		}
	}
	for (int i = 0; i < d->core.n_procs; i++) {
		struct target_proc *p = &d->core.procs[i];

		if (!p->alive)
			continue;
		if (p->pid == d->core.child && d->child_exited)
			p->alive = false;
		else if ((kill(p->pid, 0) && errno == ESRCH) || is_zombie(p->pid))
			p->alive = false;
		any |= p->alive;
	}
	return any;
}

int daemon__symbolize_new(struct daemon *d)
{
	return stack_symbols__update(d->core.symbols, d->stacks, d->sym, daemon__process_name, d);
}

static void tick(struct daemon *d, uint64_t now)
{
	static unsigned int ticks;

	bpf_session__counters(d->core.bpf, d->counters);
	/* New libraries (dlopen) and exec: re-read the maps while alive,
	 * then symbolize what arrived, so nothing waits until the target
	 * is gone and its maps with it. */
	if (++ticks % 2 == 0)
		for (int i = 0; i < d->core.n_procs; i++)
			if (d->core.procs[i].alive) {
				symbolizer__add_pid(d->sym, d->core.procs[i].pid);
				unwinder__add_pid(d->unwind, d->core.procs[i].pid);
			}
	daemon__symbolize_new(d);
	if (d->traces)
		traces__tick(d->traces, now);
	if (d->split)
		split__tick(d->split, now);
	d->cur_slot = (d->cur_slot + 1) % d->n_slots;
	counts__clear(&d->slots[d->cur_slot]);
}

int daemon__window_open(struct daemon *d, struct daemon_window *w, uint64_t duration_ns)
{
	if (!duration_ns)
		return -EINVAL;
	counts__init(&w->counts);
	w->start_ns = lp_now_ns();
	w->end_ns = w->start_ns + duration_ns;
	w->next = d->windows;
	d->windows = w;
	return 0;
}

void daemon__window_close(struct daemon *d, struct daemon_window *w)
{
	for (struct daemon_window **p = &d->windows; *p; p = &(*p)->next) {
		if (*p == w) {
			*p = w->next;
			counts__free(&w->counts);
			return;
		}
	}
}

int daemon__window_active(const struct daemon *d)
{
	int n = 0;

	for (const struct daemon_window *w = d->windows; w; w = w->next)
		n++;
	return n;
}

int daemon__add_poller(struct daemon *d, int fd, void (*fn)(void *ctx), void *ctx)
{
	if (d->n_pollers == MAX_POLLERS)
		return -E2BIG;
	d->pollers[d->n_pollers++] = (struct daemon_poller){fd, fn, ctx};
	return 0;
}

void daemon__remove_poller(struct daemon *d, void *ctx)
{
	int n = 0;

	for (int i = 0; i < d->n_pollers; i++)
		if (d->pollers[i].ctx != ctx)
			d->pollers[n++] = d->pollers[i];
	d->n_pollers = n;
}

/*
 * Windows whose end has passed are handed over. Events are consumed on
 * every poll, so by now every sample stamped before the end is in.
 */
static void finish_windows(struct daemon *d, uint64_t now)
{
	struct daemon_window **p = &d->windows;

	while (*p) {
		struct daemon_window *w = *p;

		if (now < w->end_ns) {
			p = &w->next;
			continue;
		}
		*p = w->next;
		w->next = NULL;
		w->done(w, w->ctx); /* may free w */
	}
}

/* Wait for the ring buffer or any poller's fd, whichever comes first. */
static int wait_events(struct daemon *d, int timeout_ms)
{
	struct pollfd pfd[MAX_POLLERS + 1];
	int n = 0;

	pfd[n++] = (struct pollfd){
		.fd = ring_buffer__epoll_fd(bpf_session__ringbuf(d->core.bpf)),
		.events = POLLIN,
	};
	for (int i = 0; i < d->n_pollers; i++)
		pfd[n++] = (struct pollfd){.fd = d->pollers[i].fd, .events = POLLIN};
	if (poll(pfd, n, timeout_ms) < 0)
		return -errno;
	return 0;
}

int daemon__poll(struct daemon *d, int timeout_ms)
{
	uint64_t now;
	int err;

	if (d->n_pollers)
		err = wait_events(d, timeout_ms);
	else
		err = ring_buffer__poll(bpf_session__ringbuf(d->core.bpf), timeout_ms);
	/* Events are sent without a wake-up until a batch is waiting
	 * (rb_flags() in BPF): take whatever is there on every poll. */
	if (err >= 0 || err == -EINTR) {
		int n = ring_buffer__consume(bpf_session__ringbuf(d->core.bpf));

		if (n < 0 && err >= 0)
			err = n;
	}
	now = lp_now_ns();
	/* A library a trace waits for is looked for at every poll, not only
	 * at the tick: calls made in the meantime would be missed. */
	if (d->traces)
		traces__retry_pending(d->traces);
	while (now - d->last_tick_ns >= 1000000000ULL) {
		d->last_tick_ns += 1000000000ULL;
		tick(d, now);
	}
	finish_windows(d, now);
	for (int i = 0; i < d->n_pollers; i++)
		d->pollers[i].fn(d->pollers[i].ctx);
	if (err == -EINTR)
		return -EINTR;
	return err < 0 ? err : 0;
}

int daemon__window_counts(struct daemon *d, struct counts *out)
{
	counts__clear(out);
	for (int i = 0; i < d->n_slots; i++)
		if (counts__merge(out, &d->slots[i]))
			return -ENOMEM;
	return 0;
}
