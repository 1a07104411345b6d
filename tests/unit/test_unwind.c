// SPDX-License-Identifier: GPL-2.0
/*
 * test_unwind.c - dwarf/unwind.c against real stacks.
 *
 * Builds tests/unit/fixtures/unwind_chain.c twice (without frame pointers,
 * and with them but a frameless leaf), runs it until it spins in leaf(),
 * stops it with ptrace, copies its registers and 16 KiB of stack, and
 * unwinds that copy after the fact, the way the daemon unwinds a sample.
 * Frames are named with nm, relative to the load base from /proc/PID/maps.
 *
 * Run from the repository root (it compiles the fixture with cc).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "unit.h"
#include "dwarf/unwind.h"

#define FIXTURE_SRC "tests/unit/fixtures/unwind_chain.c"
#define STACK_COPY  16384
#define MAX_PCS	    64

struct fsym {
	uint64_t addr;
	char name[64];
};

/* One stopped fixture process and what the sampler would have copied. */
struct capture {
	bool ok;
	pid_t pid;
	char bin[128];
	struct unwind_regs regs;
	unsigned char stack[STACK_COPY];
	size_t stack_len;
	uint64_t base; /* load bias of the executable */
	uint64_t libc_lo, libc_hi;
	struct fsym *syms;
	size_t nr_syms;
};

static char tmpdir[] = "/tmp/test_unwind.XXXXXX";
static bool have_tmpdir;
/* How each fixture is built; index = capture(which). */
static const struct {
	const char *name;
	const char *cflags;
} builds[] = {
	{"chain_nofp", "-O2 -g -fomit-frame-pointer"},
	{"chain_fp", "-O2 -g -fno-omit-frame-pointer"},
	/* no CFI at all for our code: libdw's frame-pointer fallback */
	{"chain_nocfi",
	 "-O2 -fno-omit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables"},
	/* .debug_frame only, in the file itself */
	{"chain_dbgframe",
	 "-O2 -g -fomit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables"},
};
static struct capture caps[4];
static struct unwinder *unw;

static int sym_cmp(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int load_syms(struct capture *c)
{
	char cmd[256], line[256];
	FILE *f;

	if (snprintf(cmd, sizeof(cmd), "nm '%s'", c->bin) >= (int)sizeof(cmd))
		return -ENAMETOOLONG;
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, name[64];
		struct fsym *s;

		if (sscanf(line, "%llx %c %63s", &addr, &type, name) != 3)
			continue;
		if (type != 't' && type != 'T' && type != 'W')
			continue;
		s = realloc(c->syms, (c->nr_syms + 1) * sizeof(*s));
		if (!s) {
			pclose(f);
			return -ENOMEM;
		}
		c->syms = s;
		s[c->nr_syms].addr = addr;
		snprintf(s[c->nr_syms].name, sizeof(s->name), "%s", name);
		c->nr_syms++;
	}
	pclose(f);
	qsort(c->syms, c->nr_syms, sizeof(*c->syms), sym_cmp);
	return c->nr_syms ? 0 : -ENOENT;
}

/* Name of the function at pcs[i] in the executable, "?" elsewhere. */
static const char *frame_name(const struct capture *c, const uint64_t *pcs, int i)
{
	uint64_t pc = i ? pcs[i] - 1 : pcs[i];
	const char *name = "?";

	if (pc < c->base)
		return name;
	pc -= c->base;
	for (size_t k = 0; k < c->nr_syms && c->syms[k].addr <= pc; k++)
		name = c->syms[k].name;
	/* past the last function of the executable: not ours */
	if (c->nr_syms && pc > c->syms[c->nr_syms - 1].addr + 0x1000)
		return "?";
	return name;
}

static bool in_libc(const struct capture *c, uint64_t pc)
{
	return pc >= c->libc_lo && pc < c->libc_hi;
}

static int read_maps(struct capture *c)
{
	char path[64], line[PATH_MAX + 128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", c->pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char file[PATH_MAX];

		file[0] = 0;
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &lo, &hi, &off, file) < 3)
			continue;
		if (!strcmp(file, c->bin) && off == 0 && !c->base)
			c->base = lo;
		if (strstr(file, "/libc.so")) {
			if (!c->libc_lo || lo < c->libc_lo)
				c->libc_lo = lo;
			if (hi > c->libc_hi)
				c->libc_hi = hi;
		}
	}
	fclose(f);
	return c->base && c->libc_hi ? 0 : -ENOENT;
}

