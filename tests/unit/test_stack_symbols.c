// SPDX-License-Identifier: GPL-2.0
/*
 * test_stack_symbols.c - user stacks to frames through the per-address
 * cache of stack_symbols.c, in this process: an address seen in one stack
 * is the same frame in the next, and a library replaced by another at
 * the same address is named anew, because the symbolizer's generation
 * moved when the mappings did; so is JIT code the perf map renames.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"
#include "dwarf/symbolize.h"
#include "user/profile/stack_store.h"
#include "user/profile/stack_symbols.h"

/* Two libraries of the same layout, one function each, different names. */
static const char *const lib_src = "int %s(int x) { return x * 3 + 1; }\n";

static char tmpdir[64];

static bool build_lib(const char *func, char *path, size_t len)
{
	char src[128], cmd[512];
	FILE *f;

	snprintf(src, sizeof(src), "%s/%s.c", tmpdir, func);
	snprintf(path, len, "%s/lib%s.so", tmpdir, func);
	f = fopen(src, "w");
	if (!f)
		return false;
	fprintf(f, lib_src, func);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -O1 -g -shared -fPIC -o %s %s", path, src);
	return system(cmd) == 0;
}

/* The name of the leaf frame of a one-address stack of this process. */
static const char *leaf_name(struct stack_store *store, struct stack_symbols *ss,
			     struct symbolizer *sym, uint64_t addr)
{
	struct raw_stack rs = {
		.pid = (uint32_t)getpid(), .tid = (uint32_t)getpid(), .n_user = 1, .user = &addr};
	const struct frame *frames;
	uint32_t depth = 0;
	int64_t id;

	/* a distinct stack each call: the flags are part of its identity */
	rs.flags = (uint32_t)stack_store__count(store) << 8;
	strcpy(rs.comm, "unit");
	id = stack_store__intern(store, &rs);
	if (id < 0 || stack_symbols__update(ss, store, sym, NULL, NULL))
		return NULL;
	if (stack_symbols__frames(ss, (uint32_t)id, &frames, &depth) || depth < 2)
		return NULL;
	return frames[depth - 1].name;
}

