/*
 * kunwind_mutex.c - an off-CPU wait inside pthread_mutex_lock, built
 * without frame pointers. The holder thread keeps the lock while it spins
 * in hold_busy() for HOLD_MS, then lets go briefly; the waiter thread
 * blocks in wait_lock() <- wait_outer() <- waiter_main(), inside glibc's
 * __lll_lock_wait -> futex. Its off-CPU stacks must show that whole chain.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define HOLD_MS 20

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long sink;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline, noclone)) void hold_busy(void)
{
	double end = now_s() + HOLD_MS / 1e3;

	while (now_s() < end)
		sink++;
}

__attribute__((noinline, noclone)) void *holder_main(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		hold_busy();
		pthread_mutex_unlock(&lock);
		usleep(1000);
	}
	return NULL;
}

/* sink += after each call: no tail calls, every frame stays on the stack */
__attribute__((noinline, noclone)) int wait_lock(void)
{
	int r = pthread_mutex_lock(&lock);

	sink++;
	pthread_mutex_unlock(&lock);
	return r;
}

__attribute__((noinline, noclone)) int wait_outer(void)
{
	int r = wait_lock();

	sink += r;
	return r + 1;
}

__attribute__((noinline, noclone)) void *waiter_main(void *arg)
{
	(void)arg;
	for (;;) {
		sink += wait_outer();
		usleep(500);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t h, w;
	double seconds = argc > 1 ? atof(argv[1]) : 1e9;

	pthread_create(&h, NULL, holder_main, NULL);
	usleep(2000);
	pthread_create(&w, NULL, waiter_main, NULL);
	usleep((useconds_t)(seconds * 1e6 < 4e9 ? seconds * 1e6 : 4e9));
	return 0;
}