/* Copy up to STACK_COPY bytes from sp; short near the top of the stack. */
static void copy_stack(struct capture *c)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", c->pid);
	fd = open(path, O_RDONLY);
	c->stack_len = 0;
	if (fd < 0)
		return;
	while (c->stack_len < STACK_COPY) {
		ssize_t r =
			pread(fd, c->stack + c->stack_len, 512, (off_t)(c->regs.sp + c->stack_len));
		if (r <= 0)
			break;
		c->stack_len += (size_t)r;
	}
	close(fd);
}

static bool stop_child(pid_t pid)
{
	int st;

	if (ptrace(PTRACE_ATTACH, pid, NULL, NULL) != 0)
		return false;
	if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st))
		return false;
	return true;
}

/* Build, start and stop fixture @which with ip inside leaf(). */
static struct capture *capture(int which)
{
	struct capture *c = &caps[which];
	char cmd[512];

	if (c->ok)
		return c;
	if (!have_tmpdir) {
		if (!mkdtemp(tmpdir))
			return NULL;
		have_tmpdir = true;
	}
	snprintf(c->bin, sizeof(c->bin), "%s/%s", tmpdir, which ? "chain_fp" : "chain_nofp");
	if (snprintf(cmd, sizeof(cmd), "cc -O2 -g %s -o '%s' %s", FIXTURE_SRC, c->bin,
		     which ? "-fno-omit-frame-pointer" : "-fomit-frame-pointer") >=
	    (int)sizeof(cmd))
		return NULL;
	if (system(cmd) != 0 || load_syms(c) != 0)
		return NULL;

	c->pid = fork();
	if (c->pid < 0)
		return NULL;
	if (c->pid == 0) {
		execl(c->bin, c->bin, (char *)NULL);
		_exit(127);
	}
	for (int tries = 0; tries < 50; tries++) {
		struct user_regs_struct r;
		uint64_t pcs[1];

		usleep(20000);
		if (!c->base && read_maps(c) != 0)
			continue;
		if (!stop_child(c->pid))
			continue;
		if (ptrace(PTRACE_GETREGS, c->pid, NULL, &r) != 0)
			return NULL;
		pcs[0] = r.rip;
		if (strcmp(frame_name(c, pcs, 0), "leaf") != 0) {
			ptrace(PTRACE_DETACH, c->pid, NULL, NULL);
			continue;
		}
		c->regs.ip = r.rip;
		c->regs.sp = r.rsp;
		c->regs.bp = r.rbp;
		copy_stack(c);
		c->ok = c->stack_len > 0;
		break;
	}
	return c->ok ? c : NULL;
}

static void cleanup(void)
{
	char cmd[PATH_MAX];

	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		if (caps[i].pid > 0) {
			kill(caps[i].pid, SIGKILL);
			waitpid(caps[i].pid, NULL, 0);
		}
		free(caps[i].syms);
	}
	unwinder__free(unw);
	if (have_tmpdir) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "  cannot remove '%s'\n", tmpdir);
	}
}

static struct unwinder *unwinder(void)
{
	if (!unw) {
		unw = unwinder__new();
		atexit(cleanup);
	}
	return unw;
}

static void print_frames(const struct capture *c, const uint64_t *pcs, int n)
{
	for (int i = 0; i < n; i++)
		printf("    #%d %#" PRIx64 " %s%s\n", i, pcs[i], frame_name(c, pcs, i),
		       in_libc(c, pcs[i]) ? " (libc)" : "");
}

/* leaf, c, b, a, main, then libc, then _start in the executable. */
static void check_full_chain(const struct capture *c, const uint64_t *pcs, int n)
{
	static const char *const want[] = {"leaf", "c", "b", "a", "main"};
	bool start = false;

	CHECK(n >= 7);
	if (n < 6)
		return;
	for (int i = 0; i < 5; i++)
		CHECK_STR(frame_name(c, pcs, i), want[i]);
	CHECK(in_libc(c, pcs[5]));
	for (int i = 6; i < n; i++)
		start |= !strcmp(frame_name(c, pcs, i), "_start");
	CHECK(start);
}

