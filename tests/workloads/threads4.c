/*
 * threads4.c - ground truth for per-thread attribution: four threads named
 * wl-t0..wl-t3; thread k runs only work<k>(), which does (k+1) units of
 * work (a fixed number of loop iterations) per round. All threads meet at
 * a barrier after each round and then sleep 0.5-5.5 ms (pseudo-random, so
 * that the rounds do not lock in phase with a periodic sampler), so however
 * the CPUs are shared, thread k does exactly (k+1)/10 of the work: its share
 * of the threads' samples is 10/20/30/40 %.
 * Usage: threads4 [SECONDS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define UNIT 1000000

static double seconds = 1e9;
static volatile unsigned long sink;
static pthread_barrier_t round_end;
static volatile int stop;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn(unsigned long n)
{
	volatile unsigned long i, acc = 0;

	for (i = 0; i < n; i++)
		acc += i * i;
	sink += acc;
}

#define WORK(k)                                                                 \
	__attribute__((noinline)) void work##k(void)                            \
	{                                                                       \
		volatile int frame = 0;                                         \
		burn((k + 1) * UNIT);                                           \
		frame++;                                                        \
	}
WORK(0)
WORK(1)
WORK(2)
WORK(3)

static void (*const works[4])(void) = { work0, work1, work2, work3 };

static void *thread_main(void *arg)
{
	long k = (long)arg;
	char name[16];
	double start = now();
	unsigned int seed = 12345u + (unsigned int)k;

	snprintf(name, sizeof(name), "wl-t%ld", k);
	pthread_setname_np(pthread_self(), name);
	for (;;) {
		works[k]();
		/* thread 0 decides, at the barrier, whether all stop */
		if (k == 0 && now() - start >= seconds)
			stop = 1;
		pthread_barrier_wait(&round_end);
		if (stop)
			break;
		struct timespec pause = { 0, 500000 + (long)(rand_r(&seed) % 5000) * 1000 };
		nanosleep(&pause, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[4];

	if (argc > 1)
		seconds = atof(argv[1]);
	pthread_barrier_init(&round_end, NULL, 4);
	for (long k = 0; k < 4; k++)
		pthread_create(&th[k], NULL, thread_main, (void *)k);
	for (int k = 0; k < 4; k++)
		pthread_join(th[k], NULL);
	return 0;
}
