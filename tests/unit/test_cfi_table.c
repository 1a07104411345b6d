// SPDX-License-Identifier: GPL-2.0
/*
 * test_cfi_table.c - dwarf/cfi_table.c against rules known from the ABI
 * and the compiler: a frame-pointer prologue, a frameless leaf, _start's
 * undefined return address, the PLT stubs' expression and glibc's signal
 * trampoline, whose offsets come from <ucontext.h>.
 *
 * Builds tests/unit/fixtures/unwind_chain.c with and without frame
 * pointers; run from the repository root (it calls cc).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>
#include <unistd.h>

#include "unit.h"
#include "dwarf/cfi_cache.h"
#include "dwarf/cfi_table.h"
#include "dwarf/elf_symtab.h"

#define FIXTURE_SRC "tests/unit/fixtures/unwind_chain.c"
#define LIBC	    "/lib/x86_64-linux-gnu/libc.so.6"

static char tmpdir[] = "/tmp/test_cfi.XXXXXX";

static int build(const char *name, const char *cflags, char *out, size_t len)
{
	char cmd[512];

	snprintf(out, len, "%s/%s", tmpdir, name);
	snprintf(cmd, sizeof(cmd), "cc %s %s -o '%s'", cflags, FIXTURE_SRC, out);
	return system(cmd);
}

static const struct elf_sym *sym(struct elf_symtab *st, const char *name)
{
	elf_symtab__lookup(st, 0); /* loads the symbols */
	for (size_t i = 0; i < st->nsyms; i++)
		if (!strcmp(st->syms[i].name, name))
			return &st->syms[i];
	return NULL;
}

/* Every row inside [f->addr, f->addr + f->size). */
#define FOR_ROWS(t, f, r)                                                                          \
	for (const struct cfi_row *r = cfi_table__lookup(t, (f)->addr);                            \
	     r && r < (t)->rows + (t)->n_rows && r->pc < (f)->addr + (f)->size; r++)

UNIT_TEST(frame_pointer_prologue)
{
	char bin[256];
	struct elf_symtab *st = NULL;
	struct cfi_table *t = NULL;
	const struct elf_sym *a;
	bool rbp_based = false;

	CHECK_EQ_INT(build("fp", "-O2 -fno-omit-frame-pointer", bin, sizeof(bin)), 0);
	CHECK_EQ_INT(elf_symtab__open_path(bin, &st), 0);
	CHECK_EQ_INT(cfi_table__build(st->elf, &t), 0);
	if (!t || !st)
		goto out;
	CHECK_STR(t->source, ".eh_frame");
	a = sym(st, "a");
	CHECK(a != NULL);
	if (!a)
		goto out;
	/* At entry the return address was just pushed: CFA = rsp + 8. */
	CHECK_EQ_INT(cfi_table__lookup(t, a->addr)->cfa_rule, CFI_CFA_RSP);
	CHECK_EQ_INT(cfi_table__lookup(t, a->addr)->cfa_off, 8);
	CHECK_EQ_INT(cfi_table__lookup(t, a->addr)->rbp_rule, CFI_RBP_SAME);
	/* After push %rbp; mov %rsp,%rbp: CFA = rbp + 16, rbp saved at CFA - 16. */
	FOR_ROWS(t, a, r)
	{
		if (r->cfa_rule == CFI_CFA_RBP) {
			rbp_based = true;
			CHECK_EQ_INT(r->cfa_off, 16);
			CHECK_EQ_INT(r->rbp_rule, CFI_RBP_AT_CFA);
			CHECK_EQ_INT(r->rbp_off, -16);
		}
	}
	CHECK(rbp_based);
	/* gcc gives the small leaf no frame: CFA = rsp + 8 all through. */
	a = sym(st, "leaf");
	CHECK(a != NULL);
	if (a) {
		FOR_ROWS(t, a, r)
		{
			CHECK_EQ_INT(r->cfa_rule, CFI_CFA_RSP);
			CHECK_EQ_INT(r->cfa_off, 8);
		}
	}
	/* _start says the return address is undefined: the outermost frame. */
	a = sym(st, "_start");
	CHECK(a != NULL);
	if (a)
		CHECK_EQ_INT(cfi_table__lookup(t, a->addr)->cfa_rule, CFI_CFA_END);
	CHECK_EQ_INT(t->n_bad_fdes, 0);
out:
	cfi_table__free(t);
	elf_symtab__free(st);
}

