/* SPDX-License-Identifier: GPL-2.0 */
/*
 * min_btf.h - the kernel types liveprof.bpf.o's CO-RE relocations need,
 * cut at build time from the build machine's /sys/kernel/btf/vmlinux
 * (bpftool gen min_core_btf, about 1 KiB), and the identity of that kernel.
 * Reading and indexing the whole kernel BTF (5.5 MB) took 10-20 ms of
 * liveprof's start-up; the subset is used only on the very kernel it was
 * cut from (same release, build string and BTF size).
 */
#ifndef LP_MIN_BTF_H
#define LP_MIN_BTF_H

#include <stddef.h>

extern const unsigned char lp_min_btf[];
extern const size_t lp_min_btf_len;		/* 0: none was built */
extern const char lp_min_btf_release[];		/* uname -r of the build machine */
extern const char lp_min_btf_version[];		/* uname -v */
extern const long long lp_min_btf_vmlinux_size; /* bytes of its /sys/kernel/btf/vmlinux */

#endif /* LP_MIN_BTF_H */
