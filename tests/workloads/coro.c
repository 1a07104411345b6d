/*
 * coro.c - a traced function that a coroutine switch leaves mid-call:
 * inner() runs on a coroutine's own stack (malloc'd, below the main
 * stack) and switches back to main inside every call; main then calls
 * outer() before it resumes the coroutine. With a return probe on both,
 * the kernel dropped inner's pending return as dead at outer's (its slot
 * lies below main's stack pointer), and inner's return then found the
 * [uprobes] trampoline without a record: SIGILL.
 * Usage: coro ROUNDS  (prints "rounds N" at the end)
 */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

static ucontext_t main_ctx, co_ctx;
static volatile long sink;

__attribute__((noinline)) void inner(int i)
{
	volatile int frame = i;

	swapcontext(&co_ctx, &main_ctx);
	sink += frame;
}

__attribute__((noinline)) void outer(int i)
{
	volatile int frame = i;

	sink += frame;
}

static void co_main(void)
{
	for (int i = 0;; i++)
		inner(i);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	size_t size = 1 << 16;
	char *stack = malloc(size);

	if (!stack || getcontext(&co_ctx))
		return 2;
	co_ctx.uc_stack.ss_sp = stack;
	co_ctx.uc_stack.ss_size = size;
	co_ctx.uc_link = NULL;
	makecontext(&co_ctx, co_main, 0);
	for (long i = 0; i < n; i++) {
		swapcontext(&main_ctx, &co_ctx);
		outer((int)i);
	}
	printf("rounds %ld\n", n);
	return 0;
}
