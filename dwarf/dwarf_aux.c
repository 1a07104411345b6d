// SPDX-License-Identifier: GPL-2.0
/*
 * dwarf_aux.c - small libdw helpers shared by probe resolution and value
 * fetching.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <dwarf.h>

#include "dwarf_aux.h"

const char *dwarf_aux__die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;

	if (!dwarf_attr_integrate(die, DW_AT_name, &a))
		return NULL;
	return dwarf_formstring(&a);
}

Dwarf *dwarf_aux__split_unit(Dwarf *dw, Dwarf_Die *unit)
{
	Dwarf_Die sub;
	uint8_t type;

	if (dwarf_cu_info(unit->cu, NULL, &type, NULL, &sub, NULL, NULL, NULL) == 0 &&
	    type == DW_UT_skeleton && dwarf_tag(&sub) == DW_TAG_compile_unit &&
	    dwarf_cu_getdwarf(sub.cu)) {
		*unit = sub;
		return dwarf_cu_getdwarf(sub.cu);
	}
	return dw;
}

int dwarf_aux__phys_scopes(Dwarf *dbg, Dwarf_Addr addr, Dwarf_Die **out)
{
	Dwarf_Die cu, *scopes = NULL;
	int n;

	*out = NULL;
	if (!dwarf_addrdie(dbg, addr, &cu))
		return -1;
	dwarf_aux__split_unit(dbg, &cu);
	n = dwarf_getscopes(&cu, addr, &scopes);
	if (n <= 0) {
		free(scopes); /* libdw may have allocated it before failing */
		return -1;
	}
	n = dwarf_getscopes_die(&scopes[0], out);
	free(scopes);
	return n;
}
