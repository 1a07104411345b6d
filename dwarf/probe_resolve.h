/* SPDX-License-Identifier: GPL-2.0 */
/*
 * probe_resolve.h - probe specs ("FUNC", "BIN:FUNC", "FILE:LINE",
 * "FUNC+OFF", "FUNC(arg, req->kind)") to probe addresses, with
 * libelf/libdw. Knows nothing of BPF.
 *
 * All addresses are link-time virtual addresses of the ELF file (what
 * nm and the DWARF tables print); file_offset is what a uprobe attaches
 * to. Errors are negative errno values plus a message for the user in
 * the caller's err buffer (lowercase, no final full stop).
 */
#ifndef LP_DWARF_PROBE_RESOLVE_H
#define LP_DWARF_PROBE_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

#define PROBE_NAME_MAX	256  /* function, file or field name */
#define PROBE_PATH_MAX	4096 /* binary path in a spec */
#define PROBE_EXPR_MAX	8    /* ->field / .field / [N] steps in one expression */
#define PROBE_MAX_ARGS	6    /* expressions in FUNC(a, b, ...): LP_MAX_VALUES */
#define PROBE_MAX_SITES 1024 /* addresses one line spec may expand to */

enum probe_step_kind {
	PROBE_STEP_ARROW = 1, /* ->field: dereference a pointer to struct, then member */
	PROBE_STEP_DOT,	      /* .field: member of a struct held in memory */
	PROBE_STEP_INDEX,     /* [N]: element N of an array or of what a pointer points to */
};

struct probe_step {
	enum probe_step_kind kind;
	char field[PROBE_NAME_MAX]; /* ARROW, DOT */
	int64_t index;		    /* INDEX */
};

/*
 * A value expression: [*...]base{->f|.f|[N]}. Leading '*'s apply to the
 * whole chain, as in C ("*req->name" is the first char of req->name).
 * "ret" is the return value of the probed function.
 */
struct probe_expr {
	char text[PROBE_NAME_MAX]; /* as written, for labels */
	char base[PROBE_NAME_MAX]; /* variable name */
	bool is_ret;
	int n_deref; /* leading '*' */
	size_t n_steps;
	struct probe_step steps[PROBE_EXPR_MAX];
};

enum probe_spec_kind {
	PROBE_SPEC_FUNC = 1, /* FUNC, BIN:FUNC, FUNC+OFF */
	PROBE_SPEC_LINE,     /* FILE:LINE */
};

struct probe_spec {
	enum probe_spec_kind kind;
	char binary[PROBE_PATH_MAX]; /* "" when not given */
	char func[PROBE_NAME_MAX];   /* FUNC */
	uint64_t offset;	     /* FUNC+OFF, 0 otherwise */
	bool has_offset;
	char file[PROBE_PATH_MAX]; /* FILE:LINE */
	int line;
	size_t n_args;
	struct probe_expr args[PROBE_MAX_ARGS];
};

/* One address to attach a probe to. Strings are owned by the target. */
struct probe_site {
	uint64_t vaddr;
	uint64_t file_offset;
	bool is_return_insn; /* a ret instruction (return sites of Go functions) */
	char *func;	     /* out-of-line function containing vaddr, NULL if unknown */
	char *inlined_from;  /* innermost inlined function at vaddr, NULL if none */
	char *file;	     /* source file of the line, NULL if unknown */
	int line;
};

/* Instructions of a source line: [lo, hi) in the file's virtual addresses. */
struct probe_range {
	uint64_t lo, hi;
};

#define PROBE_MAX_RANGES 256