__attribute__((noinline)) int unit_marker(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

UNIT_TEST(test_shared_address_same_frame)
{
	struct stack_symbols_opts o = {.inline_frames = true};
	struct stack_symbols *ss = stack_symbols__new(&o);
	struct stack_store *store = stack_store__new(false);
	struct symbolizer *sym = symbolizer__new(false);
	uint64_t addr = (uint64_t)(uintptr_t)unit_marker + 1;
	const char *a, *b;

	CHECK(ss && store && sym);
	CHECK_EQ_INT(symbolizer__add_pid(sym, getpid()), 0);
	a = leaf_name(store, ss, sym, addr);
	b = leaf_name(store, ss, sym, addr);
	CHECK_STR(a, "unit_marker");
	/* one interned frame: the same string, not an equal one */
	CHECK(a && a == b);
	symbolizer__free(sym);
	stack_store__free(store);
	stack_symbols__free(ss);
}

__attribute__((noinline)) int unit_other(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 2;
}

/* Stacks of the same function at other addresses show as the same path;
 * a released id, reused by another stack, is symbolized anew. */
UNIT_TEST(test_path_identity_and_reuse)
{
	struct stack_symbols_opts o = {.inline_frames = true};
	struct stack_symbols *ss = stack_symbols__new(&o);
	struct stack_store *store = stack_store__new(false);
	struct symbolizer *sym = symbolizer__new(false);
	uint64_t a1 = (uint64_t)(uintptr_t)unit_marker + 1, a2 = a1 + 2;
	uint64_t b1 = (uint64_t)(uintptr_t)unit_other + 1, ha, hb;
	struct raw_stack rs = {.pid = (uint32_t)getpid(), .tid = (uint32_t)getpid(), .n_user = 1};
	const struct frame *frames;
	uint32_t depth = 0;
	int64_t x, y, z, w;

	CHECK(ss && store && sym);
	CHECK_EQ_INT(symbolizer__add_pid(sym, getpid()), 0);
	strcpy(rs.comm, "unit");
	rs.user = &a1;
	x = stack_store__intern(store, &rs);
	rs.user = &a2;
	y = stack_store__intern(store, &rs);
	rs.user = &b1;
	z = stack_store__intern(store, &rs);
	CHECK(x == 0 && y == 1 && z == 2);
	CHECK_EQ_INT(stack_symbols__update(ss, store, sym, NULL, NULL), 0);
	CHECK_EQ_INT(stack_symbols__path_hash(ss, 0, &ha), 0);
	CHECK_EQ_INT(stack_symbols__path_hash(ss, 1, &hb), 0);
	CHECK(ha == hb);
	CHECK(stack_symbols__same_path(ss, 0, 1));
	CHECK(!stack_symbols__same_path(ss, 0, 2));
	/* release y; its id goes to a stack in another function */
	CHECK_EQ_INT(stack_symbols__forget(ss, 1), 0);
	CHECK_EQ_INT(stack_store__release(store, 1), 0);
	CHECK_EQ_INT(stack_symbols__frames(ss, 1, &frames, &depth), -ENOENT);
	CHECK_EQ_INT(stack_symbols__path_hash(ss, 1, &hb), -ENOENT);
	rs.user = &b1;
	rs.flags = 1u << 8; /* another stack than z */
	w = stack_store__intern(store, &rs);
	CHECK_EQ_INT(w, 1);
	CHECK_EQ_INT(stack_symbols__update(ss, store, sym, NULL, NULL), 0);
	CHECK_EQ_INT(stack_symbols__frames(ss, 1, &frames, &depth), 0);
	CHECK(depth >= 2);
	if (depth >= 2)
		CHECK_STR(frames[depth - 1].name, "unit_other");
	symbolizer__free(sym);
	stack_store__free(store);
	stack_symbols__free(ss);
}

/*
 * A stack symbolized as it is interned (stack_symbols__add_new) reads
 * back the same as one the update took; one whose id is not the next the
 * update would take is left to it, and the update does not take twice a
 * stack already taken. The deep stack's frames include 200 interpreter
 * frames, so that ids past 127 (two bytes as varints) read back too.
 */
UNIT_TEST(test_add_new_as_update)
{
	enum { DEPTH = 300 };
	struct stack_symbols_opts o = {.inline_frames = true};
	struct stack_symbols *ss = stack_symbols__new(&o);
	struct stack_store *store = stack_store__new(false);
	struct symbolizer *sym = symbolizer__new(false);
	uint64_t deep[DEPTH], m = (uint64_t)(uintptr_t)unit_marker + 1;
	uint64_t other = (uint64_t)(uintptr_t)unit_other + 1;
	struct raw_stack rs = {.pid = (uint32_t)getpid(), .tid = (uint32_t)getpid()};
	const struct frame *frames;
	uint32_t depth = 0;
	int64_t a, b;

	CHECK(ss && store && sym);
	if (!ss || !store || !sym)
		return;
	CHECK_EQ_INT(symbolizer__add_pid(sym, getpid()), 0);
	strcpy(rs.comm, "unit");
	for (int i = 0; i < DEPTH; i++)
		deep[i] = i % 2 ? m : other;
	for (int i = 0; i < 200; i++) {
		char name[16];
		struct frame f = {.name = name, .module = "py", .kind = FRAME_USER};

		snprintf(name, sizeof(name), "py_f%d", i);
		deep[50 + i] = stack_symbols__intern_interp(ss, &f);
		CHECK(deep[50 + i] != 0);
	}
	rs.user = deep;
	rs.n_user = DEPTH;
	a = stack_store__intern(store, &rs);
	CHECK_EQ_INT(a, 0);
	CHECK_EQ_INT(stack_symbols__add_new(ss, (uint32_t)a, &rs, sym, NULL, NULL), 1);
	CHECK_EQ_INT(stack_symbols__frames(ss, 0, &frames, &depth), 0);
	CHECK_EQ_INT(depth, DEPTH + 1); /* the root, then root-most frame first */
	if (depth == DEPTH + 1) {
		/* frames[k] is deep[DEPTH - k] */
		CHECK_STR(frames[1].name, "unit_marker");
		CHECK_STR(frames[DEPTH].name, "unit_other");
		CHECK_STR(frames[DEPTH - 1].name, "unit_marker");
		CHECK_STR(frames[DEPTH - 50].name, "py_f0");
		CHECK_STR(frames[DEPTH - 249].name, "py_f199");
		CHECK_STR(frames[DEPTH - 250].name, "unit_other");
	}
	/* id 1 comes from the store but is not given to add_new; id 2 is,
	 * out of turn: both are the update's */
	rs.n_user = 1;
	rs.user = &m;
	b = stack_store__intern(store, &rs);
	rs.user = &other;
	CHECK_EQ_INT(b, 1);
	CHECK_EQ_INT(stack_store__intern(store, &rs), 2);
	CHECK_EQ_INT(stack_symbols__add_new(ss, 2, &rs, sym, NULL, NULL), 0);
	CHECK_EQ_INT(stack_symbols__frames(ss, 2, &frames, &depth), -ENOENT);
	CHECK_EQ_INT(stack_symbols__update(ss, store, sym, NULL, NULL), 0);
	CHECK_EQ_INT(stack_symbols__frames(ss, 1, &frames, &depth), 0);
	CHECK(depth == 2 && !strcmp(frames[1].name, "unit_marker"));
	CHECK_EQ_INT(stack_symbols__frames(ss, 2, &frames, &depth), 0);
	CHECK(depth == 2 && !strcmp(frames[1].name, "unit_other"));
	CHECK_EQ_INT(stack_symbols__frames(ss, 0, &frames, &depth), 0);
	CHECK_EQ_INT(depth, DEPTH + 1);
	/* id 1 released and handed out again: add_new takes it, its
	 * addresses are shed, and the update's redo queue lets it be */
	CHECK_EQ_INT(stack_symbols__forget(ss, 1), 0);
	CHECK_EQ_INT(stack_store__release(store, 1), 0);
	rs.user = &m;
	rs.flags = STACK_F_OFFCPU;
	CHECK_EQ_INT(stack_store__intern(store, &rs), 1);
	CHECK_EQ_INT(stack_symbols__add_new(ss, 1, &rs, sym, NULL, NULL), 1);
	CHECK_EQ_INT(stack_store__shed(store, 1), 0);
	CHECK_EQ_INT(stack_symbols__update(ss, store, sym, NULL, NULL), 0);
	CHECK_EQ_INT(stack_symbols__frames(ss, 1, &frames, &depth), 0);
	CHECK(depth == 3 && !strcmp(frames[1].name, "unit_marker") &&
	      !strcmp(frames[2].name, "[off-cpu]"));
	symbolizer__free(sym);
	stack_store__free(store);
	stack_symbols__free(ss);
}

UNIT_TEST(test_replaced_library_named_anew)
{
	struct stack_symbols_opts o = {.inline_frames = true};
	struct stack_symbols *ss = stack_symbols__new(&o);
	struct stack_store *store = stack_store__new(false);
	struct symbolizer *sym = symbolizer__new(false);
	char pa[128], pb[128];
	void *ha, *hb;
	uint64_t gen, fa, fb;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/lp_stacksym.XXXXXX");
	CHECK(mkdtemp(tmpdir) != NULL);
	CHECK(ss && store && sym);
	CHECK(build_lib("lp_first_fn", pa, sizeof(pa)) &&
	      build_lib("lp_second_fn", pb, sizeof(pb)));
	ha = dlopen(pa, RTLD_NOW | RTLD_LOCAL);
	CHECK(ha != NULL);
	if (!ha || !ss || !store || !sym)
		return;
	fa = (uint64_t)(uintptr_t)dlsym(ha, "lp_first_fn");
	CHECK_EQ_INT(symbolizer__add_pid(sym, getpid()), 0);
	gen = symbolizer__generation(sym);
	/* the same mappings read again: nothing cached goes stale */
	CHECK_EQ_INT(symbolizer__add_pid(sym, getpid()), 0);
	CHECK(symbolizer__generation(sym) == gen);
	CHECK_STR(leaf_name(store, ss, sym, fa + 1), "lp_first_fn");
	dlclose(ha);
	hb = dlopen(pb, RTLD_NOW | RTLD_LOCAL);
	CHECK(hb != NULL);
	fb = hb ? (uint64_t)(uintptr_t)dlsym(hb, "lp_second_fn") : 0;
	CHECK_EQ_INT(symbolizer__add_pid(sym, getpid()), 0);
	CHECK(symbolizer__generation(sym) != gen);
	if (fb == fa)
		CHECK_STR(leaf_name(store, ss, sym, fb + 1), "lp_second_fn");
	else
		fprintf(stderr, "  (the second library did not reuse the first's address: "
				"only the generation was checked)\n");
	if (hb)
		dlclose(hb);
	symbolizer__free(sym);
	stack_store__free(store);
	stack_symbols__free(ss);
	unlink(pa);
	unlink(pb);
	snprintf(pa, sizeof(pa), "rm -rf %s", tmpdir);
	CHECK(system(pa) == 0);
}

/* Appends @line to this process's perf map (/tmp/perf-PID.map). */
static void perf_map_append(const char *line)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "a");
	CHECK(f != NULL);
	if (f) {
		fputs(line, f);
		fclose(f);
	}
}

