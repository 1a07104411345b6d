// SPDX-License-Identifier: GPL-2.0
/*
 * unwind.c - user stacks from DWARF CFI over a copied stack, with libdw.
 *
 * Same approach as perf's util/unwind-libdw.c: libdwfl does the CFI work
 * (dwfl_getthread_frames), we supply the thread state through
 * Dwfl_Thread_Callbacks. A Dwfl can be attached to a state only once
 * (dwfl_attach_state fails with "attach state conflict" the second time),
 * so each process gets one Dwfl, attached once, whose callbacks read the
 * sample being unwound from a per-call context (struct proc ->ctx) that is
 * set just before dwfl_getthread_frames and cleared right after. libdwfl
 * asks for the initial registers anew on every dwfl_getthread_frames, and
 * keeps the modules and their parsed CFI across calls. Whether a module
 * keeps frame pointers is judged in unwind_fp.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include "dwarf/unwind.h"
#include "dwarf/unwind_internal.h"
#include "user/util/util.h"

#define REPORT_MIN_NS 100000000ULL /* uncovered pcs: one maps read per 100 ms */

/*
 * Unwinding needs only .eh_frame, which is in the mapped file itself.
 * Looking for separate debuginfo would cost file system walks (and, with
 * DEBUGINFOD_URLS set, network requests) for nothing, so say there is
 * none; libdwfl then still uses DWARF sections of the main file.
 */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	(void)mod;
	(void)userdata;
	(void)modname;
	(void)base;
	(void)file_name;
	(void)debuglink_file;
	(void)debuglink_crc;
	(void)debuginfo_file_name;
	return -1;
}

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = no_debuginfo,
};

static bool in_tramp(uint64_t addr)
{
	return addr >= UNWIND_TRAMP_LO && addr < UNWIND_TRAMP_HI;
}

/*
 * Read @len bytes at user address @addr from the file of module @mod,
 * through the PT_LOAD segment that maps it. Only file-backed bytes: .bss
 * and anything written at run time are not there, and we say so.
 */
int unwind_module_read(Dwfl_Module *mod, uint64_t addr, void *buf, size_t len)
{
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	size_t phnum, fsize;
	const char *raw;
	uint64_t vaddr;

	if (!elf || elf_getphdrnum(elf, &phnum) != 0)
		return -ENOENT;
	raw = elf_rawfile(elf, &fsize);
	if (!raw)
		return -EIO;
	vaddr = addr - bias;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr mem, *ph = gelf_getphdr(elf, (int)i, &mem);
		uint64_t off;

		if (!ph || ph->p_type != PT_LOAD)
			continue;
		if (vaddr < ph->p_vaddr || vaddr - ph->p_vaddr >= ph->p_filesz)
			continue;
		off = vaddr - ph->p_vaddr;
		/* corrupt headers must not send us outside the file */
		if (len > ph->p_filesz - off || ph->p_offset > fsize ||
		    off > fsize - ph->p_offset || len > fsize - ph->p_offset - off)
			return -EFAULT;
		memcpy(buf, raw + ph->p_offset + off, len);
		return 0;
	}
	return -EFAULT;
}

/*
 * Dwfl_Thread_Callbacks. The process has one thread as far as libdwfl is
 * concerned: the one the sample came from, whatever its tid.
 */
static pid_t cb_next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	struct proc *p = dwfl_arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = p;
	return p->pid;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = dwfl_arg;
	return true;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	struct proc *p = dwfl_arg;
	struct unwind_ctx *c = p->ctx;
	const struct unwind_input *in;
	Dwfl_Module *mod;
	uint64_t sp;

	if (!c)
		return false;
	in = c->in;
	/* a slot a pending uretprobe overwrote: serve the real return address */
	for (size_t i = 0; i < in->nr_fixups; i++) {
		if (in->fixups[i].slot == addr) {
			*result = in->fixups[i].ret;
			return true;
		}
	}
	sp = in->regs->sp;
	if (addr >= sp && in->stack_len >= sizeof(*result) &&
	    addr - sp <= in->stack_len - sizeof(*result)) {
		memcpy(result, (const char *)in->stack + (addr - sp), sizeof(*result));
		return true;
	}
	/*
	 * Never /proc/PID/mem: the stack has moved on since the sample. A
	 * module's file still holds what CFI expressions may read from it.
	 */
	mod = dwfl_addrmodule(dwfl, addr);
	if (mod && unwind_module_read(mod, addr, result, sizeof(*result)) == 0)
		return true;
	if (addr >= sp && addr < USER_ADDR_END)
		c->oob = true;
	else
		c->bad = true;
	return false;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct proc *p = thread_arg;
	struct unwind_ctx *c = p->ctx;
	Dwarf_Word regs[2], rip;

	if (!c)
		return false;
	/* rbp, rsp; everything else stays undefined, as perf does */
	regs[0] = c->in->regs->bp;
	regs[1] = c->in->regs->sp;
	if (!dwfl_thread_state_registers(thread, X86_64_DWARF_RBP, 2, regs))
		return false;
	/* rip as a register too: the PLT's CFA rule reads it (DW_OP_breg16,
	 * rsp + 8 or 16 by where in the 16-byte stub rip is). Set as the pc
	 * alone, a sample in a PLT stub ended its stack there (0.4% of
	 * Debian python3's samples, cut to "python3;memcmp@plt"). */
	rip = c->ip;
	if (!dwfl_thread_state_registers(thread, X86_64_DWARF_RIP, 1, &rip))
		return false;
	dwfl_thread_state_register_pc(thread, c->ip);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_set_initial_registers,
};

