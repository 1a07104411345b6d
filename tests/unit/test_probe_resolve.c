// SPDX-License-Identifier: GPL-2.0
/*
 * test_probe_resolve.c - probe specs and fetch programs against fixture
 * binaries built at run time (-O0 -g, -O2 -g, stripped) from
 * tests/unit/fixtures/probe_basic.c. Expected values come from
 * independent tools (nm, eu-addr2line, objdump) and from running the
 * fixture under ptrace: a breakpoint at the probe address, then the
 * compiled fetch program is interpreted against the stopped process and
 * compared with what the fixture printed for that call.
 *
 * Run from the repository root.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

#include <gelf.h>

#include "unit.h"
#include "dwarf/fetch_compile.h"
#include "dwarf/probe_resolve.h"

#define FIXTURE "tests/unit/fixtures/probe_basic.c"

static char tmpdir[64];
static char bin_o0[128], bin_o2[128], bin_strip[128];
static bool built, build_ok;

static void cleanup(void)
{
	char cmd[128];

	if (tmpdir[0] && strncmp(tmpdir, "/tmp/lp_probe_", 14) == 0) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "  cannot remove %s\n", tmpdir);
	}
}

static bool build(void)
{
	char cmd[1024];

	if (built)
		return build_ok;
	built = true;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/lp_probe_XXXXXX");
	if (!mkdtemp(tmpdir))
		return false;
	atexit(cleanup);
	snprintf(bin_o0, sizeof(bin_o0), "%s/probe_o0", tmpdir);
	snprintf(bin_o2, sizeof(bin_o2), "%s/probe_o2", tmpdir);
	snprintf(bin_strip, sizeof(bin_strip), "%s/probe_strip", tmpdir);
	snprintf(cmd, sizeof(cmd),
		 "cc -O0 -g -o %s " FIXTURE " && cc -O2 -g -o %s " FIXTURE " && strip -o %s %s",
		 bin_o0, bin_o2, bin_strip, bin_o2);
	build_ok = system(cmd) == 0;
	if (!build_ok)
		fprintf(stderr, "  cannot build fixtures: %s\n", cmd);
	return build_ok;
}

/* Line number of the "LINE:name" marker in the fixture source. */
static int marker_line(const char *name)
{
	char want[64], buf[512];
	FILE *f = fopen(FIXTURE, "r");
	int ln = 0, found = 0;

	if (!f)
		return 0;
	snprintf(want, sizeof(want), "LINE:%s ", name);
	while (fgets(buf, sizeof(buf), f)) {
		ln++;
		if (strstr(buf, want)) {
			found = ln;
			break;
		}
	}
	fclose(f);
	return found;
}

static uint64_t nm_sym(const char *bin, const char *func, const char *types)
{
	char cmd[256], buf[512];
	uint64_t v = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm %s", bin);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(buf, sizeof(buf), p)) {
		char type, name[256];
		unsigned long long a;

		if (sscanf(buf, "%llx %c %255s", &a, &type, name) == 3 && !strcmp(name, func) &&
		    strchr(types, type))
			v = a;
	}
	pclose(p);
	return v;
}

static uint64_t nm_addr(const char *bin, const char *func)
{
	return nm_sym(bin, func, "Tt");
}

static int addr2line(const char *bin, uint64_t addr)
{
	char cmd[256], buf[1024], *c;
	int line = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "eu-addr2line -e %s 0x%llx", bin, (unsigned long long)addr);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (fgets(buf, sizeof(buf), p) && (c = strstr(buf, ".c:")))
		line = atoi(c + 3);
	pclose(p);
	return line;
}

