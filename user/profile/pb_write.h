/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pb_write.h - the protobuf wire format and gzip, as far as writing a pprof
 * profile needs them: a growable buffer with varints and fields. The
 * reading side is pb_read.h; its WT_* wire types are shared.
 */
#ifndef LP_PROFILE_PB_WRITE_H
#define LP_PROFILE_PB_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "user/profile/pb_read.h"

/* A message being written; zero-initialise, free(d) when done. */
struct pbuf {
	uint8_t *d;
	size_t len, cap;
	bool oom; /* sticky: callers check once at the end */
};

/**
 * pbw_put - append @len raw bytes to @b
 *
 * On allocation failure @b->oom is set and later writes are dropped.
 */
void pbw_put(struct pbuf *b, const void *data, size_t len);

/**
 * pbw_varint - append @v as a base-128 varint
 */
void pbw_varint(struct pbuf *b, uint64_t v);

/**
 * pbw_tag - append the key of field @field with wire type @wt (WT_*)
 */
void pbw_tag(struct pbuf *b, unsigned field, unsigned wt);

/**
 * pbw_uint - append VARINT field @field, unless @v is 0 (the proto3 default)
 */
void pbw_uint(struct pbuf *b, unsigned field, uint64_t v);

/**
 * pbw_bytes - append LEN field @field holding @len bytes at @data
 */
void pbw_bytes(struct pbuf *b, unsigned field, const void *data, size_t len);

/**
 * pbw_msg - append @sub as embedded message field @field
 *
 * An out-of-memory @sub makes @b out of memory too.
 */
void pbw_msg(struct pbuf *b, unsigned field, const struct pbuf *sub);

/**
 * pbw_gzip - gzip @len bytes at @data into @out and flush it
 *
 * Return: 0, -ENOMEM when zlib cannot start, or -EIO on a write error.
 */
int pbw_gzip(FILE *out, const uint8_t *data, size_t len);

#endif