/*
 * Open every module's ELF now, while the process is alive: libdwfl opens
 * files lazily, and [vdso] can only be read from the live process.
 */
static int open_module_cb(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
			  void *arg)
{
	GElf_Addr bias;

	(void)userdata;
	(void)name;
	(void)start;
	(void)arg;
	dwfl_module_getelf(mod, &bias);
	return DWARF_CB_OK;
}

static void proc_free(struct proc *p)
{
	if (!p)
		return;
	if (p->dwfl)
		dwfl_end(p->dwfl);
	/* after dwfl_end: the Dwfl's backend points into it until then */
	if (p->arch_elf)
		elf_end(p->arch_elf);
	if (p->arch_fd >= 0)
		close(p->arch_fd);
	free(p);
}

/*
 * dwfl_attach_state() with a NULL Elf borrows the backend of one of the
 * process's modules, and a module that is not reported again (the image
 * a launched command had before its exec) frees that backend under the
 * attached state: a use after free, seen as a crash on the first unwind
 * after the exec. So attach with an Elf of our own, kept as long as the
 * Dwfl: liveprof's executable, whose architecture is the targets' one.
 */
static Elf *arch_elf_open(struct proc *p)
{
	elf_version(EV_CURRENT);
	p->arch_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (p->arch_fd < 0)
		return NULL;
	p->arch_elf = elf_begin(p->arch_fd, ELF_C_READ_MMAP, NULL);
	return p->arch_elf;
}

static struct proc *proc_find(struct unwinder *u, int pid)
{
	if (u->last && u->last->pid == pid)
		return u->last;
	for (size_t i = 0; i < u->nr_procs; i++) {
		if (u->procs[i]->pid == pid) {
			u->last = u->procs[i];
			return u->last;
		}
	}
	return NULL;
}

/* Re-read the modules of @p from /proc/PID/maps and attach once. */
static int proc_report(struct proc *p)
{
	int err;

	p->reported_ns = lp_now_ns();
	++*p->reports;
	dwfl_report_begin(p->dwfl);
	err = dwfl_linux_proc_report(p->dwfl, p->pid);
	/* modules that did not come back are freed here, caches with them */
	if (dwfl_report_end(p->dwfl, NULL, NULL) != 0 && !err)
		err = -1;
	if (err > 0)
		return err == ENOENT ? -ESRCH : -err;
	if (err < 0)
		return -EINVAL;
	dwfl_getmodules(p->dwfl, open_module_cb, NULL, 0);
	if (!p->attached) {
		if (!arch_elf_open(p) ||
		    !dwfl_attach_state(p->dwfl, p->arch_elf, p->pid, &thread_callbacks, p))
			return -EINVAL;
		p->attached = true;
	}
	return 0;
}

/**
 * unwinder__new - create an unwinder that knows no process yet
 *
 * Return: the unwinder, or NULL with errno set (ENOMEM).
 */
struct unwinder *unwinder__new(void)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		errno = ENOMEM;
	return u;
}

/**
 * unwinder__free - end every per-process Dwfl and free the unwinder
 * @u: the unwinder, may be NULL
 */
void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nr_procs; i++)
		proc_free(u->procs[i]);
	free(u->procs);
	free(u);
}

/**
 * unwinder__add_pid - report (or refresh) the modules mapped by a process
 * @u: the unwinder
 * @pid: the process (tgid)
 *
 * Return: 0, or a negative errno (-ESRCH, -ENOMEM, -EINVAL).
 */
