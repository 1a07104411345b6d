/*
 * fuzz_folded.c - libFuzzer harness for read_folded() (user/profile/read_folded.c).
 * Any input must give 0 or a negative errno with a message, never a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "user/profile/profile_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = profile__new("fuzz");
	char err[PROFILE_READ_ERRSZ];

	if (!p)
		return 0;
	err[0] = '\0';
	if (read_folded(p, (const char *)data, size, err, sizeof(err)) < 0 && !err[0])
		__builtin_trap(); /* every failure must say why */
	profile__free(p);
	return 0;
}
