/* SPDX-License-Identifier: GPL-2.0 */
/*
 * target_kind.h - what the session's targets are, as far as loading BPF
 * programs goes: verifying the `ret`-instruction program takes about
 * 0.4 s and the py: pair 0.2 s of a tracing session's 1.3 s load, for
 * targets that cannot use them.
 */
#ifndef LP_USER_TARGET_KIND_H
#define LP_USER_TARGET_KIND_H

#include <stdbool.h>

#include "user/session/options.h"

/**
 * target_kind__needs - which optional tracing programs @o's targets need
 * @ret_insn: set when a target's returns are probed on `ret` instructions:
 *	a Go binary (its runtime moves stacks), or a program that may unwind
 *	or switch its stack (C++ exceptions, coroutines: elf_uretprobe_unsafe()),
 *	which a return probe's trampoline would abort
 * @python: set when a target is CPython, or a spec asks for py:
 *
 * The targets are the -p processes' executables, or the command's
 * program (found in PATH; a '#!' script by its interpreter line). With -a,
 * or a target that cannot be read, both are set: a program not loaded now
 * cannot be loaded later in the session.
 */
void target_kind__needs(const struct options *o, bool *ret_insn, bool *python);

#endif
