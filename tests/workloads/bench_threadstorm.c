/*
 * bench_threadstorm.c - short-lived threads: waits START seconds (so a
 * profiler can attach), then creates TOTAL threads in batches of 50, each
 * burning ~0.2 ms of CPU in thread_work() and exiting; then keeps running
 * until SECONDS. A negative START waits for SIGUSR1 instead (so a test can
 * start the storm once its profiler is attached). Prints "ready" when
 * waiting and "threads N" when the storm is over.
 * Usage: bench_threadstorm [TOTAL] [START] [SECONDS]
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void *thread_work(void *arg)
{
	volatile unsigned long acc = (unsigned long)arg;

	for (int i = 0; i < 100000; i++)
		acc += i;
	sink += acc;
	return NULL;
}

int main(int argc, char **argv)
{
	int total = argc > 1 ? atoi(argv[1]) : 1000;
	double start = argc > 2 ? atof(argv[2]) : 0.5;
	double seconds = argc > 3 ? atof(argv[3]) : 3;
	pthread_t tid[50];
	int done = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (start < 0) {
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("ready\n");
		sigwait(&set, &sig);
		start = 0;
	} else {
		usleep((useconds_t)(start * 1e6));
	}
	while (done < total) {
		int n = total - done < 50 ? total - done : 50;

		for (int i = 0; i < n; i++)
			if (pthread_create(&tid[i], NULL, thread_work, (void *)(long)i))
				return 1;
		for (int i = 0; i < n; i++)
			pthread_join(tid[i], NULL);
		done += n;
	}
	printf("threads %d\n", done);
	if (seconds > start)
		usleep((useconds_t)((seconds - start) * 1e6 / 2));
	return 0;
}
