// SPDX-License-Identifier: GPL-2.0
/*
 * probe_resolve.c - probe specs to probe addresses.
 *
 * Functions are found through the ELF symbol tables, because that is what
 * exists at run time even without -g; DWARF adds what symbols cannot say:
 * that a function exists only inlined, where its prologue ends, and which
 * addresses a source line compiled to.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdw.h>

#include "dwarf_aux.h"
#include "probe_resolve.h"

#define MAX_DIE_DEPTH	  64	     /* nesting we follow in hostile DWARF */
#define MAX_INLINE_REPORT 4	     /* inlined call sites named in an error */
#define MAX_DECODE_BYTES  (16 << 20) /* a function larger than this is not code */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* ---- spec and expression parsing ---------------------------------- */

static const char *skip_ws(const char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return s;
}

static size_t parse_ident(const char *s, char *out, size_t outlen)
{
	size_t n = 0;

	if (!isalpha((unsigned char)s[0]) && s[0] != '_')
		return 0;
	while (isalnum((unsigned char)s[n]) || s[n] == '_')
		n++;
	if (n >= outlen)
		return 0;
	memcpy(out, s, n);
	out[n] = '\0';
	return n;
}

int probe_expr_parse(const char *text, struct probe_expr *out, char *err, size_t errlen)
{
	const char *s;
	size_t n, len;

	memset(out, 0, sizeof(*out));
	s = skip_ws(text);
	len = strlen(s);
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	if (!len || len >= sizeof(out->text)) {
		dwarf_aux__errf(err, errlen, "bad expression '%s': %s", text,
				len ? "too long" : "empty");
		return -EINVAL;
	}
	memcpy(out->text, s, len);
	out->text[len] = '\0';
	s = out->text;

	while (*s == '*' || isspace((unsigned char)*s)) {
		if (*s == '*')
			out->n_deref++;
		s++;
	}
	n = parse_ident(s, out->base, sizeof(out->base));
	if (!n) {
		dwarf_aux__errf(err, errlen,
				"bad expression '%s': expected a variable name at '%s'", out->text,
				s);
		return -EINVAL;
	}
	s = skip_ws(s + n);
	while (*s) {
		struct probe_step *st;

		if (out->n_steps >= PROBE_EXPR_MAX) {
			dwarf_aux__errf(err, errlen, "bad expression '%s': more than %d steps",
					out->text, PROBE_EXPR_MAX);
			return -EINVAL;
		}
		st = &out->steps[out->n_steps];
		if (s[0] == '-' && s[1] == '>') {
			st->kind = PROBE_STEP_ARROW;
			s = skip_ws(s + 2);
		} else if (s[0] == '.') {
			st->kind = PROBE_STEP_DOT;
			s = skip_ws(s + 1);
		} else if (s[0] == '[') {
			char *end;
			long long v;

			errno = 0;
			v = strtoll(skip_ws(s + 1), &end, 0);
			end = (char *)skip_ws(end);
			if (errno || end == skip_ws(s + 1) || *end != ']') {
				dwarf_aux__errf(err, errlen,
						"bad expression '%s': bad index at '%s'", out->text,
						s);
				return -EINVAL;
			}
			st->kind = PROBE_STEP_INDEX;
			st->index = v;
			out->n_steps++;
			s = skip_ws(end + 1);
			continue;
		} else {
			dwarf_aux__errf(err, errlen, "bad expression '%s': unexpected '%s'",
					out->text, s);
			return -EINVAL;
		}
		n = parse_ident(s, st->field, sizeof(st->field));
		if (!n) {
			dwarf_aux__errf(err, errlen,
					"bad expression '%s': expected a field name at '%s'",
					out->text, s);
			return -EINVAL;
		}
		out->n_steps++;
		s = skip_ws(s + n);
	}
	out->is_ret = strcmp(out->base, "ret") == 0;
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* Split "a, b[1], c" at top-level commas into the spec's args. */
static int parse_args(char *list, struct probe_spec *out, char *err, size_t errlen)
{
	char *start = list, *p;
	int depth = 0, ret;

	if (!*skip_ws(list))
		return 0;
	for (p = list;; p++) {
		if (*p == '[' || *p == '(')
			depth++;
		else if ((*p == ']' || *p == ')') && depth > 0)
			depth--;
		if (*p && (*p != ',' || depth))
			continue;
		if (out->n_args >= PROBE_MAX_ARGS) {
			dwarf_aux__errf(err, errlen, "too many values: at most %d", PROBE_MAX_ARGS);
			return -EINVAL;
		}
		{
			char save = *p;

			*p = '\0';
			ret = probe_expr_parse(start, &out->args[out->n_args], err, errlen);
			*p = save;
		}
		if (ret)
			return ret;
		out->n_args++;
		if (!*p)
			break;
		start = p + 1;
	}
	return 0;
}

static int copy_str(char *dst, size_t dstlen, const char *src, size_t n)
{
	if (n >= dstlen)
		return -EINVAL;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

int probe_spec_parse(const char *text, struct probe_spec *out, char *err, size_t errlen)
{
	char buf[PROBE_PATH_MAX + PROBE_NAME_MAX];
	char *head, *colon, *plus, *func;
	size_t len;
	int ret;

	memset(out, 0, sizeof(*out));
	text = skip_ws(text);
	len = strlen(text);
	while (len && isspace((unsigned char)text[len - 1]))
		len--;
	if (!len) {
		dwarf_aux__errf(err, errlen, "empty probe spec");
		return -EINVAL;
	}
	if (len >= sizeof(buf)) {
		dwarf_aux__errf(err, errlen, "probe spec too long");
		return -EINVAL;
	}
	memcpy(buf, text, len);
	buf[len] = '\0';
	head = buf;

	/*
	 * The argument list is the parenthesis group that ends the text;
	 * searching from the right keeps Go names such as
	 * "main.(*Server).handle" intact.
	 */
	if (buf[len - 1] == ')') {
		int depth = 0;
		size_t i = len;

		while (i-- > 0) {
			if (buf[i] == ')')
				depth++;
			else if (buf[i] == '(' && --depth == 0)
				break;
		}
		if (depth != 0 || i == (size_t)-1) {
			dwarf_aux__errf(err, errlen, "bad probe spec '%s': unbalanced parentheses",
					buf);
			return -EINVAL;
		}
		/* "main.(*T)" alone is a name, not an argument list */
		if (i > 0 && buf[i - 1] != '.') {
			buf[len - 1] = '\0';
			buf[i] = '\0';
			ret = parse_args(buf + i + 1, out, err, errlen);
			if (ret)
				return ret;
		}
	}
	len = strlen(head);
	while (len && isspace((unsigned char)head[len - 1]))
		head[--len] = '\0';

	colon = strrchr(head, ':');
	if (colon) {
		*colon = '\0';
		if (all_digits(colon + 1) && strpbrk(head, "./")) {
			long line = strtol(colon + 1, NULL, 10);

			if (line <= 0 || line > INT_MAX) {
				dwarf_aux__errf(err, errlen, "bad line number in '%s:%s'", head,
						colon + 1);
				return -EINVAL;
			}
			if (!*head || copy_str(out->file, sizeof(out->file), head, strlen(head))) {
				dwarf_aux__errf(err, errlen, "bad file name in '%s:%s'", head,
						colon + 1);
				return -EINVAL;
			}
			out->kind = PROBE_SPEC_LINE;
			out->line = (int)line;
			return 0;
		}
		if (!*head || copy_str(out->binary, sizeof(out->binary), head, strlen(head))) {
			dwarf_aux__errf(err, errlen, "bad binary name in probe spec '%s'", text);
			return -EINVAL;
		}
		func = colon + 1;
	} else {
		func = head;
	}

	plus = strrchr(func, '+');
	if (plus) {
		char *end;

		errno = 0;
		out->offset = strtoull(plus + 1, &end, 0);
		if (errno || end == plus + 1 || *end || plus[1] == '-') {
			dwarf_aux__errf(err, errlen, "bad offset '%s' in probe spec '%s'", plus + 1,
					text);
			return -EINVAL;
		}
		out->has_offset = true;
		*plus = '\0';
	}
	if (!*func || strpbrk(func, " \t,")) {
		dwarf_aux__errf(err, errlen, "bad function name '%s' in probe spec '%s'", func,
				text);
		return -EINVAL;
	}
	if (copy_str(out->func, sizeof(out->func), func, strlen(func))) {
		dwarf_aux__errf(err, errlen, "function name too long in probe spec '%s'", text);
		return -EINVAL;
	}
	out->kind = PROBE_SPEC_FUNC;
	return 0;
}

bool probe_spec_binary_matches(const char *spec_binary, const char *mapped_path)
{
	const char *base;
	size_t n;

	if (!spec_binary || !*spec_binary || !mapped_path)
		return false;
	if (strchr(spec_binary, '/'))
		return strcmp(spec_binary, mapped_path) == 0;
	base = base_name(mapped_path);
	n = strlen(spec_binary);
	if (strncmp(base, spec_binary, n) != 0)
		return false;
	return base[n] == '\0' || base[n] == '.' || base[n] == '-';
}

/* ---- ELF helpers --------------------------------------------------- */

int elf_vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *offset)
{
	size_t i, n;

	if (elf_getphdrnum(elf, &n))
		return -ENOENT;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) {
			*offset = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

struct fsym {
	const char *name; /* in the ELF string table: valid while the Elf is open */
	uint64_t value;
	uint64_t size;
};

struct symtab {
	struct fsym *syms;
	size_t n, cap;
};

static int symtab_add(struct symtab *t, const char *name, uint64_t value, uint64_t size)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		struct fsym *s = realloc(t->syms, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		t->syms = s;
		t->cap = cap;
	}
	t->syms[t->n++] = (struct fsym){name, value, size};
	return 0;
}

/* Defined functions of .symtab and .dynsym. */
static int symtab_load(Elf *elf, struct symtab *t)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		n = data->d_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;
			int type;

			if (!gelf_getsym(data, (int)i, &sym))
				break;
			type = GELF_ST_TYPE(sym.st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			if (symtab_add(t, name, sym.st_value, sym.st_size))
				return -ENOMEM;
		}
	}
	return 0;
}

