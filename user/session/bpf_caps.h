/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bpf_caps.h - liveprof's capabilities as the kernel sees them: which BPF
 * programs each one needs, and why a kernel refused one.
 *
 * A kernel that refuses a program loses that program's capability alone:
 * the loader drops the capability's programs and loads the rest, and a
 * request that needs it fails with the verifier's own reason, in one line.
 * `liveprof --check` loads each capability on its own and says which work.
 */
#ifndef LP_SESSION_BPF_CAPS_H
#define LP_SESSION_BPF_CAPS_H

#include <stdbool.h>
#include <stdio.h>

/* enum lp_cap: bpf/liveprof.h (the BPF test hook refuse_caps uses its bits) */
#include "bpf/liveprof.h"

/** lp_cap_name - what the user knows capability @c as ("off-CPU profiling") */
const char *lp_cap_name(enum lp_cap c);

/** lp_cap_of_prog - the capability a program of liveprof.bpf.c serves, by name */
enum lp_cap lp_cap_of_prog(const char *prog_name);

/**
 * lp_cap_test_mask - the capabilities that the test hook LIVEPROF_TEST_REFUSE
 * (a comma-separated list of keys: offcpu, tracing, pytrace, kunwind,
 * causal) asks the verifier to refuse, as bits (1 << LP_CAP_x) for the
 * programs' refuse_caps: their programs then carry an invalid read that only
 * that setting makes reachable, so the refusal is the verifier's own.
 */
unsigned int lp_cap_test_mask(void);

/*
 * The last program libbpf failed to load in this thread, and the verifier's
 * reason: the last line of its log before the statistics. Filled by the
 * libbpf print callback (bpf_session.c) from its warnings.
 */
struct lp_load_failure {
	char prog[64];
	char reason[256];
};

/** lp_load_failure_take - move this thread's last load failure into @out; false if none */
bool lp_load_failure_take(struct lp_load_failure *out);

/** lp_load_failure_note - read one libbpf warning (the print callback's) */
void lp_load_failure_note(const char *msg);

/**
 * lp_check_kernel - load each capability's programs on their own and print
 * to @out what this kernel supports and why not where it does not, as
 * `bpftool feature probe` does; with @verbose, each program's verifier
 * statistics (instructions processed, stack depth) and load time.
 *
 * Return: 0 when sampling works, 5 (the kernel-unsupported exit status)
 * when it does not.
 */
int lp_check_kernel(FILE *out, bool verbose);

#endif /* LP_SESSION_BPF_CAPS_H */
