// SPDX-License-Identifier: GPL-2.0
/*
 * usdt.c - read ".note.stapsdt" and compile USDT argument specs into
 * fetch programs.
 *
 * A note (type 3, owner "stapsdt") holds three addresses (the probe's
 * nop, the ".stapsdt.base" the file was linked with, the semaphore) and
 * three strings: provider, name, argument specs. Each spec is
 * "SIZE@OPERAND" in GNU assembler syntax: what the compiler chose to name
 * the value at the nop.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gelf.h>
#include "dwarf/elf_section.h"
#include "dwarf/probe_resolve.h"
#include "dwarf/usdt.h"
#include "user/util/util.h"

#define NT_STAPSDT 3

/* ---- notes --------------------------------------------------------- */

static const char *note_str(const char *p, const char *end)
{
	const char *z = memchr(p, 0, end - p);

	return z ? z + 1 : NULL;
}

/*
 * One note's descriptor into @n. @base is where ".stapsdt.base" is now (0:
 * no such section): each note records where it was when the note was
 * written, and if prelink moved the file since, the probe moved as much.
 */
static int note_parse(Elf *elf, const char *desc, size_t len, uint64_t base, struct usdt_note *n)
{
	const char *end = desc + len, *prov = desc + 24, *name, *args;
	uint64_t a[3];

	if (len < 24 + 3)
		return -EINVAL;
	memcpy(a, desc, sizeof(a));
	name = note_str(prov, end);
	args = name ? note_str(name, end) : NULL;
	if (!args || !note_str(args, end))
		return -EINVAL;
	memset(n, 0, sizeof(*n));
	snprintf(n->provider, sizeof(n->provider), "%s", prov);
	snprintf(n->name, sizeof(n->name), "%s", name);
	snprintf(n->args_text, sizeof(n->args_text), "%s", args);
	n->vaddr = a[0];
	if (base && a[1])
		n->vaddr += base - a[1];
	n->sema_vaddr = a[2];
	if (elf_vaddr_to_offset(elf, n->vaddr, &n->offset))
		return -EINVAL;
	if (n->sema_vaddr && elf_vaddr_to_offset(elf, n->sema_vaddr, &n->sema_offset))
		return -EINVAL;
	return 0;
}

static int notes_of(Elf *elf, Elf_Scn *scn, uint64_t base, struct usdt_note **out, size_t *n_out)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t off = 0, name_off, desc_off, cap = 0;
	GElf_Nhdr nh;

	while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		struct usdt_note *v;

		if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 ||
		    memcmp((char *)d->d_buf + name_off, "stapsdt", 8))
			continue;
		if (*n_out == cap) {
			cap = cap ? cap * 2 : 64;
			v = realloc(*out, cap * sizeof(*v));
			if (!v)
				return -ENOMEM;
			*out = v;
		}
		if (note_parse(elf, (char *)d->d_buf + desc_off, nh.n_descsz, base,
			       &(*out)[*n_out]))
			return -EINVAL;
		(*n_out)++;
	}
	return 0;
}

int usdt_notes_read(const char *path, struct usdt_note **out, size_t *n_out, char *err,
		    size_t errlen)
{
	int fd, r = -ENODATA;
	uint64_t base = 0;
	GElf_Shdr sh, bsh;
	Elf_Scn *scn;
	Elf *elf;

	*out = NULL;
	*n_out = 0;
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		lp_errf(err, errlen, "cannot open '%s': %s", path, strerror(-r));
		return r;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		lp_errf(err, errlen, "'%s' is not an ELF file", path);
		r = -EINVAL;
		goto out;
	}
	scn = elf_section_by_name(elf, ".note.stapsdt", SHT_NOTE, &sh);
	if (!scn) {
		lp_errf(err, errlen, "'%s' has no USDT probes (no .note.stapsdt section)", path);
		goto out;
	}
	if (elf_section_by_name(elf, ".stapsdt.base", ELF_SECTION_ANY_TYPE, &bsh))
		base = bsh.sh_addr;
	r = notes_of(elf, scn, base, out, n_out);
	if (r) {
		lp_errf(err, errlen, "'%s': %s", path,
			r == -ENOMEM ? "out of memory" : "malformed .note.stapsdt");
		free(*out);
		*out = NULL;
		*n_out = 0;
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return r;
}

/* ---- argument specs ------------------------------------------------ */

/* x86-64 register names by DWARF number (16 = rip), every width. */
static const char *const reg_names[17][4] = {
	{"rax", "eax", "ax", "al"},	 {"rdx", "edx", "dx", "dl"},
	{"rcx", "ecx", "cx", "cl"},	 {"rbx", "ebx", "bx", "bl"},
	{"rsi", "esi", "si", "sil"},	 {"rdi", "edi", "di", "dil"},
	{"rbp", "ebp", "bp", "bpl"},	 {"rsp", "esp", "sp", "spl"},
	{"r8", "r8d", "r8w", "r8b"},	 {"r9", "r9d", "r9w", "r9b"},
	{"r10", "r10d", "r10w", "r10b"}, {"r11", "r11d", "r11w", "r11b"},
	{"r12", "r12d", "r12w", "r12b"}, {"r13", "r13d", "r13w", "r13b"},
	{"r14", "r14d", "r14w", "r14b"}, {"r15", "r15d", "r15w", "r15b"},
	{"rip", "eip", "ip", "ip"},
};