static bool has_symbol(Elf *elf, const char *want)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		n = data->d_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym))
				break;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (name && strcmp(name, want) == 0)
				return true;
		}
	}
	return false;
}

bool elf_is_go(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf)
		return false;
	if (elf_getshdrstrndx(elf, &shstrndx) == 0) {
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;

			if (!gelf_getshdr(scn, &sh))
				continue;
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (name &&
			    (!strcmp(name, ".go.buildinfo") || !strcmp(name, ".note.go.buildid")))
				return true;
		}
	}
	return has_symbol(elf, "runtime.main");
}

/* ---- closest names -------------------------------------------------- */

#define NEAR_N 3

struct near {
	char name[NEAR_N][PROBE_NAME_MAX];
	unsigned dist[NEAR_N];
	size_t n;
};

static unsigned edit_distance(const char *a, const char *b)
{
	unsigned row[PROBE_NAME_MAX + 1];
	size_t la = strlen(a), lb = strlen(b), i, j;

	if (la > PROBE_NAME_MAX || lb > PROBE_NAME_MAX)
		return UINT_MAX;
	for (j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (i = 1; i <= la; i++) {
		unsigned diag = row[0];

		row[0] = (unsigned)i;
		for (j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* Keep the NEAR_N closest distinct names that are plausibly a typo of @want. */
static void near_offer(struct near *nr, const char *want, const char *name)
{
	unsigned d, limit = (unsigned)strlen(want) / 2 + 1;
	size_t i, pos;

	if (strlen(name) >= PROBE_NAME_MAX)
		return;
	for (i = 0; i < nr->n; i++)
		if (!strcmp(nr->name[i], name))
			return;
	d = edit_distance(want, name);
	if (d > limit)
		return;
	for (pos = 0; pos < nr->n && nr->dist[pos] <= d; pos++)
		;
	if (pos >= NEAR_N)
		return;
	for (i = nr->n < NEAR_N ? nr->n : NEAR_N - 1; i > pos; i--) {
		memcpy(nr->name[i], nr->name[i - 1], PROBE_NAME_MAX);
		nr->dist[i] = nr->dist[i - 1];
	}
	strcpy(nr->name[pos], name);
	nr->dist[pos] = d;
	if (nr->n < NEAR_N)
		nr->n++;
}

static void near_format(const struct near *nr, char *buf, size_t len)
{
	size_t i, off = 0;

	buf[0] = '\0';
	if (!nr->n)
		return;
	off += snprintf(buf, len, "; did you mean ");
	for (i = 0; i < nr->n && off < len; i++)
		off += snprintf(buf + off, len - off, "%s'%s'", i ? ", " : "", nr->name[i]);
}

/* ---- DWARF helpers -------------------------------------------------- */

/* Basename of file @idx of @cu's line-table file list, or "?". */
static const char *cu_file_name(Dwarf_Die *cu, Dwarf_Word idx)
{
	Dwarf_Files *files;
	size_t n;
	const char *s;

	if (dwarf_getsrcfiles(cu, &files, &n) || idx >= n)
		return "?";
	s = dwarf_filesrc(files, idx, NULL, NULL);
	return s ? base_name(s) : "?";
}

struct inline_scan {
	const char *want;
	Dwarf_Addr ool_entry; /* an out-of-line DWARF instance, when no symbol had it */
	bool found_any;	      /* some subprogram or instance has the name */
	size_t n_inst;
	char inst[MAX_INLINE_REPORT][PROBE_NAME_MAX + 64];
	char first_site[PROBE_NAME_MAX]; /* "x.c:12", for the suggestion */
};

static void scan_dies(Dwarf_Die *cu, Dwarf_Die *die, const char *outer, int depth,
		      struct inline_scan *sc)
{
	Dwarf_Die child;
	int r;

	if (depth > MAX_DIE_DEPTH || dwarf_child(die, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		const char *name = NULL, *inner = outer;

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
			name = dwarf_aux__die_name(&child);
			inner = name ? name : outer;
		}
		if (name && !strcmp(name, sc->want)) {
			sc->found_any = true;
			if (tag == DW_TAG_subprogram) {
				Dwarf_Addr lo;

				if (!sc->ool_entry && dwarf_lowpc(&child, &lo) == 0 && lo)
					sc->ool_entry = lo;
			} else {
				Dwarf_Attribute a;
				Dwarf_Word file = 0, line = 0;
				const char *f;

				if (dwarf_attr(&child, DW_AT_call_file, &a))
					dwarf_formudata(&a, &file);
				if (dwarf_attr(&child, DW_AT_call_line, &a))
					dwarf_formudata(&a, &line);
				f = cu_file_name(cu, file);
				if (sc->n_inst < MAX_INLINE_REPORT)
					snprintf(sc->inst[sc->n_inst], sizeof(sc->inst[0]),
						 "%s at %s:%lu", outer ? outer : "?", f,
						 (unsigned long)line);
				if (!sc->n_inst)
					snprintf(sc->first_site, sizeof(sc->first_site), "%s:%lu",
						 f, (unsigned long)line);
				sc->n_inst++;
			}
		}
		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
		    tag == DW_TAG_lexical_block || tag == DW_TAG_namespace ||
		    tag == DW_TAG_class_type || tag == DW_TAG_structure_type)
			scan_dies(cu, &child, inner, depth + 1, sc);
	} while ((r = dwarf_siblingof(&child, &child)) == 0);
}

static void scan_inlines(Dwarf *dbg, struct inline_scan *sc)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	while (dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dbg, off + hsize, &cu))
			scan_dies(&cu, &cu, NULL, 0, sc);
		off = next;
	}
}

