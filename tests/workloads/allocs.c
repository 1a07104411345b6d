/*
 * allocs.c - ground truth for --alloc. Each round, site_a() allocates and
 * frees one 4096-byte block and site_b() three (alloc_space 1:3 between
 * the two sites, nothing of theirs in use), and leak() allocates one
 * 1024-byte block that is never freed. After ROUNDS rounds it writes
 * "rounds R leaked_bytes B elapsed_ns T" to OUTFILE and sleeps until killed, so the
 * heap it reports stays as it is while a profiler looks.
 * Usage: allocs ROUNDS OUTFILE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 4096
#define LEAK  1024

static void *volatile sink;

__attribute__((noinline)) void site_a(void)
{
	volatile int frame = 0;

	sink = malloc(BLOCK);
	memset(sink, 1, 8);
	free(sink);
	frame++;
}

__attribute__((noinline)) void site_b(void)
{
	volatile int frame = 0;

	for (int i = 0; i < 3; i++) {
		sink = malloc(BLOCK);
		memset(sink, 2, 8);
		free(sink);
	}
	frame++;
}

__attribute__((noinline)) void leak(void)
{
	volatile int frame = 0;

	sink = malloc(LEAK);
	memset(sink, 3, 8);
	frame++;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 20000;
	struct timespec t0, t1;
	FILE *f;

	if (argc < 3)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < rounds; i++) {
		site_a();
		site_b();
		leak();
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	f = fopen(argv[2], "w");
	if (!f)
		return 1;
	fprintf(f, "rounds %ld leaked_bytes %ld elapsed_ns %ld\n", rounds, rounds * LEAK,
		(t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec));
	fclose(f);
	for (;;)
		pause();
}
