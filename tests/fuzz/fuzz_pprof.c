/*
 * fuzz_pprof.c - libFuzzer harness for read_pprof() (user/profile/read_pprof.c).
 * The input is taken as the gzip'ed file and, when it does not start with
 * the gzip magic, also gzip'ed here first so that the fuzzer reaches the
 * protobuf decoder, not just zlib's header check.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "user/profile/profile_read.h"

static void one(const void *buf, size_t len)
{
	struct profile *p = profile__new("fuzz");
	char err[PROFILE_READ_ERRSZ];

	if (!p)
		return;
	err[0] = '\0';
	if (read_pprof(p, buf, len, err, sizeof(err)) < 0 && !err[0])
		__builtin_trap();
	profile__free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one(data, size);
	if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b)
		return 0;

	/* gzip the raw bytes: a protobuf body under a valid gzip wrapper */
	z_stream z = { 0 };
	size_t cap = size + size / 8 + 128;
	unsigned char *gz = malloc(cap);

	if (!gz)
		return 0;
	if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK) {
		z.next_in = (unsigned char *)data;
		z.avail_in = (uInt)size;
		z.next_out = gz;
		z.avail_out = (uInt)cap;
		if (deflate(&z, Z_FINISH) == Z_STREAM_END)
			one(gz, z.total_out);
		deflateEnd(&z);
	}
	free(gz);
	return 0;
}
