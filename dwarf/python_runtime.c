// SPDX-License-Identifier: GPL-2.0
/*
 * python_runtime.c - recognize a CPython binary: _PyRuntime, the
 * evaluator's address range, the version, and the struct member offsets
 * the frame walker needs, from the binary's DWARF when it has a complete
 * set, otherwise from the table shipped for its minor version.
 *
 * The file may be hostile or truncated: symbols and data are read through
 * elf_symtab (read(2), every count bounded), a value is read only when its
 * bytes lie inside a PT_LOAD's file extent, and DWARF walks are bounded.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf_symtab.h"
#include "python_runtime.h"
#include "sym_dwarf.h"
#include "user/util/util.h"

#define MIN_MINOR      11
#define MAX_MINOR      13
#define NMINORS	       (MAX_MINOR - MIN_MINOR + 1)
#define MAX_CU_SCAN    100000	  /* units; libpython has a few hundred */
#define MAX_TOP_DIES   (1u << 24) /* top-level entries over all units */
#define MAX_MEMBERS    4096	  /* members of one struct */
#define MAX_TYPE_CHAIN 16	  /* typedef/const/volatile links to peel */
#define MAX_PATH_DEPTH 4	  /* "a.b.c" */

/* ---- version ------------------------------------------------------- */

/*
 * Py_Version (3.11+) holds PY_VERSION_HEX: 0xMMmmppLS. It is an unsigned
 * long, 8 bytes on x86-64; 4 is accepted for a 32-bit build.
 */
static int version_from_symbol(struct elf_symtab *t, unsigned int *major, unsigned int *minor)
{
	GElf_Sym sym;
	Elf_Data *d;
	uint64_t hex;

	if (elf_symtab__find_sym(t, "Py_Version", &sym) || (sym.st_size != 4 && sym.st_size != 8))
		return -ENOENT;
	d = elf_symtab__sym_data(t, &sym, sym.st_size == 8 ? ELF_T_XWORD : ELF_T_WORD);
	if (!d)
		return -ENOENT;
	hex = sym.st_size == 8 ? *(const uint64_t *)d->d_buf : *(const uint32_t *)d->d_buf;
	*major = (hex >> 24) & 0xff;
	*minor = (hex >> 16) & 0xff;
	return *major == 3 ? 0 : -ENOENT;
}

/* "python3.11", "libpython3.11.so.1.0", "python3.11d": 3 and 11. */
static int version_from_name(const char *path, unsigned int *major, unsigned int *minor)
{
	const char *base = strrchr(path, '/');
	char *end;
	unsigned long ma, mi;

	base = base ? base + 1 : path;
	if (!strncmp(base, "lib", 3))
		base += 3;
	if (strncmp(base, "python", 6))
		return -ENOENT;
	base += 6;
	if (*base < '0' || *base > '9')
		return -ENOENT;
	ma = strtoul(base, &end, 10);
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return -ENOENT;
	mi = strtoul(end + 1, &end, 10);
	if (ma != 3 || mi > 99)
		return -ENOENT;
	*major = ma;
	*minor = mi;
	return 0;
}

/* ---- DWARF --------------------------------------------------------- */

/* The structs the offsets live in, by struct tag or typedef name. */
enum py_struct {
	S_RUNTIME,
	S_INTERP,
	S_TSTATE,
	S_CFRAME,
	S_IFRAME,
	S_CODE,
	S_ASCII,
	S_COMPACT,
	S_BYTES,
	S_GEN,
	NSTRUCTS,
};

static const char *const struct_names[NSTRUCTS] = {
	[S_RUNTIME] = "_PyRuntimeState",
	[S_INTERP] = "_is",
	[S_TSTATE] = "_ts",
	[S_CFRAME] = "_PyCFrame",
	[S_IFRAME] = "_PyInterpreterFrame",
	[S_CODE] = "PyCodeObject",
	[S_ASCII] = "PyASCIIObject",
	[S_COMPACT] = "PyCompactUnicodeObject",
	[S_BYTES] = "PyBytesObject",
	[S_GEN] = "PyGenObject",
};

