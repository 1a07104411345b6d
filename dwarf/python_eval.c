// SPDX-License-Identifier: GPL-2.0
/*
 * python_eval.c - where CPython's evaluator starts and ends a frame, for
 * --trace py:QUALNAME, from the labels of _PyEval_EvalFrameDefault.
 *
 * Why resume_frame and not start_frame: in 3.11 every frame's start runs
 * start_frame (the recursion check) and falls through to resume_frame,
 * which also resumes a frame whose callee returned. gcc duplicates
 * start_frame's few instructions into each `goto start_frame` (Debian's
 * 3.11.2 has four copies, and the label's address is one of them, the
 * one no jump reaches), so a probe on start_frame sees one path in four;
 * resume_frame is one address all paths reach. From it python_starts.c
 * finds the jumps that only starts take; failing that, BPF tells a start
 * from a resume by the frame (pytrace.bpf.h). Only DWARF says where the
 * labels are: a stripped interpreter needs its debug file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include "dwarf/debuginfo.h"
#include "dwarf/probe_prove.h"
#include "dwarf/probe_resolve.h"
#include "dwarf/python_eval_internal.h"
#include "dwarf/python_runtime.h"
#include "user/util/util.h"

#define EVAL_FUNC    "_PyEval_EvalFrameDefault"
#define RESUME_LABEL "resume_frame"
/* Returns, where a build has no USDT: the RETURN_VALUE handler (computed
 * gotos label it) and exit_unwind, which each frame an exception ends
 * passes; the frame is still the thread's current one at both. */
#define RETURN_LABEL "TARGET_RETURN_VALUE"
#define UNWIND_LABEL "exit_unwind"
/* and where a generator's frame yields: it leaves the evaluator too */
#define YIELD_LABEL "TARGET_YIELD_VALUE"

/* The label @name with an address below @die (depth-first), or -ENOENT. */
static int find_label(Dwarf_Die *die, const char *name, Dwarf_Addr *pc, int depth)
{
	Dwarf_Die child;
	const char *n;

	if (depth > 16 || dwarf_child(die, &child) != 0)
		return -ENOENT;
	do {
		int tag = dwarf_tag(&child);

		if (tag == DW_TAG_label) {
			n = dwarf_diename(&child);
			if (n && !strcmp(n, name) && dwarf_lowpc(&child, pc) == 0)
				return 0;
		} else if (tag == DW_TAG_lexical_block) {
			if (!find_label(&child, name, pc, depth + 1))
				return 0;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return -ENOENT;
}

/* The concrete (addressed) _PyEval_EvalFrameDefault of CU @cu. */
static int find_eval(Dwarf_Die *cu, Dwarf_Die *out)
{
	Dwarf_Addr base, lo, hi;

	if (dwarf_child(cu, out) != 0)
		return -ENOENT;
	do {
		const char *n;

		if (dwarf_tag(out) != DW_TAG_subprogram)
			continue;
		n = dwarf_diename(out);
		/* the concrete one has code: ranges (a hot and a cold part) */
		if (n && !strcmp(n, EVAL_FUNC) && dwarf_ranges(out, 0, &base, &lo, &hi) > 0)
			return 0;
	} while (dwarf_siblingof(out, out) == 0);
	return -ENOENT;
}

/*
 * The evaluator's code in the first CU that has it: with LTO (Debian's
 * build) that is a partition CU, whose subprogram refers to the abstract
 * one in ceval.c's CU, so every CU is looked at.
 */
static int eval_die(Dwarf *dbg, Dwarf_Die *fn)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dbg, off + hsize, &cu) && !find_eval(&cu, fn))
			return 0;
		off = next;
	}
	return -ENOENT;
}

/* Prove @vaddr an instruction boundary and turn it into a file offset. */
static int prove(Elf *elf, Dwarf *dbg, const char *path, const char *label, uint64_t vaddr,
		 uint64_t *offset, char *err, size_t errlen)
{
	struct probe_prover *p = NULL;
	struct prove_result res;
	int r = probe_prover__new(elf, dbg, &p);

	if (!r)
		r = probe_prove_boundary(p, vaddr, &res);
	probe_prover__free(p);
	if (r) {
		lp_errf(err, errlen,
			"refusing '%s' at 0x%" PRIx64 " in '%s': not proven an instruction "
			"boundary (%s)",
			label, vaddr, path, strerror(-r));
		return r;
	}
	r = elf_vaddr_to_offset(elf, vaddr, offset);
	if (r)
		lp_errf(err, errlen, "0x%" PRIx64 " in '%s' is in no loaded segment", vaddr, path);
	return r;
}

