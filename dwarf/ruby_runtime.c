// SPDX-License-Identifier: GPL-2.0
/*
 * ruby_runtime.c - recognize a CRuby binary: ruby_current_vm_ptr, the VM
 * loop's address range, the version, and the table of struct member
 * offsets shipped for its minor version.
 *
 * The file may be hostile or truncated: symbols and data are read through
 * elf_symtab (read(2), every count bounded), a value is read only when its
 * bytes lie inside a PT_LOAD's file extent, the dynamic section is walked
 * within its own size, and a linked libruby is followed once, never in a
 * chain.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf_needed.h"
#include "elf_symtab.h"
#include "ruby_runtime.h"
#include "user/util/util.h"

#define RB_VERSION_MAX 32 /* bytes of the ruby_version string read */
#define RB_SUPPORTED   "3.1"

/* ---- version ------------------------------------------------------- */

/* "3.1.7" into its three numbers; anything else is refused. */
static int parse_version(const char *s, struct rb_runtime *out)
{
	unsigned int v[3];

	for (int i = 0; i < 3; i++) {
		char *end;
		unsigned long x;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		x = strtoul(s, &end, 10);
		if (x > 999)
			return -EINVAL;
		v[i] = x;
		s = end;
		if (i < 2 && *s++ != '.')
			return -EINVAL;
	}
	if (*s != '\0')
		return -EINVAL;
	out->major = v[0];
	out->minor = v[1];
	out->patch = v[2];
	return 0;
}

/*
 * ruby_version (version.c) is a const char array holding RUBY_VERSION with
 * its NUL, e.g. "3.1.7": read the bytes from the PT_LOAD that holds them.
 */
static int version_from_symbol(struct elf_symtab *t, struct rb_runtime *out)
{
	char buf[RB_VERSION_MAX + 1];
	GElf_Sym sym;
	Elf_Data *d;

	if (elf_symtab__find_sym(t, "ruby_version", &sym) || sym.st_size < 2 ||
	    sym.st_size > RB_VERSION_MAX)
		return -ENOENT;
	d = elf_symtab__sym_data(t, &sym, ELF_T_BYTE);
	if (!d)
		return -ENOENT;
	memcpy(buf, d->d_buf, sym.st_size);
	buf[sym.st_size] = '\0';
	return parse_version(buf, out);
}

/* "libruby-3.1.so.3.1", "libruby.so.3.1.7": the version in the name, when
 * the string is not where it should be. Patch level unknown: 0. */
static int version_from_name(const char *path, struct rb_runtime *out)
{
	const char *base = strrchr(path, '/');
	unsigned int ma, mi;

	base = base ? base + 1 : path;
	if (sscanf(base, "libruby-%u.%u.so", &ma, &mi) != 2 &&
	    sscanf(base, "libruby.so.%u.%u", &ma, &mi) != 2)
		return -ENOENT;
	if (ma > 99 || mi > 99)
		return -ENOENT;
	out->major = ma;
	out->minor = mi;
	out->patch = 0;
	return 0;
}

/* ---- a ruby that links libruby ------------------------------------- */

static void copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* The first libruby the file needs: its name and where it is found. */
struct libruby_dep {
	char name[NAME_MAX + 1];
	char found[PATH_MAX]; /* "" when not found */
};

static int pick_libruby(const char *name, const char *found, void *ctx)
{
	struct libruby_dep *dep = ctx;

	if (strncmp(name, "libruby", 7))
		return 0;
	copy_str(dep->name, sizeof(dep->name), name);
	copy_str(dep->found, sizeof(dep->found), found ? found : "");
	return 1;
}

/* ---- the whole ----------------------------------------------------- */

