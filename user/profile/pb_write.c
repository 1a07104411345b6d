// SPDX-License-Identifier: GPL-2.0
/*
 * pb_write.c - the protobuf wire format, write side: a growable buffer,
 * varints, tagged fields, embedded messages, and the gzip wrapper pprof
 * files are stored in. What is encoded is write_pprof.c's business.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "user/profile/pb_write.h"

void pbw_put(struct pbuf *b, const void *data, size_t len)
{
	if (b->oom)
		return;
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *n;

		while (cap < b->len + len)
			cap *= 2;
		n = realloc(b->d, cap);
		if (!n) {
			b->oom = true;
			return;
		}
		b->d = n;
		b->cap = cap;
	}
	memcpy(b->d + b->len, data, len);
	b->len += len;
}

void pbw_varint(struct pbuf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n] = v & 0x7f;
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	pbw_put(b, tmp, n);
}

void pbw_tag(struct pbuf *b, unsigned field, unsigned wt)
{
	pbw_varint(b, ((uint64_t)field << 3) | wt);
}

/* proto3: zero is the default and need not be written. */
void pbw_uint(struct pbuf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pbw_tag(b, field, WT_VARINT);
	pbw_varint(b, v);
}

void pbw_bytes(struct pbuf *b, unsigned field, const void *data, size_t len)
{
	pbw_tag(b, field, WT_LEN);
	pbw_varint(b, len);
	pbw_put(b, data, len);
}

void pbw_msg(struct pbuf *b, unsigned field, const struct pbuf *sub)
{
	if (sub->oom)
		b->oom = true;
	pbw_bytes(b, field, sub->d, sub->len);
}

int pbw_gzip(FILE *out, const uint8_t *data, size_t len)
{
	uint8_t chunk[64 * 1024];
	z_stream zs = {0};
	int zr, err = 0;

	/* windowBits 15 + 16: a gzip header and trailer, as pprof expects. */
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *)data;
	zs.avail_in = len;
	do {
		zs.next_out = chunk;
		zs.avail_out = sizeof(chunk);
		zr = deflate(&zs, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			err = -EIO;
			break;
		}
		if (fwrite(chunk, 1, sizeof(chunk) - zs.avail_out, out) !=
		    sizeof(chunk) - zs.avail_out) {
			err = -EIO;
			break;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&zs);
	if (!err && (fflush(out) || ferror(out)))
		err = -EIO;
	return err;
}