#define SIZEOF "" /* the path that means sizeof(struct) */

/* One py_offsets field: its struct and its member path per minor version
 * (3.11, 3.12, 3.13); NULL where that version has no such member. */
struct py_field {
	size_t off; /* offsetof(struct py_offsets, ...) */
	enum py_struct s;
	const char *path[NMINORS];
};

#define F(field, st, p11, p12, p13)                                                                \
	{                                                                                          \
		offsetof(struct py_offsets, field), st,                                            \
		{                                                                                  \
			p11, p12, p13                                                              \
		}                                                                                  \
	}
#define F_ALL(field, st, p) F(field, st, p, p, p)

static const struct py_field fields[] = {
	F_ALL(runtime_interpreters_head, S_RUNTIME, "interpreters.head"),
	F_ALL(interp_threads_head, S_INTERP, "threads.head"),
	F_ALL(tstate_next, S_TSTATE, "next"),
	F_ALL(tstate_thread_id, S_TSTATE, "thread_id"),
	F(tstate_cframe, S_TSTATE, "cframe", "cframe", NULL),
	F(tstate_current_frame, S_TSTATE, NULL, NULL, "current_frame"),
	F(cframe_current_frame, S_CFRAME, "current_frame", "current_frame", NULL),
	F(iframe_code, S_IFRAME, "f_code", "f_code", "f_executable"),
	F_ALL(iframe_previous, S_IFRAME, "previous"),
	F(iframe_instr, S_IFRAME, "prev_instr", "prev_instr", "instr_ptr"),
	F_ALL(iframe_owner, S_IFRAME, "owner"),
	F(iframe_is_entry, S_IFRAME, "is_entry", NULL, NULL),
	F_ALL(code_filename, S_CODE, "co_filename"),
	F_ALL(code_name, S_CODE, "co_name"),
	F_ALL(code_qualname, S_CODE, "co_qualname"),
	F_ALL(code_firstlineno, S_CODE, "co_firstlineno"),
	F_ALL(code_linetable, S_CODE, "co_linetable"),
	F_ALL(code_code_adaptive, S_CODE, "co_code_adaptive"),
	F_ALL(code_flags, S_CODE, "co_flags"),
	F_ALL(gen_frame_state, S_GEN, "gi_frame_state"),
	F_ALL(gen_iframe, S_GEN, "gi_iframe"),
	F_ALL(unicode_length, S_ASCII, "length"),
	F_ALL(unicode_state, S_ASCII, "state"),
	F_ALL(ascii_size, S_ASCII, SIZEOF),
	F_ALL(compact_size, S_COMPACT, SIZEOF),
	F_ALL(bytes_size, S_BYTES, "ob_base.ob_size"),
	F_ALL(bytes_sval, S_BYTES, "ob_sval"),
};

#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

/* Follow typedefs and qualifiers to the type they name. */
static bool peel_type(Dwarf_Die *die)
{
	for (int i = 0; i < MAX_TYPE_CHAIN; i++) {
		int tag = dwarf_tag(die);
		Dwarf_Attribute a;

		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type && tag != DW_TAG_restrict_type &&
		    tag != DW_TAG_atomic_type)
			return true;
		if (!dwarf_attr_integrate(die, DW_AT_type, &a) || !dwarf_formref_die(&a, die))
			return false;
	}
	return false;
}

/* A struct with a body: a definition, not a forward declaration. */
static bool is_struct_body(Dwarf_Die *die)
{
	Dwarf_Die child;

	return dwarf_tag(die) == DW_TAG_structure_type && !dwarf_hasattr(die, DW_AT_declaration) &&
	       dwarf_child(die, &child) == 0;
}

