/*
 * kunwind_jit.c - code in an anonymous executable mapping, as a JIT makes
 * it: jit_caller() (no frame pointers) calls a generated function that
 * keeps a frame (push %rbp; mov %rsp,%rbp, like the JITs of V8 and the
 * JVM) and counts down a loop. No CFI describes it: an unwinder must
 * fall back to frame pointers there, or stop with a marked frame.
 */
#include <string.h>
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

__attribute__((noinline, noclone)) void jit_caller(void (*fn)(void))
{
	for (;;) {
		fn();
		sink++;
	}
}

int main(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED)
		return 3;
	memcpy(p, code, sizeof(code));
	jit_caller((void (*)(void))p);
	return 0;
}
