/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cfi_internal.h - what cfi_table.c and cfi_classify.c share; not an API.
 */
#ifndef LP_DWARF_CFI_INTERNAL_H
#define LP_DWARF_CFI_INTERNAL_H

#include <stdbool.h>
#include <elfutils/libdw.h>

#include "dwarf/cfi_table.h"

#define REG_RBP 6
#define REG_RSP 7
#define REG_RIP 16

/**
 * cfi_classify - reduce the row @f (one CFI row from dwarf_cfi_addrframe)
 * @signal: the FDE is a signal frame's (its CIE augmentation has 'S')
 * @r: receives the rule; its range is the caller's
 */
void cfi_classify(Dwarf_Frame *f, bool signal, struct cfi_row *r);

#endif
