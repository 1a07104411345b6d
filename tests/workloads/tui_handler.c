/*
 * tui_handler.c - a request loop for the TUI tests: main calls handle(i)
 * forever; one call in 32 (3.1%) also calls slow_path(), which does 50x the
 * work of a normal call. A split of handle() at p95 must therefore rank
 * slow_path first (its threshold lies in the fast calls' tail, far below the
 * slow calls; at exactly 5% it would sit on the slow population's edge). Leaves keep a frame (volatile local) and no call is a
 * tail call, so frame-pointer stacks are exact.
 *
 * Usage: tui_handler [SECONDS] [stacks]
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UNIT 20000

static volatile unsigned long sink;

__attribute__((noinline)) void work(unsigned long n)
{
	volatile unsigned long i, acc = 0;

	for (i = 0; i < n; i++)
		acc += i ^ (i >> 3);
	sink += acc;
}

__attribute__((noinline)) void slow_path(void)
{
	volatile int frame = 0;

	work(50 * UNIT);
	frame++;
}

__attribute__((noinline)) void handle(unsigned long i)
{
	volatile int frame = 0;

	work(UNIT);
	if (i % 32 == 7)
		slow_path();
	frame++;
}

/*
 * "stacks" mode: tens of thousands of distinct stacks, for the TUI's
 * redraw-time test. A dispatcher calls one of 16 functions chosen by a
 * pseudo-random number, four levels deep: 16^4 call paths.
 */
#define FANOUT 16
#define LEVELS 4

typedef void (*level_fn)(int, unsigned int);
static level_fn levels[FANOUT];

__attribute__((noinline)) void dispatch(int depth, unsigned int r)
{
	volatile int frame = 0;

	if (depth == 0)
		work(200 + (r & 255));
	else
		levels[r % FANOUT](depth - 1, r / FANOUT);
	frame++;
}

#define LEVEL(k)                                                                                   \
	__attribute__((noinline)) void level##k(int depth, unsigned int r)                         \
	{                                                                                          \
		volatile int frame = 0;                                                            \
		dispatch(depth, r);                                                                \
		frame++;                                                                           \
	}
LEVEL(0)
LEVEL(1)
LEVEL(2)
LEVEL(3)
LEVEL(4)
LEVEL(5)
LEVEL(6)
LEVEL(7)
LEVEL(8)
LEVEL(9)
LEVEL(10)
LEVEL(11)
LEVEL(12)
LEVEL(13)
LEVEL(14)
LEVEL(15)

__attribute__((noinline)) void many_stacks(unsigned long i)
{
	static const level_fn all[FANOUT] = {level0,  level1,  level2,	level3, level4,	 level5,
					     level6,  level7,  level8,	level9, level10, level11,
					     level12, level13, level14, level15};
	volatile int frame = 0;

	if (!levels[0])
		memcpy(levels, all, sizeof(all));
	/* A multiplicative hash: consecutive calls take unrelated paths. */
	dispatch(LEVELS, (unsigned int)(i * 2654435761u));
	frame++;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1e9;
	bool stacks = argc > 2 && !strcmp(argv[2], "stacks");
	struct timespec t0, t;
	unsigned long i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0;; i++) {
		if (stacks)
			many_stacks(i);
		else
			handle(i);
		if (i % 64)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
	}
	return 0;
}
