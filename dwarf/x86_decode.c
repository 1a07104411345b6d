// SPDX-License-Identifier: GPL-2.0
/*
 * x86_decode.c - an x86-64 instruction length decoder, and the return sites of a
 * function found with it.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include "dwarf/dwarf_aux.h"
#include "dwarf/probe_resolve.h"
#include "dwarf/probe_internal.h"

/* ---- x86-64 length decoder ------------------------------------------ */

static bool is_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0x66:
	case 0x67:
	case 0xf0:
	case 0xf2:
	case 0xf3:
	case 0x2e:
	case 0x36:
	case 0x3e:
	case 0x26:
	case 0x64:
	case 0x65:
		return true;
	}
	return false;
}

/*
 * Decode one instruction's length; @opcode and @map_out report the opcode
 * byte and its map (0 one-byte, 1 0F, 2 0F38, 3 0F3A, >3 VEX/EVEX/XOP maps).
 *
 * Long on purpose: it reads like the Intel SDM's opcode tables, prefixes,
 * then escape maps, then ModRM/SIB/displacement, then immediates, one pass
 * over the bytes; cutting it into helpers would pass half a dozen pieces of
 * decoder state around and hide which byte is read where.
 */
static int x86_decode(const uint8_t *p, size_t avail, uint8_t *opcode, int *map_out)
{
	size_t i = 0, disp = 0, imm = 0;
	bool o16 = false, a32 = false, rexw = false, modrm = true, vex = false;
	int map = 0;
	uint8_t op, m;

	if (avail > 15)
		avail = 15;
	while (i < avail && is_legacy_prefix(p[i])) {
		o16 |= p[i] == 0x66;
		a32 |= p[i] == 0x67;
		i++;
	}
	if (i < avail && (p[i] & 0xf0) == 0x40) {
		rexw = p[i] & 8;
		i++;
	}
	if (i >= avail)
		return -1;
	op = p[i];

	if (op == 0xc5 || op == 0xc4 || op == 0x62 ||
	    (op == 0x8f && i + 1 < avail && (p[i + 1] & 0x1f) >= 8)) {
		/* VEX, EVEX and XOP: the payload selects the map */
		size_t plen = op == 0xc5 ? 1 : op == 0x62 ? 3 : 2;

		if (i + plen + 1 >= avail)
			return -1;
		if (op == 0xc5)
			map = 1;
		else if (op == 0x62)
			map = p[i + 1] & 7;
		else
			map = p[i + 1] & 0x1f;
		if (op == 0x8f)
			map += 100; /* keep XOP maps apart from VEX ones */
		i += plen + 1;
		op = p[i++];
		vex = true;
		if (map == 1 && op == 0x77)
			modrm = false; /* vzeroupper / vzeroall */
		if (map == 3 || map == 108 ||
		    (map == 1 && ((op >= 0x70 && op <= 0x73) || op == 0xc2 || op == 0xc4 ||
				  op == 0xc5 || op == 0xc6)))
			imm = 1;
		else if (map == 110)
			imm = 4;
	} else if (op == 0x0f) {
		if (++i >= avail)
			return -1;
		op = p[i++];
		if (op == 0x38 || op == 0x3a) {
			map = op == 0x38 ? 2 : 3;
			if (i >= avail)
				return -1;
			op = p[i++];
			imm = map == 3;
		} else {
			map = 1;
			switch (op) {
			case 0x05:
			case 0x06:
			case 0x07:
			case 0x08:
			case 0x09:
			case 0x0b:
			case 0x0e:
			case 0x30 ... 0x37:
			case 0x77:
			case 0xa0:
			case 0xa1:
			case 0xa2:
			case 0xa8:
			case 0xa9:
			case 0xaa:
			case 0xc8 ... 0xcf:
				modrm = false;
				break;
			case 0x80 ... 0x8f:
				modrm = false;
				imm = 4;
				break;
			case 0x70 ... 0x73:
			case 0xa4:
			case 0xac:
			case 0xba:
			case 0xc2:
			case 0xc4:
			case 0xc5:
			case 0xc6:
			case 0x0f:
				imm = 1;
				break;
			}
		}
	} else {
		size_t immz = o16 ? 2 : 4;

		i++;
		modrm = false;
		if (op < 0x40) {
			switch (op & 7) {
			case 0:
			case 1:
			case 2:
			case 3:
				modrm = true;
				break;
			case 4:
				imm = 1;
				break;
			case 5:
				imm = immz;
				break;
			default:
				return -1; /* push/pop seg, daa...: invalid in 64-bit mode */
			}
		} else {
			switch (op) {
			case 0x50 ... 0x5f:
			case 0x6c ... 0x6f:
			case 0x90 ... 0x99:
			case 0x9b ... 0x9f:
			case 0xa4 ... 0xa7:
			case 0xaa ... 0xaf:
			case 0xc3:
			case 0xc9:
			case 0xcb:
			case 0xcc:
			case 0xcf:
			case 0xd7:
			case 0xec ... 0xef:
			case 0xf1:
			case 0xf4:
			case 0xf5:
			case 0xf8 ... 0xfd:
				break;
			case 0x63:
			case 0x84 ... 0x8f:
			case 0xd0 ... 0xd3:
			case 0xd8 ... 0xdf:
			case 0xfe:
			case 0xff:
			case 0xf6:
			case 0xf7:
				modrm = true;
				break;
			case 0x68:
			case 0xa9:
				imm = immz;
				break;
			case 0x69:
			case 0x81:
			case 0xc7:
				modrm = true;
				imm = immz;
				break;
			case 0x6a:
			case 0x70 ... 0x7f:
			case 0xa8:
			case 0xb0 ... 0xb7:
			case 0xcd:
			case 0xe0 ... 0xe7:
			case 0xeb:
				imm = 1;
				break;
			case 0x6b:
			case 0x80:
			case 0x83:
			case 0xc0:
			case 0xc1:
			case 0xc6:
				modrm = true;
				imm = 1;
				break;
			case 0xa0 ... 0xa3:
				imm = a32 ? 4 : 8; /* moffs */
				break;
			case 0xb8 ... 0xbf:
				imm = rexw ? 8 : immz;
				break;
			case 0xc2:
			case 0xca:
				imm = 2;
				break;
			case 0xc8:
				imm = 3;
				break;
			case 0xe8:
			case 0xe9:
				imm = 4;
				break;
			default:
				return -1;
			}
		}
	}
	if (modrm) {
		if (i >= avail)
			return -1;
		m = p[i++];
		if ((m >> 6) != 3) {
			if ((m & 7) == 4) {
				if (i >= avail)
					return -1;
				if ((m >> 6) == 0 && (p[i] & 7) == 5)
					disp = 4;
				i++;
			}
			if ((m >> 6) == 0 && (m & 7) == 5)
				disp = 4;
			else if ((m >> 6) == 1)
				disp = 1;
			else if ((m >> 6) == 2)
				disp = 4;
		}
		/* test r/m, imm: only /0 and /1 of F6/F7 carry an immediate */
		if (!vex && map == 0 && (op == 0xf6 || op == 0xf7) && ((m >> 3) & 7) < 2)
			imm = op == 0xf6 ? 1 : (o16 ? 2 : 4);
	}
	i += disp + imm;
	if (i > avail)
		return -1;
	*opcode = op;
	*map_out = vex ? map + 1000 : map;
	return (int)i;
}