/* ret instructions of @func per objdump. */
static size_t objdump_rets(const char *bin, const char *func, uint64_t *out, size_t max)
{
	char cmd[256], buf[1024], hdr[300];
	bool in = false;
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn %s", bin);
	snprintf(hdr, sizeof(hdr), "<%s>:", func);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(buf, sizeof(buf), p)) {
		unsigned long long a;
		char *tab;

		if (strstr(buf, hdr)) {
			in = true;
			continue;
		}
		if (!in)
			continue;
		if (buf[0] == '\n')
			break;
		tab = strchr(buf, '\t');
		if (sscanf(buf, " %llx:", &a) != 1 || !tab)
			continue;
		tab++;
		if ((!strncmp(tab, "ret", 3) || !strncmp(tab, "repz ret", 8) ||
		     !strncmp(tab, "bnd ret", 7)) &&
		    n < max)
			out[n++] = a;
	}
	pclose(p);
	return n;
}

static int resolve(const char *bin, const char *text, struct probe_spec *sp, struct probe_target *t,
		   char *err, size_t errlen)
{
	int ret = probe_spec_parse(text, sp, err, errlen);

	if (ret)
		return ret;
	return probe_resolve(bin, sp, t, err, errlen);
}

UNIT_TEST(test_spec_parse)
{
	struct probe_spec s;
	char err[256];

	CHECK_EQ_INT(probe_spec_parse("handle", &s, err, sizeof(err)), 0);
	CHECK(s.kind == PROBE_SPEC_FUNC && !strcmp(s.func, "handle") && !s.binary[0]);
	CHECK_EQ_INT(probe_spec_parse("libc.so.6:malloc", &s, err, sizeof(err)), 0);
	CHECK_STR(s.binary, "libc.so.6");
	CHECK_STR(s.func, "malloc");
	CHECK_EQ_INT(probe_spec_parse("server.c:1312", &s, err, sizeof(err)), 0);
	CHECK(s.kind == PROBE_SPEC_LINE && s.line == 1312);
	CHECK_STR(s.file, "server.c");
	CHECK_EQ_INT(probe_spec_parse("/usr/bin/app:main+0x10", &s, err, sizeof(err)), 0);
	CHECK(s.has_offset && s.offset == 0x10);
	CHECK_STR(s.func, "main");
	CHECK_STR(s.binary, "/usr/bin/app");
	CHECK_EQ_INT(
		probe_spec_parse("handle(n, req->hdr.kind, *p, a[3], ret)", &s, err, sizeof(err)),
		0);
	CHECK_EQ_INT(s.n_args, 5);
	CHECK_STR(s.args[1].base, "req");
	CHECK_EQ_INT(s.args[1].n_steps, 2);
	CHECK(s.args[1].steps[0].kind == PROBE_STEP_ARROW &&
	      s.args[1].steps[1].kind == PROBE_STEP_DOT);
	CHECK_STR(s.args[1].steps[1].field, "kind");
	CHECK_EQ_INT(s.args[2].n_deref, 1);
	CHECK(s.args[3].steps[0].kind == PROBE_STEP_INDEX && s.args[3].steps[0].index == 3);
	CHECK(s.args[4].is_ret);
	CHECK_EQ_INT(probe_spec_parse("main.(*Server).handle", &s, err, sizeof(err)), 0);
	CHECK_STR(s.func, "main.(*Server).handle");
	CHECK_EQ_INT(s.n_args, 0);
	CHECK(probe_spec_parse("", &s, err, sizeof(err)) == -EINVAL);
	CHECK(probe_spec_parse("f(a->)", &s, err, sizeof(err)) == -EINVAL);
	CHECK(probe_spec_parse("f(a[x])", &s, err, sizeof(err)) == -EINVAL);
	CHECK(probe_spec_parse("f(a,b,c,d,e,f,g)", &s, err, sizeof(err)) == -EINVAL);
	CHECK(probe_spec_parse("f+zz", &s, err, sizeof(err)) == -EINVAL);
	CHECK(probe_spec_binary_matches("libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"));
	CHECK(probe_spec_binary_matches("libc", "/usr/lib/x86_64-linux-gnu/libc.so.6"));
	CHECK(!probe_spec_binary_matches("libc", "/usr/lib/libcrypto.so.3"));
	CHECK(probe_spec_binary_matches("/bin/app", "/bin/app"));
	CHECK(!probe_spec_binary_matches("/bin/app", "/usr/bin/app"));
}

