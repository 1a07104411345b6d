// SPDX-License-Identifier: GPL-2.0
/*
 * test_python_runtime.c - dwarf/python_runtime against the CPython builds
 * on this machine: pyenv's libpython 3.11-3.13 (with DWARF), Debian's
 * /usr/bin/python3.11 (none), pyenv 3.10 (unsupported), /bin/ls (not
 * Python), truncated and garbled copies (hostile input).
 *
 * The shipped tables are checked three ways, none of them the table
 * itself: against the DWARF reader, against offsetof() compiled from each
 * version's installed headers (tests/unit/fixtures/py_offsets_probe.c),
 * and for 3.13 against _PyRuntime.debug_offsets, the offsets CPython
 * writes into its own binary for out-of-process tools.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"
#include "elf_dynsym.h"
#include "runtime_files.h"
#include "dwarf/python_runtime.h"

#define PYENV "/root/.pyenv/versions/"

/* Every field of struct py_offsets, by name, for readable failures. */
#define PY_FIELDS(X)                                                                               \
	X(runtime_interpreters_head)                                                               \
	X(interp_threads_head)                                                                     \
	X(tstate_next)                                                                             \
	X(tstate_thread_id)                                                                        \
	X(tstate_cframe)                                                                           \
	X(tstate_current_frame)                                                                    \
	X(cframe_current_frame)                                                                    \
	X(iframe_code)                                                                             \
	X(iframe_previous)                                                                         \
	X(iframe_instr)                                                                            \
	X(iframe_owner)                                                                            \
	X(iframe_is_entry)                                                                         \
	X(code_filename)                                                                           \
	X(code_name)                                                                               \
	X(code_qualname)                                                                           \
	X(code_firstlineno)                                                                        \
	X(code_linetable)                                                                          \
	X(code_code_adaptive)                                                                      \
	X(code_flags)                                                                              \
	X(gen_frame_state)                                                                         \
	X(gen_iframe)                                                                              \
	X(unicode_length)                                                                          \
	X(unicode_state)                                                                           \
	X(ascii_size)                                                                              \
	X(compact_size)                                                                            \
	X(bytes_size)                                                                              \
	X(bytes_sval)

struct fdesc {
	const char *name;
	size_t off;
};

#define FDESC(f) {#f, offsetof(struct py_offsets, f)},
static const struct fdesc fdescs[] = {PY_FIELDS(FDESC)};
#define NF (sizeof(fdescs) / sizeof(fdescs[0]))
_Static_assert(sizeof(struct py_offsets) == NF * sizeof(uint32_t),
	       "PY_FIELDS must list every member of struct py_offsets");

static uint32_t get(const struct py_offsets *o, size_t i)
{
	return *(const uint32_t *)((const char *)o + fdescs[i].off);
}

/* Field by field, naming what differs. */
static void check_offsets(const char *what, const struct py_offsets *got,
			  const struct py_offsets *want)
{
	for (size_t i = 0; i < NF; i++) {
		if (get(got, i) == get(want, i))
			continue;
		fprintf(stderr, "  %s: %s is %u, expected %u\n", what, fdescs[i].name, get(got, i),
			get(want, i));
		unit_failed_checks++;
	}
}

static const struct pyenv {
	const char *dir; /* under PYENV */
	const char *lib; /* under lib/ */
	const char *inc; /* under include/ */
	unsigned int minor;
} pyenvs[] = {
	{"3.11.7", "libpython3.11.so.1.0", "python3.11", 11},
	{"3.12.1", "libpython3.12.so.1.0", "python3.12", 12},
	{"3.13.0", "libpython3.13.so.1.0", "python3.13", 13},
};

#define NPYENVS (sizeof(pyenvs) / sizeof(pyenvs[0]))

static void pyenv_lib(const struct pyenv *p, char *buf, size_t len)
{
	snprintf(buf, len, PYENV "%s/lib/%s", p->dir, p->lib);
}

