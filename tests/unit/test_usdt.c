// SPDX-License-Identifier: GPL-2.0
/*
 * test_usdt.c - USDT specs, argument specs, fetch programs and notes.
 *
 * The argument specs are the forms gcc writes (tests/workloads/usdt.c's
 * notes: "-4@%esi -8@%rdx -4@$5", "-8@-56(%rbp)", "-8@g_rounds(%rip)",
 * "8@(%r15,%rax,8)"); the notes of Debian's libruby are compared with
 * what binutils' readelf -n prints for the same file.
 *
 * Run from the repository root.
 */
#include <errno.h>
#include <stdbool.h>
#include <unistd.h>

#include "unit.h"
#include "dwarf/usdt.h"

#define LIBRUBY "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"

UNIT_TEST(spec_forms)
{
	struct usdt_spec u;
	char err[512];

	CHECK_EQ_INT(usdt_spec_parse("usdt:lpw:tick", &u, err, sizeof(err)), 0);
	CHECK_STR(u.binary, "");
	CHECK_STR(u.provider, "lpw");
	CHECK_STR(u.name, "tick");
	CHECK_STR(u.ret_name, "");
	CHECK_EQ_INT(u.n_sel, 0);

	CHECK_EQ_INT(
		usdt_spec_parse("usdt:/usr/lib/libx.so:p:a__start,a__done", &u, err, sizeof(err)),
		0);
	CHECK_STR(u.binary, "/usr/lib/libx.so");
	CHECK_STR(u.name, "a__start");
	CHECK_STR(u.ret_name, "a__done");

	CHECK_EQ_INT(usdt_spec_parse("usdt:libruby:ruby:method__entry(arg1:str, arg3)", &u, err,
				     sizeof(err)),
		     0);
	CHECK_STR(u.binary, "libruby");
	CHECK_EQ_INT(u.n_sel, 2);
	CHECK_EQ_INT(u.sel[0], 1);
	CHECK(u.sel_str[0]);
	CHECK_EQ_INT(u.sel[1], 3);
	CHECK(!u.sel_str[1]);

	CHECK_EQ_INT(usdt_spec_parse("usdt:lpw:a,b()", &u, err, sizeof(err)), 0);
	CHECK(u.no_values);
	CHECK_EQ_INT(u.n_sel, 0);
	CHECK_STR(u.ret_name, "b");
}

UNIT_TEST(spec_errors)
{
	static const char *const bad[] = {
		"usdt:",	   "usdt:lpw",		"usdt::tick",
		"usdt:lpw:",	   "usdt:lpw:a,",	"usdt:lpw:a(x)",
		"usdt:lpw:a(arg0", "usdt:lpw:a(arg12)", "usdt:lpw:a(arg0:int)",
	};
	struct usdt_spec u;
	char err[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		CHECK_EQ_INT(usdt_spec_parse(bad[i], &u, err, sizeof(err)), -EINVAL);
		CHECK(err[0] != 0);
	}
}

UNIT_TEST(arg_forms)
{
	char syms[USDT_MAX_ARGS][USDT_NAME_MAX], err[256];
	struct usdt_arg a[USDT_MAX_ARGS];

	CHECK_EQ_INT(usdt_args_parse("-4@%esi -8@%rdx -4@$5", a, syms, err, sizeof(err)), 3);
	CHECK_EQ_INT(a[0].kind, USDT_ARG_REG);
	CHECK_EQ_INT(a[0].reg, 4); /* DWARF: rsi */
	CHECK_EQ_INT(a[0].size, 4);
	CHECK(a[0].is_signed);
	CHECK_EQ_INT(a[1].reg, 1); /* rdx */
	CHECK_EQ_INT(a[1].size, 8);
	CHECK_EQ_INT(a[2].kind, USDT_ARG_CONST);
	CHECK_EQ_INT(a[2].val, 5);

	CHECK_EQ_INT(usdt_args_parse("-8@-56(%rbp) 8@(%rsp) 1@%r12b", a, syms, err, sizeof(err)),
		     3);
	CHECK_EQ_INT(a[0].kind, USDT_ARG_MEM);
	CHECK_EQ_INT(a[0].reg, 6);
	CHECK_EQ_INT(a[0].val, -56);
	CHECK_EQ_INT(a[1].kind, USDT_ARG_MEM);
	CHECK_EQ_INT(a[1].reg, 7);
	CHECK_EQ_INT(a[1].val, 0);
	CHECK_EQ_INT(a[2].reg, 12);
	CHECK(!a[2].is_signed);

	CHECK_EQ_INT(usdt_args_parse("-8@g_rounds(%rip) 4@tab+8(%rip)", a, syms, err, sizeof(err)),
		     2);
	CHECK_EQ_INT(a[0].kind, USDT_ARG_GLOBAL);
	CHECK_STR(syms[0], "g_rounds");
	CHECK_EQ_INT(a[1].val, 8);
	CHECK_STR(syms[1], "tab");

	CHECK_EQ_INT(usdt_args_parse("", a, syms, err, sizeof(err)), 0);
}