UNIT_TEST(test_func_entry)
{
	const char *bins[] = {bin_o0, bin_o2};
	const char *funcs[] = {"handle", "helper_static", "main"};

	if (!build()) {
		CHECK(0);
		return;
	}
	for (size_t b = 0; b < 2; b++) {
		for (size_t f = 0; f < 3; f++) {
			struct probe_spec sp;
			struct probe_target t;
			char err[512];
			uint64_t want = nm_addr(bins[b], funcs[f]);

			CHECK(want != 0);
			CHECK_EQ_INT(resolve(bins[b], funcs[f], &sp, &t, err, sizeof(err)), 0);
			CHECK_EQ_INT(t.entry_vaddr, want);
			CHECK_EQ_INT(t.n_sites, 1);
			CHECK(t.func_size > 0);
			CHECK(t.body_vaddr >= t.entry_vaddr &&
			      t.body_vaddr < t.entry_vaddr + t.func_size);
			CHECK(!t.is_go);
			probe_target_free(&t);
		}
	}
	{
		struct probe_spec sp;
		struct probe_target t;
		char err[512];

		CHECK_EQ_INT(resolve(bin_o0, "handle+4", &sp, &t, err, sizeof(err)), 0);
		CHECK_EQ_INT(t.entry_vaddr, nm_addr(bin_o0, "handle") + 4);
		probe_target_free(&t);
		CHECK_EQ_INT(resolve(bin_o0, "handle+100000", &sp, &t, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "outside"));
	}
}

static void check_line(const char *bin, const char *marker, size_t min_sites)
{
	struct probe_spec sp;
	struct probe_target t;
	char spec[128], err[512];
	int line = marker_line(marker);

	CHECK(line > 0);
	snprintf(spec, sizeof(spec), "probe_basic.c:%d", line);
	CHECK_EQ_INT(resolve(bin, spec, &sp, &t, err, sizeof(err)), 0);
	if (t.n_sites < min_sites)
		fprintf(stderr, "  %s %s: %zu sites, want >= %zu\n", bin, marker, t.n_sites,
			min_sites);
	CHECK(t.n_sites >= min_sites);
	CHECK(t.is_line);
	for (size_t i = 0; i < t.n_sites; i++) {
		CHECK_EQ_INT(addr2line(bin, t.sites[i].vaddr), line);
		CHECK_EQ_INT(t.sites[i].line, line);
		CHECK(t.sites[i].func != NULL);
		if (i)
			CHECK(t.sites[i].vaddr > t.sites[i - 1].vaddr);
	}
	probe_target_free(&t);
}

UNIT_TEST(test_line_sites)
{
	if (!build()) {
		CHECK(0);
		return;
	}
	check_line(bin_o0, "loop_body", 1);
	check_line(bin_o2, "loop_body", 1);
	/* squash() is inlined at three call sites: its line has several addresses */
	check_line(bin_o0, "inline_body", 3);
	check_line(bin_o2, "inline_body", 1);
	/* an unrolled loop repeats its body line */
	check_line(bin_o2, "unrolled_body", 2);
}

UNIT_TEST(test_line_inlined_site)
{
	struct probe_spec sp;
	struct probe_target t;
	char spec[128], err[512];
	bool saw_inline = false;

	if (!build()) {
		CHECK(0);
		return;
	}
	snprintf(spec, sizeof(spec), "probe_basic.c:%d", marker_line("inline_body"));
	CHECK_EQ_INT(resolve(bin_o2, spec, &sp, &t, err, sizeof(err)), 0);
	for (size_t i = 0; i < t.n_sites; i++) {
		if (t.sites[i].inlined_from && !strcmp(t.sites[i].inlined_from, "squash")) {
			saw_inline = true;
			/* the enclosing function is the caller, not squash */
			CHECK(t.sites[i].func && strcmp(t.sites[i].func, "squash"));
		}
	}
	CHECK(saw_inline);
	probe_target_free(&t);
}