/* The VM loop: vm_exec_core when a .symtab names it, else rb_vm_exec. */
static void find_loop(struct elf_symtab *t, struct rb_runtime *out)
{
	static const char *const names[] = {"vm_exec_core", "rb_vm_exec"};
	GElf_Sym sym;

	for (size_t i = 0; i < 2; i++) {
		if (elf_symtab__find_sym(t, names[i], &sym) || !sym.st_value || !sym.st_size ||
		    sym.st_value + sym.st_size < sym.st_value)
			continue;
		out->loop_lo = sym.st_value;
		out->loop_hi = sym.st_value + sym.st_size;
		out->loop_sym = names[i];
		out->loop_is_core = i == 0;
		return;
	}
}

/* Symbols and version of an ELF that has ruby_current_vm_ptr. */
static int read_runtime(struct elf_symtab *t, const char *path, struct rb_runtime *out, char *err,
			size_t errlen)
{
	GElf_Sym sym;

	if (elf_symtab__find_sym(t, "ruby_current_vm_ptr", &sym) || !sym.st_value) {
		lp_errf(err, errlen, "%s: not a ruby interpreter (no ruby_current_vm_ptr symbol)",
			path);
		return -ENOENT;
	}
	out->vm_ptr_addr = sym.st_value;
	/* Object: the class whose instance variables say which IDs hold a
	 * class path (rb_class.c); without it frames are not qualified */
	if (!elf_symtab__find_sym(t, "rb_cObject", &sym))
		out->cobject_addr = sym.st_value;
	find_loop(t, out);
	if (!out->loop_sym) {
		lp_errf(err, errlen, "ruby in %s: no vm_exec_core or rb_vm_exec symbol", path);
		return -ENOENT;
	}
	if (version_from_symbol(t, out) && version_from_name(path, out)) {
		lp_errf(err, errlen, "ruby in %s: cannot tell its version", path);
		return -ENOTSUP;
	}
	return 0;
}

/* @path itself, or (@follow) the libruby it links; -ENOENT if neither. */
static int find_in(const char *path, bool follow, struct rb_runtime *out, char *err, size_t errlen)
{
	struct libruby_dep dep = {"", ""};
	struct elf_symtab *t;
	GElf_Sym sym;
	int ret;

	if (strlen(path) >= sizeof(out->file)) {
		lp_errf(err, errlen, "'%.64s...': path too long", path);
		return -ENAMETOOLONG;
	}
	ret = elf_symtab__open_path(path, &t);
	if (ret) {
		lp_errf(err, errlen, "cannot read '%s': %s", path, strerror(-ret));
		return ret;
	}
	if (!follow || elf_symtab__find_sym(t, "ruby_current_vm_ptr", &sym) == 0) {
		ret = read_runtime(t, path, out, err, errlen);
		if (!ret)
			copy_str(out->file, sizeof(out->file), path);
		elf_symtab__free(t);
		return ret;
	}
	elf_needed_each(t->elf, path, pick_libruby, &dep);
	elf_symtab__free(t);
	if (!dep.name[0]) {
		lp_errf(err, errlen, "%s: not a ruby interpreter (no ruby_current_vm_ptr symbol)",
			path);
		return -ENOENT;
	}
	if (!dep.found[0]) {
		lp_errf(err, errlen, "%s links %s, which is not found", path, dep.name);
		return -ENOENT;
	}
	return find_in(dep.found, false, out, err, errlen);
}

int ruby_runtime_find(const char *path, struct rb_runtime *out, char *err, size_t errlen)
{
	const struct rb_offsets *table;
	int ret;

	memset(out, 0, sizeof(*out));
	lp_errf(err, errlen, "%s", "");
	ret = find_in(path, true, out, err, errlen);
	if (ret)
		return ret;
	table = ruby_offsets_builtin(out->major, out->minor);
	if (!table) {
		lp_errf(err, errlen,
			"ruby %u.%u.%u in %s: no offsets for this version (liveprof "
			"knows " RB_SUPPORTED ")",
			out->major, out->minor, out->patch, out->file);
		return -ENOTSUP;
	}
	out->off = *table;
	return 0;
}
