// SPDX-License-Identifier: GPL-2.0
/*
 * test_annotate.c - the instruction decoder's control flow, the annotate
 * output's file names, and annotate's counting on this very binary: a
 * profile built in code whose frames point into unit_hot() below.
 */
#include <limits.h>
#include <link.h>
#include <stdlib.h>

#include "unit.h"
#include "dwarf/probe_resolve.h"
#include "user/profile/annotate.h"
#include "user/session/report.h"

UNIT_TEST(insn_flow)
{
	static const struct {
		uint8_t b[8];
		int n, len;
		enum x86_flow flow;
		int64_t rel;
	} cases[] = {
		{{0x75, 0xec}, 2, 2, X86_FLOW_JCC, -20},
		{{0x0f, 0x85, 0x10, 0, 0, 0}, 6, 6, X86_FLOW_JCC, 16},
		{{0xeb, 0x05}, 2, 2, X86_FLOW_JMP, 5},
		{{0xe8, 0xfb, 0xff, 0xff, 0xff}, 5, 5, X86_FLOW_CALL, -5},
		{{0xc3}, 1, 1, X86_FLOW_RET, 0},
		{{0xff, 0xd0}, 2, 2, X86_FLOW_CALL_IND, 0},
		{{0xff, 0xe0}, 2, 2, X86_FLOW_JMP_IND, 0},
		{{0x48, 0x01, 0xc2}, 3, 3, X86_FLOW_NONE, 0},
		{{0x0f, 0x85, 0x10}, 3, -1, X86_FLOW_NONE, 0}, /* truncated */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct x86_insn xi;

		CHECK_EQ_INT(x86_insn_info(cases[i].b, (size_t)cases[i].n, &xi), cases[i].len);
		if (cases[i].len > 0) {
			CHECK_EQ_INT(xi.flow, cases[i].flow);
			CHECK_EQ_INT(xi.rel, cases[i].rel);
		}
	}
}

UNIT_TEST(annotate_file_names)
{
	CHECK_EQ_INT(report__format_of("annotate.txt"), OUT_ANNOTATE);
	CHECK_EQ_INT(report__format_of("out/annotate.txt"), OUT_ANNOTATE);
	CHECK_EQ_INT(report__format_of("x.annotate"), OUT_ANNOTATE);
	CHECK_EQ_INT(report__format_of("x.annotate.txt"), OUT_ANNOTATE);
	CHECK_EQ_INT(report__format_of("x.txt"), OUT_FOLDED);
	CHECK_EQ_INT(report__format_of("myannotate.txt"), OUT_FOLDED);
}

__attribute__((noinline)) unsigned long unit_hot(unsigned long n)
{
	volatile unsigned long a = 0;

	for (unsigned long i = 0; i < n; i++)
		a += i;
	return a;
}

static int first_base(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;
}

static uint32_t frame(struct profile *p, const char *name, enum frame_kind kind, const char *path,
		      uint64_t addr)
{
	struct frame f = {.name = name, .kind = kind, .path = path, .addr = addr};
	int64_t id = profile__intern_frame(p, &f);

	CHECK(id >= 0);
	return (uint32_t)id;
}

/* Self where it ran, total once per sample, nothing for a kernel leaf's self. */
UNIT_TEST(annotate_counts)
{
	char exe[PATH_MAX];
	uintptr_t base = 0;
	struct profile *p = profile__new("unit");
	struct annotate *a = NULL;
	uint64_t off, sum_insn = 0, sum_lines;
	bool has_ret = false;

	CHECK(unit_hot(3) == 3);
	CHECK(realpath("/proc/self/exe", exe) != NULL);
	dl_iterate_phdr(first_base, &base);
	off = (uint64_t)((uintptr_t)unit_hot - base);
	uint32_t root = frame(p, "unit", FRAME_ROOT, NULL, 0);
	uint32_t hot = frame(p, "unit_hot", FRAME_USER, exe, off + 4);
	uint32_t hot2 = frame(p, "unit_hot", FRAME_USER, exe, off + 1);
	uint32_t k = frame(p, "do_syscall", FRAME_KERNEL, NULL, 0x1000);
	uint32_t s1[] = {root, hot}, s2[] = {root, hot2, hot}, s3[] = {root, hot, k};

	CHECK(!profile__add(p, s1, 2, 3, 0, NULL, 0));
	CHECK(!profile__add(p, s2, 3, 2, 0, NULL, 0)); /* recursion: total once */
	CHECK(!profile__add(p, s3, 3, 4, 0, NULL, 0)); /* in the kernel: no user self */
	CHECK(!annotate__build(p, &(struct annotate_opts){.func = "unit_hot"}, &a));
	CHECK(a && a->n == 1);
	if (a && a->n == 1) {
		const struct annot_func *f = &a->funcs[0];

		CHECK_STR(f->sf->name, "unit_hot");
		CHECK_EQ_INT(f->self, 5);
		CHECK_EQ_INT(f->total, 9);
		for (size_t i = 0; i < f->sf->n_insns; i++) {
			sum_insn += f->insn_self[i];
			has_ret |= f->sf->insns[i].flow == X86_FLOW_RET;
		}
		CHECK_EQ_INT(sum_insn, 5);
		CHECK(has_ret);
		/* built with -g: the function's lines are known, and its loop */
		CHECK(f->n_lines > 0);
		sum_lines = f->unplaced_self;
		for (int i = 0; i < f->n_lines; i++)
			sum_lines += f->lines[i].self;
		CHECK_EQ_INT(sum_lines, 5);
		CHECK(annotate__line(f, f->sf->first_line) == &f->lines[0]);
		CHECK(annotate__line(f, f->sf->last_line + 1) == NULL);
	}
	annotate__free(a);
	/* nothing hot enough without a name: the kernel holds the rest */
	CHECK(!annotate__build(p, &(struct annotate_opts){.min_pct = 60}, &a));
	CHECK(a && a->n == 0);
	annotate__free(a);
	profile__free(p);
}

UNIT_MAIN()