/*
 * Whether readelf -d, an independent reader, lists PIE in @bin's FLAGS_1
 * or finds no dynamic section at all: what makes it a program of its own.
 */
static bool readelf_says_program(const char *bin)
{
	bool pie = false, dynamic = false;
	FILE *p = unit_readelf("-hd", bin);
	char line[512];

	if (!p)
		return false;
	while (fgets(line, sizeof(line), p)) {
		dynamic |= strstr(line, "(NEEDED)") != NULL;
		pie |= strstr(line, "(FLAGS_1)") && strstr(line, " PIE");
		pie |= strstr(line, "Type:") && strstr(line, "EXEC ");
	}
	pclose(p);
	return pie || !dynamic;
}

/* A program's own file (PIE, fixed-address) is told from a library. */
UNIT_TEST(test_program_or_library)
{
	const char *kinds[] = {"-pie", "-no-pie", "-shared -fPIC"};
	const bool program[] = {true, true, false};

	if (!build()) {
		CHECK(0);
		return;
	}
	for (size_t k = 0; k < 3; k++) {
		struct probe_spec sp;
		struct probe_target t;
		char bin[160], cmd[512], err[512];

		snprintf(bin, sizeof(bin), "%s/kind%zu", tmpdir, k);
		snprintf(cmd, sizeof(cmd), "cc -O0 -g %s -o %s " FIXTURE, kinds[k], bin);
		CHECK(system(cmd) == 0);
		CHECK(readelf_says_program(bin) == program[k]);
		CHECK_EQ_INT(resolve(bin, "handle", &sp, &t, err, sizeof(err)), 0);
		if (t.is_program != program[k])
			fprintf(stderr, "  %s: is_program %d\n", kinds[k], t.is_program);
		CHECK(t.is_program == program[k]);
		probe_target_free(&t);
	}
}

UNIT_TEST(test_errors)
{
	struct probe_spec sp;
	struct probe_target t;
	char spec[128], err[512];

	if (!build()) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(resolve(bin_o2, "squash", &sp, &t, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "only inlined") && strstr(err, "handle at probe_basic.c:") &&
	      strstr(err, "--trace probe_basic.c:"));
	CHECK_EQ_INT(resolve(bin_o0, "squash", &sp, &t, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "only inlined"));

	CHECK_EQ_INT(resolve(bin_o2, "handel", &sp, &t, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "did you mean") && strstr(err, "'handle'"));

	snprintf(spec, sizeof(spec), "probe_basic.c:%d", marker_line("nocode"));
	CHECK_EQ_INT(resolve(bin_o0, spec, &sp, &t, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "no code") && strstr(err, "nearest"));

	CHECK_EQ_INT(resolve(bin_o0, "probe_basc.c:10", &sp, &t, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "did you mean 'probe_basic.c'"));

	snprintf(spec, sizeof(spec), "probe_basic.c:%d", marker_line("loop_body"));
	CHECK_EQ_INT(resolve(bin_strip, spec, &sp, &t, err, sizeof(err)), -ENODATA);
	CHECK(strstr(err, "no DWARF line info"));

	CHECK(resolve("/nonexistent/bin", "main", &sp, &t, err, sizeof(err)) == -ENOENT);
	CHECK(resolve(FIXTURE, "main", &sp, &t, err, sizeof(err)) == -ENOEXEC);
}

