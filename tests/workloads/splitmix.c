/*
 * splitmix.c - split scenarios with known ground truth.
 *   splitmix threads N SEC   N threads run serve(); every 32nd call of each
 *                            thread also runs slow_path() (50x the mean work)
 *   splitmix recurse SEC     serve_rec(depth 3) recursion; every 32nd top
 *                            call runs slow_path() at the bottom
 *   splitmix nested SEC      serve() calls inner() (also traced); every 32nd
 *                            call runs slow_path() inside inner()
 *   splitmix size SEC        serve_sized(size): work proportional to size;
 *                            size is 64 for 31 of 32 calls and 4096 for 1
 * The tests split at p95: 1 call in 32 (3.1%) is slow, so the threshold lies
 * in the tail of the fast calls, far below the slow ones. A fast call's work
 * is spread over 50-150 us (callwork.h), so that few fast calls lie within
 * the sampling correction's uncertainty of the threshold; a slow call does
 * 5 ms more. With threads, calls are 2 ms apart, so that 8 threads need
 * about one CPU and preemption rarely stretches a fast call. With exactly
 * 5% slow calls the p95 threshold sat on the edge of the slow population and
 * preempted fast calls pushed slow ones below it.
 * Leaves keep a frame (volatile local) and no call is a tail call.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "callwork.h"

#define SLOW_EVERY 32 /* 1 call in 32 is slow */
#define IS_SLOW(i) ((i) % SLOW_EVERY == SLOW_EVERY - 1)

static volatile unsigned long sink;
static double seconds = 5;
static __thread unsigned int seed;

__attribute__((noinline)) void burn(unsigned long n)
{
	volatile unsigned long i, acc = 0;

	for (i = 0; i < n; i++)
		acc += i ^ (i >> 2);
	sink += acc;
}

__attribute__((noinline)) void common_work(void)
{
	volatile int frame = 0;

	burn(fast_work(&seed));
	frame++;
}

__attribute__((noinline)) void slow_path(void)
{
	volatile int frame = 0;

	burn(SLOW_UNITS * WORK_UNIT); /* 50x common_work's mean */
	frame++;
}

__attribute__((noinline)) void inner(int i)
{
	volatile int frame = 0;

	common_work();
	if (IS_SLOW(i))
		slow_path();
	frame++;
}

__attribute__((noinline)) void serve(int i)
{
	volatile int frame = 0;

	common_work();
	if (IS_SLOW(i))
		slow_path();
	frame++;
}

__attribute__((noinline)) void serve_nested(int i)
{
	volatile int frame = 0;

	inner(i);
	frame++;
}

__attribute__((noinline)) void serve_rec(int depth, int i)
{
	volatile int frame = 0;

	if (depth > 0) {
		serve_rec(depth - 1, i);
	} else {
		common_work();
		if (IS_SLOW(i))
			slow_path();
	}
	frame++;
}

__attribute__((noinline)) void process_bytes(int size)
{
	volatile int frame = 0;

	burn((unsigned long)size * 300);
	frame++;
}

__attribute__((noinline)) void serve_sized(int size)
{
	volatile int frame = 0;

	process_bytes(size);
	frame++;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static const char *mode;
static int nthreads = 1;

static void *loop(void *arg)
{
	/* 8 threads 2 ms apart need about one CPU; one thread can go faster */
	struct timespec gap = { 0, nthreads > 1 ? 2000000 : 50000 };
	double end = now() + seconds;

	seed = (unsigned int)(unsigned long)arg;
	for (int i = 0; now() < end; i++) {
		if (!strcmp(mode, "threads"))
			serve(i);
		else if (!strcmp(mode, "recurse"))
			serve_rec(3, i);
		else if (!strcmp(mode, "nested"))
			serve_nested(i);
		else
			serve_sized(IS_SLOW(i) ? 4096 : 64);
		nanosleep(&gap, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 1;
	pthread_t th[64];

	if (argc < 2) {
		fprintf(stderr, "usage: splitmix threads N SEC | recurse SEC | nested SEC | size SEC\n");
		return 2;
	}
	mode = argv[1];
	if (!strcmp(mode, "threads")) {
		threads = argc > 2 ? atoi(argv[2]) : 8;
		seconds = argc > 3 ? atof(argv[3]) : 5;
	} else {
		seconds = argc > 2 ? atof(argv[2]) : 5;
	}
	if (threads < 1 || threads > 64)
		threads = 8;
	nthreads = threads;
	for (int t = 0; t < threads; t++)
		pthread_create(&th[t], NULL, loop, (void *)(unsigned long)(t + 1));
	for (int t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	return 0;
}