/*
 * JIT code in anonymous executable memory is named from the perf map, and
 * the name a frame got is cached per address: a line the JIT writes later
 * for the same address (it reused it), or the first line of code sampled
 * before its line was written, shows once the map is read again
 * (symbolizer__refresh_jit(), at each daemon tick), not never.
 */
UNIT_TEST(test_jit_renamed_in_place)
{
	struct stack_symbols_opts o = {.inline_frames = true};
	struct stack_symbols *ss = stack_symbols__new(&o);
	struct stack_store *store = stack_store__new(false);
	struct symbolizer *sym = symbolizer__new(false);
	struct timespec wait = {.tv_nsec = 120 * 1000000}; /* map reads: 100 ms apart */
	char line[128], path[64];
	uint8_t *code = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t a, b;
	const char *name;

	CHECK(ss && store && sym && code != MAP_FAILED);
	if (!ss || !store || !sym || code == MAP_FAILED)
		return;
	a = (uint64_t)(uintptr_t)code + 0x10;
	b = (uint64_t)(uintptr_t)code + 0x1010;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	unlink(path);
	snprintf(line, sizeof(line), "%" PRIx64 " 100 JS:first_fn\n", a - 0x10);
	perf_map_append(line);
	CHECK_EQ_INT(symbolizer__add_pid(sym, getpid()), 0);
	CHECK_STR(leaf_name(store, ss, sym, a + 1), "JS:first_fn");
	/* sampled before the JIT wrote its line */
	name = leaf_name(store, ss, sym, b + 1);
	CHECK(name && !strstr(name, "second_fn"));
	snprintf(line, sizeof(line), "%" PRIx64 " 100 JS:reused_fn\n%" PRIx64 " 100 JS:second_fn\n",
		 a - 0x10, b - 0x10);
	perf_map_append(line);
	nanosleep(&wait, NULL);
	/* cached: the map is not read for addresses whose names are known */
	CHECK_STR(leaf_name(store, ss, sym, a + 1), "JS:first_fn");
	symbolizer__refresh_jit(sym);
	CHECK_STR(leaf_name(store, ss, sym, a + 1), "JS:reused_fn");
	CHECK_STR(leaf_name(store, ss, sym, b + 1), "JS:second_fn");
	unlink(path);
	munmap(code, 8192);
	symbolizer__free(sym);
	stack_store__free(store);
	stack_symbols__free(ss);
}

UNIT_MAIN()
