/*
 * threads4.c - ground truth for per-thread attribution: four threads named
 * wl-t0..wl-t3, thread k runs only work<k>(), which spins 2(k+1) ms out of
 * every 20 ms (sleeping otherwise). So thread k gets (k+1)/10 of the
 * threads' samples: 10/20/30/40 %, using 1 CPU in all.
 * Usage: threads4 [SECONDS]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 1e9;
static volatile unsigned long sink;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn_until(double until)
{
	volatile unsigned long acc = 0;

	while (now() < until)
		for (int i = 0; i < 1000; i++)
			acc += i;
	sink += acc;
}

#define WORK(k)                                                                 \
	__attribute__((noinline)) void work##k(double t0)                       \
	{                                                                       \
		volatile int frame = 0;                                         \
		burn_until(t0 + (k + 1) * 2e-3);                                \
		frame++;                                                        \
	}
WORK(0)
WORK(1)
WORK(2)
WORK(3)

static void (*const works[4])(double) = { work0, work1, work2, work3 };

static void *thread_main(void *arg)
{
	long k = (long)arg;
	char name[16];
	double start = now(), period = now();

	snprintf(name, sizeof(name), "wl-t%ld", k);
	pthread_setname_np(pthread_self(), name);
	while (now() - start < seconds) {
		works[k](period);
		period += 20e-3;
		struct timespec ts = { 0, 0 };
		double left = period - now();
		if (left > 0) {
			ts.tv_nsec = (long)(left * 1e9);
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[4];

	if (argc > 1)
		seconds = atof(argv[1]);
	for (long k = 0; k < 4; k++)
		pthread_create(&th[k], NULL, thread_main, (void *)k);
	for (int k = 0; k < 4; k++)
		pthread_join(th[k], NULL);
	return 0;
}
