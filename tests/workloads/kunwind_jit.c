/*
 * kunwind_jit.c - code in an anonymous executable mapping, as a JIT makes
 * it: jit_caller() (no frame pointers) calls, in turn, two generated
 * functions that keep a frame (push %rbp; mov %rsp,%rbp, like the JITs of
 * V8 and the JVM): one counts down a loop, the other calls back into
 * jit_callback(), compiled code that spins as long. No CFI describes the
 * generated code: an unwinder must fall back to frame pointers there, or
 * stop with a marked frame. Ground truth, from this source: about half
 * the samples are main;jit_caller;[generated], the other half
 * main;jit_caller;[generated];jit_callback. With --perf-map it names the
 * generated code in /tmp/perf-PID.map (jit_countdown, jit_calls_back).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

static volatile unsigned long sink;

static const unsigned char code[] = {
	0x55,			      /* push %rbp */
	0x48, 0x89, 0xe5,	      /* mov %rsp,%rbp */
	0xb9, 0x00, 0x00, 0x10, 0x00, /* mov $0x100000,%ecx */
	0xff, 0xc9,		      /* 1: dec %ecx */
	0x75, 0xfc,		      /* jnz 1b */
	0x5d,			      /* pop %rbp */
	0xc3,			      /* ret */
};

/* The second function, at CALLBACK_AT: calls the function in %rdi. */
#define CALLBACK_AT 64
static const unsigned char calls_back[] = {
	0x55,		  /* push %rbp */
	0x48, 0x89, 0xe5, /* mov %rsp,%rbp */
	0xff, 0xd7,	  /* call *%rdi */
	0x5d,		  /* pop %rbp */
	0xc3,		  /* ret */
};

/* As long as the generated loop: 0x100000 rounds. */
__attribute__((noinline, noclone)) void jit_callback(void)
{
	for (unsigned int i = 0; i < 0x100000; i++)
		sink++;
}

__attribute__((noinline, noclone)) void jit_caller(void (*fn)(void), void (*back)(void (*)(void)))
{
	for (;;) {
		fn();
		back(jit_callback);
		sink++;
	}
}

/* Name the generated code in /tmp/perf-PID.map, as a JIT does for profilers. */
static void write_perf_map(const char *p)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "%lx %zx jit_countdown\n", (unsigned long)p, sizeof(code));
	fprintf(f, "%lx %zx jit_calls_back\n", (unsigned long)(p + CALLBACK_AT),
		sizeof(calls_back));
	fclose(f);
}

/* Usage: kunwind_jit [--perf-map] */
int main(int argc, char **argv)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED)
		return 3;
	memcpy(p, code, sizeof(code));
	memcpy((char *)p + CALLBACK_AT, calls_back, sizeof(calls_back));
	if (argc > 1 && !strcmp(argv[1], "--perf-map"))
		write_perf_map(p);
	jit_caller((void (*)(void))p, (void (*)(void (*)(void)))((char *)p + CALLBACK_AT));
	return 0;
}
