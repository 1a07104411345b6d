// SPDX-License-Identifier: GPL-2.0
/*
 * multi_floor.c - the per-call floor of uprobe_multi links: an entry and a
 * return program that do nothing ("empty") or read the clock once each
 * ("clock"), attached the way liveprof attaches its function probes
 * (user/session/uprobe_multi.c). bpftrace 0.17 gives the same floor for
 * classic uprobes; this gives it for the kind liveprof uses where the
 * kernel has it, so the per-call table compares like with like.
 *
 * "pertask" and "session" are the least a latency histogram can do on top
 * (latency_floor.bpf.c): the start kept in task-local storage between an
 * entry and a return program, or in a session link's per-call cookie.
 *
 * Prints "Attaching 2 probes..." once attached (as bpftrace does, so the
 * bench drives both alike), then waits for a signal; closing the links on
 * exit detaches them.
 *
 * Usage: multi_floor PATH FILE_OFFSET PID empty|clock|pertask|session
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "latency_floor.skel.h"
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

/*
 * Load latency_floor.bpf.c's programs for @mode and attach them; the
 * skeleton stays loaded for the life of the process. 0, or -1 (said).
 */
static int attach_latency_floor(const char *mode, const char *path, uint64_t offset, int pid)
{
	bool session = !strcmp(mode, "session");
	struct latency_floor_bpf *skel = latency_floor_bpf__open();
	int l1, l2 = 0;

	if (!skel)
		return -1;
	bpf_program__set_autoload(skel->progs.lat_entry, !session);
	bpf_program__set_autoload(skel->progs.lat_return, !session);
	bpf_program__set_autoload(skel->progs.lat_session, session);
	bpf_program__set_expected_attach_type(skel->progs.lat_entry, LP_ATTACH_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(skel->progs.lat_return, LP_ATTACH_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(skel->progs.lat_session, LP_ATTACH_UPROBE_SESSION);
	if (latency_floor_bpf__load(skel)) {
		fprintf(stderr, "multi_floor: cannot load the %s programs\n", mode);
		return -1;
	}
	if (session) {
		l1 = uprobe_multi_attach_session(bpf_program__fd(skel->progs.lat_session), pid,
						 path, offset);
	} else {
		l1 = uprobe_multi_attach(bpf_program__fd(skel->progs.lat_entry), pid, path, offset,
					 0, 0, false);
		l2 = uprobe_multi_attach(bpf_program__fd(skel->progs.lat_return), pid, path, offset,
					 0, 0, true);
	}
	if (l1 < 0 || l2 < 0) {
		fprintf(stderr, "multi_floor: cannot attach %s at %s:0x%llx: %s\n", mode, path,
			(unsigned long long)offset, strerror(l1 < 0 ? -l1 : -l2));
		return -1;
	}
	return 0;
}

/* The empty or clock-only pair, as raw programs. 0, or -1 (said). */
static int attach_raw_floor(bool clock, const char *path, uint64_t offset, int pid)
{
	int entry = load("floor_entry", clock), ret = load("floor_return", clock), l1, l2;

	if (entry < 0 || ret < 0) {
		fprintf(stderr, "multi_floor: cannot load the programs\n");
		return -1;
	}
	l1 = uprobe_multi_attach(entry, pid, path, offset, 0, 0, false);
	l2 = uprobe_multi_attach(ret, pid, path, offset, 0, 0, true);
	if (l1 < 0 || l2 < 0) {
		fprintf(stderr, "multi_floor: cannot attach at %s:0x%llx\n", path,
			(unsigned long long)offset);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const modes[] = {"empty", "clock", "pertask", "session"};
	unsigned long long offset;
	int mode = -1, err, sig;
	sigset_t set;

	for (int i = 0; argc == 5 && i < 4; i++)
		if (!strcmp(argv[4], modes[i]))
			mode = i;
	if (mode < 0) {
		fprintf(stderr,
			"usage: multi_floor PATH FILE_OFFSET PID empty|clock|pertask|session\n");
		return 2;
	}
	if (!uprobe_multi_supported()) {
		fprintf(stderr, "multi_floor: this kernel has no uprobe_multi links\n");
		return 1;
	}
	offset = strtoull(argv[2], NULL, 0);
	if (mode < 2)
		err = attach_raw_floor(mode == 1, argv[1], offset, atoi(argv[3]));
	else
		err = attach_latency_floor(modes[mode], argv[1], offset, atoi(argv[3]));
	if (err)
		return 1;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("Attaching 2 probes...\n");
	fflush(stdout);
	sigwait(&set, &sig);
	return 0;
}
