/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dwarf_aux.h - small libdw helpers shared by probe resolution and value
 * fetching.
 */
#ifndef LP_DWARF_AUX_H
#define LP_DWARF_AUX_H

#include <stddef.h>
#include <elfutils/libdw.h>

/**
 * dwarf_aux__die_name - DW_AT_name of @die, following abstract origins
 *
 * Return: the name (owned by libdw), or NULL.
 */
const char *dwarf_aux__die_name(Dwarf_Die *die);

/**
 * dwarf_aux__phys_scopes - the scopes physically containing @addr
 * @out: set to a malloc'ed array, innermost first; the caller frees it
 *
 * Unlike dwarf_getscopes(), whose chain continues into an inlined
 * function's abstract definition, this continues into the caller that
 * holds the inlined instance, up to the out-of-line function and the CU.
 *
 * Return: number of scopes, or -1 if no CU covers @addr.
 */
int dwarf_aux__phys_scopes(Dwarf *dbg, Dwarf_Addr addr, Dwarf_Die **out);

/**
 * dwarf_aux__split_unit - the split unit of a skeleton CU (split DWARF)
 * @dw: the Dwarf @unit was read from
 * @unit: a CU DIE; replaced by its split unit (in a .dwo that libdw found
 *        through DW_AT_dwo_name under the compilation directory) if any
 *
 * A -gsplit-dwarf binary keeps the line table in the skeleton and every
 * other DIE in the .dwo.
 *
 * Return: the Dwarf that @unit now belongs to (@dw when unchanged).
 */
Dwarf *dwarf_aux__split_unit(Dwarf *dw, Dwarf_Die *unit);


#endif