UNIT_TEST(no_frame_pointers)
{
	char bin[256];
	struct elf_symtab *st = NULL;
	struct cfi_table *t = NULL;
	const char *fns[] = {"a", "b", "c", "main"};
	bool grew = false;

	CHECK_EQ_INT(build("nofp", "-O2 -fomit-frame-pointer", bin, sizeof(bin)), 0);
	CHECK_EQ_INT(elf_symtab__open_path(bin, &st), 0);
	CHECK_EQ_INT(cfi_table__build(st->elf, &t), 0);
	if (!t || !st)
		goto out;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		const struct elf_sym *f = sym(st, fns[i]);

		CHECK(f != NULL);
		if (!f)
			continue;
		FOR_ROWS(t, f, r)
		{
			CHECK_EQ_INT(r->cfa_rule, CFI_CFA_RSP);
			CHECK(r->cfa_off >= 8 && r->cfa_off % 8 == 0);
			grew |= r->cfa_off > 8;
		}
	}
	CHECK(grew); /* some caller pushed or reserved stack */
out:
	cfi_table__free(t);
	elf_symtab__free(st);
}

/* The .plt stubs: CFA = rsp + 8, + 8 once rip & 15 >= 11 (binutils' layout). */
UNIT_TEST(plt_expression)
{
	char bin[256];
	struct elf_symtab *st = NULL;
	struct cfi_table *t = NULL;
	size_t plt = 0;

	CHECK_EQ_INT(build("plt", "-O2 -Wl,-z,lazy", bin, sizeof(bin)), 0);
	CHECK_EQ_INT(elf_symtab__open_path(bin, &st), 0);
	CHECK_EQ_INT(cfi_table__build(st->elf, &t), 0);
	if (!t)
		goto out;
	for (size_t i = 0; i < t->n_rows; i++)
		if (t->rows[i].cfa_rule == CFI_CFA_PLT) {
			plt++;
			CHECK_EQ_INT(t->rows[i].cfa_off, 8);
			CHECK(t->rows[i].rbp_off == 11 || t->rows[i].rbp_off == 10);
		}
	CHECK(plt >= 1);
out:
	cfi_table__free(t);
	elf_symtab__free(st);
}

/* glibc's __restore_rt: rsp points at the ucontext the kernel pushed. */
UNIT_TEST(signal_trampoline)
{
	struct cfi_table *t = NULL;
	size_t sig = 0;

	CHECK_EQ_INT(cfi_table__build_path(LIBC, &t), 0);
	if (!t)
		return;
	for (size_t i = 0; i < t->n_rows; i++)
		if (t->rows[i].cfa_rule == CFI_CFA_SIGNAL) {
			sig++;
			CHECK_EQ_INT(t->rows[i].cfa_off,
				     offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]));
			CHECK_EQ_INT(t->rows[i].rbp_off,
				     offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP]));
		}
	CHECK(sig >= 1);
	printf("  libc: %zu rows (%zu bytes), %zu FDEs, %zu fallback, %zu bad, %.2f ms\n",
	       t->n_rows, t->n_rows * sizeof(struct cfi_row), t->n_fdes, t->n_fallback,
	       t->n_bad_fdes, t->build_ns / 1e6);
	cfi_table__free(t);
}

