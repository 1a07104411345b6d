// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * liveprof.bpf.c - every BPF program of liveprof in one object, so that
 * the sampler, the tracer and the off-CPU program share the maps that
 * join them (thread_calls above all). The loader disables the programs a
 * session does not need with bpf_program__set_autoload().
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "liveprof.h"
#include "maps.bpf.h"
#include "cost.bpf.h"
#include "unwind.bpf.h"
#include "returns.bpf.h"
#include "interp.bpf.h"
#include "python.bpf.h"
#include "ruby.bpf.h"
#include "sampler.bpf.h"
#include "fetch.bpf.h"
#include "causal.bpf.h"
#include "tracer.bpf.h"
#include "usdt.bpf.h"
#include "pytrace.bpf.h"
#include "offcpu.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";