/* Innermost function and inlined function at @addr; strings are DWARF's. */
static void addr_scopes(Dwarf *dbg, Dwarf_Addr addr, const char **func, const char **inl)
{
	Dwarf_Die *scopes = NULL;
	int i, n;

	*func = *inl = NULL;
	n = dwarf_aux__phys_scopes(dbg, addr, &scopes);
	for (i = 0; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_inlined_subroutine && !*inl)
			*inl = dwarf_aux__die_name(&scopes[i]);
		if (tag == DW_TAG_subprogram) {
			*func = dwarf_aux__die_name(&scopes[i]);
			break;
		}
	}
	free(scopes);
}

/*
 * End of the prologue: the first line row flagged prologue_end, else the
 * first statement row after the entry that starts a new line (perf's
 * rule). Falls back to the entry.
 */
static uint64_t body_addr(Dwarf *dbg, uint64_t entry, uint64_t size)
{
	Dwarf_Die cu;
	Dwarf_Lines *lines;
	size_t i, n;
	int entry_line = -1;
	uint64_t end = entry + (size ? size : 1), cand = 0;

	if (!dbg || !dwarf_addrdie(dbg, entry, &cu) || dwarf_getsrclines(&cu, &lines, &n))
		return entry;
	for (i = 0; i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr a;
		bool flag;
		int ln;

		if (!l || dwarf_lineaddr(l, &a) || a < entry || a >= end)
			continue;
		if (dwarf_lineendsequence(l, &flag) == 0 && flag)
			continue;
		if (dwarf_lineprologueend(l, &flag) == 0 && flag)
			return a;
		if (dwarf_lineno(l, &ln))
			continue;
		if (a == entry) {
			if (entry_line < 0)
				entry_line = ln;
			continue;
		}
		if (!cand && entry_line >= 0 && ln != entry_line &&
		    dwarf_linebeginstatement(l, &flag) == 0 && flag)
			cand = a;
	}
	return cand ? cand : entry;
}