/* "%name" at @s: the DWARF number, and the chars used in *@len; -1 if unknown. */
static int parse_reg(const char *s, size_t *len)
{
	size_t n = 0;

	if (*s != '%')
		return -1;
	s++;
	while (isalnum((unsigned char)s[n]))
		n++;
	for (int r = 0; r < 17; r++)
		for (int w = 0; w < 4; w++)
			if (strlen(reg_names[r][w]) == n && !strncmp(s, reg_names[r][w], n)) {
				*len = n + 1;
				return r;
			}
	return -1;
}

/* The operand after "N@", into @a (and the symbol of a %rip form into @sym). */
static int parse_operand(const char *s, struct usdt_arg *a, char *sym)
{
	char *end;
	size_t n;

	if (*s == '$') {
		a->kind = USDT_ARG_CONST;
		a->val = strtoll(s + 1, &end, 0);
		return end == s + 1 || *end ? -EINVAL : 0;
	}
	if (*s == '%') {
		a->kind = USDT_ARG_REG;
		a->reg = parse_reg(s, &n);
		return a->reg < 0 || s[n] ? -EINVAL : 0;
	}
	/* [sym][±off](%reg) */
	n = 0;
	while (isalnum((unsigned char)s[n]) || s[n] == '_' || s[n] == '.')
		n++;
	if (n && !isdigit((unsigned char)s[0]) && s[0] != '-') {
		if (n >= USDT_NAME_MAX)
			return -EINVAL;
		memcpy(sym, s, n);
		sym[n] = 0;
		s += n;
	}
	a->val = *s == '(' ? 0 : strtoll(s, &end, 0);
	if (*s != '(')
		s = end;
	if (*s != '(')
		return -EINVAL;
	a->reg = parse_reg(s + 1, &n);
	if (a->reg < 0)
		return -EINVAL;
	if (s[1 + n] == ',')
		return -EOPNOTSUPP; /* base + index * scale */
	if (s[1 + n] != ')' || s[2 + n])
		return -EINVAL;
	if (sym[0] && a->reg != 16)
		return -EOPNOTSUPP; /* a symbol off another register than rip */
	a->kind = sym[0] ? USDT_ARG_GLOBAL : USDT_ARG_MEM;
	return 0;
}

int usdt_args_parse(const char *text, struct usdt_arg *args, char syms[][USDT_NAME_MAX], char *err,
		    size_t errlen)
{
	const char *s = text;
	int n = 0;

	while (*s) {
		char tok[256], sym[USDT_NAME_MAX] = "", *at, *end;
		size_t len = 0;
		long size;
		int r;

		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		while (s[len] && !isspace((unsigned char)s[len]))
			len++;
		if (len >= sizeof(tok) || n == USDT_MAX_ARGS) {
			lp_errf(err, errlen, "bad USDT arguments '%s'", text);
			return -EINVAL;
		}
		memcpy(tok, s, len);
		tok[len] = 0;
		s += len;
		memset(&args[n], 0, sizeof(args[n]));
		at = strchr(tok, '@');
		size = at ? strtol(tok, &end, 10) : 0;
		if (!at || end != at || !size || labs(size) > 8 ||
		    (labs(size) & (labs(size) - 1))) {
			lp_errf(err, errlen, "bad USDT argument '%s' (expected SIZE@OPERAND)", tok);
			return -EINVAL;
		}
		args[n].size = (unsigned)labs(size);
		args[n].is_signed = size < 0;
		r = parse_operand(at + 1, &args[n], sym);
		if (r) {
			lp_errf(err, errlen, "%s USDT argument '%s'",
				r == -EOPNOTSUPP ? "unsupported" : "bad", tok);
			return r;
		}
		if (syms)
			snprintf(syms[n], USDT_NAME_MAX, "%s", sym);
		n++;
	}
	return n;
}

void usdt_arg_fetch(const struct usdt_arg *a, bool as_string, struct fetch_prog *prog,
		    struct fetch_type *type)
{
	struct fetch_op *op = prog->ops;

