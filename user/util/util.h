/* SPDX-License-Identifier: GPL-2.0 */
/*
 * util.h - the few helpers every layer shares: the monotonic clock,
 * hashing, duration formatting and the PATH search. Nothing here knows
 * liveprof's types.
 */
#ifndef LP_UTIL_UTIL_H
#define LP_UTIL_UTIL_H

#include <stddef.h>
#include <string.h>
#include <stdint.h>
#include <time.h>

/**
 * lp_now_ns - CLOCK_MONOTONIC in nanoseconds
 *
 * The same clock as bpf_ktime_get_ns(), so times from BPF events and from
 * user space compare directly. Never use wall-clock time for intervals.
 */
static inline uint64_t lp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/**
 * lp_mix64 - a 64-bit finaliser (MurmurHash3's fmix64): spreads every
 * input bit over the output, so the low bits can index a power-of-two
 * hash table. Deterministic: the emitter derives programs from it.
 * @x: the value to mix
 */
static inline uint64_t lp_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

#define LP_FNV_OFFSET 0xcbf29ce484222325ULL

/**
 * lp_fnv1a - continue a 64-bit FNV-1a hash over @len bytes at @p
 * @h: LP_FNV_OFFSET to start, or the hash so far to chain
 */
static inline uint64_t lp_fnv1a(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/**
 * lp_fmt_ns - a duration for people: "8120ns", "41.2us", "31.0ms", "12.0s"
 * @ns: the duration
 * @buf: output, always NUL-terminated
 * @len: size of @buf
 *
 * At least three digits, so a column of them stays readable.
 * Return: @buf.
 */
char *lp_fmt_ns(double ns, char *buf, size_t len);

/**
 * lp_path_search - the file execvp() would run for @cmd
 * @cmd: a command name, or a path when it contains '/'
 * @buf: receives the resolved absolute path (realpath)
 * @len: size of @buf
 *
 * Searches $PATH (or "/usr/local/bin:/usr/bin:/bin" when unset) the way
 * the shell does; an empty PATH entry means the current directory.
 * Return: 0, or -ENOENT when nothing executable is found.
 */
int lp_path_search(const char *cmd, char *buf, size_t len);

/**
 * lp_exec_resolve - the program that running @cmd loads: lp_path_search(),
 * then for a '#!' script its interpreter (`#!/usr/bin/env NAME`: NAME
 * searched in $PATH), one level, as the kernel's exec reads it
 * @cmd: a command name, or a path when it contains '/'
 * @buf: receives the resolved absolute path
 * @len: size of @buf, at least PATH_MAX
 *
 * Return: 0, or -ENOENT (nothing executable found), -EINVAL (@len).
 */
int lp_exec_resolve(const char *cmd, char *buf, size_t len);

/**
 * lp_cmp_u64 - qsort() comparison of two uint64_t, ascending
 * @a: the first
 * @b: the second
 *
 * Return: -1, 0 or 1.
 */
static inline int lp_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/**
 * lp_upper_bound - how many elements of a sorted array have a key <= @key
 * @base: the array
 * @n: its length
 * @stride: sizeof one element
 * @key_off: offsetof the uint64_t key inside an element
 * @key: the value looked for
 *
 * The index of the first element whose key is greater than @key, so the
 * element "containing" @key (the last one starting at or before it) is the
 * one before, when the result is not 0.
 */
static inline size_t lp_upper_bound(const void *base, size_t n, size_t stride, size_t key_off,
				    uint64_t key)
{
	const char *b = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;

		memcpy(&k, b + mid * stride + key_off, sizeof(k));
		if (k <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/**
 * lp_errf - format a one-line message for the user into @err
 * @err: the caller's buffer; NULL (or @errlen 0) means "not wanted"
 *
 * Engines fill a buffer and return a negative errno; the front end
 * decides where the message goes.
 */
void lp_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/**
 * lp_proc_stat - read /proc/@pid/stat and split off its command name
 * @buf: receives the file's text; the name and the rest point into it
 * @len: size of @buf
 * @comm: receives the name between the parentheses (NUL-terminated in
 *        @buf), may be NULL
 *
 * The name may hold spaces and parentheses, so the fields start after the
 * last ')'. Return: the fields after the name (" S ppid ..."), or NULL when
 * the process is gone or the text is not what the kernel writes.
 */
const char *lp_proc_stat(int pid, char *buf, size_t len, const char **comm);

/**
 * lp_zalloc_written - @size bytes of zeroed memory, written now
 * @size: bytes wanted
 *
 * calloc() leaves a fresh mapping untouched, so a table rehashed into it
 * took two page faults per page (the read of an empty slot maps the zero
 * page, the store copies it): a tenth of the daemon's CPU at 5 kHz of
 * distinct stacks. Writing first takes one.
 * Return: the memory (the caller frees it), or NULL.
 */
void *lp_zalloc_written(size_t size);

#endif
