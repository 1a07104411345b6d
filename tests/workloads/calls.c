/*
 * calls.c - exact call and hit counts for the tracer. Each mode prints the
 * exact count it produced on stdout ("NAME COUNT"); several MODE N pairs
 * run one after the other.
 *   calls rec N      main calls rec(9) N times: rec runs 10*N times
 *   calls static N   sfunc(), a static function, runs N times
 *   calls loop N     the line marked LOOP_LINE runs exactly N times
 *   calls threads N  8 threads each call tcall() N times (spins 100 us)
 * Usage: calls MODE N [MODE N]...
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile long sink;

__attribute__((noinline)) int rec(int depth)
{
	volatile int frame = depth;

	if (depth <= 0)
		return frame;
	return rec(depth - 1) + frame;
}

__attribute__((noinline)) static int sfunc(int x)
{
	volatile int frame = x;

	sink += frame;
	return frame + 1;
}

__attribute__((noinline)) long loop(long n)
{
	volatile long hits = 0;

	for (long i = 0; i < n; i++) {
		sink += i;
		hits++; /* LOOP_LINE */
	}
	return hits;
}

static long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

__attribute__((noinline)) void tcall(void)
{
	volatile int frame = 0;
	long end = now_ns() + 100000;

	while (now_ns() < end)
		frame++;
}

static long per_thread;

static void *thread_main(void *arg)
{
	(void)arg;
	for (long i = 0; i < per_thread; i++)
		tcall();
	return NULL;
}

static int run(const char *mode, long n)
{
	long total = 0;

	if (!strcmp(mode, "rec")) {
		for (long i = 0; i < n; i++)
			sink += rec(9);
		printf("rec %ld\n", 10 * n);
	} else if (!strcmp(mode, "static")) {
		for (long i = 0; i < n; i++)
			total += sfunc((int)i) > 0;
		printf("sfunc %ld\n", total);
	} else if (!strcmp(mode, "loop")) {
		printf("loop_line %ld\n", loop(n));
	} else if (!strcmp(mode, "threads")) {
		pthread_t th[8];

		per_thread = n;
		for (int k = 0; k < 8; k++)
			pthread_create(&th[k], NULL, thread_main, NULL);
		for (int k = 0; k < 8; k++)
			pthread_join(th[k], NULL);
		printf("tcall %ld\n", 8 * n);
	} else {
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc % 2 == 0)
		return 2;
	for (int i = 1; i + 1 < argc; i += 2)
		if (run(argv[i], atol(argv[i + 1])))
			return 2;
	fflush(stdout);
	return 0;
}
