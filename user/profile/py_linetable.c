// SPDX-License-Identifier: GPL-2.0
/*
 * py_linetable.c - a line from CPython 3.11+'s location table
 * (co_linetable, CPython's Objects/locations.md).
 */
#include <limits.h>

#include "py_linetable.h"

/* A varint of the location table: 6 bits a byte, low first, 0x40 = more. */
static uint32_t lt_varint(const uint8_t *lt, uint32_t len, uint32_t *i)
{
	uint32_t v = 0, shift = 0;

	while (*i < len) {
		uint8_t b = lt[(*i)++];

		if (shift < 32)
			v |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

static int32_t lt_svarint(const uint8_t *lt, uint32_t len, uint32_t *i)
{
	uint32_t v = lt_varint(lt, len, i);

	return v & 1 ? -(int32_t)(v >> 1) : (int32_t)(v >> 1);
}

int py_linetable_line(const uint8_t *lt, uint32_t len, int firstlineno, uint64_t unit)
{
	uint32_t i = 0;
	int64_t line = firstlineno;
	uint64_t start = 0;

	while (i < len) {
		uint8_t h = lt[i++];
		unsigned int form = h >> 3 & 15;
		uint64_t end = start + (h & 7) + 1;

		if (!(h & 0x80))
			return -1; /* not an entry start: a corrupt table */
		if (form == 14) {  /* long: line delta, end line, columns */
			line += lt_svarint(lt, len, &i);
			for (int k = 0; k < 3; k++)
				lt_varint(lt, len, &i);
		} else if (form == 13) { /* no columns */
			line += lt_svarint(lt, len, &i);
		} else if (form >= 10 && form <= 12) { /* one line, two column bytes */
			line += form - 10;
			i += 2;
		} else if (form < 10) { /* short: same line, one column byte */
			i += 1;
		}
		if (unit < end)
			return form == 15 || line < 0 || line > INT_MAX ? -1 : (int)line;
		start = end;
	}
	return -1;
}
