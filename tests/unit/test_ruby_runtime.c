// SPDX-License-Identifier: GPL-2.0
/*
 * test_ruby_runtime.c - dwarf/ruby_runtime against the CRuby on this
 * machine: Debian's libruby-3.1.so.3.1 (no DWARF, no .symtab) and
 * /usr/bin/ruby, which links it; /bin/ls (not Ruby); copies with another
 * version string (unsupported), truncated and garbled (hostile input).
 *
 * The addresses are checked against the library's .dynsym read here with
 * plain libelf; the offsets themselves are checked against a live ruby by
 * test_rb_iseq.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"
#include "elf_dynsym.h"
#include "runtime_files.h"
#include "dwarf/ruby_runtime.h"

#define LIBRUBY "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"
#define RUBY	"/usr/bin/ruby"

/* Does @path have a section of type @type? */
static bool has_section(const char *path, Elf64_Word type)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	bool found = false;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		found = gelf_getshdr(scn, &sh) && sh.sh_type == type;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

/* What ruby_runtime_find() must report for Debian's libruby. */
static void check_libruby(const struct rb_runtime *rt)
{
	const struct rb_offsets *table = ruby_offsets_builtin(3, 1);
	char version[16];
	GElf_Sym sym;
	GElf_Shdr sec;
	int fd;

	CHECK_EQ_INT(rt->major, 3);
	CHECK_EQ_INT(rt->minor, 1);
	/* the patch level, from the bytes of ruby_version read here */
	CHECK(dynsym(LIBRUBY, "ruby_version", &sym, &sec));
	fd = open(LIBRUBY, O_RDONLY);
	CHECK(fd >= 0 && sym.st_size < sizeof(version));
	if (fd >= 0 && sym.st_size < sizeof(version)) {
		memset(version, 0, sizeof(version));
		CHECK_EQ_INT(pread(fd, version, sym.st_size,
				   sec.sh_offset + (sym.st_value - sec.sh_addr)),
			     sym.st_size);
		CHECK(!strncmp(version, "3.1.", 4));
		CHECK_EQ_INT(rt->patch, atoi(version + 4));
	}
	if (fd >= 0)
		close(fd);
	CHECK(dynsym(LIBRUBY, "ruby_current_vm_ptr", &sym, &sec));
	CHECK_EQ_INT(rt->vm_ptr_addr, sym.st_value);
	CHECK_EQ_INT(sym.st_size, 8);
	/* stripped: no .symtab, so no vm_exec_core; rb_vm_exec it is */
	CHECK(!has_section(LIBRUBY, SHT_SYMTAB));
	CHECK(rt->loop_sym && !strcmp(rt->loop_sym, "rb_vm_exec"));
	CHECK(!rt->loop_is_core);
	CHECK(dynsym(LIBRUBY, "rb_vm_exec", &sym, &sec));
	CHECK_EQ_INT(rt->loop_lo, sym.st_value);
	CHECK_EQ_INT(rt->loop_hi, sym.st_value + sym.st_size);
	CHECK(rt->loop_hi > rt->loop_lo);
	CHECK(table != NULL);
	CHECK(table && !memcmp(&rt->off, table, sizeof(*table)));
}

UNIT_TEST(libruby_31)
{
	struct rb_runtime rt;
	char err[512] = "";
	int ret;

	if (!present(LIBRUBY))
		return;
	ret = ruby_runtime_find(LIBRUBY, &rt, err, sizeof(err));
	CHECK_EQ_INT(ret, 0);
	if (ret) {
		fprintf(stderr, "  %s\n", err);
		return;
	}
	CHECK_STR(rt.file, LIBRUBY);
	check_libruby(&rt);
}

UNIT_TEST(usr_bin_ruby_follows_its_libruby)
{
	char a[PATH_MAX], b[PATH_MAX], err[512] = "";
	struct rb_runtime rt;
	int ret;

	if (!present(RUBY) || !present(LIBRUBY))
		return;
	ret = ruby_runtime_find(RUBY, &rt, err, sizeof(err));
	CHECK_EQ_INT(ret, 0);
	if (ret) {
		fprintf(stderr, "  %s\n", err);
		return;
	}
	/* /lib is /usr/lib on Debian: compare the files, not the names */
	CHECK(realpath(rt.file, a) && realpath(LIBRUBY, b) && !strcmp(a, b));
	check_libruby(&rt);
}

UNIT_TEST(versions_without_a_table)
{
	CHECK(ruby_offsets_builtin(3, 1) != NULL);
	CHECK(ruby_offsets_builtin(3, 0) == NULL);
	CHECK(ruby_offsets_builtin(3, 2) == NULL);
	CHECK(ruby_offsets_builtin(2, 7) == NULL);
}