/* ---- x86-64 length decoder ------------------------------------------ */

static bool is_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0x66:
	case 0x67:
	case 0xf0:
	case 0xf2:
	case 0xf3:
	case 0x2e:
	case 0x36:
	case 0x3e:
	case 0x26:
	case 0x64:
	case 0x65:
		return true;
	}
	return false;
}

/*
 * Decode one instruction's length; @opcode and @map_out report the opcode
 * byte and its map (0 one-byte, 1 0F, 2 0F38, 3 0F3A, >3 VEX/EVEX/XOP maps).
 */
static int x86_decode(const uint8_t *p, size_t avail, uint8_t *opcode, int *map_out)
{
	size_t i = 0, disp = 0, imm = 0;
	bool o16 = false, a32 = false, rexw = false, modrm = true, vex = false;
	int map = 0;
	uint8_t op, m;

	if (avail > 15)
		avail = 15;
	while (i < avail && is_legacy_prefix(p[i])) {
		o16 |= p[i] == 0x66;
		a32 |= p[i] == 0x67;
		i++;
	}
	if (i < avail && (p[i] & 0xf0) == 0x40) {
		rexw = p[i] & 8;
		i++;
	}
	if (i >= avail)
		return -1;
	op = p[i];

	if (op == 0xc5 || op == 0xc4 || op == 0x62 ||
	    (op == 0x8f && i + 1 < avail && (p[i + 1] & 0x1f) >= 8)) {
		/* VEX, EVEX and XOP: the payload selects the map */
		size_t plen = op == 0xc5 ? 1 : op == 0x62 ? 3 : 2;

		if (i + plen + 1 >= avail)
			return -1;
		if (op == 0xc5)
			map = 1;
		else if (op == 0x62)
			map = p[i + 1] & 7;
		else
			map = p[i + 1] & 0x1f;
		if (op == 0x8f)
			map += 100; /* keep XOP maps apart from VEX ones */
		i += plen + 1;
		op = p[i++];
		vex = true;
		if (map == 1 && op == 0x77)
			modrm = false; /* vzeroupper / vzeroall */
		if (map == 3 || map == 108 ||
		    (map == 1 && ((op >= 0x70 && op <= 0x73) || op == 0xc2 || op == 0xc4 ||
				  op == 0xc5 || op == 0xc6)))
			imm = 1;
		else if (map == 110)
			imm = 4;
	} else if (op == 0x0f) {
		if (++i >= avail)
			return -1;
		op = p[i++];
		if (op == 0x38 || op == 0x3a) {
			map = op == 0x38 ? 2 : 3;
			if (i >= avail)
				return -1;
			op = p[i++];
			imm = map == 3;
		} else {
			map = 1;
			switch (op) {
			case 0x05:
			case 0x06:
			case 0x07:
			case 0x08:
			case 0x09:
			case 0x0b:
			case 0x0e:
			case 0x30 ... 0x37:
			case 0x77:
			case 0xa0:
			case 0xa1:
			case 0xa2:
			case 0xa8:
			case 0xa9:
			case 0xaa:
			case 0xc8 ... 0xcf:
				modrm = false;
				break;
			case 0x80 ... 0x8f:
				modrm = false;
				imm = 4;
				break;
			case 0x70 ... 0x73:
			case 0xa4:
			case 0xac:
			case 0xba:
			case 0xc2:
			case 0xc4:
			case 0xc5:
			case 0xc6:
			case 0x0f:
				imm = 1;
				break;
			}
		}
	} else {
		size_t immz = o16 ? 2 : 4;

		i++;
		modrm = false;
		if (op < 0x40) {
			switch (op & 7) {
			case 0:
			case 1:
			case 2:
			case 3:
				modrm = true;
				break;
			case 4:
				imm = 1;
				break;
			case 5:
				imm = immz;
				break;
			default:
				return -1; /* push/pop seg, daa...: invalid in 64-bit mode */
			}
		} else {
			switch (op) {
			case 0x50 ... 0x5f:
			case 0x6c ... 0x6f:
			case 0x90 ... 0x99:
			case 0x9b ... 0x9f:
			case 0xa4 ... 0xa7:
			case 0xaa ... 0xaf:
			case 0xc3:
			case 0xc9:
			case 0xcb:
			case 0xcc:
			case 0xcf:
			case 0xd7:
			case 0xec ... 0xef:
			case 0xf1:
			case 0xf4:
			case 0xf5:
			case 0xf8 ... 0xfd:
				break;
			case 0x63:
			case 0x84 ... 0x8f:
			case 0xd0 ... 0xd3:
			case 0xd8 ... 0xdf:
			case 0xfe:
			case 0xff:
			case 0xf6:
			case 0xf7:
				modrm = true;
				break;
			case 0x68:
			case 0xa9:
				imm = immz;
				break;
			case 0x69:
			case 0x81:
			case 0xc7:
				modrm = true;
				imm = immz;
				break;
			case 0x6a:
			case 0x70 ... 0x7f:
			case 0xa8:
			case 0xb0 ... 0xb7:
			case 0xcd:
			case 0xe0 ... 0xe7:
			case 0xeb:
				imm = 1;
				break;
			case 0x6b:
			case 0x80:
			case 0x83:
			case 0xc0:
			case 0xc1:
			case 0xc6:
				modrm = true;
				imm = 1;
				break;
			case 0xa0 ... 0xa3:
				imm = a32 ? 4 : 8; /* moffs */
				break;
			case 0xb8 ... 0xbf:
				imm = rexw ? 8 : immz;
				break;
			case 0xc2:
			case 0xca:
				imm = 2;
				break;
			case 0xc8:
				imm = 3;
				break;
			case 0xe8:
			case 0xe9:
				imm = 4;
				break;
			default:
				return -1;
			}
		}
	}
	if (modrm) {
		if (i >= avail)
			return -1;
		m = p[i++];
		if ((m >> 6) != 3) {
			if ((m & 7) == 4) {
				if (i >= avail)
					return -1;
				if ((m >> 6) == 0 && (p[i] & 7) == 5)
					disp = 4;
				i++;
			}
			if ((m >> 6) == 0 && (m & 7) == 5)
				disp = 4;
			else if ((m >> 6) == 1)
				disp = 1;
			else if ((m >> 6) == 2)
				disp = 4;
		}
		/* test r/m, imm: only /0 and /1 of F6/F7 carry an immediate */
		if (!vex && map == 0 && (op == 0xf6 || op == 0xf7) && ((m >> 3) & 7) < 2)
			imm = op == 0xf6 ? 1 : (o16 ? 2 : 4);
	}
	i += disp + imm;
	if (i > avail)
		return -1;
	*opcode = op;
	*map_out = vex ? map + 1000 : map;
	return (int)i;
}

