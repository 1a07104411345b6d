// SPDX-License-Identifier: GPL-2.0
/*
 * remote_mem.c - process_vm_readv(2) with the checks every caller needs.
 */
#include <errno.h>
#include <sys/uio.h>

#include "user/util/remote_mem.h"

ssize_t lp_remote_read(pid_t pid, uint64_t addr, void *buf, size_t len, size_t need)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n;

	if (!addr)
		return -EFAULT;
	if (!len)
		return 0;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n < need ? -EFAULT : n;
}