UNIT_TEST(pyenv_dwarf_agrees_with_the_shipped_tables)
{
	for (size_t k = 0; k < NPYENVS; k++) {
		const struct pyenv *p = &pyenvs[k];
		const struct py_offsets *table = python_offsets_builtin(3, p->minor);
		struct py_runtime rt;
		char path[256], err[512], what[300];
		GElf_Sym sym;
		GElf_Shdr sec;
		int ret;

		pyenv_lib(p, path, sizeof(path));
		if (!present(path))
			continue;
		ret = python_runtime_find(path, &rt, err, sizeof(err));
		CHECK_EQ_INT(ret, 0);
		if (ret) {
			fprintf(stderr, "  %s: %s\n", path, err);
			continue;
		}
		CHECK(rt.from_dwarf);
		CHECK_EQ_INT(rt.major, 3);
		CHECK_EQ_INT(rt.minor, p->minor);
		CHECK(table != NULL);
		snprintf(what, sizeof(what), "%s dwarf vs table", p->dir);
		if (table)
			check_offsets(what, &rt.off, table);
		CHECK(dynsym(path, "_PyRuntime", &sym, &sec));
		CHECK_EQ_INT(rt.runtime_addr, sym.st_value);
		CHECK(dynsym(path, "_PyEval_EvalFrameDefault", &sym, &sec));
		CHECK_EQ_INT(rt.eval_lo, sym.st_value);
		CHECK_EQ_INT(rt.eval_hi, sym.st_value + sym.st_size);
		CHECK(rt.eval_hi > rt.eval_lo);
	}
}

static bool make_tmpdir(void)
{
	return make_tmpdir_named("lp_pyrt");
}

static const char *fixture(void)
{
	static char path[4096];
	struct stat st;
	char *slash;

	if (stat("tests/unit/fixtures/py_offsets_probe.c", &st) == 0)
		return "tests/unit/fixtures/py_offsets_probe.c";
	snprintf(path, sizeof(path), "%s", __FILE__);
	slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof(path) - (slash ? slash + 1 - path : 0),
		 "fixtures/py_offsets_probe.c");
	return path;
}

/* Build the probe against @inc, run it, compare its output with the table. */
static void check_headers(const char *inc, unsigned int minor)
{
	const struct py_offsets *table = python_offsets_builtin(3, minor);
	char cmd[8192], line[256], hdr[512], what[600];
	struct py_offsets got;
	unsigned int vmaj = 0, vmin = 0;
	FILE *f;

	snprintf(hdr, sizeof(hdr), "%s/internal/pycore_frame.h", inc);
	if (!present(hdr) || !make_tmpdir())
		return;
	memset(&got, 0xff, sizeof(got)); /* PY_OFF_NONE where the probe prints nothing */
	snprintf(cmd, sizeof(cmd), "cc -O0 -I%s -o %s/probe3%u %s && %s/probe3%u", inc, tmpdir,
		 minor, fixture(), tmpdir, minor);
	f = popen(cmd, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char name[64];
		unsigned int v;

		if (sscanf(line, "version %u.%u", &vmaj, &vmin) == 2)
			continue;
		if (sscanf(line, "%63s %u", name, &v) != 2)
			continue;
		for (size_t i = 0; i < NF; i++)
			if (!strcmp(name, fdescs[i].name))
				*(uint32_t *)((char *)&got + fdescs[i].off) = v;
	}
	CHECK_EQ_INT(pclose(f), 0);
	CHECK_EQ_INT(vmaj, 3);
	CHECK_EQ_INT(vmin, minor);
	snprintf(what, sizeof(what), "headers %s vs table", inc);
	CHECK(table != NULL);
	if (table)
		check_offsets(what, &got, table);
}

UNIT_TEST(headers_agree_with_the_shipped_tables)
{
	char inc[256];

	for (size_t k = 0; k < NPYENVS; k++) {
		snprintf(inc, sizeof(inc), PYENV "%s/include/%s", pyenvs[k].dir, pyenvs[k].inc);
		check_headers(inc, pyenvs[k].minor);
	}
	/* Debian's own 3.11.2 (libpython3.11-dev): the build the table serves */
	check_headers("/usr/include/python3.11", 11);
}

/* Index of each value in 3.13.0's _Py_DebugOffsets, counted in uint64s
 * (Include/internal/pycore_runtime.h of v3.13.0). */