int x86_insn_length(const uint8_t *p, size_t avail)
{
	uint8_t op;
	int map;

	if (!p)
		return -1;
	return x86_decode(p, avail, &op, &map);
}

int probe_return_sites(Elf *elf, uint64_t vaddr, uint64_t size, uint64_t **out, size_t *n_out)
{
	uint64_t off, end_off;
	Elf_Data *d;
	const uint8_t *p;
	uint64_t *v = NULL;
	size_t n = 0, cap = 0, i = 0;

	*out = NULL;
	*n_out = 0;
	if (!size || size > MAX_DECODE_BYTES || vaddr + size < vaddr)
		return -EINVAL;
	if (elf_vaddr_to_offset(elf, vaddr, &off) ||
	    elf_vaddr_to_offset(elf, vaddr + size - 1, &end_off) || end_off - off != size - 1)
		return -ENOENT;
	d = elf_getdata_rawchunk(elf, (int64_t)off, size, ELF_T_BYTE);
	if (!d || !d->d_buf || d->d_size < size)
		return -ENOENT;
	p = d->d_buf;
	while (i < size) {
		uint8_t op;
		int map, len = x86_decode(p + i, size - i, &op, &map);

		if (len <= 0) {
			free(v);
			return -EILSEQ;
		}
		if (map == 0 && (op == 0xc3 || op == 0xc2)) {
			if (n == cap) {
				size_t c = cap ? cap * 2 : 8;
				uint64_t *nv = realloc(v, c * sizeof(*nv));

				if (!nv) {
					free(v);
					return -ENOMEM;
				}
				v = nv;
				cap = c;
			}
			v[n++] = vaddr + i;
		}
		i += (size_t)len;
	}
	*out = v;
	*n_out = n;
	return 0;
}

/* ---- resolution ----------------------------------------------------- */

struct ctx {
	const char *path;
	int fd;
	Elf *elf;
	Dwarf *dbg;
	char *err;
	size_t errlen;
};

static int ctx_open(struct ctx *c, const char *path, char *err, size_t errlen)
{
	int ret;

	memset(c, 0, sizeof(*c));
	c->path = path;
	c->err = err;
	c->errlen = errlen;
	c->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c->fd < 0) {
		ret = -errno;
		dwarf_aux__errf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
		return ret;
	}
	elf_version(EV_CURRENT);
	c->elf = elf_begin(c->fd, ELF_C_READ_MMAP, NULL);
	if (!c->elf || elf_kind(c->elf) != ELF_K_ELF) {
		dwarf_aux__errf(err, errlen, "'%s' is not an ELF file", path);
		if (c->elf)
			elf_end(c->elf);
		close(c->fd);
		c->elf = NULL;
		c->fd = -1;
		return -ENOEXEC;
	}
	/* no DWARF is a normal case for function probes */
	c->dbg = dwarf_begin_elf(c->elf, DWARF_C_READ, NULL);
	return 0;
}

static void ctx_close(struct ctx *c)
{
	if (c->dbg)
		dwarf_end(c->dbg);
	if (c->elf)
		elf_end(c->elf);
	if (c->fd >= 0)
		close(c->fd);
}

