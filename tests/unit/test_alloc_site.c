// SPDX-License-Identifier: GPL-2.0
/*
 * test_alloc_site.c - where an entry-only allocator probe goes
 * (user/session/alloc_site.c), on functions built here with known first
 * instructions: past a leading "test r,r" onto the conditional jump after
 * it; at the entry for anything else (a push, a test followed by no jump,
 * a test of memory, an unknown function or file), and for a function whose
 * FDE does not start at its symbol (the move is proven, not assumed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"
#include "user/session/alloc_internal.h"

#define FUNC(name, body)                                                                           \
	".globl " name "\n.type " name ",@function\n" name ":\n.cfi_startproc\n" body              \
	".cfi_endproc\n.size " name ",.-" name "\n"

/* Assembly, written to a .S file: the first instructions are the point. */
static const char *const lib_asm =
	".text\n" FUNC("lp_free_like", "test %rdi,%rdi\nje 1f\nmov (%rdi),%rax\n1:\nret\n")
		FUNC("lp_test32", "test %edi,%edi\njne 2f\nxor %eax,%eax\n2:\nret\n")
			FUNC("lp_push_first", "push %rbx\ntest %rdi,%rdi\npop %rbx\nret\n")
				FUNC("lp_test_no_jump", "test %rdi,%rdi\nmov %rdi,%rax\nret\n")
					FUNC("lp_test_mem", "test %rdi,(%rsi)\nje 3f\n3:\nret\n")
	/* a symbol inside a function: its FDE starts before it */
	".globl lp_outer\n.type lp_outer,@function\nlp_outer:\n.cfi_startproc\nnop\n"
	".globl lp_inner\n.type lp_inner,@function\nlp_inner:\ntest %rdi,%rdi\nje 4f\n"
	"4:\nret\n.cfi_endproc\n.size lp_outer,.-lp_outer\n.size lp_inner,.-lp_inner\n"
	".section .note.GNU-stack,\"\",@progbits\n";

static char dir[64], lib[128];

static bool build(void)
{
	char src[128], cmd[512];
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/lp_allocsite.XXXXXX");
	if (!mkdtemp(dir))
		return false;
	snprintf(src, sizeof(src), "%s/lib.S", dir);
	snprintf(lib, sizeof(lib), "%s/lib.so", dir);
	f = fopen(src, "w");
	if (!f)
		return false;
	fputs(lib_asm, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -shared -fPIC -o %s %s", lib, src);
	return system(cmd) == 0;
}

UNIT_TEST(test_jump_after_test)
{
	char cmd[160];

	CHECK(build());
	/* test r64,r64 (3 bytes) and test r32,r32 (2 bytes), then a jump */
	CHECK_EQ_INT(alloc_entry_offset(lib, "lp_free_like"), 3);
	CHECK_EQ_INT(alloc_entry_offset(lib, "lp_test32"), 2);
	/* the kernel emulates a push: nothing to gain, and nothing moves */
	CHECK_EQ_INT(alloc_entry_offset(lib, "lp_push_first"), 0);
	/* no jump after the test, or a test that reads memory */
	CHECK_EQ_INT(alloc_entry_offset(lib, "lp_test_no_jump"), 0);
	CHECK_EQ_INT(alloc_entry_offset(lib, "lp_test_mem"), 0);
	/* a symbol that is not where its FDE starts: not an entry */
	CHECK_EQ_INT(alloc_entry_offset(lib, "lp_inner"), 0);
	CHECK_EQ_INT(alloc_entry_offset(lib, "lp_no_such_function"), 0);
	CHECK_EQ_INT(alloc_entry_offset("/nonexistent/lib.so", "lp_free_like"), 0);
	CHECK_EQ_INT(alloc_entry_offset("/dev/null", "lp_free_like"), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

/* alloc_site_at(): the answer remembered by file and function. The file
 * emptied in place (same inode) still gives the answer found before it was,
 * which alloc_entry_offset() no longer can; another function is asked anew. */
UNIT_TEST(test_site_remembered_by_inode)
{
	struct alloc_prof *a = calloc(1, sizeof(*a));
	char cmd[160];

	CHECK(a && build());
	if (!a)
		return;
	CHECK_EQ_INT(alloc_site_at(a, lib, "lp_free_like"), 3);
	CHECK_EQ_INT(alloc_site_at(a, lib, "lp_push_first"), 0);
	CHECK(truncate(lib, 0) == 0);
	CHECK_EQ_INT(alloc_entry_offset(lib, "lp_free_like"), 0);
	CHECK_EQ_INT(alloc_site_at(a, lib, "lp_free_like"), 3);
	CHECK_EQ_INT(alloc_site_at(a, lib, "lp_test32"), 0);
	CHECK_EQ_INT(a->n_sites, 3);
	free(a);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

UNIT_MAIN()