int unwinder__add_pid(struct unwinder *u, int pid)
{
	struct proc *p;
	int err;

	if (!u || pid <= 0)
		return -EINVAL;
	p = proc_find(u, pid);
	if (p)
		return proc_report(p);

	if (u->nr_procs == u->cap_procs) {
		size_t cap = u->cap_procs ? u->cap_procs * 2 : 8;
		struct proc **procs = realloc(u->procs, cap * sizeof(*procs));

		if (!procs)
			return -ENOMEM;
		u->procs = procs;
		u->cap_procs = cap;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->arch_fd = -1;
	p->reports = &u->reports;
	p->dwfl = dwfl_begin(&proc_callbacks);
	if (!p->dwfl) {
		free(p);
		return -ENOMEM;
	}
	err = proc_report(p);
	if (err) {
		proc_free(p);
		return err;
	}
	u->procs[u->nr_procs++] = p;
	u->last = p;
	return 0;
}

uint64_t unwinder__reports(const struct unwinder *u)
{
	return u ? u->reports : 0;
}

/**
 * unwinder__remove_pid - forget a process and free its Dwfl
 * @u: the unwinder
 * @pid: the process; unknown pids are ignored
 */
void unwinder__remove_pid(struct unwinder *u, int pid)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nr_procs; i++) {
		if (u->procs[i]->pid != pid)
			continue;
		if (u->last == u->procs[i])
			u->last = NULL;
		proc_free(u->procs[i]);
		u->procs[i] = u->procs[--u->nr_procs];
		return;
	}
}

/*
 * A pc that no module covers is most likely in a library mapped since the
 * last report (dlopen). Left so, libdwfl would walk it by frame pointers
 * and return garbage until the daemon's next refresh, seconds later; so
 * report again now, at most once per REPORT_MIN_NS (code that stays
 * uncovered, JIT code in anonymous memory, must not cost a maps read per
 * sample).
 */
static void proc_cover(struct proc *p, uint64_t pc)
{
	if (!pc || dwfl_addrmodule(p->dwfl, pc))
		return;
	if (lp_now_ns() - p->reported_ns < REPORT_MIN_NS)
		return;
	proc_report(p);
}

/* The process of @pid, reported on first use and again for a new @pc. */
int unwind_proc_get(struct unwinder *u, int pid, uint64_t pc, struct proc **pp)
{
	int err;

	*pp = proc_find(u, pid);
	if (*pp) {
		proc_cover(*pp, pc);
		return 0;
	}
	err = unwinder__add_pid(u, pid);
	if (err)
		return err;
	*pp = proc_find(u, pid);
	return *pp ? 0 : -ENOENT;
}

static bool input_ok(const struct unwind_input *in)
{
	return in && in->regs && (in->stack || !in->stack_len) && (in->fixups || !in->nr_fixups);
}

/*
 * If the sample is in the trampoline, the probed call has just returned:
 * its return address was popped from sp - 8, and execution goes on at the
 * real return address with this very register state.
 */