static int site_fill(struct probe_site *s, uint64_t vaddr, uint64_t off, const char *func,
		     const char *inl, const char *file, int line)
{
	memset(s, 0, sizeof(*s));
	s->vaddr = vaddr;
	s->file_offset = off;
	s->line = line;
	if ((func && !(s->func = strdup(func))) || (inl && !(s->inlined_from = strdup(inl))) ||
	    (file && !(s->file = strdup(file))))
		return -ENOMEM;
	return 0;
}

static void sites_free(struct probe_site *s, size_t n)
{
	size_t i;

	for (i = 0; s && i < n; i++) {
		free(s[i].func);
		free(s[i].inlined_from);
		free(s[i].file);
	}
	free(s);
}

void probe_target_free(struct probe_target *t)
{
	if (!t)
		return;
	free(t->binary_path);
	free(t->func);
	sites_free(t->sites, t->n_sites);
	sites_free(t->ret_sites, t->n_ret_sites);
	memset(t, 0, sizeof(*t));
}

/* CU file name of a function, for ambiguity messages. */
static const char *func_cu_name(Dwarf *dbg, uint64_t addr)
{
	Dwarf_Die cu;
	const char *n;

	if (!dbg || !dwarf_addrdie(dbg, addr, &cu))
		return "?";
	n = dwarf_diename(&cu);
	return n ? base_name(n) : "?";
}

static int fill_ret_sites(struct ctx *c, struct probe_target *t)
{
	uint64_t *v;
	size_t n, i;
	int ret;

	ret = probe_return_sites(c->elf, t->entry_vaddr, t->func_size, &v, &n);
	if (ret == -ENOMEM)
		return ret;
	if (ret)
		return 0; /* ret_sites_valid stays false; the caller decides */
	t->ret_sites = calloc(n ? n : 1, sizeof(*t->ret_sites));
	if (!t->ret_sites) {
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		uint64_t off = 0;

		elf_vaddr_to_offset(c->elf, v[i], &off);
		if (site_fill(&t->ret_sites[i], v[i], off, t->func, NULL, NULL, 0)) {
			t->n_ret_sites = i + 1;
			free(v);
			return -ENOMEM;
		}
		t->ret_sites[i].is_return_insn = true;
	}
	t->n_ret_sites = n;
	t->ret_sites_valid = true;
	free(v);
	return 0;
}

static int resolve_func(struct ctx *c, const struct probe_spec *spec, struct probe_target *t)
{
	struct symtab st = {0};
	const struct fsym *hit = NULL;
	uint64_t entry = 0, size = 0;
	size_t i;
	int ret;

	ret = symtab_load(c->elf, &st);
	if (ret)
		goto out;
	for (i = 0; i < st.n; i++) {
		const struct fsym *s = &st.syms[i];

		if (strcmp(s->name, spec->func))
			continue;
		if (hit && hit->value != s->value) {
			char list[512];
			size_t off = 0, j;

			/* several static functions with the same name: name their files */
			for (j = 0; j < st.n && off < sizeof(list); j++) {
				if (strcmp(st.syms[j].name, spec->func))
					continue;
				off += snprintf(list + off, sizeof(list) - off, "%s%s at 0x%llx",
						off ? ", " : "",
						func_cu_name(c->dbg, st.syms[j].value),
						(unsigned long long)st.syms[j].value);
			}
			dwarf_aux__errf(c->err, c->errlen,
					"'%s' is ambiguous in '%s': %s; probe a line instead",
					spec->func, c->path, list);
			ret = -EINVAL;
			goto out;
		}
		if (!hit || (!hit->size && s->size))
			hit = s;
	}
	if (hit) {
		entry = hit->value;
		size = hit->size;
	} else {
		struct inline_scan sc = {.want = spec->func};

		if (c->dbg)
			scan_inlines(c->dbg, &sc);
		if (sc.ool_entry) {
			/* a DWARF-only out-of-line copy (symbols stripped, debug kept) */
			Dwarf_Die cu, *scopes = NULL;
			int n, k;

			entry = sc.ool_entry;
			if (dwarf_addrdie(c->dbg, entry, &cu) &&
			    (n = dwarf_getscopes(&cu, entry, &scopes)) > 0) {
				for (k = 0; k < n; k++) {
					Dwarf_Addr hi;

					if (dwarf_tag(&scopes[k]) == DW_TAG_subprogram &&
					    dwarf_highpc(&scopes[k], &hi) == 0 && hi > entry) {
						size = hi - entry;
						break;
					}
				}
			}
			free(scopes);
		} else if (sc.n_inst) {
			char list[MAX_INLINE_REPORT * (PROBE_NAME_MAX + 70)];
			size_t off = 0, j;

			for (j = 0; j < sc.n_inst && j < MAX_INLINE_REPORT; j++)
				off += snprintf(list + off, sizeof(list) - off, "%s%s",
						j ? ", " : "", sc.inst[j]);
			if (sc.n_inst > MAX_INLINE_REPORT)
				snprintf(list + off, sizeof(list) - off, ", and %zu more",
					 sc.n_inst - MAX_INLINE_REPORT);
			dwarf_aux__errf(c->err, c->errlen,
					"'%s' is only inlined (into %s); probe a line instead, "
					"e.g. --trace "
					"%s",
					spec->func, list, sc.first_site);
			ret = -EINVAL;
			goto out;
		} else {
			struct near nr = {0};
			char sugg[3 * PROBE_NAME_MAX + 64];

			for (i = 0; i < st.n; i++)
				near_offer(&nr, spec->func, st.syms[i].name);
			near_format(&nr, sugg, sizeof(sugg));
			dwarf_aux__errf(c->err, c->errlen, "no function '%s' in '%s'%s%s",
					spec->func, c->path,
					sc.found_any ? " (declared in DWARF, but has no code)" : "",
					sugg);
			ret = -ENOENT;
			goto out;
		}
	}

	if (spec->has_offset && (spec->offset >= size && !(size == 0 && spec->offset == 0))) {
		dwarf_aux__errf(c->err, c->errlen, "offset %llu is outside '%s' (size %llu)",
				(unsigned long long)spec->offset, spec->func,
				(unsigned long long)size);
		ret = -EINVAL;
		goto out;
	}
	t->func = strdup(spec->func);
	t->sites = calloc(1, sizeof(*t->sites));
	if (!t->func || !t->sites) {
		ret = -ENOMEM;
		goto out;
	}
	t->func_size = size;
	t->entry_vaddr = entry;
	if (elf_vaddr_to_offset(c->elf, entry, &t->entry_offset)) {
		dwarf_aux__errf(c->err, c->errlen,
				"'%s' at 0x%llx is not in a loaded segment of '%s'", spec->func,
				(unsigned long long)entry, c->path);
		ret = -ENOENT;
		goto out;
	}
	t->body_vaddr = body_addr(c->dbg, entry, size);
	if (elf_vaddr_to_offset(c->elf, t->body_vaddr, &t->body_offset)) {
		t->body_vaddr = entry;
		t->body_offset = t->entry_offset;
	}
	/* ret sites come from the function start, before +OFF moves the entry */
	if (size) {
		ret = fill_ret_sites(c, t);
		if (ret)
			goto out;
	}
	if (spec->has_offset) {
		t->entry_vaddr += spec->offset;
		t->entry_offset += spec->offset;
		t->body_vaddr = t->entry_vaddr;
		t->body_offset = t->entry_offset;
	}
	ret = site_fill(&t->sites[0], t->entry_vaddr, t->entry_offset, t->func, NULL, NULL, 0);
	t->n_sites = 1;
out:
	free(st.syms);
	return ret;
}