/* Rows are sorted, the table ends with NONE, lookups agree with a scan. */
UNIT_TEST(table_shape)
{
	const char *files[] = {LIBC, "/usr/bin/python3.11", "/usr/bin/xz"};

	for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
		struct cfi_table *t = NULL;

		if (access(files[k], R_OK))
			continue;
		CHECK_EQ_INT(cfi_table__build_path(files[k], &t), 0);
		if (!t)
			continue;
		printf("  %s: %zu rows (%zu bytes), %zu FDEs, %zu fallback, %.2f ms\n", files[k],
		       t->n_rows, t->n_rows * sizeof(struct cfi_row), t->n_fdes, t->n_fallback,
		       t->build_ns / 1e6);
		CHECK_EQ_INT(t->rows[t->n_rows - 1].cfa_rule, CFI_CFA_NONE);
		for (size_t i = 1; i < t->n_rows; i++) {
			CHECK(t->rows[i - 1].pc < t->rows[i].pc);
			if (t->rows[i - 1].pc >= t->rows[i].pc)
				break;
		}
		for (size_t i = 0; i + 1 < t->n_rows; i += 97) {
			uint32_t mid = t->rows[i].pc + (t->rows[i + 1].pc - t->rows[i].pc) / 2;

			CHECK(cfi_table__lookup(t, mid) == &t->rows[i]);
		}
		CHECK(cfi_table__lookup(t, t->rows[0].pc - 1) == NULL || t->rows[0].pc == 0);
		cfi_table__free(t);
	}
}

UNIT_TEST(not_elf)
{
	struct cfi_table *t = (void *)1;

	CHECK(cfi_table__build_path("/etc/passwd", &t) < 0);
	CHECK(t == NULL);
	CHECK_EQ_INT(cfi_table__build_path("/nonexistent/x", &t), -ENOENT);
}

/* A table stored by build-id reads back row for row; anything off is refused. */
UNIT_TEST(cache_round_trip)
{
	struct cfi_table *t = NULL, *back = NULL;
	char dir[300], path[400];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/cache", tmpdir);
	setenv("LIVEPROF_CACHE_DIR", dir, 1);
	CHECK_EQ_INT(cfi_table__build_path(LIBC, &t), 0);
	if (!t)
		return;
	CHECK_EQ_INT(cfi_cache__load("00112233445566778899", &back), -ENOENT);
	cfi_cache__save("00112233445566778899", t);
	CHECK_EQ_INT(cfi_cache__load("00112233445566778899", &back), 0);
	if (back) {
		CHECK_EQ_INT(back->n_rows, t->n_rows);
		CHECK_EQ_INT(back->n_loads, t->n_loads);
		CHECK(!memcmp(back->rows, t->rows, t->n_rows * sizeof(*t->rows)));
		CHECK(!memcmp(back->loads, t->loads, sizeof(t->loads)));
		cfi_table__free(back);
		back = NULL;
	}
	/* a path component, not a path */
	cfi_cache__save("../0011223344", t);
	CHECK_EQ_INT(cfi_cache__load("../0011223344", &back), -ENOENT);
	/* cut short: its size no longer matches its header */
	snprintf(path, sizeof(path), "%s/00112233445566778899", dir);
	CHECK_EQ_INT(truncate(path, 200), 0);
	CHECK_EQ_INT(cfi_cache__load("00112233445566778899", &back), -ENOENT);
	CHECK(back == NULL);
	/* garbage */
	f = fopen(path, "w");
	if (f) {
		fputs("not a table", f);
		fclose(f);
	}
	CHECK_EQ_INT(cfi_cache__load("00112233445566778899", &back), -ENOENT);
	unsetenv("LIVEPROF_CACHE_DIR");
	cfi_table__free(t);
}

static void setup(void) __attribute__((constructor));
static void setup(void)
{
	if (!mkdtemp(tmpdir))
		abort();
}

static void teardown(void) __attribute__((destructor));
static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove '%s'\n", tmpdir);
}

UNIT_MAIN()