UNIT_TEST(test_ret_sites)
{
	const char *bins[] = {bin_o0, bin_o2};
	const char *funcs[] = {"handle", "helper_static", "other", "main"};
	static const uint8_t mov_c3[] = {0xb8, 0xc3, 0x00, 0x00, 0x00};
	static const uint8_t lea[] = {0x48, 0x8d, 0x05, 0xc3, 0x00, 0x00, 0x00};
	static const uint8_t endbr[] = {0xf3, 0x0f, 0x1e, 0xfa};
	static const uint8_t vmov[] = {0xc5, 0xfa, 0x6f, 0x44, 0x24, 0x08};
	static const uint8_t evex[] = {0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x06};

	CHECK_EQ_INT(x86_insn_length(mov_c3, sizeof(mov_c3)), 5);
	CHECK_EQ_INT(x86_insn_length(lea, sizeof(lea)), 7);
	CHECK_EQ_INT(x86_insn_length(endbr, sizeof(endbr)), 4);
	CHECK_EQ_INT(x86_insn_length(vmov, sizeof(vmov)), 6);
	CHECK_EQ_INT(x86_insn_length(evex, sizeof(evex)), 6);
	CHECK_EQ_INT(x86_insn_length(lea, 3), -1);

	if (!build()) {
		CHECK(0);
		return;
	}
	for (size_t b = 0; b < 2; b++) {
		for (size_t f = 0; f < 4; f++) {
			struct probe_spec sp;
			struct probe_target t;
			uint64_t want[32];
			char err[512];
			size_t n = objdump_rets(bins[b], funcs[f], want, 32);

			CHECK(n > 0);
			CHECK_EQ_INT(resolve(bins[b], funcs[f], &sp, &t, err, sizeof(err)), 0);
			CHECK(t.ret_sites_valid);
			CHECK_EQ_INT(t.n_ret_sites, n);
			for (size_t i = 0; i < n && i < t.n_ret_sites; i++) {
				CHECK_EQ_INT(t.ret_sites[i].vaddr, want[i]);
				CHECK(t.ret_sites[i].is_return_insn);
			}
			probe_target_free(&t);
		}
	}
	{
		/* a large libc function decodes without error (AVX/EVEX code) */
		struct probe_spec sp;
		struct probe_target t;
		char err[512];

		if (resolve("/lib/x86_64-linux-gnu/libc.so.6", "__memcpy_avx512_unaligned_erms",
			    &sp, &t, err, sizeof(err)) == 0) {
			CHECK(t.ret_sites_valid);
			probe_target_free(&t);
		}
	}
}

static int compile(const char *bin, uint64_t at, const char *expr, struct fetch_prog *p,
		   struct fetch_type *ty, char *err, size_t errlen)
{
	struct probe_expr e;
	int ret = probe_expr_parse(expr, &e, err, errlen);

	if (ret)
		return ret;
	return fetch_compile(bin, at, &e, p, ty, err, errlen);
}

