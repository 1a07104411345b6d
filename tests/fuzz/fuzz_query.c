/*
 * fuzz_query.c - libFuzzer harness for the HTTP server's parsing of what a
 * client controls (user/serve/query.c): the "seconds" parameter (decoded,
 * NULs included), the listen address and the bearer token check. Any input
 * must give a defined answer, never a crash or an out-of-range value.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "user/serve/query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct sockaddr_storage ss;
	socklen_t len;
	bool lo, b;
	int sec = -1, err;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	/* By length, as the server calls it: NUL bytes are part of the value. */
	err = query__seconds(s, size, 30, QUERY_MAX_SECONDS, &sec);
	if (!err && (sec < 1 || sec > QUERY_MAX_SECONDS))
		__builtin_trap();
	if (err && err != -EINVAL && err != -ERANGE)
		__builtin_trap();
	if (!err && (memchr(data, 0, size) || !size))
		__builtin_trap(); /* only digits pass */
	err = query__addr(s, &ss, &len, &lo);
	if (!err && len > sizeof(ss))
		__builtin_trap();
	query__bool(s, false, &b);
	/* The token check: accept exactly "Bearer <token>". */
	if (query__bearer_ok(s, "t0ken") != !strcmp(s, "Bearer t0ken"))
		__builtin_trap();
	if (query__token_ok(s, "t0ken") != !strcmp(s, "t0ken"))
		__builtin_trap();
	free(s);
	return 0;
}
