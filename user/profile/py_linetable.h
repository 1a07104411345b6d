/* SPDX-License-Identifier: GPL-2.0 */
/*
 * py_linetable.h - a line from CPython 3.11+'s location table.
 */
#ifndef LP_PY_LINETABLE_H
#define LP_PY_LINETABLE_H

#include <stdint.h>

/**
 * py_linetable_line() - the line of code unit @unit by a location table
 * @lt: the table (co_linetable's bytes), @len bytes of it
 * @len: its length
 * @firstlineno: the code object's co_firstlineno, where the deltas start
 * @unit: the code unit, counted from the code's first
 *
 * Entries are a header byte (bit 7 set, bits 3-6 the form, bits 0-2 the
 * code units covered minus one) and the form's payload.
 *
 * Return: the line, or -1 when the unit has none or the table ends first.
 */
int py_linetable_line(const uint8_t *lt, uint32_t len, int firstlineno, uint64_t unit);

#endif /* LP_PY_LINETABLE_H */
