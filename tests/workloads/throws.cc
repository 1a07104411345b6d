/*
 * throws.cc - traced functions that a C++ exception passes through: a
 * return probe there put the [uprobes] trampoline where libgcc's unwinder
 * looks for the caller, and the target ended in std::terminate().
 *
 * Round i calls middle(i), which calls thrower(i), under try/catch. The
 * rounds follow a 20-round cycle:
 *   - 15 return: 12 spin for 1 ms and 3 for 4 ms, so the returning calls'
 *     p50 is 1 ms and their p95 4 ms, each inside a plateau;
 *   - 5 (i % 4 == 3) spin for 2 ms and throw from thrower(): the exception
 *     unwinds thrower's and middle's frames to main's catch.
 * The last round returns, so each skipped call is followed by another
 * entry (where its frame is found stale). main times each returning call
 * and writes the latencies (ns, one per line) to OUTFILE; it prints
 * "calls N" and "caught J".
 * Usage: throws ROUNDS OUTFILE [wait]  (wait: read a line from stdin before
 * the first round, so that a profiler can attach with -p first)
 */
#include <stdexcept>
#include <stdio.h>
#include <stdlib.h>
#include "spin.h"

__attribute__((noinline)) int thrower(int i)
{
	volatile int frame = i;

	if (i % 4 == 3) {
		spin(2000000);
		throw std::runtime_error("thrown through middle");
	}
	spin(i % 20 < 16 ? 1000000 : 4000000);
	return frame;
}

__attribute__((noinline)) int middle(int i)
{
	volatile int frame = thrower(i);

	return frame + 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 400, timed = 0, caught = 0;
	long *lat = (long *)calloc(n > 0 ? n : 1, sizeof(*lat));

	if (argc < 3 || !lat || n < 1)
		return 2;
	if (argc > 3) {
		char line[16];

		if (!fgets(line, sizeof(line), stdin))
			return 2;
	}
	if (n % 4 == 0) /* the last round (n - 1) would throw */
		n--;
	for (long i = 0; i < n; i++) {
		long t0 = now_ns();

		try {
			middle((int)i);
			lat[timed++] = now_ns() - t0;
		} catch (const std::exception &) {
			caught++;
		}
	}
	if (write_latencies(argv[2], lat, timed))
		return 1;
	printf("calls %ld\ncaught %ld\n", n, caught);
	return 0;
}
