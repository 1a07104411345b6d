// SPDX-License-Identifier: GPL-2.0
/*
 * traces_cost.c - what a probe hit costs the target, measured on liveprof itself.
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

static uint64_t time_calls(int (*fn)(int), int n)
{
	volatile int acc = 0;
	uint64_t t0 = lp_now_ns();

	for (int i = 0; i < n; i++)
		acc += fn(i);
	return lp_now_ns() - t0;
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
void traces_measure_cost(struct traces *t)
{
	int (*fns[2])(int) = {lp_cost_probe_push, lp_cost_probe_step};
	uint64_t *out[2] = {&t->cost_emulated_ns, &t->cost_stepped_ns};
	const int n = 2000;

	t->cost_measured = true;
	for (int k = 0; k < 2; k++) {
		uint64_t off, base, traced;
		int h1, h2, id = traces_alloc_id(t);

		*out[k] = k ? 10000 : 1000; /* documented fallbacks if probing fails */
		if (id < 0 || self_offset((void *)fns[k], &off))
			continue;
		base = time_calls(fns[k], n);
		h1 = bpf_session__attach_uprobe(t->c->bpf, PROBE_PROG_ENTRY, getpid(),
						"/proc/self/exe", off, id);
		h2 = bpf_session__attach_uprobe(t->c->bpf, PROBE_PROG_RETURN, getpid(),
						"/proc/self/exe", off, id);
		if (h1 >= 0 && h2 >= 0) {
			traced = time_calls(fns[k], n);
			*out[k] = traced > base ? (traced - base) / n : 0;
		}
		bpf_session__detach(t->c->bpf, h1);
		bpf_session__detach(t->c->bpf, h2);
		t->id_used[id] = false;
	}
	lp_debug("probe cost: %" PRIu64 " ns per call (emulated), %" PRIu64 " ns (single-stepped)",
		 t->cost_emulated_ns, t->cost_stepped_ns);
}

/* Is the first instruction at @offset of @path `push %rbp` (emulated)? */
bool traces_first_insn_emulated(const char *path, uint64_t offset)
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
