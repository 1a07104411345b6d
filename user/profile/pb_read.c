// SPDX-License-Identifier: GPL-2.0
/*
 * pb_read.c - protobuf wire format and gzip for the pprof reader (see pb_read.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "user/profile/pb_read.h"
#include "user/profile/profile_read.h" /* PPROF_MAX_INFLATED */
#include "user/util/util.h"

int pb_varint(struct pb *b, uint64_t *v)
{
	uint64_t x = 0;
	int shift;

	for (shift = 0; shift < 64; shift += 7) {
		uint8_t c;

		if (b->p >= b->end)
			return -EINVAL;
		c = *b->p++;
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EINVAL; /* more than 10 bytes */
}

/*
 * Read one field header and its payload: varints land in *@v, length-
 * delimited payloads in *@sub. Fixed-width fields are skipped (*@v = 0).
 */
int pb_field(struct pb *b, uint32_t *field, int *wt, uint64_t *v, struct pb *sub)
{
	uint64_t key, len;

	if (pb_varint(b, &key))
		return -EINVAL;
	*field = (uint32_t)(key >> 3);
	*wt = (int)(key & 7);
	if ((key >> 3) == 0 || (key >> 3) > UINT32_MAX)
		return -EINVAL;
	*v = 0;
	switch (*wt) {
	case WT_VARINT:
		return pb_varint(b, v);
	case WT_I64:
		if (b->end - b->p < 8)
			return -EINVAL;
		b->p += 8;
		return 0;
	case WT_I32:
		if (b->end - b->p < 4)
			return -EINVAL;
		b->p += 4;
		return 0;
	case WT_LEN:
		if (pb_varint(b, &len) || len > (uint64_t)(b->end - b->p))
			return -EINVAL;
		sub->p = b->p;
		sub->end = b->p + len;
		b->p += len;
		return 0;
	default:
		/* Groups (3, 4) are deprecated and never appear in profile.proto. */
		return -EINVAL;
	}
}

int pb_inflate(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len, char *err,
	       size_t errsz)
{
	size_t cap = len * 4 + 4096, n = 0;
	z_stream zs = {0};
	uint8_t *buf;
	int zr, ret = 0;

	if (len < 2 || in[0] != 0x1f || in[1] != 0x8b) {
		lp_errf(err, errsz, "not a pprof file: it is not gzip-compressed");
		return -EINVAL;
	}
	if (cap > PPROF_MAX_INFLATED)
		cap = PPROF_MAX_INFLATED;
	buf = malloc(cap);
	if (!buf) {
		lp_errf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	/* 16 + MAX_WBITS: accept the gzip wrapper only. */
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
		free(buf);
		lp_errf(err, errsz, "cannot initialise zlib");
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = len > UINT32_MAX ? UINT32_MAX : (uInt)len;
	for (;;) {
		if (n == cap) {
			uint8_t *nb;

			if (cap >= PPROF_MAX_INFLATED) {
				lp_errf(err, errsz, "not a pprof file: it inflates beyond %lu MiB",
					PPROF_MAX_INFLATED >> 20);
				ret = -EFBIG;
				break;
			}
			cap = cap * 2 > PPROF_MAX_INFLATED ? PPROF_MAX_INFLATED : cap * 2;
			nb = realloc(buf, cap);
			if (!nb) {
				lp_errf(err, errsz, "out of memory");
				ret = -ENOMEM;
				break;
			}
			buf = nb;
		}
		zs.next_out = buf + n;
		zs.avail_out = (uInt)(cap - n > UINT32_MAX ? UINT32_MAX : cap - n);
		zr = inflate(&zs, Z_NO_FLUSH);
		n = (size_t)(zs.next_out - buf);
		if (zr == Z_STREAM_END)
			break;
		if (zr == Z_OK)
			continue;
		if (zr == Z_BUF_ERROR && zs.avail_out != 0) {
			lp_errf(err, errsz, "not a pprof file: the gzip data is truncated");
			ret = -EINVAL;
		} else if (zr == Z_BUF_ERROR) {
			continue;
		} else {
			lp_errf(err, errsz, "not a pprof file: corrupt gzip data (%s)",
				zs.msg ? zs.msg : "unknown error");
			ret = zr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
		}
		break;
	}
	inflateEnd(&zs);
	if (ret) {
		free(buf);
		return ret;
	}
	*out = buf;
	*out_len = n;
	return 0;
}