UNIT_TEST(test_fetch_static)
{
	struct probe_spec sp;
	struct probe_target t0, t2;
	struct fetch_prog p;
	struct fetch_type ty;
	char err[512];

	if (!build()) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(resolve(bin_o0, "handle", &sp, &t0, err, sizeof(err)), 0);
	CHECK_EQ_INT(resolve(bin_o2, "handle", &sp, &t2, err, sizeof(err)), 0);

	/* -O0: the argument lives in the frame: CFA/rbp based, then a 4-byte load */
	CHECK_EQ_INT(compile(bin_o0, t0.body_vaddr, "n", &p, &ty, err, sizeof(err)), 0);
	CHECK(p.n_ops >= 3 && (p.ops[0].op == FETCH_OP_CFA || p.ops[0].op == FETCH_OP_REG));
	CHECK(p.ops[p.n_ops - 2].op == FETCH_OP_LOAD && p.ops[p.n_ops - 2].size == 4);
	CHECK(p.ops[p.n_ops - 1].op == FETCH_OP_END);
	CHECK(ty.kind == FETCH_INT && ty.is_signed && p.is_signed);
	CHECK_STR(ty.name, "int");
	fetch_type_free(&ty);
	/* at the very entry the frame base is the CFA, sp + 8 */
	CHECK_EQ_INT(compile(bin_o0, t0.entry_vaddr, "n", &p, &ty, err, sizeof(err)), 0);
	CHECK(p.ops[0].op == FETCH_OP_CFA);

	/* -O2: req arrives in rdi (DWARF 5) */
	CHECK_EQ_INT(compile(bin_o2, t2.entry_vaddr, "req->kind", &p, &ty, err, sizeof(err)), 0);
	CHECK(p.ops[0].op == FETCH_OP_REG && p.ops[0].reg == 5);
	CHECK(p.ops[p.n_ops - 2].op == FETCH_OP_LOAD);
	CHECK(p.n_ops <= FETCH_MAX_OPS);
	CHECK_EQ_INT(compile(bin_o2, t2.entry_vaddr, "req", &p, &ty, err, sizeof(err)), 0);
	CHECK(ty.kind == FETCH_PTR && ty.size == 8);
	CHECK_STR(ty.name, "struct request *");
	CHECK_EQ_INT(compile(bin_o2, t2.entry_vaddr, "ret", &p, &ty, err, sizeof(err)), 0);
	CHECK(p.n_ops == 2 && p.ops[0].op == FETCH_OP_RETVAL && p.ops[1].op == FETCH_OP_END);
	CHECK(ty.kind == FETCH_INT);
	CHECK_EQ_INT(compile(bin_o2, t2.entry_vaddr, "global_counter", &p, &ty, err, sizeof(err)),
		     0);
	CHECK(p.ops[0].op == FETCH_OP_ADDR &&
	      (uint64_t)p.ops[0].arg == nm_sym(bin_o2, "global_counter", "Dd"));

	/* errors */
	CHECK_EQ_INT(compile(bin_o2, t2.entry_vaddr, "nosuch", &p, &ty, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "no variable 'nosuch'"));
	CHECK(compile(bin_o2, t2.entry_vaddr, "req.kind", &p, &ty, err, sizeof(err)) < 0);
	CHECK(strstr(err, "use ->"));
	CHECK(compile(bin_o2, t2.entry_vaddr, "req->nosuch", &p, &ty, err, sizeof(err)) == -ENOENT);
	CHECK(compile(bin_o2, t2.entry_vaddr, "*req", &p, &ty, err, sizeof(err)) == -EOPNOTSUPP);
	CHECK(strstr(err, "pick a member"));
	CHECK(compile(bin_strip, t2.entry_vaddr, "n", &p, &ty, err, sizeof(err)) == -ENODATA);
	probe_target_free(&t0);
	probe_target_free(&t2);

	/* enums come with their enumerators */
	CHECK_EQ_INT(resolve(bin_o0, "helper_static", &sp, &t0, err, sizeof(err)), 0);
	CHECK_EQ_INT(compile(bin_o0, t0.body_vaddr, "c", &p, &ty, err, sizeof(err)), 0);
	CHECK(ty.kind == FETCH_ENUM && ty.n_enums == 3);
	CHECK(ty.n_enums == 3 && !strcmp(ty.enums[1].name, "GREEN") && ty.enums[1].value == 5);
	fetch_type_free(&ty);
	probe_target_free(&t0);
}

/* ---- live check under ptrace ----------------------------------------- */

static uint64_t dwarf_reg(const struct user_regs_struct *r, unsigned n)
{
	switch (n) {
	case 0:
		return r->rax;
	case 1:
		return r->rdx;
	case 2:
		return r->rcx;
	case 3:
		return r->rbx;
	case 4:
		return r->rsi;
	case 5:
		return r->rdi;
	case 6:
		return r->rbp;
	case 7:
		return r->rsp;
	case 8:
		return r->r8;
	case 9:
		return r->r9;
	case 10:
		return r->r10;
	case 11:
		return r->r11;
	case 12:
		return r->r12;
	case 13:
		return r->r13;
	case 14:
		return r->r14;
	case 15:
		return r->r15;
	case 16:
		return r->rip;
	}
	return 0;
}

