// SPDX-License-Identifier: GPL-2.0
/*
 * uprobe_multi.c - uprobe_multi links through the bpf() system call.
 *
 * The uapi headers of Debian 12 and libbpf 1.1 predate these links, so the
 * attribute block is laid out here as the kernel (6.6+) reads it.
 */
#include "uprobe_multi.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#define UPROBE_MULTI_RETURN 1u /* BPF_F_UPROBE_MULTI_RETURN */

/* bpf_attr's link_create variant for uprobe_multi (include/uapi/linux/bpf.h). */
struct uprobe_multi_attr {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t multi_flags;
	uint32_t pid;
};

static int link_create(int prog_fd, int pid, const char *path, uint64_t offset,
		       uint64_t ref_ctr_offset, uint64_t cookie, uint32_t attach_type,
		       uint32_t multi_flags)
{
	union bpf_attr attr;
	struct uprobe_multi_attr *a = (struct uprobe_multi_attr *)&attr;
	uint64_t offsets[1] = {offset}, cookies[1] = {cookie}, ref_ctrs[1] = {ref_ctr_offset};
	int fd;

	_Static_assert(sizeof(struct uprobe_multi_attr) <= sizeof(union bpf_attr),
		       "the link attributes fit bpf_attr");
	memset(&attr, 0, sizeof(attr));
	a->prog_fd = (uint32_t)prog_fd;
	a->attach_type = attach_type;
	a->path = (uint64_t)(uintptr_t)path;
	a->offsets = (uint64_t)(uintptr_t)offsets;
	a->cookies = (uint64_t)(uintptr_t)cookies;
	if (ref_ctr_offset)
		a->ref_ctr_offsets = (uint64_t)(uintptr_t)ref_ctrs;
	a->cnt = 1;
	a->multi_flags = multi_flags;
	a->pid = pid > 0 ? (uint32_t)pid : 0; /* 0: every process */
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

bool uprobe_multi_supported(void)
{
	static int known = -1;
	const struct bpf_insn ret0[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, po, .expected_attach_type = LP_ATTACH_UPROBE_MULTI);
	int prog, err;

	if (known >= 0)
		return known;
	prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "lp_probe_multi", "GPL", ret0, 2, &po);
	if (prog < 0) {
		known = 0;
		return false;
	}
	/* A kernel that knows the link type looks the path up, and "/" is
	 * no regular file: -EBADF. One that does not refuses the type. */
	err = link_create(prog, -1, "/", 0, 0, 0, LP_ATTACH_UPROBE_MULTI, 0);
	if (err >= 0)
		close(err);
	close(prog);
	known = err == -EBADF;
	return known;
}

int uprobe_multi_attach(int prog_fd, int pid, const char *path, uint64_t offset,
			uint64_t ref_ctr_offset, uint64_t cookie, bool retprobe)
{
	return link_create(prog_fd, pid, path, offset, ref_ctr_offset, cookie,
			   LP_ATTACH_UPROBE_MULTI, retprobe ? UPROBE_MULTI_RETURN : 0);
}

int uprobe_multi_attach_session(int prog_fd, int pid, const char *path, uint64_t offset)
{
	return link_create(prog_fd, pid, path, offset, 0, 0, LP_ATTACH_UPROBE_SESSION, 0);
}