UNIT_TEST(arg_refusals)
{
	static const char *const bad[] = {"8@(%r15,%rax,8)", "3@%eax", "16@%rax", "8@%xmm0",
					  "8@sym(%rbx)",     "%eax",   "8@",	  "8@$"};
	char err[256];
	struct usdt_arg a[USDT_MAX_ARGS];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		CHECK(usdt_args_parse(bad[i], a, NULL, err, sizeof(err)) < 0);
		CHECK(strstr(err, "USDT argument") != NULL);
	}
	CHECK_EQ_INT(usdt_args_parse("8@(%r15,%rax,8)", a, NULL, err, sizeof(err)), -EOPNOTSUPP);
}

UNIT_TEST(fetch_programs)
{
	struct usdt_arg mem = {.kind = USDT_ARG_MEM, .size = 8, .reg = 7, .val = 8};
	struct usdt_arg reg = {.kind = USDT_ARG_REG, .size = 4, .is_signed = true, .reg = 0};
	struct fetch_prog p;
	struct fetch_type t;

	usdt_arg_fetch(&mem, false, &p, &t);
	CHECK_EQ_INT(p.n_ops, 4);
	CHECK_EQ_INT(p.ops[0].op, FETCH_OP_REG);
	CHECK_EQ_INT(p.ops[1].op, FETCH_OP_ADD);
	CHECK_EQ_INT(p.ops[1].arg, 8);
	CHECK_EQ_INT(p.ops[2].op, FETCH_OP_LOAD);
	CHECK_EQ_INT(p.ops[2].size, 8);
	CHECK_EQ_INT(p.ops[3].op, FETCH_OP_END);
	CHECK_EQ_INT(t.kind, FETCH_UINT);

	/* a char * in memory: load the pointer, then the string it points to */
	usdt_arg_fetch(&mem, true, &p, &t);
	CHECK_EQ_INT(p.ops[2].op, FETCH_OP_DEREF);
	CHECK_EQ_INT(p.ops[3].op, FETCH_OP_STR);
	CHECK_EQ_INT(p.n_ops, 5);
	CHECK_EQ_INT(t.kind, FETCH_STRING);

	/* a register: the value is acc, truncated and sign-extended by type */
	usdt_arg_fetch(&reg, false, &p, &t);
	CHECK_EQ_INT(p.n_ops, 2);
	CHECK(p.is_signed);
	CHECK_EQ_INT(t.size, 4);
	CHECK_EQ_INT(t.kind, FETCH_INT);
}

/* readelf -n's "Location:" and "Semaphore:" of provider ruby, name @name. */
static int readelf_sites(const char *name, uint64_t *loc, uint64_t *sema, int max)
{
	char cmd[256], line[512], prov[128] = "", nm[128] = "";
	int n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -n %s", LIBRUBY);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long l, b, s;

		if (sscanf(line, " Provider: %127s", prov) == 1 || sscanf(line, " Name: %127s", nm))
			continue;
		if (sscanf(line, " Location: %llx, Base: %llx, Semaphore: %llx", &l, &b, &s) == 3 &&
		    !strcmp(prov, "ruby") && !strcmp(nm, name) && n < max) {
			loc[n] = l;
			sema[n++] = s;
		}
	}
	pclose(f);
	return n;
}

UNIT_TEST(notes_match_readelf)
{
	uint64_t loc[16], sema[16];
	struct usdt_note *notes;
	size_t n_notes;
	char err[512];
	int want, got = 0;

	if (access(LIBRUBY, R_OK)) {
		fprintf(stderr, "  no %s: skipped\n", LIBRUBY);
		return;
	}
	want = readelf_sites("method__entry", loc, sema, 16);
	CHECK(want > 0);
	CHECK_EQ_INT(usdt_notes_read(LIBRUBY, &notes, &n_notes, err, sizeof(err)), 0);
	for (size_t i = 0; i < n_notes; i++) {
		if (strcmp(notes[i].provider, "ruby") || strcmp(notes[i].name, "method__entry"))
			continue;
		CHECK(got < want);
		if (got >= want)
			break;
		/* libruby is not prelinked: .stapsdt.base is where the notes say */
		CHECK_EQ_INT(notes[i].vaddr, loc[got]);
		CHECK_EQ_INT(notes[i].sema_vaddr, sema[got]);
		CHECK(notes[i].sema_offset != 0);
		CHECK_EQ_INT(usdt_site_is_nop(LIBRUBY, notes[i].offset), 1);
		got++;
	}
	CHECK_EQ_INT(got, want);
	free(notes);
	/* no notes at all */
	CHECK_EQ_INT(usdt_notes_read("/proc/self/exe", &notes, &n_notes, err, sizeof(err)),
		     -ENODATA);
	CHECK(strstr(err, "no USDT probes") != NULL);
}

UNIT_MAIN()
