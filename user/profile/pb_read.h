/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pb_read.h - the protobuf wire format and gzip, as far as reading a pprof
 * profile needs them: bounds-checked varints and fields over a byte range.
 */
#ifndef LP_PROFILE_PB_READ_H
#define LP_PROFILE_PB_READ_H

#include <stddef.h>
#include <stdint.h>

/* A byte range being read; every read checks it against @end. */
struct pb {
	const uint8_t *p, *end;
};

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/**
 * pb_varint - read one base-128 varint from @b
 *
 * Return: 0, or -EBADMSG when it runs past the end or past 10 bytes.
 */
int pb_varint(struct pb *b, uint64_t *v);

/**
 * pb_field - read the next field of @b
 * @field: its number
 * @wt: its wire type (WT_*)
 * @v: the value of VARINT, I64 and I32 fields
 * @sub: the bytes of a LEN field (inside @b)
 *
 * Return: 0, -ENODATA at the end of @b, or -EBADMSG when malformed.
 */
int pb_field(struct pb *b, uint32_t *field, int *wt, uint64_t *v, struct pb *sub);

/**
 * pb_inflate - gunzip @len bytes at @in into a new buffer
 * @out: receives the buffer; the caller frees it
 * @err: a one-line message on failure
 *
 * The output is bounded, so a zip bomb is refused rather than followed.
 * Return: 0 or a negative errno.
 */
int pb_inflate(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len, char *err,
	       size_t errsz);

#endif