enum {
	DO_VERSION = 1,
	DO_INTERPRETERS_HEAD = 5,
	DO_THREADS_HEAD = 9,
	DO_TS_NEXT = 21,
	DO_TS_CURRENT_FRAME = 23,
	DO_TS_THREAD_ID = 24,
	DO_IF_PREVIOUS = 29,
	DO_IF_EXECUTABLE = 30,
	DO_IF_INSTR_PTR = 31,
	DO_IF_OWNER = 33,
	DO_CO_FILENAME = 35,
	DO_CO_NAME = 36,
	DO_CO_QUALNAME = 37,
	DO_CO_LINETABLE = 38,
	DO_CO_FIRSTLINENO = 39,
	DO_CO_CODE_ADAPTIVE = 43,
	DO_BYTES_OB_SIZE = 65,
	DO_BYTES_OB_SVAL = 66,
	DO_UNICODE_STATE = 68,
	DO_UNICODE_LENGTH = 69,
	DO_UNICODE_ASCII_SIZE = 70,
	DO_COUNT = 71,
};

UNIT_TEST(py313_debug_offsets_agree_with_the_shipped_table)
{
	const struct py_offsets *t = python_offsets_builtin(3, 13);
	uint64_t d[DO_COUNT];
	char path[256];
	GElf_Sym sym;
	GElf_Shdr sec;
	int fd;

	pyenv_lib(&pyenvs[2], path, sizeof(path));
	if (!present(path))
		return;
	CHECK(t != NULL);
	CHECK(dynsym(path, "_PyRuntime", &sym, &sec));
	CHECK(sec.sh_type == SHT_PROGBITS); /* the initializer is in the file */
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	if (!t || fd < 0)
		return;
	CHECK_EQ_INT(pread(fd, d, sizeof(d), sec.sh_offset + (sym.st_value - sec.sh_addr)),
		     sizeof(d));
	close(fd);
	CHECK(!memcmp(d, "xdebugpy", 8));
	CHECK_EQ_INT(d[DO_VERSION] >> 16, 0x030d);
	CHECK_EQ_INT(t->runtime_interpreters_head, d[DO_INTERPRETERS_HEAD]);
	CHECK_EQ_INT(t->interp_threads_head, d[DO_THREADS_HEAD]);
	CHECK_EQ_INT(t->tstate_next, d[DO_TS_NEXT]);
	CHECK_EQ_INT(t->tstate_current_frame, d[DO_TS_CURRENT_FRAME]);
	CHECK_EQ_INT(t->tstate_thread_id, d[DO_TS_THREAD_ID]);
	CHECK_EQ_INT(t->iframe_previous, d[DO_IF_PREVIOUS]);
	CHECK_EQ_INT(t->iframe_code, d[DO_IF_EXECUTABLE]);
	CHECK_EQ_INT(t->iframe_instr, d[DO_IF_INSTR_PTR]);
	CHECK_EQ_INT(t->iframe_owner, d[DO_IF_OWNER]);
	CHECK_EQ_INT(t->code_filename, d[DO_CO_FILENAME]);
	CHECK_EQ_INT(t->code_name, d[DO_CO_NAME]);
	CHECK_EQ_INT(t->code_qualname, d[DO_CO_QUALNAME]);
	CHECK_EQ_INT(t->code_linetable, d[DO_CO_LINETABLE]);
	CHECK_EQ_INT(t->code_firstlineno, d[DO_CO_FIRSTLINENO]);
	CHECK_EQ_INT(t->code_code_adaptive, d[DO_CO_CODE_ADAPTIVE]);
	CHECK_EQ_INT(t->bytes_size, d[DO_BYTES_OB_SIZE]);
	CHECK_EQ_INT(t->bytes_sval, d[DO_BYTES_OB_SVAL]);
	CHECK_EQ_INT(t->unicode_state, d[DO_UNICODE_STATE]);
	CHECK_EQ_INT(t->unicode_length, d[DO_UNICODE_LENGTH]);
	CHECK_EQ_INT(t->ascii_size, d[DO_UNICODE_ASCII_SIZE]);
}

UNIT_TEST(debian_python311_uses_the_table)
{
	const char *path = "/usr/bin/python3.11";
	struct py_runtime rt;
	char err[512];
	GElf_Sym sym;
	GElf_Shdr sec;
	int ret;

	if (!present(path))
		return;
	ret = python_runtime_find(path, &rt, err, sizeof(err));
	CHECK_EQ_INT(ret, 0);
	if (ret) {
		fprintf(stderr, "  %s\n", err);
		return;
	}
	/* no DWARF here unless python3.11-dbg put a build-id debug file in */
	CHECK(!rt.from_dwarf || access("/usr/lib/debug/.build-id", F_OK) == 0);
	CHECK_EQ_INT(rt.major, 3);
	CHECK_EQ_INT(rt.minor, 11);
	CHECK(rt.runtime_addr != 0);
	CHECK(rt.eval_lo != 0 && rt.eval_hi > rt.eval_lo);
	CHECK(dynsym(path, "_PyRuntime", &sym, &sec));
	CHECK_EQ_INT(rt.runtime_addr, sym.st_value);
	check_offsets("/usr/bin/python3.11 vs table", &rt.off, python_offsets_builtin(3, 11));
}

