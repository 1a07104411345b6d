/* SPDX-License-Identifier: GPL-2.0 */
/*
 * probe_internal.h - what the probe_*.c and x86_decode.c files share; not an API.
 */
#ifndef LP_DWARF_PROBE_INTERNAL_H
#define LP_DWARF_PROBE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <gelf.h>
#include <elfutils/libdw.h>

#include "dwarf/debuginfo.h"
#include "dwarf/probe_resolve.h"

#define MAX_DIE_DEPTH	  64	     /* nesting we follow in hostile DWARF */
#define MAX_INLINE_REPORT 4	     /* inlined call sites named in an error */
#define MAX_DECODE_BYTES  (16 << 20) /* a function larger than this is not code */

struct fsym {
	const char *name; /* in the ELF string table: valid while the Elf is open */
	uint64_t value;
	uint64_t size;
};

struct symtab {
	struct fsym *syms;
	size_t n, cap;
};

struct probe_prover;

struct ctx {
	const char *path;
	int fd;
	Elf *elf;
	Dwarf *dbg;
	struct debuginfo_file dbgfile; /* the separate debug file dbg was read from */
	struct probe_prover *prover;   /* made on first use by probe_check_*() */
	char *err;
	size_t errlen;
};

#define NEAR_N 3 /* closest names offered when nothing matches */

struct near {
	char name[NEAR_N][PROBE_NAME_MAX];
	unsigned dist[NEAR_N];
	size_t n;
};

const char *probe_base_name(const char *path);
void probe_addr_scopes(Dwarf *dbg, Dwarf_Addr addr, const char **func, const char **inl);
void probe_near_offer(struct near *nr, const char *want, const char *name);
void probe_near_format(const struct near *nr, char *buf, size_t len);
int probe_resolve_line(struct ctx *c, const struct probe_spec *spec, struct probe_target *t);
int probe_site_fill(struct probe_site *s, uint64_t vaddr, uint64_t off, const char *func,
		    const char *inl, const char *file, int line);
int probe_symtab_load(Elf *elf, struct symtab *t);

/*
 * probe_check.c: refuse what is not proven. @what is the spec as the user
 * wrote it; @func names the function in the message. 0, or a negative
 * errno with the message in c->err.
 */
int probe_check_site(struct ctx *c, const char *what, uint64_t vaddr, const char *func);
int probe_check_entry(struct ctx *c, const char *what, uint64_t vaddr, const char *func,
		      bool for_return);
void probe_check_end(struct ctx *c);

#endif