static bool file_matches(const char *path, const char *want)
{
	size_t lp, lw;

	if (!path)
		return false;
	while (want[0] == '.' && want[1] == '/')
		want += 2;
	lp = strlen(path);
	lw = strlen(want);
	if (lw > lp)
		return false;
	if (lw == lp)
		return strcmp(path, want) == 0;
	return path[lp - lw - 1] == '/' && strcmp(path + lp - lw, want) == 0;
}

struct line_scan {
	uint64_t *addrs;
	size_t n, cap;
	bool file_seen;
	bool any_lines;	  /* some CU had a line table */
	bool merged;	  /* the line had rows, all folded into code of other lines */
	int below, above; /* nearest lines with code around the wanted one */
	char matched_file[PROBE_PATH_MAX];
	struct near near_files;
};

static int addr_push(struct line_scan *ls, uint64_t a)
{
	size_t i;

	for (i = 0; i < ls->n; i++)
		if (ls->addrs[i] == a)
			return 0;
	if (ls->n >= PROBE_MAX_SITES)
		return 0;
	if (ls->n == ls->cap) {
		size_t cap = ls->cap ? ls->cap * 2 : 16;
		uint64_t *v = realloc(ls->addrs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ls->addrs = v;
		ls->cap = cap;
	}
	ls->addrs[ls->n++] = a;
	return 0;
}

/*
 * Several rows at one address are "views": the instruction there belongs
 * to the last of them (as addr2line reports it). A row whose address ends
 * on another line would put the probe on that line, not on this one.
 */
static bool empty_view(Dwarf_Lines *lines, size_t i, size_t n, Dwarf_Addr a, int line)
{
	size_t j, last = i;

	for (j = i + 1; j < n; j++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, j);
		Dwarf_Addr na;
		bool end = false;

		if (!l || dwarf_lineaddr(l, &na) || na != a)
			break;
		dwarf_lineendsequence(l, &end);
		if (end)
			break;
		last = j;
	}
	if (last != i) {
		Dwarf_Line *l = dwarf_onesrcline(lines, last);
		int ln;

		return !l || dwarf_lineno(l, &ln) || ln != line;
	}
	return false;
}