/* If top-level @die defines one of the wanted structs, record it. */
static void match_struct(Dwarf_Die *die, const bool *want, Dwarf_Die *found, bool *have, int *left)
{
	const char *name = dwarf_diename(die);
	int tag = dwarf_tag(die);
	Dwarf_Die body = *die;

	if (!name || (tag != DW_TAG_structure_type && tag != DW_TAG_typedef))
		return;
	for (int s = 0; s < NSTRUCTS; s++) {
		if (!want[s] || have[s] || strcmp(name, struct_names[s]))
			continue;
		if (tag == DW_TAG_typedef && !peel_type(&body))
			return;
		if (!is_struct_body(&body))
			return;
		found[s] = body;
		have[s] = true;
		(*left)--;
		return;
	}
}

/* The wanted structs, scanning each unit's top-level entries. */
static int find_structs(Dwarf *dw, const bool *want, Dwarf_Die *found)
{
	bool have[NSTRUCTS] = {0};
	Dwarf_Off off = 0, next;
	size_t hsize, nunits = 0, ndies = 0;
	int left = 0;

	for (int s = 0; s < NSTRUCTS; s++)
		left += want[s];
	while (left > 0 && nunits++ < MAX_CU_SCAN &&
	       dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, die;

		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &die) == 0) {
			do {
				match_struct(&die, want, found, have, &left);
			} while (left > 0 && ++ndies < MAX_TOP_DIES &&
				 dwarf_siblingof(&die, &die) == 0);
		}
		if (next <= off)
			break;
		off = next;
	}
	return left ? -ENOENT : 0;
}

/* The byte offset of member @m; bit-fields (no byte offset) fail. */
static int member_offset(Dwarf_Die *m, uint64_t *off)
{
	Dwarf_Attribute a;
	Dwarf_Word w = 0;
	Dwarf_Op *ops;
	size_t nops;

	if (dwarf_hasattr(m, DW_AT_bit_size) || dwarf_hasattr(m, DW_AT_data_bit_offset))
		return -EOPNOTSUPP;
	if (!dwarf_attr(m, DW_AT_data_member_location, &a)) {
		*off = 0; /* union members may leave it out */
		return 0;
	}
	if (dwarf_formudata(&a, &w) == 0) {
		*off = w;
		return 0;
	}
	/* DWARF 2 style: DW_OP_plus_uconst N */
	if (dwarf_getlocation(&a, &ops, &nops) != 0 || nops != 1 ||
	    ops[0].atom != DW_OP_plus_uconst)
		return -EOPNOTSUPP;
	*off = ops[0].number;
	return 0;
}

/* Member @name of struct or union @t: its offset and peeled type. */
static int find_member(Dwarf_Die *t, const char *name, size_t len, uint64_t *off, Dwarf_Die *type)
{
	Dwarf_Die m;
	int n = 0;

	if (dwarf_child(t, &m) != 0)
		return -ENOENT;
	do {
		const char *mn = dwarf_diename(&m);
		Dwarf_Attribute a;

		if (dwarf_tag(&m) != DW_TAG_member || !mn || strlen(mn) != len ||
		    strncmp(mn, name, len))
			continue;
		if (member_offset(&m, off))
			return -EOPNOTSUPP;
		if (!dwarf_attr_integrate(&m, DW_AT_type, &a) || !dwarf_formref_die(&a, type) ||
		    !peel_type(type))
			return -ENOENT;
		return 0;
	} while (++n < MAX_MEMBERS && dwarf_siblingof(&m, &m) == 0);
	return -ENOENT;
}