UNIT_TEST(not_ruby_and_missing_files)
{
	struct rb_runtime rt;
	char err[512] = "";

	CHECK_EQ_INT(ruby_runtime_find("/bin/ls", &rt, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "/bin/ls") != NULL);
	CHECK(strstr(err, "not a ruby") != NULL);
	err[0] = '\0';
	CHECK(ruby_runtime_find("/nonexistent/ruby", &rt, err, sizeof(err)) < 0);
	CHECK(strstr(err, "/nonexistent/ruby") != NULL);
	err[0] = '\0';
	CHECK(ruby_runtime_find("/etc/hostname", &rt, err, sizeof(err)) < 0);
	CHECK(err[0] != '\0');
}

static bool make_tmpdir(void)
{
	return make_tmpdir_named("lp_rbrt");
}

/* A copy of libruby named @name whose ruby_version reads @version. */
static bool patched_copy(const char *name, const char *version, char *path, size_t cap)
{
	GElf_Sym sym;
	GElf_Shdr sec;
	struct stat st;
	int fd;
	bool ok;

	if (!make_tmpdir() || stat(LIBRUBY, &st) || !dynsym(LIBRUBY, "ruby_version", &sym, &sec) ||
	    strlen(version) + 1 != sym.st_size)
		return false;
	snprintf(path, cap, "%s/%s", tmpdir, name);
	if (!copy_prefix(LIBRUBY, path, st.st_size, 0, 0, 0, 1))
		return false;
	fd = open(path, O_WRONLY);
	ok = fd >= 0 &&
	     pwrite(fd, version, sym.st_size, sec.sh_offset + (sym.st_value - sec.sh_addr)) ==
		     (ssize_t)sym.st_size;
	if (fd >= 0)
		close(fd);
	return ok;
}

UNIT_TEST(unknown_versions_are_refused_with_the_version)
{
	struct rb_runtime rt;
	char path[256], err[512];

	if (!present(LIBRUBY))
		return;
	CHECK(patched_copy("libruby-3.1.so.3.1", "9.8.7", path, sizeof(path)));
	err[0] = '\0';
	CHECK_EQ_INT(ruby_runtime_find(path, &rt, err, sizeof(err)), -ENOTSUP);
	CHECK(strstr(err, "9.8.7") != NULL);
	CHECK(strstr(err, path) != NULL);
	CHECK(patched_copy("libruby-3.1.so.3.1", "3.2.0", path, sizeof(path)));
	CHECK_EQ_INT(ruby_runtime_find(path, &rt, err, sizeof(err)), -ENOTSUP);
	CHECK(strstr(err, "3.2.0") != NULL);
	/* a string that is not a version: the name says 3.1, that serves */
	CHECK(patched_copy("libruby-3.1.so.3.1", "x.y.z", path, sizeof(path)));
	CHECK_EQ_INT(ruby_runtime_find(path, &rt, err, sizeof(err)), 0);
	CHECK_EQ_INT(rt.minor, 1);
	/* neither string nor name: no guess */
	CHECK(patched_copy("libfoo.so", "x.y.z", path, sizeof(path)));
	CHECK_EQ_INT(ruby_runtime_find(path, &rt, err, sizeof(err)), -ENOTSUP);
	CHECK(strstr(err, "version") != NULL);
	unlink(path);
}

UNIT_TEST(truncated_and_garbled_copies_fail_cleanly)
{
	static const size_t lens[] = {0, 16, 64, 4096, 64 << 10, 1 << 20};
	struct rb_runtime rt;
	char path[128], err[512];
	struct stat st;

	if (!present(LIBRUBY) || stat(LIBRUBY, &st) != 0 || !make_tmpdir())
		return;
	snprintf(path, sizeof(path), "%s/libruby-3.1.so.3.1", tmpdir);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		CHECK(copy_prefix(LIBRUBY, path, lens[i], 0, 0, 0, 1));
		err[0] = '\0';
		CHECK(ruby_runtime_find(path, &rt, err, sizeof(err)) < 0);
		CHECK(err[0] != '\0');
	}
	/* garbled all over: any result, no crash (the ASan build checks) */
	for (uint64_t seed = 1; seed <= 20; seed++) {
		CHECK(copy_prefix(LIBRUBY, path, st.st_size, seed * 0x9e3779b97f4a7c15ull, 0,
				  SIZE_MAX, 7));
		if (ruby_runtime_find(path, &rt, err, sizeof(err)) == 0)
			CHECK_EQ_INT(rt.minor, 1);
	}
	unlink(path);
}

UNIT_TEST(cleanup)
{
	CHECK_EQ_INT(remove_tmpdir(), 0);
}

UNIT_MAIN()