static int scan_cu_lines(Dwarf_Die *cu, const char *want, int line, struct line_scan *ls)
{
	Dwarf_Lines *lines;
	Dwarf_Files *files;
	size_t i, n, nf;
	const char *prev_src = NULL;
	int prev_line = -1;

	if (dwarf_getsrclines(cu, &lines, &n) || !n)
		return 0;
	ls->any_lines = true;
	if (dwarf_getsrcfiles(cu, &files, &nf) == 0) {
		bool hit = false;

		for (i = 0; i < nf && !hit; i++)
			hit = file_matches(dwarf_filesrc(files, i, NULL, NULL), want);
		if (!hit) {
			/* remember near misses for the error, then skip this CU */
			for (i = 0; i < nf; i++) {
				const char *f = dwarf_filesrc(files, i, NULL, NULL);

				if (f)
					near_offer(&ls->near_files, base_name(want), base_name(f));
			}
			return 0;
		}
	}
	for (i = 0; i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		const char *src;
		Dwarf_Addr a;
		bool end = false, stmt = false;
		int ln;

		if (!l || dwarf_lineaddr(l, &a) || dwarf_lineno(l, &ln))
			continue;
		dwarf_lineendsequence(l, &end);
		dwarf_linebeginstatement(l, &stmt);
		src = dwarf_linesrc(l, NULL, NULL);
		if (end || !src) {
			prev_src = NULL;
			prev_line = -1;
			continue;
		}
		if (file_matches(src, want)) {
			if (!ls->file_seen)
				snprintf(ls->matched_file, sizeof(ls->matched_file), "%s", src);
			ls->file_seen = true;
			/* suggest only lines a probe would really land on */
			if (stmt && ln < line && ln > ls->below && !empty_view(lines, i, n, a, ln))
				ls->below = ln;
			if (stmt && ln > line && (!ls->above || ln < ls->above) &&
			    !empty_view(lines, i, n, a, ln))
				ls->above = ln;
			/*
			 * Only where the line starts: further rows of the same
			 * line in a run (column changes, views) would fire a
			 * probe several times for one execution of the line.
			 */
			if (stmt && ln == line &&
			    !(prev_line == line && prev_src && !strcmp(prev_src, src))) {
				int ret = 0;

				if (empty_view(lines, i, n, a, line))
					ls->merged = true;
				else
					ret = addr_push(ls, a);
				if (ret)
					return ret;
			}
		}
		prev_src = src;
		prev_line = ln;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int resolve_line(struct ctx *c, const struct probe_spec *spec, struct probe_target *t)
{
	struct line_scan ls = {0};
	Dwarf_Off off = 0, next;
	size_t hsize, i, k = 0;
	int ret = 0;

	t->is_line = true;
	if (!c->dbg) {
		dwarf_aux__errf(c->err, c->errlen, "'%s' has no DWARF line info; build with -g",
				c->path);
		return -ENODATA;
	}
	while (dwarf_nextcu(c->dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(c->dbg, off + hsize, &cu)) {
			ret = scan_cu_lines(&cu, spec->file, spec->line, &ls);
			if (ret)
				goto out;
		}
		off = next;
	}
	if (!ls.any_lines) {
		dwarf_aux__errf(c->err, c->errlen, "'%s' has no DWARF line info; build with -g",
				c->path);
		ret = -ENODATA;
		goto out;
	}
	if (!ls.file_seen) {
		char sugg[3 * PROBE_NAME_MAX + 64];

		near_format(&ls.near_files, sugg, sizeof(sugg));
		dwarf_aux__errf(c->err, c->errlen, "no source file '%s' in the line info of '%s'%s",
				spec->file, c->path, sugg);
		ret = -ENOENT;
		goto out;
	}
	if (!ls.n) {
		const char *f = base_name(ls.matched_file);

		if (ls.merged)
			dwarf_aux__errf(
				c->err, c->errlen,
				"%s:%d has no instruction of its own (the compiler merged it into "
				"neighbouring lines); nearest lines with code: %s:%d, %s:%d",
				spec->file, spec->line, f, ls.below, f, ls.above);
		else if (ls.below && ls.above)
			dwarf_aux__errf(c->err, c->errlen,
					"no code at %s:%d; nearest lines with code: %s:%d, %s:%d",
					spec->file, spec->line, f, ls.below, f, ls.above);
		else if (ls.below || ls.above)
			dwarf_aux__errf(c->err, c->errlen,
					"no code at %s:%d; nearest line with code: %s:%d",
					spec->file, spec->line, f, ls.below ? ls.below : ls.above);
		else
			dwarf_aux__errf(c->err, c->errlen, "no code at %s:%d", spec->file,
					spec->line);
		ret = -ENOENT;
		goto out;
	}
	qsort(ls.addrs, ls.n, sizeof(*ls.addrs), cmp_u64);
	t->sites = calloc(ls.n, sizeof(*t->sites));
	if (!t->sites) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < ls.n; i++) {
		const char *func, *inl;
		uint64_t foff;

		/* rows outside any loaded segment (discarded sections) cannot be probed */
		if (elf_vaddr_to_offset(c->elf, ls.addrs[i], &foff))
			continue;
		addr_scopes(c->dbg, ls.addrs[i], &func, &inl);
		ret = site_fill(&t->sites[k], ls.addrs[i], foff, func, inl, ls.matched_file,
				spec->line);
		t->n_sites = ++k;
		if (ret)
			goto out;
	}
	if (!k) {
		dwarf_aux__errf(c->err, c->errlen,
				"%s:%d has no address in a loaded segment of '%s'", spec->file,
				spec->line, c->path);
		ret = -ENOENT;
	}
out:
	free(ls.addrs);
	return ret;
}

int probe_resolve(const char *binary_path, const struct probe_spec *spec, struct probe_target *out,
		  char *err, size_t errlen)
{
	struct ctx c;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!binary_path || !spec) {
		dwarf_aux__errf(err, errlen, "no binary or spec");
		return -EINVAL;
	}
	ret = ctx_open(&c, binary_path, err, errlen);
	if (ret)
		return ret;
	out->binary_path = strdup(binary_path);
	if (!out->binary_path) {
		ret = -ENOMEM;
		goto out;
	}
	out->is_go = elf_is_go(c.elf);
	if (spec->kind == PROBE_SPEC_LINE)
		ret = resolve_line(&c, spec, out);
	else if (spec->kind == PROBE_SPEC_FUNC)
		ret = resolve_func(&c, spec, out);
	else
		ret = -EINVAL;
out:
	if (ret == -ENOMEM)
		dwarf_aux__errf(err, errlen, "out of memory resolving probe in '%s'", binary_path);
	if (ret)
		probe_target_free(out);
	ctx_close(&c);
	return ret;
}