static void no_dwarf_msg(Elf *elf, const char *path, bool have_dwarf, const char *no_label,
			 char *err, size_t errlen)
{
	char hex[2 * 64 + 1] = "";

	if (debuginfo__hex_build_id(elf, hex))
		snprintf(hex, sizeof(hex), "none");
	if (no_label)
		lp_errf(err, errlen,
			"'%s' (build-id %s): the DWARF of " EVAL_FUNC " has no address for its "
			"label '%s', where py: traces probe; an interpreter built with -g at -O2 "
			"(Debian's with python3.11-dbg, pyenv's) has one",
			path, hex, no_label);
	else if (have_dwarf)
		lp_errf(err, errlen,
			"'%s' (build-id %s): its DWARF has no code of " EVAL_FUNC ", whose "
			"label '" RESUME_LABEL "' is where py: traces probe",
			path, hex);
	else
		lp_errf(err, errlen,
			"no DWARF for '%s' (build-id %s), and py: traces need its evaluator's "
			"label '" RESUME_LABEL "': install the debug file of this very build "
			"(Debian: python3.11-dbg of the same version as python3.11; a build-id in "
			"/usr/lib/debug/.build-id that differs is not used) or run an interpreter "
			"built with -g (pyenv)",
			path, hex);
}

/*
 * The start points: the jumps into the block before resume_frame that
 * only starts run (python_starts.c), else resume_frame (@resume), where
 * BPF tells starts from resumes by the frame; each proven.
 */
static int start_points(Elf *elf, Dwarf *dbg, Dwarf_Die *fn, const char *path, uint64_t resume,
			struct py_eval_points *out, char *err, size_t errlen)
{
	uint64_t v[PY_MAX_STARTS];
	int n = 0, r = python_eval_starts(elf, fn, resume, v, &n);

	if (r) {
		v[0] = resume;
		n = 1;
		out->resume = true;
	}
	for (int i = 0; i < n; i++) {
		out->start[i].vaddr = v[i];
		r = prove(elf, dbg, path, out->resume ? RESUME_LABEL : "frame start", v[i],
			  &out->start[i].offset, err, errlen);
		if (r)
			return r;
		out->n_start = i + 1;
	}
	return 0;
}

/* Find and prove the labels; the first missing one names itself in @missing. */
static int find_points(Elf *elf, Dwarf *dbg, const char *path, bool returns,
		       struct py_eval_points *out, const char **missing, char *err, size_t errlen)
{
	static const char *const ret_labels[] = {RETURN_LABEL, UNWIND_LABEL};
	Dwarf_Die fn;
	Dwarf_Addr pc;
	int r = eval_die(dbg, &fn);

	if (r)
		return r;
	*missing = RESUME_LABEL;
	if (find_label(&fn, RESUME_LABEL, &pc, 0))
		return -ENOENT;
	out->resume_vaddr = pc;
	r = start_points(elf, dbg, &fn, path, pc, out, err, errlen);
	for (int i = 0; returns && !r && i < 2; i++) {
		*missing = ret_labels[i];
		if (find_label(&fn, ret_labels[i], &pc, 0))
			return -ENOENT;
		out->ret[i].vaddr = pc;
		r = prove(elf, dbg, path, ret_labels[i], pc, &out->ret[i].offset, err, errlen);
		out->n_ret = i + 1;
	}
	if (returns && !r) {
		*missing = YIELD_LABEL;
		if (find_label(&fn, YIELD_LABEL, &pc, 0))
			return -ENOENT;
		out->yield.vaddr = pc;
		r = prove(elf, dbg, path, YIELD_LABEL, pc, &out->yield.offset, err, errlen);
	}
	*missing = NULL;
	return r;
}

int python_eval_points(const char *path, bool returns, struct py_eval_points *out, char *err,
		       size_t errlen)
{
	struct debuginfo_file dbgf = {.fd = -1};
	const char *missing = NULL;
	Dwarf *dbg = NULL;
	Elf *elf = NULL;
	int fd, r;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		lp_errf(err, errlen, "cannot open '%s': %s", path, strerror(-r));
		return r;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		lp_errf(err, errlen, "'%s' is not an ELF file", path);
		close(fd);
		return -ENOEXEC;
	}
	dbg = debuginfo__dwarf_begin(elf, path, &dbgf);
	r = dbg ? find_points(elf, dbg, path, returns, out, &missing, err, errlen) : -ENOENT;
	if (r == -ENOENT)
		no_dwarf_msg(elf, path, dbg != NULL, missing, err, errlen);
	if (dbg)
		dwarf_end(dbg);
	debuginfo__file_close(&dbgf);
	elf_end(elf);
	close(fd);
	return r;
}
