/* SPDX-License-Identifier: GPL-2.0 */
/*
 * remote_mem.h - reading another process's memory without stopping it
 * (process_vm_readv(2), never ptrace), for the interpreter frame readers
 * (py_code.c, rb_iseq.c), and picking unaligned fields out of what was read.
 */
#ifndef LP_USER_UTIL_REMOTE_MEM_H
#define LP_USER_UTIL_REMOTE_MEM_H

#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/**
 * lp_remote_read - read up to @len bytes at @addr of process @pid
 * @pid: the process
 * @addr: the address in it (0 is refused)
 * @buf: where to put them
 * @len: bytes wanted
 * @need: fewer than this many is an error (a read that stops at the end of
 *        a mapping returns what it got)
 *
 * Return: the bytes read (0 for @len 0), or a negative errno: -EFAULT for
 * address 0 or a short read, -ESRCH when the process is gone.
 */
ssize_t lp_remote_read(pid_t pid, uint64_t addr, void *buf, size_t len, size_t need);

/* The 8 bytes at @off of @buf, whatever their alignment. */
static inline uint64_t lp_get_u64(const uint8_t *buf, uint32_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* The 4 bytes at @off of @buf, whatever their alignment. */
static inline uint32_t lp_get_u32(const uint8_t *buf, uint32_t off)
{
	uint32_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

#endif /* LP_USER_UTIL_REMOTE_MEM_H */