static uint64_t first_pc(const struct unwind_input *in)
{
	uint64_t ip = in->regs->ip;

	if (!in_tramp(ip))
		return ip;
	for (size_t i = 0; i < in->nr_fixups; i++) {
		if (in->fixups[i].slot == in->regs->sp - 8)
			return in->fixups[i].ret;
	}
	return ip;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct unwind_ctx *c = arg;
	Dwarf_Addr pc;
	bool activation;

	/* the step to this frame read what we do not have: drop the frame */
	if (c->oob || c->bad)
		return DWARF_CB_ABORT;
	/* asking for activation unwinds the next frame; its reads come after */
	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	if (c->n == 0)
		pc = c->ip;
	else if (activation)
		pc++; /* a signal frame: keep "subtract 1" right for every i >= 1 */
	c->pcs[c->n++] = pc;
	if (c->n >= c->max || (c->n > 1 && in_tramp(pc))) {
		c->done = true;
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

/* Run libdwfl's unwinder over @in; fills c->pcs, returns the count. */
static int run_unwind(struct proc *p, struct unwind_ctx *c)
{
	p->ctx = c;
	dwfl_getthread_frames(p->dwfl, p->pid, frame_cb, c);
	p->ctx = NULL;
	if (c->n == 0)
		c->pcs[c->n++] = c->ip; /* not even the first frame: the ip is still true */
	return c->n;
}

/**
 * unwinder__unwind_input - full DWARF unwind of a copied stack
 * @u: the unwinder
 * @pid: the process the sample came from
 * @in: registers, stack copy and uretprobe fix-ups of the sample
 * @pcs: filled with at most @max pcs, innermost first
 * @max: capacity of @pcs, >= 1
 * @truncated: set when the unwind stopped for want of memory outside the copy
 *
 * Return: the number of pcs (>= 1), or a negative errno.
 */
int unwinder__unwind_input(struct unwinder *u, int pid, const struct unwind_input *in,
			   uint64_t *pcs, int max, bool *truncated)
{
	struct unwind_ctx c = {0};
	struct proc *p;
	int err, n;

	if (truncated)
		*truncated = false;
	if (!u || !input_ok(in) || !pcs || max < 1)
		return -EINVAL;
	c.ip = first_pc(in);
	err = unwind_proc_get(u, pid, c.ip, &p);
	if (err)
		return err;
	c.in = in;
	c.pcs = pcs;
	c.max = max;
	n = run_unwind(p, &c);
	if (truncated)
		*truncated = c.oob && !c.done;
	return n;
}

/**
 * unwinder__unwind - unwinder__unwind_input() without uretprobe fix-ups
 * @u: the unwinder
 * @pid: the process the sample came from
 * @regs: user registers at the sample
 * @stack: copy of user memory [regs->sp, regs->sp + @stack_len)
 * @stack_len: bytes in @stack
 * @pcs: output pcs
 * @max: capacity of @pcs
 * @truncated: output, see unwinder__unwind_input()
 *
 * Return: as unwinder__unwind_input().
 */
int unwinder__unwind(struct unwinder *u, int pid, const struct unwind_regs *regs, const void *stack,
		     size_t stack_len, uint64_t *pcs, int max, bool *truncated)
{
	struct unwind_input in = {
		.regs = regs,
		.stack = stack,
		.stack_len = stack_len,
	};

	return unwinder__unwind_input(u, pid, &in, pcs, max, truncated);
}

/**
 * unwinder__fix_leaf_input - put back the caller a frame-pointer walk skipped
 * @u: the unwinder
 * @pid: the process the sample came from
 * @in: registers, stack copy and fix-ups
 * @pcs: the frame-pointer chain, edited in place
 * @n: entries in @pcs, >= 1
 * @max: capacity of @pcs
 *
 * Return: the new number of entries, or a negative errno.
 */
int unwinder__fix_leaf_input(struct unwinder *u, int pid, const struct unwind_input *in,
			     uint64_t *pcs, int n, int max)
{
	struct unwind_ctx c = {0};
	uint64_t two[2];
	struct proc *p;
	int err;

	if (!u || !input_ok(in) || !pcs || n < 1 || max < n)
		return -EINVAL;
	/* a sample in the trampoline has no leaf of its own to repair */
	if (in_tramp(in->regs->ip))
		return n;
	err = unwind_proc_get(u, pid, in->regs->ip, &p);
	if (err)
		return err;
	c.in = in;
	c.ip = in->regs->ip;
	c.pcs = two;
	c.max = 2;
	if (run_unwind(p, &c) < 2)
		return n;
	if (two[1] == 0 || in_tramp(two[1]) || (n > 1 && two[1] == pcs[1]))
		return n;
	/* insert at 1; when full, the outermost entry falls off */
	if (n == max) {
		if (max < 2)
			return n;
		n--;
	}
	memmove(&pcs[2], &pcs[1], (size_t)(n - 1) * sizeof(*pcs));
	pcs[1] = two[1];
	return n + 1;
}

/**
 * unwinder__fix_leaf - unwinder__fix_leaf_input() without fix-ups
 * @u: the unwinder
 * @pid: the process
 * @regs: user registers at the sample
 * @stack: copy of user memory [regs->sp, regs->sp + @stack_len)
 * @stack_len: bytes in @stack
 * @pcs: the frame-pointer chain, edited in place
 * @n: entries in @pcs
 * @max: capacity of @pcs
 *
 * Return: as unwinder__fix_leaf_input().
 */
int unwinder__fix_leaf(struct unwinder *u, int pid, const struct unwind_regs *regs,
		       const void *stack, size_t stack_len, uint64_t *pcs, int n, int max)
{
	struct unwind_input in = {
		.regs = regs,
		.stack = stack,
		.stack_len = stack_len,
	};

	return unwinder__fix_leaf_input(u, pid, &in, pcs, n, max);
}