/* A resolved spec. Everything is owned by it; free with probe_target_free(). */
struct probe_target {
	char *binary_path;
	char *func;	       /* resolved function name, NULL for a line spec */
	bool is_line;	       /* sites[] are line addresses */
	bool is_offset;	       /* FUNC+OFF: sites[0] takes a hit probe, never a return probe */
	bool is_go;	       /* Go binary: use ret_sites[], never uretprobes */
	bool is_program;       /* a program's own file (elf_is_program()), not a library */
	uint64_t entry_vaddr;  /* function entry (+OFF), 0 for a line spec */
	uint64_t entry_offset; /* file offset of entry_vaddr */
	uint64_t body_vaddr;   /* after the prologue (== entry_vaddr when unknown) */
	uint64_t body_offset;
	uint64_t func_size; /* symbol size */
	size_t n_sites;	    /* entry (func spec: one site) or line addresses */
	struct probe_site *sites;
	size_t n_ret_sites; /* ret instructions of the function, func specs only */
	struct probe_site *ret_sites;
	bool ret_sites_valid; /* false when the function could not be decoded */
	/* line specs: every instruction of the line (for delays triggered by
	 * samples, which land anywhere in it), sorted by the line table */
	size_t n_ranges;
	struct probe_range *ranges;
};

/**
 * probe_spec_parse - parse a probe spec
 * @text: "FUNC", "BINARY:FUNC", "FILE:LINE", "BINARY:FILE:LINE", "FUNC+OFF",
 *        "BINARY:FUNC+OFF", each optionally followed by "(expr, expr, ...)"
 * @out: filled on success (caller-owned storage, nothing to free)
 * @err: message on failure
 * @errlen: size of @err
 *
 * "X:N" is a line spec when X contains '.' or '/' and N is all digits
 * (a ':' in X then separates the binary from the file); otherwise the
 * part before the last ':' is a binary.
 *
 * Return: 0, or -EINVAL with a message in @err.
 */
int probe_spec_parse(const char *text, struct probe_spec *out, char *err, size_t errlen);

/**
 * probe_expr_parse - parse one value expression (also used for --by)
 * @text: "name", "name->f", "name.f", "*name", "name[N]", chains, "ret"
 * @out: filled on success
 * @err: message on failure
 * @errlen: size of @err
 *
 * Return: 0, or -EINVAL with a message in @err.
 */
int probe_expr_parse(const char *text, struct probe_expr *out, char *err, size_t errlen);

/**
 * probe_spec_binary_matches - does a spec's BINARY name a mapped file
 * @spec_binary: as written in the spec: a path or a basename ("libc.so.6")
 * @mapped_path: a path from /proc/PID/maps
 *
 * A spec with a '/' must equal the path; a bare name matches the
 * basename exactly, or as a prefix followed by '.' or '-' ("libc" matches
 * "libc.so.6" and "libc-2.36.so").
 */
bool probe_spec_binary_matches(const char *spec_binary, const char *mapped_path);

/**
 * probe_resolve - resolve a parsed spec against one ELF file
 * @binary_path: the file to read (the spec's own binary is ignored here)
 * @spec: from probe_spec_parse()
 * @out: zeroed and filled on success; free with probe_target_free()
 * @err: message on failure
 * @errlen: size of @err
 *
 * Functions come from .symtab/.dynsym (static ones included); DWARF, when
 * present, explains functions that exist only inlined and gives the end
 * of the prologue. Lines come from every CU's line table, with every
 * address the compiler emitted for the line.
 *
 * Return: 0; -ENOENT (no such function, file or line: the message gives
 * the closest names), -ENODATA (no DWARF for a line spec), -EINVAL
 * (ambiguous, inlined only, offset outside the function), -ENOMEM, or
 * -errno from opening the file. @out is zeroed on failure.
 */
int probe_resolve(const char *binary_path, const struct probe_spec *spec, struct probe_target *out,
		  char *err, size_t errlen);

/**
 * probe_target_free - release what probe_resolve() allocated
 * @t: the target; zeroed afterwards. NULL is fine.
 */
void probe_target_free(struct probe_target *t);

/**
 * probe_return_sites - list the ret instructions of a function
 * @elf: the open file
 * @vaddr: function start (link-time)
 * @size: function size in bytes
 * @out: malloc'ed array of instruction addresses, owned by the caller
 * @n_out: entries in @out
 *
 * Decodes instruction by instruction from @vaddr (so a 0xc3 byte inside
 * another instruction does not count) and collects C3, C2 iw and their
 * prefixed forms (f3 c3 "repz ret", f2 c3 "bnd ret").
 *
 * Return: 0; -EILSEQ if an instruction could not be decoded (the list
 * would be incomplete), -ENOENT if the bytes are not in the file, -ENOMEM.
 */
