// SPDX-License-Identifier: GPL-2.0
/*
 * probe_check.c - the last step of resolving a spec: every address that
 * would get a uprobe is proven (probe_prove.c), or the spec is refused
 * with a message that names the address and the function. Nothing here
 * guesses: an address that cannot be proven is refused like a wrong one.
 */
#include <errno.h>
#include <stdio.h>

#include "dwarf/probe_internal.h"
#include "dwarf/probe_prove.h"
#include "user/util/util.h"

static int prover(struct ctx *c)
{
	if (c->prover)
		return 0;
	return probe_prover__new(c->elf, c->dbg, &c->prover);
}

void probe_check_end(struct ctx *c)
{
	probe_prover__free(c->prover);
	c->prover = NULL;
}

int probe_check_site(struct ctx *c, const char *what, uint64_t vaddr, const char *func)
{
	struct prove_result r;
	unsigned long long a = vaddr;
	int ret = prover(c);

	if (ret)
		return ret;
	func = func ? func : "?";
	ret = probe_prove_boundary(c->prover, vaddr, &r);
	switch (ret) {
	case 0:
		return 0;
	case -EILSEQ:
		lp_errf(c->err, c->errlen,
			"refusing '%s': 0x%llx in '%s' is not an instruction boundary (it is "
			"inside "
			"the instruction at 0x%llx, decoding from the %s start 0x%llx)",
			what, a, func, (unsigned long long)r.insn_start,
			probe_prove_anchor_name(r.anchor_kind), (unsigned long long)r.anchor);
		break;
	case -ENOEXEC:
		lp_errf(c->err, c->errlen,
			"refusing '%s': cannot prove that 0x%llx in '%s' is an instruction "
			"boundary "
			"(the instruction at 0x%llx could not be decoded)",
			what, a, func, (unsigned long long)r.insn_start);
		break;
	case -ENOENT:
		lp_errf(c->err, c->errlen,
			"refusing '%s': cannot prove that 0x%llx in '%s' is an instruction "
			"boundary "
			"(no .eh_frame, DWARF or symbol start covers it)",
			what, a, func);
		break;
	default:
		lp_errf(c->err, c->errlen,
			"refusing '%s': the code at 0x%llx in '%s' is not in the file '%s'", what,
			a, func, c->path);
		break;
	}
	return ret;
}

int probe_check_entry(struct ctx *c, const char *what, uint64_t vaddr, const char *func,
		      bool for_return)
{
	struct prove_result r;
	unsigned long long a = vaddr;
	int ret = prover(c);

	if (ret)
		return ret;
	ret = probe_prove_entry(c->prover, vaddr, &r);
	if (ret == -EILSEQ && r.func_start == vaddr && !for_return)
		ret = 0; /* a cold part's FDE: a fine base for an offset */
	if (!ret)
		return probe_check_site(c, what, vaddr, func);
	if (ret == -EILSEQ && r.func_start != vaddr)
		lp_errf(c->err, c->errlen,
			"refusing '%s': the symbol table puts '%s' at 0x%llx, but %s says the "
			"function there starts at 0x%llx (a corrupt or stale symbol table?)",
			what, func, a, probe_prove_anchor_name(r.anchor_kind),
			(unsigned long long)r.func_start);
	else if (ret == -EILSEQ)
		lp_errf(c->err, c->errlen,
			"refusing '%s': 0x%llx ('%s') is not where a call enters ([rsp] is not the "
			"return address there), so it cannot take a return probe; probe an offset "
			"or a line",
			what, a, func);
	else if (ret == -ENOENT)
		lp_errf(c->err, c->errlen,
			"refusing '%s': cannot prove that '%s' starts at 0x%llx (no .eh_frame, "
			"DWARF or symbol start there)",
			what, func, a);
	else
		lp_errf(c->err, c->errlen, "refusing '%s': '%s' at 0x%llx is not in the file '%s'",
			what, func, a, c->path);
	return ret;
}