static void full_unwind(int which)
{
	struct capture *c = capture(which);
	struct unwinder *u = unwinder();
	uint64_t pcs[MAX_PCS], again[MAX_PCS];
	bool truncated = true;
	int n;

	CHECK(c && u);
	if (!c || !u)
		return;
	CHECK_EQ_INT(unwinder__add_pid(u, c->pid), 0);
	n = unwinder__unwind(u, c->pid, &c->regs, c->stack, c->stack_len, pcs, MAX_PCS, &truncated);
	printf("  %s: %d frames, copy %zu bytes\n", builds[which].name, n, c->stack_len);
	print_frames(c, pcs, n);
	CHECK(!truncated);
	check_full_chain(c, pcs, n);

	/* refreshing the modules, or forgetting the process, changes nothing */
	CHECK_EQ_INT(unwinder__add_pid(u, c->pid), 0);
	CHECK_EQ_INT(unwinder__unwind(u, c->pid, &c->regs, c->stack, c->stack_len, again, MAX_PCS,
				      &truncated),
		     n);
	CHECK(!memcmp(again, pcs, (size_t)n * sizeof(*pcs)));
	unwinder__remove_pid(u, c->pid);
	CHECK_EQ_INT(unwinder__unwind(u, c->pid, &c->regs, c->stack, c->stack_len, again, MAX_PCS,
				      &truncated),
		     n);
	CHECK(!memcmp(again, pcs, (size_t)n * sizeof(*pcs)));
}

UNIT_TEST(test_unwind_nofp)
{
	full_unwind(0);
}

UNIT_TEST(test_unwind_fp)
{
	full_unwind(1);
}

UNIT_TEST(test_unwind_debug_frame)
{
	full_unwind(3);
}

/*
 * No CFI for the executable's code: libdw's x86-64 fallback takes over,
 * from the copy. A frame-pointer walk would hide c() behind the frameless
 * leaf; libdw 0.188 gets it back here, but that is not promised, so c() may
 * be missing. Nothing else may be: b, a, main, then libc.
 */
UNIT_TEST(test_unwind_no_cfi)
{
	static const char *const want[] = {"b", "a", "main"};
	struct capture *c = capture(2);
	struct unwinder *u = unwinder();
	uint64_t pcs[MAX_PCS];
	bool truncated = true;
	int n, i = 1;

	CHECK(c && u);
	if (!c || !u)
		return;
	n = unwinder__unwind(u, c->pid, &c->regs, c->stack, c->stack_len, pcs, MAX_PCS, &truncated);
	printf("  %s: %d frames\n", builds[2].name, n);
	print_frames(c, pcs, n);
	CHECK(n >= 5);
	if (n < 6)
		return;
	CHECK_STR(frame_name(c, pcs, 0), "leaf");
	if (!strcmp(frame_name(c, pcs, 1), "c"))
		i++;
	for (int k = 0; k < 3; k++, i++)
		CHECK_STR(frame_name(c, pcs, i), want[k]);
	CHECK(in_libc(c, pcs[i]));
}

/* Walk rbp in the copy the way the kernel's frame-pointer walk does. */
static int fp_walk(const struct capture *c, uint64_t *pcs, int max)
{
	uint64_t bp = c->regs.bp, sp = c->regs.sp;
	int n = 0;

	pcs[n++] = c->regs.ip;
	while (n < max && bp >= sp && bp - sp + 16 <= c->stack_len) {
		uint64_t next, ret;

		memcpy(&next, c->stack + (bp - sp), 8);
		memcpy(&ret, c->stack + (bp - sp) + 8, 8);
		if (!ret)
			break;
		pcs[n++] = ret;
		if (next <= bp)
			break;
		bp = next;
	}
	return n;
}

UNIT_TEST(test_fix_leaf)
{
	static const char *const want[] = {"leaf", "c", "b", "a", "main"};
	struct capture *c = capture(1);
	struct unwinder *u = unwinder();
	uint64_t pcs[MAX_PCS], before[MAX_PCS];
	int n, m;

	CHECK(c && u);
	if (!c || !u)
		return;
	n = fp_walk(c, pcs, MAX_PCS);
	printf("  frame-pointer walk: %d frames\n", n);
	print_frames(c, pcs, n);
	/* the bug being repaired: the walk goes leaf -> b */
	CHECK(n >= 4);
	if (n < 4)
		return;
	CHECK_STR(frame_name(c, pcs, 1), "b");

	/* a small copy is all fix_leaf needs */
	m = unwinder__fix_leaf(u, c->pid, &c->regs, c->stack, 256, pcs, n, MAX_PCS);
	printf("  after fix_leaf: %d frames\n", m);
	print_frames(c, pcs, m);
	CHECK_EQ_INT(m, n + 1);
	for (int i = 0; i < 5 && i < m; i++)
		CHECK_STR(frame_name(c, pcs, i), want[i]);

	/* a chain that is already right is left alone */
	memcpy(before, pcs, sizeof(pcs));
	CHECK_EQ_INT(unwinder__fix_leaf(u, c->pid, &c->regs, c->stack, 256, pcs, m, MAX_PCS), m);
	CHECK(!memcmp(before, pcs, (size_t)m * sizeof(*pcs)));

	/* full array: the outermost entry falls off */
	n = fp_walk(c, pcs, MAX_PCS);
	m = unwinder__fix_leaf(u, c->pid, &c->regs, c->stack, 256, pcs, n, n);
	CHECK_EQ_INT(m, n);
	CHECK_STR(frame_name(c, pcs, 1), "c");

	/* no copy at all: nothing to go on, nothing changes */
	n = fp_walk(c, pcs, MAX_PCS);
	CHECK_EQ_INT(unwinder__fix_leaf(u, c->pid, &c->regs, c->stack, 0, pcs, n, MAX_PCS), n);
	CHECK_STR(frame_name(c, pcs, 1), "b");
}