int probe_return_sites(Elf *elf, uint64_t vaddr, uint64_t size, uint64_t **out, size_t *n_out);

/**
 * x86_insn_length - length of one x86-64 instruction
 * @p: instruction bytes
 * @avail: bytes readable at @p
 *
 * Only the length is decoded: prefixes, REX, VEX/EVEX/XOP, the one-byte,
 * 0F, 0F38 and 0F3A maps, ModRM/SIB/displacement and immediates.
 *
 * Return: length in bytes (1..15), or -1 for an invalid or truncated
 * instruction.
 */
int x86_insn_length(const uint8_t *p, size_t avail);

/* What x86_insn_info() tells of one instruction's control flow. */
enum x86_flow {
	X86_FLOW_NONE = 0, /* falls through */
	X86_FLOW_JCC,	   /* conditional jump, rel8/rel32 (and loop/jrcxz) */
	X86_FLOW_JMP,	   /* unconditional relative jump */
	X86_FLOW_JMP_IND,  /* indirect jump (switch tables, tail calls through a pointer) */
	X86_FLOW_CALL,	   /* relative call */
	X86_FLOW_CALL_IND, /* indirect call */
	X86_FLOW_RET,
};

struct x86_insn {
	int len;
	enum x86_flow flow;
	int64_t rel; /* for relative jumps and calls: target = address + len + rel */
};

/**
 * x86_insn_info - length and control flow of one x86-64 instruction
 * @p: instruction bytes
 * @avail: bytes readable at @p
 * @out: filled on success
 *
 * Return: the length (1..15), or -1 as for x86_insn_length().
 */
int x86_insn_info(const uint8_t *p, size_t avail, struct x86_insn *out);

/**
 * elf_is_go - is this a Go binary
 * @elf: the open file
 *
 * Looks for a .go.buildinfo section, a .note.go.buildid section or a
 * runtime.main symbol.
 */
bool elf_is_go(Elf *elf);

/**
 * elf_is_program - is this file a program's own, which no dlopen() maps
 * @elf: the open file
 *
 * True for a fixed-address executable (ET_EXEC) and a position-independent
 * one (ET_DYN with DF_1_PIE in DT_FLAGS_1), which glibc refuses to
 * dlopen(): its code stays where the exec put it until the process execs
 * again. A shared library may be unloaded and another mapped in its place.
 */
bool elf_is_program(Elf *elf);

/**
 * elf_uretprobe_unsafe - may code of this file move a thread's stack out
 * from under a pending return probe
 * @elf: the open file
 *
 * True when it needs a C++ runtime (DT_NEEDED libstdc++ or libc++), or
 * names, defined or imported, what unwinds a stack (__cxa_throw,
 * __gxx_personality_v0, _Unwind_RaiseException: C++ exceptions, Rust
 * panics) or switches it (swapcontext, setcontext, jump_fcontext,
 * ontop_fcontext, coctx_swap, coroutine_transfer: coroutines, Ruby's
 * fibers). A return probe puts the
 * [uprobes] trampoline where the call's return address was: an unwinder
 * finds no unwind table there and the process ends in std::terminate();
 * after a switch to a stack above, the kernel drops the probe's record of
 * the call as dead, and its return kills the process with SIGILL (both
 * reproduced on this kernel).
 */
bool elf_uretprobe_unsafe(Elf *elf);

/** elf_path_uretprobe_unsafe - elf_uretprobe_unsafe() of the file at
 * @path; false when it cannot be read */
bool elf_path_uretprobe_unsafe(const char *path);

/**
 * lib_is_cxx_runtime - does @path (or a bare file name) name a C++
 * runtime library (libstdc++.so*, libc++.so*)
 */
bool lib_is_cxx_runtime(const char *path);

/**
 * elf_vaddr_to_offset - file offset of a link-time address
 * @elf: the open file
 * @vaddr: address inside a PT_LOAD segment's file image
 * @offset: result
 *
 * Return: 0, or -ENOENT if no PT_LOAD segment holds @vaddr in its file
 * bytes.
 */
int elf_vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *offset);

#endif /* LP_DWARF_PROBE_RESOLVE_H */
