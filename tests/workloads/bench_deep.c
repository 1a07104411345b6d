/*
 * bench_deep.c - many distinct, deep-ish stacks for the daemon throughput
 * benchmark: N threads (default 2) each walk a pseudo-random path through
 * a tree of 8 functions, 12 to 28 frames deep, and burn a little CPU at
 * the leaf, so consecutive samples rarely share a stack.
 * Usage: bench_deep [THREADS] [SECONDS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double seconds = 1e9;
static volatile unsigned long sink;

typedef void (*step_fn)(unsigned int, int);
static step_fn steps[8];

static void go(unsigned int seed, int depth)
{
	if (depth <= 0) {
		volatile unsigned long acc = seed;

		for (int i = 0; i < 2000; i++)
			acc += acc * 31 + i;
		sink += acc;
		return;
	}
	seed = seed * 1103515245u + 12345u;
	steps[(seed >> 16) & 7](seed, depth - 1);
}

#define STEP(k)                                                 \
	__attribute__((noinline)) static void step##k(unsigned int s, int d) \
	{                                                       \
		volatile int frame = k;                         \
		go(s, d);                                       \
		frame++;                                        \
	}
STEP(0)
STEP(1)
STEP(2)
STEP(3)
STEP(4)
STEP(5)
STEP(6)
STEP(7)

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void *thread_main(void *arg)
{
	unsigned int seed = (unsigned int)(long)arg * 7919u + 1;
	double start = now();

	while (now() - start < seconds) {
		for (int i = 0; i < 64; i++) {
			seed = seed * 1664525u + 1013904223u;
			go(seed, 12 + (int)((seed >> 8) % 17));
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2;
	pthread_t tid[256];

	steps[0] = step0, steps[1] = step1, steps[2] = step2, steps[3] = step3;
	steps[4] = step4, steps[5] = step5, steps[6] = step6, steps[7] = step7;
	if (argc > 2)
		seconds = atof(argv[2]);
	if (n < 1 || n > 256)
		n = 2;
	for (long i = 1; i < n; i++)
		pthread_create(&tid[i], NULL, thread_main, (void *)i);
	thread_main((void *)0);
	for (int i = 1; i < n; i++)
		pthread_join(tid[i], NULL);
	return 0;
}
