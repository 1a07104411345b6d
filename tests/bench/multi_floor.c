// SPDX-License-Identifier: GPL-2.0
/*
 * multi_floor.c - the per-call floor of uprobe_multi links: an entry and a
 * return program that do nothing ("empty") or read the clock once each
 * ("clock"), attached the way liveprof attaches its function probes
 * (user/session/uprobe_multi.c). bpftrace 0.17 gives the same floor for
 * classic uprobes; this gives it for the kind liveprof uses where the
 * kernel has it, so the per-call table compares like with like.
 *
 * Prints "Attaching 2 probes..." once attached (as bpftrace does, so the
 * bench drives both alike), then waits for a signal; closing the links on
 * exit detaches them.
 *
 * Usage: multi_floor PATH FILE_OFFSET PID empty|clock
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "user/session/uprobe_multi.h"

static int load(const char *name, int clock)
{
	const struct bpf_insn with_clock[] = {
		{.code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_ktime_get_ns},
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, po, .expected_attach_type = LP_ATTACH_UPROBE_MULTI);
	const struct bpf_insn *insns = clock ? with_clock : with_clock + 1;

	return bpf_prog_load(BPF_PROG_TYPE_KPROBE, name, "GPL", insns, clock ? 3 : 2, &po);
}

int main(int argc, char **argv)
{
	int clock, entry, ret, l1, l2, sig;
	unsigned long long offset;
	sigset_t set;

	if (argc != 5 || (strcmp(argv[4], "empty") && strcmp(argv[4], "clock"))) {
		fprintf(stderr, "usage: multi_floor PATH FILE_OFFSET PID empty|clock\n");
		return 2;
	}
	if (!uprobe_multi_supported()) {
		fprintf(stderr, "multi_floor: this kernel has no uprobe_multi links\n");
		return 1;
	}
	offset = strtoull(argv[2], NULL, 0);
	clock = !strcmp(argv[4], "clock");
	entry = load("floor_entry", clock);
	ret = load("floor_return", clock);
	if (entry < 0 || ret < 0) {
		fprintf(stderr, "multi_floor: cannot load the programs\n");
		return 1;
	}
	l1 = uprobe_multi_attach(entry, atoi(argv[3]), argv[1], offset, 0, 0, false);
	l2 = uprobe_multi_attach(ret, atoi(argv[3]), argv[1], offset, 0, 0, true);
	if (l1 < 0 || l2 < 0) {
		fprintf(stderr, "multi_floor: cannot attach at %s:0x%llx\n", argv[1], offset);
		return 1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("Attaching 2 probes...\n");
	fflush(stdout);
	sigwait(&set, &sig);
	return 0;
}
