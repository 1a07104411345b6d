/*
 * handler.c - ground truth for the split. handle() serves requests; a
 * fixed 1 in 32 of them (3.1%) are slow for a known reason, so a p95 split
 * puts its threshold in the tail of the fast calls, well below the slow ones
 * (at exactly 5% it would sit on the edge of the slow population):
 *   cpu   (default): the slow ones also run slow_path(), 50x a fast call's
 *          mean work (a fast call's work is spread over 50-150 us, so that
 *          the threshold does not sit on the fast calls; see callwork.h)
 *   lock : the slow ones wait for a mutex held by a background thread
 *          (blocked in lock_wait()), with the same CPU work as fast ones
 *   sleep: the slow ones sleep 2 ms in nap()
 *   alloc: as cpu, and every call allocates (and frees) 4 KiB in
 *          small_buf(), a slow one also 1 MiB in big_buf(): big_buf()'s
 *          allocations are all made in slow calls, none in fast ones
 * Usage: handler [cpu|lock|sleep|alloc] [seconds]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "callwork.h"

static volatile unsigned long sink;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int mode; /* 0 cpu, 1 lock, 2 sleep, 3 alloc */
static char *volatile buf;
static unsigned int seed = 1;

__attribute__((noinline)) void spin(unsigned long n)
{
	volatile unsigned long i, acc = 0;

	for (i = 0; i < n; i++)
		acc += i ^ (i >> 3);
	sink += acc;
}

__attribute__((noinline)) void parse_request(void)
{
	volatile int frame = 0;

	spin(fast_work(&seed));
	frame++;
}

__attribute__((noinline)) void slow_path(void)
{
	volatile int frame = 0;

	spin(SLOW_UNITS * WORK_UNIT); /* 50x parse_request's mean */
	frame++;
}

__attribute__((noinline)) void lock_wait(void)
{
	volatile int frame = 0;

	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
	frame++;
}

__attribute__((noinline)) void nap(void)
{
	volatile int frame = 0;
	struct timespec ts = { 0, 2000000 };

	nanosleep(&ts, NULL);
	frame++;
}

__attribute__((noinline)) void small_buf(void)
{
	buf = malloc(4096);
	buf[0] = 1;
	free(buf);
}

__attribute__((noinline)) void big_buf(void)
{
	buf = malloc(1 << 20);
	buf[0] = 1;
	free(buf);
}

__attribute__((noinline)) void handle(int i)
{
	volatile int frame = 0;

	parse_request();
	if (mode == 3)
		small_buf();
	if (i % 32 == 31) {
		if (mode == 3)
			big_buf();
		if (mode == 0 || mode == 3)
			slow_path();
		else if (mode == 1)
			lock_wait();
		else
			nap();
	}
	frame++;
}

/* Holds the lock most of the time, so lock_wait() blocks ~1-2 ms. */
static void *holder(void *arg)
{
	struct timespec hold = { 0, 2000000 }, gap = { 0, 50000 };

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		nanosleep(&hold, NULL);
		pthread_mutex_unlock(&lock);
		nanosleep(&gap, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 2 ? atof(argv[2]) : 1e9;
	struct timespec t0, t, pause = { 0, 100000 };
	pthread_t th;

	if (argc > 1 && !strcmp(argv[1], "lock"))
		mode = 1;
	else if (argc > 1 && !strcmp(argv[1], "sleep"))
		mode = 2;
	else if (argc > 1 && !strcmp(argv[1], "alloc"))
		mode = 3;
	if (mode == 1)
		pthread_create(&th, NULL, holder, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0;; i++) {
		handle(i);
		/* Requests arrive with a gap, like a server's. */
		nanosleep(&pause, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
	}
	return 0;
}