UNIT_TEST(python310_is_not_supported)
{
	const char *path = PYENV "3.10.13/lib/libpython3.10.so.1.0";
	struct py_runtime rt;
	char err[512] = "";

	if (!present(path))
		return;
	CHECK_EQ_INT(python_runtime_find(path, &rt, err, sizeof(err)), -ENOTSUP);
	CHECK(strstr(err, "3.10") != NULL);
	CHECK(strstr(err, path) != NULL);
	CHECK(python_offsets_builtin(3, 10) == NULL);
	CHECK(python_offsets_builtin(3, 14) == NULL);
	CHECK(python_offsets_builtin(2, 11) == NULL);
}

UNIT_TEST(not_python_and_missing_files)
{
	struct py_runtime rt;
	char err[512] = "";

	CHECK_EQ_INT(python_runtime_find("/bin/ls", &rt, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "/bin/ls") != NULL);
	CHECK(python_runtime_find("/nonexistent/python3.11", &rt, err, sizeof(err)) < 0);
	CHECK(python_runtime_find("/etc/hostname", &rt, err, sizeof(err)) < 0);
}

/*
 * Copy the first @len bytes of @src to @dst; with @garble set, overwrite
 * random 64-byte runs in [@lo, @hi) of the file (xorshift from @garble).
 */
UNIT_TEST(truncated_and_garbled_copies_fail_cleanly)
{
	const char *src = "/usr/bin/python3.11";
	static const size_t lens[] = {0, 16, 64, 4096, 64 << 10, 4 << 20};
	struct py_runtime rt;
	char path[128], err[512];
	struct stat st;

	if (!present(src) || stat(src, &st) != 0 || !make_tmpdir())
		return;
	snprintf(path, sizeof(path), "%s/python3.11", tmpdir);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		CHECK(copy_prefix(src, path, lens[i], 0, 0, 0, 1));
		CHECK(python_runtime_find(path, &rt, err, sizeof(err)) < 0);
		CHECK(err[0] != '\0');
	}
	/* whole file, the headers and symbol tables garbled: any result, no
	 * crash (the ASan build checks the reads) */
	for (uint64_t seed = 1; seed <= 20; seed++) {
		CHECK(copy_prefix(src, path, st.st_size, seed * 0x9e3779b97f4a7c15ull, 0, 2u << 20,
				  5));
		python_runtime_find(path, &rt, err, sizeof(err));
	}
	unlink(path);
}

/* The offset and size of section @name of @path, by plain libelf. */
static bool section(const char *path, const char *name, GElf_Shdr *out)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool found = false;

	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
		while (!found && (scn = elf_nextscn(elf, scn))) {
			const char *n;

			if (gelf_getshdr(scn, out) && (n = elf_strptr(elf, shstrndx, out->sh_name)))
				found = !strcmp(n, name);
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

UNIT_TEST(garbled_dwarf_fails_cleanly)
{
	struct py_runtime rt;
	char src[256], path[128], err[512];
	GElf_Shdr info;
	struct stat st;

	elf_version(EV_CURRENT);
	pyenv_lib(&pyenvs[1], src, sizeof(src));
	if (!present(src) || stat(src, &st) != 0 || !make_tmpdir())
		return;
	CHECK(section(src, ".debug_info", &info));
	snprintf(path, sizeof(path), "%s/libpython3.12.so.1.0", tmpdir);
	/* the start of .debug_info, where the structs are found: the result
	 * is DWARF offsets, the table, or an error, never a crash */
	for (uint64_t seed = 1; seed <= 6; seed++) {
		CHECK(copy_prefix(src, path, st.st_size, seed * 0x9e3779b97f4a7c15ull,
				  info.sh_offset, info.sh_offset + (1u << 20), 5));
		if (python_runtime_find(path, &rt, err, sizeof(err)) == 0)
			CHECK_EQ_INT(rt.minor, 12);
	}
	unlink(path);
}

UNIT_TEST(cleanup)
{
	CHECK_EQ_INT(remove_tmpdir(), 0);
}

UNIT_MAIN()