UNIT_TEST(test_truncated)
{
	struct capture *c = capture(0);
	struct unwinder *u = unwinder();
	uint64_t full[MAX_PCS], pcs[MAX_PCS];
	bool truncated = false;
	int nfull, n;

	CHECK(c && u);
	if (!c || !u)
		return;
	nfull = unwinder__unwind(u, c->pid, &c->regs, c->stack, c->stack_len, full, MAX_PCS,
				 &truncated);
	CHECK(!truncated);
	n = unwinder__unwind(u, c->pid, &c->regs, c->stack, 64, pcs, MAX_PCS, &truncated);
	printf("  64-byte copy: %d frames, truncated=%d\n", n, truncated);
	print_frames(c, pcs, n);
	CHECK(truncated);
	CHECK(n >= 1 && n < nfull);
	/* whatever came out is a prefix of the real stack: no wrong frames */
	for (int i = 0; i < n && i < nfull; i++)
		CHECK(pcs[i] == full[i]);

	/* every copy length gives a prefix, and truncated unless complete */
	for (size_t len = 0; len <= c->stack_len; len += 8) {
		n = unwinder__unwind(u, c->pid, &c->regs, c->stack, len, pcs, MAX_PCS, &truncated);
		CHECK(n >= 1 && n <= nfull);
		for (int i = 0; i < n && i < nfull; i++)
			CHECK(pcs[i] == full[i]);
		CHECK(truncated || n == nfull);
	}

	/* max reached is not truncation */
	n = unwinder__unwind(u, c->pid, &c->regs, c->stack, c->stack_len, pcs, 3, &truncated);
	CHECK_EQ_INT(n, 3);
	CHECK(!truncated);
}

/* Offset in the copy of the slot that holds @ret, or -1. */
static long find_slot(const struct capture *c, uint64_t ret)
{
	for (size_t off = 0; off + 8 <= c->stack_len; off += 8) {
		uint64_t v;

		memcpy(&v, c->stack + off, 8);
		if (v == ret)
			return (long)off;
	}
	return -1;
}

UNIT_TEST(test_trampoline)
{
	static unsigned char copy[STACK_COPY];
	struct capture *c = capture(0);
	struct unwinder *u = unwinder();
	uint64_t full[MAX_PCS], pcs[MAX_PCS], tramp = UNWIND_TRAMP_LO;
	struct unwind_fixup fix;
	struct unwind_input in = {0};
	struct unwind_regs regs;
	bool truncated;
	int nfull, n;
	long off;

	CHECK(c && u);
	if (!c || !u)
		return;
	nfull = unwinder__unwind(u, c->pid, &c->regs, c->stack, c->stack_len, full, MAX_PCS,
				 &truncated);
	CHECK(nfull >= 7);
	if (nfull < 7)
		return;
	/* a uretprobe pending on b(): its return address into a() is the trampoline */
	off = find_slot(c, full[3]);
	CHECK(off >= 0);
	if (off < 0)
		return;
	memcpy(copy, c->stack, c->stack_len);
	memcpy(copy + off, &tramp, 8);

	n = unwinder__unwind(u, c->pid, &c->regs, copy, c->stack_len, pcs, MAX_PCS, &truncated);
	printf("  trampoline, no fix-up: %d frames\n", n);
	print_frames(c, pcs, n);
	CHECK_EQ_INT(n, 4);
	CHECK(pcs[3] == tramp);
	CHECK(!truncated);

	fix.slot = c->regs.sp + (uint64_t)off;
	fix.ret = full[3];
	in.regs = &c->regs;
	in.stack = copy;
	in.stack_len = c->stack_len;
	in.fixups = &fix;
	in.nr_fixups = 1;
	n = unwinder__unwind_input(u, c->pid, &in, pcs, MAX_PCS, &truncated);
	CHECK_EQ_INT(n, nfull);
	CHECK(!memcmp(pcs, full, (size_t)nfull * sizeof(*pcs)));
	CHECK(!truncated);

	/* the sample lands in the trampoline: b() has just returned into it */
	regs.ip = tramp;
	regs.sp = fix.slot + 8;
	regs.bp = c->regs.bp;
	in.regs = &regs;
	in.stack = copy + off + 8;
	in.stack_len = c->stack_len - (size_t)off - 8;
	n = unwinder__unwind_input(u, c->pid, &in, pcs, MAX_PCS, &truncated);
	printf("  sample in the trampoline: %d frames\n", n);
	print_frames(c, pcs, n);
	CHECK_EQ_INT(n, nfull - 3);
	CHECK(!memcmp(pcs, full + 3, (size_t)(nfull - 3) * sizeof(*pcs)));
}