/* The offset of "a.b.c" from the start of @st, or its sizeof for SIZEOF. */
static int path_offset(Dwarf_Die *st, const char *path, uint64_t *out)
{
	Dwarf_Die t = *st, mt;
	uint64_t total = 0, off;
	Dwarf_Word size;

	if (!*path) {
		if (dwarf_aggregate_size(&t, &size) != 0)
			return -ENOENT;
		*out = size;
		return 0;
	}
	for (int depth = 0; depth < MAX_PATH_DEPTH; depth++) {
		size_t len = strcspn(path, ".");
		int tag = dwarf_tag(&t);

		if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type)
			return -ENOENT;
		if (find_member(&t, path, len, &off, &mt))
			return -ENOENT;
		total += off;
		if (!path[len]) {
			*out = total;
			return 0;
		}
		path += len + 1;
		t = mt;
	}
	return -ENOENT;
}

/*
 * Every field of @off for 3.@minor from the DWARF. All or nothing: a
 * partial set would mix a debug build's layout with a release table's.
 */
static int offsets_from_dwarf(Dwarf *dw, unsigned int minor, struct py_offsets *off)
{
	Dwarf_Die st[NSTRUCTS];
	bool want[NSTRUCTS] = {0};
	unsigned int v = minor - MIN_MINOR;

	for (size_t i = 0; i < NFIELDS; i++)
		if (fields[i].path[v])
			want[fields[i].s] = true;
	if (find_structs(dw, want, st))
		return -ENOENT;
	for (size_t i = 0; i < NFIELDS; i++) {
		uint32_t *slot = (uint32_t *)((char *)off + fields[i].off);
		uint64_t val;

		*slot = PY_OFF_NONE;
		if (!fields[i].path[v])
			continue;
		if (path_offset(&st[fields[i].s], fields[i].path[v], &val) || val >= PY_OFF_NONE)
			return -ENOENT;
		*slot = (uint32_t)val;
	}
	return 0;
}

/* ---- the whole ----------------------------------------------------- */

/* _PyRuntime, the evaluator and the version; -ENOENT if not CPython. */
static int read_symbols(struct elf_symtab *t, const char *path, struct py_runtime *out, char *err,
			size_t errlen)
{
	GElf_Sym sym;

	if (elf_symtab__find_sym(t, "_PyRuntime", &sym) || !sym.st_value) {
		lp_errf(err, errlen, "%s: not a cpython interpreter (no _PyRuntime symbol)", path);
		return -ENOENT;
	}
	out->runtime_addr = sym.st_value;
	if (elf_symtab__find_sym(t, "_PyEval_EvalFrameDefault", &sym) == 0 && sym.st_value &&
	    sym.st_value + sym.st_size >= sym.st_value) {
		out->eval_lo = sym.st_value;
		out->eval_hi = sym.st_value + sym.st_size;
	}
	if (version_from_symbol(t, &out->major, &out->minor) &&
	    version_from_name(path, &out->major, &out->minor)) {
		lp_errf(err, errlen, "python in %s: cannot tell its version", path);
		return -ENOTSUP;
	}
	return 0;
}

int python_runtime_find(const char *path, struct py_runtime *out, char *err, size_t errlen)
{
	const struct py_offsets *table;
	struct elf_symtab *t;
	Dwarf *dw;
	int ret;

	memset(out, 0, sizeof(*out));
	lp_errf(err, errlen, "%s", "");
	ret = elf_symtab__open_path(path, &t);
	if (ret) {
		lp_errf(err, errlen, "cannot read '%s': %s", path, strerror(-ret));
		return ret;
	}
	ret = read_symbols(t, path, out, err, errlen);
	if (ret)
		goto out;
	table = python_offsets_builtin(out->major, out->minor);
	if (!table) {
		lp_errf(err, errlen,
			"python %u.%u in %s: no offsets for this version (liveprof knows "
			"3.%d-3.%d)",
			out->major, out->minor, path, MIN_MINOR, MAX_MINOR);
		ret = -ENOTSUP;
		goto out;
	}
	dw = sym_dwarf__dwarf(t);
	if (dw && offsets_from_dwarf(dw, out->minor, &out->off) == 0) {
		out->from_dwarf = true;
	} else {
		out->off = *table;
	}
out:
	elf_symtab__free(t);
	return ret;
}
