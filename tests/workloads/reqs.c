/*
 * reqs.c - values and per-value latency: handle(req, name) spins by
 * req->kind (kind 0 "alpha": 200 us, 70% of calls; kind 1 "beta": 2 ms,
 * 20%; kind 2 "gamma": 400 us, 10%) and returns kind * 100 + 7.
 * Prints "kind K calls C name NAME ret R" per kind at exit. With
 * REQS_TIMES=FILE set, also writes "KIND NS" per call to FILE: each call's
 * duration by the program's own clock, around the call (probes included).
 * Usage: reqs N
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct req {
	int id;
	int kind;
	const char *name;
};

static const char *const names[3] = { "alpha", "beta", "gamma" };
static const long spin_ns[3] = { 200000, 2000000, 400000 };

static long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

__attribute__((noinline)) int handle(struct req *req, const char *name)
{
	volatile int frame = 0;
	long end = now_ns() + spin_ns[req->kind];

	while (now_ns() < end)
		frame++;
	return req->kind * 100 + 7 + (name[0] == '\0');
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	long calls[3] = { 0 }, rets[3] = { 0 };
	const char *times_path = getenv("REQS_TIMES");
	FILE *times = times_path ? fopen(times_path, "w") : NULL;

	for (long i = 0; i < n; i++) {
		int kind = (i % 10) < 7 ? 0 : (i % 10) < 9 ? 1 : 2;
		struct req r = { (int)i, kind, names[kind] };
		long t0 = now_ns();

		rets[kind] = handle(&r, names[kind]);
		if (times)
			fprintf(times, "%d %ld\n", kind, now_ns() - t0);
		calls[kind]++;
	}
	if (times)
		fclose(times);
	for (int k = 0; k < 3; k++)
		printf("kind %d calls %ld name %s ret %ld\n", k, calls[k], names[k], rets[k]);
	return 0;
}