UNIT_TEST(test_module_has_fp)
{
	struct capture *nofp = capture(0), *fp = capture(1);
	struct unwinder *u = unwinder();
	int p_nofp, p_fp, p_libc;

	CHECK(nofp && fp && u);
	if (!nofp || !fp || !u)
		return;
	p_nofp = unwinder__module_has_fp(u, nofp->pid, nofp->regs.ip);
	p_fp = unwinder__module_has_fp(u, fp->pid, fp->regs.ip);
	p_libc = unwinder__module_has_fp(u, fp->pid, fp->libc_lo + 0x30000);
	printf("  frame prologues: nofp %d%%, fp %d%%, libc %d%%\n", p_nofp, p_fp, p_libc);
	CHECK(p_nofp >= 0 && p_nofp < 50);
	CHECK(p_fp >= 50);
	CHECK(p_libc >= 0 && p_libc <= 100);
	/* cached: same answer */
	CHECK_EQ_INT(unwinder__module_has_fp(u, fp->pid, fp->regs.ip), p_fp);
	CHECK(unwinder__module_has_fp(u, fp->pid, 0x1000) == -ENOENT);
}

UNIT_TEST(test_bad_input)
{
	struct capture *c = capture(0);
	struct unwinder *u = unwinder();
	unsigned char junk[4096];
	struct unwind_regs regs;
	uint64_t pcs[MAX_PCS];
	bool truncated;
	int n;

	CHECK(c && u);
	if (!c || !u)
		return;
	CHECK(unwinder__unwind(u, c->pid, NULL, NULL, 0, pcs, MAX_PCS, &truncated) == -EINVAL);
	CHECK(unwinder__unwind(u, c->pid, &c->regs, c->stack, 64, pcs, 0, &truncated) == -EINVAL);
	CHECK(unwinder__unwind(u, 0x3fffffff, &c->regs, c->stack, 64, pcs, 4, &truncated) < 0);
	/* garbage registers and stack: some answer, no crash */
	srand(1);
	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (unsigned char)rand();
		regs.ip = round & 1 ? c->regs.ip : (uint64_t)rand() << 12;
		regs.sp = c->regs.sp;
		regs.bp = round & 2 ? c->regs.sp + 64 : (uint64_t)rand();
		n = unwinder__unwind(u, c->pid, &regs, junk, sizeof(junk), pcs, MAX_PCS,
				     &truncated);
		CHECK(n >= 1 && n <= MAX_PCS && pcs[0] == regs.ip);
	}
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

UNIT_TEST(test_cost)
{
	struct capture *nofp = capture(0), *fp = capture(1);
	struct unwinder *u = unwinder();
	uint64_t pcs[MAX_PCS], chain[MAX_PCS];
	int loops = 10000, n = 0, nchain;
	bool truncated;
	double t0, full_us, leaf_us;

	CHECK(nofp && fp && u);
	if (!nofp || !fp || !u)
		return;
	t0 = now_us();
	for (int i = 0; i < loops; i++)
		n = unwinder__unwind(u, nofp->pid, &nofp->regs, nofp->stack, nofp->stack_len, pcs,
				     MAX_PCS, &truncated);
	full_us = (now_us() - t0) / loops;

	nchain = fp_walk(fp, chain, MAX_PCS);
	t0 = now_us();
	for (int i = 0; i < loops; i++) {
		fp_walk(fp, pcs, MAX_PCS);
		unwinder__fix_leaf(u, fp->pid, &fp->regs, fp->stack, 256, pcs, nchain, MAX_PCS);
	}
	leaf_us = (now_us() - t0) / loops;
	printf("  full unwind: %.2f us (%d frames, %.2f us/frame); fix_leaf: %.2f us\n", full_us, n,
	       full_us / n, leaf_us);
	CHECK(n >= 7);
}

UNIT_MAIN()