static bool peek(pid_t pid, uint64_t addr, uint64_t *v)
{
	long w;

	errno = 0;
	w = ptrace(PTRACE_PEEKDATA, pid, (void *)addr, NULL);
	if (errno)
		return false;
	*v = (uint64_t)w;
	return true;
}

/* The BPF interpreter's job, done with ptrace. Returns false on a fault. */
static bool eval(pid_t pid, const struct user_regs_struct *r, uint64_t bias,
		 const struct fetch_prog *p, const struct fetch_type *ty, int64_t *val,
		 char *str)
{
	uint64_t acc = 0, w;

	for (unsigned i = 0; i < p->n_ops && i < FETCH_MAX_OPS; i++) {
		const struct fetch_op *op = &p->ops[i];

		switch (op->op) {
		case FETCH_OP_REG:
			acc = dwarf_reg(r, op->reg);
			break;
		case FETCH_OP_ADD:
			acc += (uint64_t)op->arg;
			break;
		case FETCH_OP_DEREF:
			if (!peek(pid, acc, &acc))
				return false;
			break;
		case FETCH_OP_ADDR:
			acc = (uint64_t)op->arg + bias;
			break;
		case FETCH_OP_CFA:
			acc = r->rsp + (uint64_t)op->arg;
			break;
		case FETCH_OP_RETVAL:
			acc = r->rax;
			break;
		case FETCH_OP_STR:
			for (int k = 0; k < FETCH_STR_LEN; k += 8) {
				if (!peek(pid, acc + k, &w))
					return false;
				memcpy(str + k, &w, 8);
			}
			str[FETCH_STR_LEN - 1] = '\0';
			return true;
		case FETCH_OP_LOAD:
			if (!peek(pid, acc, &acc))
				return false;
			goto value;
		case FETCH_OP_END:
			goto value;
		}
	}
	return false;
value:
	if (ty->size < 8) {
		uint64_t mask = (1ULL << (ty->size * 8)) - 1, sign = 1ULL << (ty->size * 8 - 1);

		acc &= mask;
		if (p->is_signed && (acc & sign))
			acc |= ~mask;
	}
	*val = (int64_t)acc;
	return true;
}

static uint64_t load_bias(pid_t pid, const char *bin)
{
	char path[64], line[1024], real[4096];
	uint64_t lo = UINT64_MAX, bias = 0;
	size_t i, n;
	int fd;
	Elf *elf;
	FILE *f;

	if (!realpath(bin, real))
		return 0;
	fd = open(bin, O_RDONLY);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && !elf_getphdrnum(elf, &n)) {
		for (i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    ph.p_vaddr < lo)
				lo = ph.p_vaddr & ~0xfffULL;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;

		if (sscanf(line, "%llx-%llx %*s %llx", &s, &e, &off) == 3 && off == 0 &&
		    strstr(line, real)) {
			bias = s - lo;
			break;
		}
	}
	fclose(f);
	return bias;
}

struct live_expr {
	const char *expr;
	const char *key; /* "n=" in the fixture's output, or "name=" for strings */
};

/*
 * Break at @vaddr in the fixture @hits times; at each stop evaluate the
 * expressions' programs and compare with the fixture's line for the call.
 */
