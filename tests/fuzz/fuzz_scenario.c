/*
 * fuzz_scenario.c - libFuzzer harness for scenario_parse() (user/synth/scenario.c);
 * a spec that parses is also written out as C, which must not crash either.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "user/synth/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scenario sc;
	char err[512];

	memset(&sc, 0, sizeof(sc));
	err[0] = '\0';
	if (scenario_parse(&sc, (const char *)data, size, err, sizeof(err)) == 0) {
		struct emit_opts o;
		FILE *f = fopen("/dev/null", "w");

		memset(&o, 0, sizeof(o));
		o.out_path = "fuzz.c";
		o.source = "fuzz";
		if (f) {
			scenario_write_c(f, &sc, &o);
			fclose(f);
		}
	} else if (!err[0]) {
		__builtin_trap();
	}
	scenario_free(&sc);
	return 0;
}