	memset(prog, 0, sizeof(*prog));
	memset(type, 0, sizeof(*type));
	switch (a->kind) {
	case USDT_ARG_CONST:
		*op++ = (struct fetch_op){.op = FETCH_OP_ADD, .arg = a->val};
		break;
	case USDT_ARG_REG:
		/* acc is the whole register: the daemon truncates to size */
		*op++ = (struct fetch_op){.op = FETCH_OP_REG, .reg = (uint16_t)a->reg};
		break;
	case USDT_ARG_MEM:
		*op++ = (struct fetch_op){.op = FETCH_OP_REG, .reg = (uint16_t)a->reg};
		*op++ = (struct fetch_op){.op = FETCH_OP_ADD, .arg = a->val};
		*op++ = (struct fetch_op){.op = FETCH_OP_LOAD, .size = (uint8_t)a->size};
		break;
	case USDT_ARG_GLOBAL:
		*op++ = (struct fetch_op){.op = FETCH_OP_ADDR, .arg = a->val};
		*op++ = (struct fetch_op){.op = FETCH_OP_LOAD, .size = (uint8_t)a->size};
		break;
	}
	if (as_string) {
		/* the value is the pointer: read what it points to */
		if (op[-1].op == FETCH_OP_LOAD)
			op[-1] = (struct fetch_op){.op = FETCH_OP_DEREF};
		*op++ = (struct fetch_op){.op = FETCH_OP_STR};
		type->kind = FETCH_STRING;
		type->size = FETCH_STR_LEN;
		snprintf(type->name, sizeof(type->name), "char *");
	} else {
		type->kind = a->is_signed ? FETCH_INT : FETCH_UINT;
		type->size = a->size;
		type->is_signed = a->is_signed;
		snprintf(type->name, sizeof(type->name), "%sint%u_t", a->is_signed ? "" : "u",
			 a->size * 8);
	}
	*op++ = (struct fetch_op){.op = FETCH_OP_END};
	prog->n_ops = (uint32_t)(op - prog->ops);
	prog->is_signed = a->is_signed && !as_string;
}

int usdt_site_is_nop(const char *path, uint64_t offset)
{
	uint8_t b[16];
	ssize_t got;
	int fd, len;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	got = pread(fd, b, sizeof(b), (off_t)offset);
	close(fd);
	if (got <= 0)
		return got < 0 ? -errno : -ENOENT;
	len = x86_insn_length(b, (size_t)got);
	if (len <= 0)
		return 0;
	/* nop; or the long forms: [66..] 0f 1f /0, 66 90 */
	if (b[0] == 0x90 && len == 1)
		return 1;
	for (int i = 0; i < len - 1; i++) {
		if (b[i] == 0x66)
			continue;
		return (b[i] == 0x0f && b[i + 1] == 0x1f) || (b[i] == 0x90 && i == len - 1);
	}
	return b[len - 1] == 0x90;
}

/* ---- specs --------------------------------------------------------- */

static int parse_selection(char *list, struct usdt_spec *out, const char *text, char *err,
			   size_t errlen)
{
	if (!*list) {
		out->no_values = true; /* "()": counts (and latency) alone */
		return 0;
	}
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		char *end;
		long i;

		while (isspace((unsigned char)*tok))
			tok++;
		if (strncmp(tok, "arg", 3) || !isdigit((unsigned char)tok[3]))
			goto bad;
		i = strtol(tok + 3, &end, 10);
		if (i >= USDT_MAX_ARGS || out->n_sel == 6)
			goto bad;
		out->sel_str[out->n_sel] = !strncmp(end, ":str", 4);
		if (out->sel_str[out->n_sel])
			end += 4;
		while (isspace((unsigned char)*end))
			end++;
		if (*end)
			goto bad;
		out->sel[out->n_sel++] = (int)i;
	}
	if (out->n_sel)
		return 0;
bad:
	lp_errf(err, errlen,
		"bad values in '%s': expected up to 6 of arg0..arg11, each optionally ':str'",
		text);
	return -EINVAL;
}

int usdt_spec_parse(const char *text, struct usdt_spec *out, char *err, size_t errlen)
{
	char buf[4600], *paren, *name, *prov, *comma;

	memset(out, 0, sizeof(*out));
	if (strncmp(text, "usdt:", 5) || strlen(text + 5) >= sizeof(buf))
		goto bad;
	snprintf(buf, sizeof(buf), "%s", text + 5);
	paren = strchr(buf, '(');
	if (paren) {
		char *close = strrchr(paren, ')');

		if (!close || close[1])
			goto bad;
		*close = 0;
		*paren = 0;
		if (parse_selection(paren + 1, out, text, err, errlen))
			return -EINVAL;
	}
	name = strrchr(buf, ':');
	if (!name)
		goto bad;
	*name++ = 0;
	prov = strrchr(buf, ':');
	if (prov) {
		*prov++ = 0;
		if (strlen(buf) >= sizeof(out->binary))
			goto bad;
		memcpy(out->binary, buf, strlen(buf) + 1);
	} else {
		prov = buf;
	}
	comma = strchr(name, ',');
	if (comma) {
		*comma++ = 0;
		snprintf(out->ret_name, sizeof(out->ret_name), "%s", comma);
	}
	if (!*prov || !*name || (comma && !*comma) || strlen(prov) >= USDT_NAME_MAX ||
	    strlen(name) >= USDT_NAME_MAX || strlen(out->ret_name) >= USDT_NAME_MAX)
		goto bad;
	snprintf(out->provider, sizeof(out->provider), "%s", prov);
	snprintf(out->name, sizeof(out->name), "%s", name);
	return 0;
bad:
	lp_errf(err, errlen,
		"bad USDT spec '%s': expected usdt:[BIN:]PROVIDER:NAME[,RETURN_NAME][(argN, ...)]",
		text);
	return -EINVAL;
}
