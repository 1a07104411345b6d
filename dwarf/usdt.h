/* SPDX-License-Identifier: GPL-2.0 */
/*
 * usdt.h - USDT probes (SystemTap's <sys/sdt.h>): the ".note.stapsdt"
 * notes of an ELF file, their argument specs ("-4@%eax", "8@-16(%rbp)",
 * "-4@$5") and fetch programs that read those arguments at the probe.
 * Knows nothing of BPF.
 *
 * Addresses are link-time virtual addresses, adjusted for prelinking
 * against ".stapsdt.base" as the notes ask; the file offsets are what a
 * uprobe (the probe) and the kernel's reference counter (the semaphore)
 * attach to.
 */
#ifndef LP_DWARF_USDT_H
#define LP_DWARF_USDT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dwarf/fetch_compile.h"

#define USDT_NAME_MAX 128
#define USDT_MAX_ARGS 12 /* <sys/sdt.h> allows up to 12 */

enum usdt_arg_kind {
	USDT_ARG_CONST = 1, /* $N */
	USDT_ARG_REG,	    /* %reg */
	USDT_ARG_MEM,	    /* N(%reg) or (%reg) */
	USDT_ARG_GLOBAL,    /* sym(%rip), sym+N(%rip): a link-time address */
};

struct usdt_arg {
	enum usdt_arg_kind kind;
	unsigned size;	/* bytes: 1, 2, 4 or 8 */
	bool is_signed; /* a negative size in the spec */
	int reg;	/* DWARF register number (REG, MEM) */
	int64_t val;	/* CONST: the value; MEM: the offset; GLOBAL: the address */
};

struct usdt_note {
	char provider[USDT_NAME_MAX];
	char name[USDT_NAME_MAX];
	uint64_t vaddr;	      /* the probe's nop */
	uint64_t offset;      /* its file offset */
	uint64_t sema_vaddr;  /* 0: no semaphore */
	uint64_t sema_offset; /* its file offset (a writable PT_LOAD's) */
	char args_text[256];  /* as written in the note */
};

/* What a --trace usdt: spec asks for. */
struct usdt_spec {
	char binary[4096]; /* a path or a library name; "" for the main executable */
	char provider[USDT_NAME_MAX];
	char name[USDT_NAME_MAX];     /* the probe, or the entry probe of a pair */
	char ret_name[USDT_NAME_MAX]; /* the return probe of a pair, "" for none */
	int n_sel;		      /* arguments asked for; 0: every one (at most 6) */
	bool no_values;		      /* "()": none */
	int sel[6];		      /* their indices */
	bool sel_str[6];	      /* read as a C string */
};

/**
 * usdt_spec_parse - parse "usdt:[BIN:]PROVIDER:NAME[,RETURN][(argN[:str], ...)]";
 * "()" asks for no values
 * @text: the spec, with its "usdt:" prefix
 * @out: filled on success
 * @err: message on failure
 * @errlen: size of @err
 *
 * Return: 0, or -EINVAL with a message in @err.
 */
int usdt_spec_parse(const char *text, struct usdt_spec *out, char *err, size_t errlen);

/**
 * usdt_notes_read - every USDT note of an ELF file
 * @path: the file
 * @out: malloc'ed array, owned by the caller (free())
 * @n_out: entries in @out (0 when the file has notes section but none)
 * @err: message on failure
 * @errlen: size of @err
 *
 * Return: 0; -ENODATA if the file has no ".note.stapsdt", -EINVAL for a
 * malformed note, -ENOMEM, or -errno from opening the file.
 */
int usdt_notes_read(const char *path, struct usdt_note **out, size_t *n_out, char *err,
		    size_t errlen);

/**
 * usdt_args_parse - split a note's argument specs ("8@%rdi -4@$5")
 * @text: usdt_note.args_text
 * @args: at least USDT_MAX_ARGS entries
 * @err: message on failure (names the argument)
 * @errlen: size of @err
 *
 * Supported: N@$imm, N@%reg, N@(%reg), N@off(%reg), N@sym(%rip) and
 * N@sym+off(%rip) (@sym is left to the caller: usdt_arg.val is 0 and the
 * symbol name goes in @syms[i] when @syms is not NULL), with N in
 * {±1, ±2, ±4, ±8}. Indexed forms ("(%rax,%rdx,8)") are refused.
 *
 * Return: the number of arguments (>= 0), or -EOPNOTSUPP / -EINVAL with a
 * message in @err.
 */
int usdt_args_parse(const char *text, struct usdt_arg *args, char syms[][USDT_NAME_MAX], char *err,
		    size_t errlen);

/**
 * usdt_arg_fetch - the fetch program and type of one argument
 * @a: from usdt_args_parse() (GLOBAL: val is the symbol's link-time address)
 * @as_string: the argument is a char *: read the string it points to
 * @prog: filled (caller's storage)
 * @type: filled (nothing to free: no enumerators)
 */
void usdt_arg_fetch(const struct usdt_arg *a, bool as_string, struct fetch_prog *prog,
		    struct fetch_type *type);

/**
 * usdt_site_is_nop - whether the probe's address holds a nop, so it is
 * an instruction boundary that the compiler put there for the probe
 * @path: the file
 * @offset: usdt_note.offset
 *
 * Return: 1 (a nop: 0x90, or the 0f 1f / 66 90 forms, decoded whole), 0
 * (anything else), or a negative errno from reading the file.
 */
int usdt_site_is_nop(const char *path, uint64_t offset);

#endif /* LP_DWARF_USDT_H */