int x86_insn_length(const uint8_t *p, size_t avail)
{
	uint8_t op;
	int map;

	if (!p)
		return -1;
	return x86_decode(p, avail, &op, &map);
}

/* The relative operand sits in the last @n bytes of the instruction. */
static int64_t rel_at_end(const uint8_t *p, int len, int n)
{
	if (n == 1)
		return (int8_t)p[len - 1];
	return (int32_t)((uint32_t)p[len - 4] | (uint32_t)p[len - 3] << 8 |
			 (uint32_t)p[len - 2] << 16 | (uint32_t)p[len - 1] << 24);
}

/* The opcode byte's position: after legacy prefixes and REX. */
static size_t opcode_pos(const uint8_t *p, int len)
{
	size_t i = 0;

	while ((int)i < len && is_legacy_prefix(p[i]))
		i++;
	if ((int)i < len && (p[i] & 0xf0) == 0x40)
		i++;
	return i;
}

int x86_insn_info(const uint8_t *p, size_t avail, struct x86_insn *out)
{
	uint8_t op;
	int map, len;

	memset(out, 0, sizeof(*out));
	if (!p || (len = x86_decode(p, avail, &op, &map)) <= 0)
		return -1;
	out->len = len;
	if (map == 0) {
		size_t at = opcode_pos(p, len);
		uint8_t reg = (int)at + 1 < len ? (p[at + 1] >> 3) & 7 : 0;

		if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3)) {
			out->flow = X86_FLOW_JCC;
			out->rel = rel_at_end(p, len, 1);
		} else if (op == 0xeb || op == 0xe9) {
			out->flow = X86_FLOW_JMP;
			out->rel = rel_at_end(p, len, op == 0xeb ? 1 : 4);
		} else if (op == 0xe8) {
			out->flow = X86_FLOW_CALL;
			out->rel = rel_at_end(p, len, 4);
		} else if (op == 0xc3 || op == 0xc2) {
			out->flow = X86_FLOW_RET;
		} else if (op == 0xff && (reg == 2 || reg == 3)) {
			out->flow = X86_FLOW_CALL_IND;
		} else if (op == 0xff && (reg == 4 || reg == 5)) {
			out->flow = X86_FLOW_JMP_IND;
		}
	} else if (map == 1 && op >= 0x80 && op <= 0x8f) {
		out->flow = X86_FLOW_JCC;
		out->rel = rel_at_end(p, len, 4);
	}
	return len;
}

int probe_return_sites(Elf *elf, uint64_t vaddr, uint64_t size, uint64_t **out, size_t *n_out)
{
	uint64_t off, end_off;
	Elf_Data *d;
	const uint8_t *p;
	uint64_t *v = NULL;
	size_t n = 0, cap = 0, i = 0;

	*out = NULL;
	*n_out = 0;
	if (!size || size > MAX_DECODE_BYTES || vaddr + size < vaddr)
		return -EINVAL;
	if (elf_vaddr_to_offset(elf, vaddr, &off) ||
	    elf_vaddr_to_offset(elf, vaddr + size - 1, &end_off) || end_off - off != size - 1)
		return -ENOENT;
	d = elf_getdata_rawchunk(elf, (int64_t)off, size, ELF_T_BYTE);
	if (!d || !d->d_buf || d->d_size < size)
		return -ENOENT;
	p = d->d_buf;
	while (i < size) {
		uint8_t op;
		int map, len = x86_decode(p + i, size - i, &op, &map);

		if (len <= 0) {
			free(v);
			return -EILSEQ;
		}
		if (map == 0 && (op == 0xc3 || op == 0xc2)) {
			if (n == cap) {
				size_t c = cap ? cap * 2 : 8;
				uint64_t *nv = realloc(v, c * sizeof(*nv));

				if (!nv) {
					free(v);
					return -ENOMEM;
				}
				v = nv;
				cap = c;
			}
			v[n++] = vaddr + i;
		}
		i += (size_t)len;
	}
	*out = v;
	*n_out = n;
	return 0;
}
