/*
 * churn.c - 200 short-lived threads, 4 at a time, each burning ~10 ms in
 * churn_work(), with 40 ms pauses between batches (about 2.5 s in all).
 * Exits 0 and prints "threads 200".
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) void churn_work(void)
{
	volatile unsigned long acc = 0;
	double end = now() + 0.010;

	while (now() < end)
		acc++;
	sink += acc;
}

static void *thread_main(void *arg)
{
	(void)arg;
	churn_work();
	return NULL;
}

int main(void)
{
	int made = 0;

	for (int b = 0; b < 50; b++) {
		pthread_t th[4];
		struct timespec ts = { 0, 40000000 };

		for (int k = 0; k < 4; k++)
			if (pthread_create(&th[k], NULL, thread_main, NULL) == 0)
				made++;
		for (int k = 0; k < 4; k++)
			pthread_join(th[k], NULL);
		nanosleep(&ts, NULL);
	}
	printf("threads %d\n", made);
	return made == 200 ? 0 : 1;
}
