/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fetch.bpf.h - the interpreter of value-fetch programs (struct
 * lp_fetch_prog). User space compiles DWARF location expressions into
 * these few ops; one generic program runs them in a bounded loop, so no
 * compiler is needed at run time.
 */
#ifndef LP_FETCH_BPF_H
#define LP_FETCH_BPF_H

/* DWARF x86-64 register number -> pt_regs field. */
static __always_inline __u64 dwarf_reg(struct pt_regs *regs, __u32 reg)
{
	switch (reg) {
	case 0: return regs->ax;
	case 1: return regs->dx;
	case 2: return regs->cx;
	case 3: return regs->bx;
	case 4: return regs->si;
	case 5: return regs->di;
	case 6: return regs->bp;
	case 7: return regs->sp;
	case 8: return regs->r8;
	case 9: return regs->r9;
	case 10: return regs->r10;
	case 11: return regs->r11;
	case 12: return regs->r12;
	case 13: return regs->r13;
	case 14: return regs->r14;
	case 15: return regs->r15;
	case 16: return regs->ip;
	default: return 0;
	}
}

/*
 * Run fetch program @idx against @regs into @out. Returns 0, or -1 when
 * a user-memory read faulted (the value is then reported as unreadable).
 */
static __noinline int run_fetch(struct pt_regs *regs, __u32 idx, __u64 bias, struct lp_value *out)
{
	struct lp_fetch_prog *p = bpf_map_lookup_elem(&fetch, &idx);
	__u64 acc = 0, tmp;
	__u32 i;

	if (!p || !out)
		return -1;
	out->u64 = 0;
	for (i = 0; i < LP_MAX_FETCH_OPS; i++) {
		struct lp_fetch_op *op = &p->ops[i];

		if (i >= p->n_ops)
			break;
		switch (op->op) {
		case LP_OP_END:
			out->u64 = acc;
			return 0;
		case LP_OP_REG:
			acc = dwarf_reg(regs, op->reg);
			break;
		case LP_OP_ADD:
			acc += op->arg;
			break;
		case LP_OP_DEREF:
			if (bpf_probe_read_user(&tmp, sizeof(tmp), (void *)acc))
				return -1;
			acc = tmp;
			break;
		case LP_OP_ADDR:
			acc = op->arg + bias;
			break;
		case LP_OP_CFA:
			acc = regs->sp + op->arg;
			break;
		case LP_OP_RETVAL:
			acc = regs->ax;
			break;
		case LP_OP_LOAD:
			tmp = 0;
			if (op->size == 1) {
				__u8 v;
				if (bpf_probe_read_user(&v, 1, (void *)acc))
					return -1;
				tmp = p->is_signed ? (__u64)(__s64)(__s8)v : v;
			} else if (op->size == 2) {
				__u16 v;
				if (bpf_probe_read_user(&v, 2, (void *)acc))
					return -1;
				tmp = p->is_signed ? (__u64)(__s64)(__s16)v : v;
			} else if (op->size == 4) {
				__u32 v;
				if (bpf_probe_read_user(&v, 4, (void *)acc))
					return -1;
				tmp = p->is_signed ? (__u64)(__s64)(__s32)v : v;
			} else {
				if (bpf_probe_read_user(&tmp, 8, (void *)acc))
					return -1;
			}
			out->u64 = tmp;
			return 0;
		case LP_OP_STR:
			out->u64 = acc;
			if (bpf_probe_read_user_str(out->str, sizeof(out->str), (void *)acc) < 0)
				return -1;
			return 0;
		default:
			return -1;
		}
	}
	out->u64 = acc;
	return 0;
}

#endif /* LP_FETCH_BPF_H */