static void live_check(const char *bin, uint64_t vaddr, const struct live_expr *ex, size_t nex,
		       int hits)
{
	struct fetch_prog progs[8];
	struct fetch_type types[8];
	char err[512], line[512];
	int pfd[2], status, got = 0;
	uint64_t addr, orig = 0, bias;
	FILE *out;
	pid_t pid;

	for (size_t i = 0; i < nex; i++) {
		CHECK_EQ_INT(
			compile(bin, vaddr, ex[i].expr, &progs[i], &types[i], err, sizeof(err)), 0);
		if (progs[i].n_ops == 0) {
			fprintf(stderr, "  %s: %s\n", ex[i].expr, err);
			return;
		}
	}
	if (pipe(pfd))
		return;
	pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execl(bin, bin, "3", (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	out = fdopen(pfd[0], "r");
	CHECK(waitpid(pid, &status, 0) == pid && WIFSTOPPED(status));
	bias = load_bias(pid, bin);
	addr = bias + vaddr;
	CHECK(peek(pid, addr, &orig));
	ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)((orig & ~0xffULL) | 0xcc));
	while (got < hits) {
		struct user_regs_struct r;

		ptrace(PTRACE_CONT, pid, NULL, NULL);
		if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status) ||
		    WSTOPSIG(status) != SIGTRAP)
			break;
		ptrace(PTRACE_GETREGS, pid, NULL, &r);
		r.rip--;
		CHECK_EQ_INT(r.rip, addr);
		if (!fgets(line, sizeof(line), out))
			break;
		for (size_t i = 0; i < nex; i++) {
			int64_t v = 0;
			char s[FETCH_STR_LEN] = "", want[64] = "";
			char *k = strstr(line, ex[i].key);

			CHECK(k != NULL);
			if (!k)
				continue;
			sscanf(k + strlen(ex[i].key), "%63s", want);
			CHECK(eval(pid, &r, bias, &progs[i], &types[i], &v, s));
			if (types[i].kind == FETCH_STRING) {
				CHECK_STR(s, want);
			} else {
				if (v != atoll(want))
					fprintf(stderr, "  %s at 0x%llx: %s got %lld want %s\n",
						bin, (unsigned long long)vaddr, ex[i].expr,
						(long long)v, want);
				CHECK_EQ_INT(v, atoll(want));
			}
		}
		got++;
		/* step over the original instruction, then re-arm */
		ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)orig);
		ptrace(PTRACE_SETREGS, pid, NULL, &r);
		ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL);
		if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
			break;
		ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)((orig & ~0xffULL) | 0xcc));
	}
	CHECK_EQ_INT(got, hits);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	fclose(out);
	for (size_t i = 0; i < nex; i++)
		fetch_type_free(&types[i]);
}

UNIT_TEST(test_fetch_live)
{
	static const struct live_expr ex[] = {
		{"n", " n="},
		{"req->kind", " kind="},
		{"req->hdr.kind", "hdr.kind="},
		{"req->vals[1]", "vals1="},
		{"req->name", "name="},
	};
	struct probe_spec sp;
	struct probe_target t;
	char err[512], spec[64];

	if (!build()) {
		CHECK(0);
		return;
	}
	/* -O0 after the prologue: the arguments are in the frame */
	CHECK_EQ_INT(resolve(bin_o0, "handle", &sp, &t, err, sizeof(err)), 0);
	live_check(bin_o0, t.body_vaddr, ex, 5, 3);
	probe_target_free(&t);
	/* -O2 at the entry: the arguments are in registers (location lists) */
	CHECK_EQ_INT(resolve(bin_o2, "handle", &sp, &t, err, sizeof(err)), 0);
	live_check(bin_o2, t.entry_vaddr, ex, 5, 3);
	probe_target_free(&t);
	/* a line probe inside the loop, first hit of the first call */
	snprintf(spec, sizeof(spec), "probe_basic.c:%d", marker_line("loop_body"));
	CHECK_EQ_INT(resolve(bin_o0, spec, &sp, &t, err, sizeof(err)), 0);
	if (t.n_sites)
		live_check(bin_o0, t.sites[0].vaddr, ex, 4, 1);
	probe_target_free(&t);
}

UNIT_MAIN()
