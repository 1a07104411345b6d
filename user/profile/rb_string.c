// SPDX-License-Identifier: GPL-2.0
/*
 * rb_string.c - CRuby Strings (and paths) of a running process, read with
 * process_vm_readv(2) and made into valid UTF-8 C strings.
 *
 * A String is accepted only if its flags say T_STRING, and its length is
 * checked against a bound before it sizes a read: the names read are
 * those of iseqs and classes that may have been freed since the sample.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "rb_string.h"
#include "../util/util.h"
#include "../util/remote_mem.h"

/* Larger than any name liveprof reads: corruption. */
#define RB_STR_ABSURD (1LL << 24)
/* Member offsets past this are a broken offsets table, not a CRuby. */
#define RB_HDR_MAX (256 + 8)

/* A heap object's VALUE: not 0, not an immediate (Fixnum, Symbol, nil...). */
static bool heap_value(uint64_t v)
{
	return v && !(v & 7);
}

/* The bytes of one UTF-8 character starting at @s (at most @n), or 0 if
 * @s does not start a valid, shortest-form one. */
static size_t utf8_len(const uint8_t *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] < 0xe0)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] < 0xf0)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] < 0xf5)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/*
 * Copy @n bytes of @s into @out (@cap with the NUL) as one valid UTF-8 C
 * string: control bytes and bytes that start no valid character become
 * '?', and the copy stops on a character boundary when @out is full.
 */
static void copy_name(const uint8_t *s, size_t n, char *out, size_t cap)
{
	size_t i = 0, o = 0;

	while (i < n) {
		size_t len = utf8_len(s + i, n - i);

		if (len == 1 && s[i] < 0x20)
			len = 0;
		if (o + (len ? len : 1) >= cap)
			break;
		if (len) {
			memcpy(out + o, s + i, len);
			o += len;
			i += len;
		} else {
			out[o++] = '?';
			i++;
		}
	}
	out[o] = '\0';
}

/* Embedded Strings come in the one read of the object, others with a
 * second read of at most @cap + 2 bytes of their buffer. */
int rb_read_string(pid_t pid, const struct rb_offsets *o, uint64_t v, char *out, size_t cap)
{
	uint8_t obj[RB_HDR_MAX], text[RB_PATH_MAX + 3];
	size_t hdr = o->rstring_size, avail;
	uint64_t flags;
	int64_t len;
	ssize_t n;

	if (!heap_value(v))
		return -EINVAL;
	n = lp_remote_read(pid, v, obj, hdr, hdr);
	if (n < 0)
		return n;
	flags = lp_get_u64(obj, 0);
	if ((flags & RB_T_MASK) != RB_T_STRING)
		return -EINVAL;
	if (!(flags & o->rstring_noembed)) {
		len = (int64_t)((flags & o->rstring_elen_mask) >> o->rstring_elen_shift);
		avail = hdr - o->rstring_embed;
		if ((size_t)len > avail)
			return -EINVAL;
		copy_name(obj + o->rstring_embed, len, out, cap);
		return 0;
	}
	len = (int64_t)lp_get_u64(obj, o->rstring_len);
	if (len < 0 || len > RB_STR_ABSURD)
		return -EINVAL;
	/* up to three bytes more than fit: a character that crosses the end
	 * of @out is whole in @text, and copy_name leaves it out whole */
	if (cap > RB_PATH_MAX)
		return -EINVAL;
	if ((size_t)len > cap + 2)
		len = cap + 2;
	n = lp_remote_read(pid, lp_get_u64(obj, o->rstring_ptr), text, len, len);
	if (n < 0)
		return n;
	copy_name(text, len, out, cap);
	return 0;
}

/* The first of an Array [path, realpath] is a String too. */
int rb_read_path(pid_t pid, const struct rb_offsets *o, uint64_t pathobj, char *out, size_t cap)
{
	uint8_t obj[RB_HDR_MAX];
	size_t hdr = o->rarray_ptr + 8;
	uint64_t flags, first;
	int64_t len;
	ssize_t n;

	if (!heap_value(pathobj))
		return -EINVAL;
	n = lp_remote_read(pid, pathobj, obj, hdr, hdr);
	if (n < 0)
		return n;
	flags = lp_get_u64(obj, 0);
	if ((flags & RB_T_MASK) == RB_T_STRING)
		return rb_read_string(pid, o, pathobj, out, cap);
	if ((flags & RB_T_MASK) != RB_T_ARRAY)
		return -EINVAL;
	if (flags & o->rarray_embed_flag) {
		len = (int64_t)((flags & o->rarray_elen_mask) >> o->rarray_elen_shift);
		if (len < 1 || o->rarray_embed + 8 > hdr)
			return -EINVAL;
		first = lp_get_u64(obj, o->rarray_embed);
	} else {
		len = (int64_t)lp_get_u64(obj, o->rarray_len);
		if (len < 1 || len > RB_STR_ABSURD)
			return -EINVAL;
		n = lp_remote_read(pid, lp_get_u64(obj, o->rarray_ptr), &first, sizeof(first),
				   sizeof(first));
		if (n < 0)
			return n;
	}
	return rb_read_string(pid, o, first, out, cap);
}
