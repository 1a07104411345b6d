// SPDX-License-Identifier: GPL-2.0
/*
 * test_python_eval.c - dwarf/python_eval: the evaluator's labels where
 * --trace py: probes, on this machine's CPython builds: Debian's
 * /usr/bin/python3.11 (DWARF in python3.11-dbg's file for its build-id,
 * an LTO build) and pyenv's libpython3.11 (its own DWARF).
 *
 * The label DIE is checked against what it is not read from: the line
 * table. resume_frame is followed by SET_LOCALS_FROM_FRAME(), the source
 * line after the label's, and the label's address must be one of that
 * line's is_stmt rows; each address must lie in _PyEval_EvalFrameDefault
 * (its .dynsym entry) and its file offset map back through PT_LOAD. The
 * start points must be jumps (the kernel emulates them), not resume_frame.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>
#include <elfutils/libdw.h>

#include "unit.h"
#include "elf_dynsym.h"
#include "dwarf/python_runtime.h"

#define DEB_PY	  "/usr/bin/python3.11"
#define DEB_DBG	  "/usr/lib/debug/.build-id/c5/61f3aa7232f2bd6ac6d56bd475f1c154a00486.debug"
#define PYENV_LIB "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0"

/* Is @path installed? If not, say the test that needs it is skipped. */
static bool present(const char *path)
{
	if (access(path, R_OK) == 0)
		return true;
	fprintf(stderr, "  skip: %s is not installed\n", path);
	return false;
}

/* Is @vaddr an is_stmt row of ceval.c:@line in the DWARF of @dwarf_path? */
static bool is_stmt_of_line(const char *dwarf_path, int line, uint64_t vaddr)
{
	int fd = open(dwarf_path, O_RDONLY);
	Dwarf *dbg = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
	Dwarf_Line **lines = NULL;
	size_t n = 0;
	bool found = false;

	if (dbg && dwarf_getsrc_file(dbg, "ceval.c", line, 0, &lines, &n) == 0) {
		for (size_t i = 0; i < n && !found; i++) {
			Dwarf_Addr a;
			bool stmt = false;

			if (dwarf_lineaddr(lines[i], &a) == 0 &&
			    dwarf_linebeginstatement(lines[i], &stmt) == 0)
				found = stmt && a == vaddr;
		}
	}
	free(lines);
	if (dbg)
		dwarf_end(dbg);
	if (fd >= 0)
		close(fd);
	return found;
}

/* Does @path hold a conditional or direct jump at file offset @off? */
static bool is_jump_at(const char *path, uint64_t off)
{
	uint8_t b[2] = {0};
	int fd = open(path, O_RDONLY);
	bool ok = fd >= 0 && pread(fd, b, 2, (off_t)off) == 2;

	if (fd >= 0)
		close(fd);
	return ok && ((b[0] >= 0x70 && b[0] <= 0x7f) || b[0] == 0xeb || b[0] == 0xe9 ||
		      (b[0] == 0x0f && b[1] >= 0x80 && b[1] <= 0x8f));
}

/* The start points: jumps the kernel emulates, none of them resume_frame. */
static void check_starts(const char *path, const struct py_eval_points *pts)
{
	CHECK(pts->n_start >= 1 && !pts->resume);
	for (int i = 0; i < pts->n_start; i++) {
		CHECK(is_jump_at(path, pts->start[i].offset));
		CHECK(pts->start[i].vaddr != pts->resume_vaddr);
	}
}

/* @p lies in _PyEval_EvalFrameDefault's hot part and its offset is right. */
static void check_in_eval(const char *path, const struct py_eval_point *p)
{
	GElf_Sym sym;
	GElf_Shdr sec;

	CHECK(dynsym(path, "_PyEval_EvalFrameDefault", &sym, &sec));
	CHECK(p->vaddr >= sym.st_value && p->vaddr < sym.st_value + sym.st_size);
	/* text: the executable segment maps file offsets at a fixed delta */
	CHECK(p->offset <= p->vaddr && (p->vaddr - p->offset) % 4096 == 0);
}

UNIT_TEST(debian_resume_frame_from_the_dbg_file)
{
	struct py_eval_points pts;
	char err[512];
	int r;

	if (!present(DEB_PY) || !present(DEB_DBG))
		return;
	r = python_eval_points(DEB_PY, false, &pts, err, sizeof(err));
	CHECK_EQ_INT(r, 0);
	if (r) {
		fprintf(stderr, "  %s\n", err);
		return;
	}
	CHECK_EQ_INT(pts.n_ret, 0);
	for (int i = 0; i < pts.n_start; i++)
		check_in_eval(DEB_PY, &pts.start[i]);
	/* 3.11.2's ceval.c: resume_frame: at 1721, SET_LOCALS_FROM_FRAME() at 1722 */
	CHECK(is_stmt_of_line(DEB_DBG, 1722, pts.resume_vaddr));
	/* gcc copied start_frame's recursion check four times; three
	 * conditional jumps enter the block before resume_frame (one copy
	 * jumps into another) */
	check_starts(DEB_PY, &pts);
	CHECK_EQ_INT(pts.n_start, 3);
}

UNIT_TEST(pyenv_resume_and_return_labels)
{
	struct py_eval_points pts;
	char err[512];
	int r;

	if (!present(PYENV_LIB))
		return;
	r = python_eval_points(PYENV_LIB, true, &pts, err, sizeof(err));
	CHECK_EQ_INT(r, 0);
	if (r) {
		fprintf(stderr, "  %s\n", err);
		return;
	}
	for (int i = 0; i < pts.n_start; i++)
		check_in_eval(PYENV_LIB, &pts.start[i]);
	/* 3.11.7's ceval.c: resume_frame: at 1716, SET_LOCALS_FROM_FRAME() at 1717 */
	CHECK(is_stmt_of_line(PYENV_LIB, 1717, pts.resume_vaddr));
	check_starts(PYENV_LIB, &pts);
	CHECK_EQ_INT(pts.n_ret, 2);
	for (int i = 0; i < pts.n_ret; i++)
		check_in_eval(PYENV_LIB, &pts.ret[i]);
	CHECK(pts.ret[0].vaddr != pts.ret[1].vaddr && pts.ret[0].vaddr != pts.start[0].vaddr);
}

UNIT_TEST(no_dwarf_says_what_would_work)
{
	struct py_eval_points pts;
	char err[512] = "";

	/* /bin/ls: stripped, and no debug file for its build-id here */
	CHECK_EQ_INT(python_eval_points("/bin/ls", false, &pts, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "no DWARF for '/bin/ls'") != NULL);
	CHECK(strstr(err, "python3.11-dbg") != NULL);
	CHECK(strchr(err, '\n') == NULL);
	CHECK_EQ_INT(python_eval_points("/nonexistent/python", false, &pts, err, sizeof(err)),
		     -ENOENT);
	CHECK(strstr(err, "cannot open") != NULL);
}

UNIT_MAIN()
