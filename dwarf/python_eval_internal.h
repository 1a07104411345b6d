/* SPDX-License-Identifier: GPL-2.0 */
/*
 * python_eval_internal.h - between python_eval.c and python_starts.c.
 */
#ifndef LP_DWARF_PYTHON_EVAL_INTERNAL_H
#define LP_DWARF_PYTHON_EVAL_INTERNAL_H

#include <stdint.h>
#include <libelf.h>
#include <elfutils/libdw.h>

#include "dwarf/python_runtime.h"

/*
 * python_eval_starts - the instructions that enter the block every frame
 * start runs just before @resume (resume_frame's address) and no resume
 * does, decoded from the evaluator @fn's code in @elf
 * @out: at least PY_MAX_STARTS entries; @n: how many were written
 *
 * Return: 0; -ENOENT when starts cannot be told from resumes by address;
 * -EILSEQ, -ERANGE when the code cannot be decoded; -ENOMEM.
 */
int python_eval_starts(Elf *elf, Dwarf_Die *fn, uint64_t resume, uint64_t *out, int *n);

#endif
