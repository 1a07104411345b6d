/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fetch.bpf.h - the interpreter of value-fetch programs (struct
 * lp_fetch_prog). User space compiles DWARF location expressions into
 * these few ops; one generic program runs them in a bounded loop, so no
 * compiler is needed at run time.
 */
#ifndef LP_FETCH_BPF_H
#define LP_FETCH_BPF_H

/*
 * The probed thread's registers by DWARF x86-64 number (16 = rip). Copied
 * once per hit: the verifier accepts only constant offsets into the
 * context, so a register chosen at run time is read from this array.
 */
struct fetch_regs {
	__u64 r[17];
};

/*
 * Where the copy goes: the thread's own storage, not the BPF stack (136
 * bytes there put the py: programs' deepest call chain at 496 of the 512
 * bytes 6.1 and 6.12 allow) and not a per-CPU slot (a uprobe program can
 * be preempted, and another thread's hit would write the same slot).
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct fetch_regs);
} fetch_regs_of SEC(".maps");

static __always_inline struct fetch_regs *fetch_regs_here(void)
{
	return bpf_task_storage_get(&fetch_regs_of, bpf_get_current_task_btf(), NULL,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
}

static __always_inline void fetch_regs_load(struct fetch_regs *fr, struct pt_regs *regs)
{
	fr->r[0] = regs->ax;
	fr->r[1] = regs->dx;
	fr->r[2] = regs->cx;
	fr->r[3] = regs->bx;
	fr->r[4] = regs->si;
	fr->r[5] = regs->di;
	fr->r[6] = regs->bp;
	fr->r[7] = regs->sp;
	fr->r[8] = regs->r8;
	fr->r[9] = regs->r9;
	fr->r[10] = regs->r10;
	fr->r[11] = regs->r11;
	fr->r[12] = regs->r12;
	fr->r[13] = regs->r13;
	fr->r[14] = regs->r14;
	fr->r[15] = regs->r15;
	fr->r[16] = regs->ip;
}

/*
 * Run fetch program @idx against @regs into @out. Returns 0, or -1 when
 * a user-memory read faulted (the value is then reported as unreadable).
 */
static __noinline int run_fetch(struct fetch_regs *regs, __u32 idx, __u64 bias,
				struct lp_value *out)
{
	struct lp_fetch_prog *p = bpf_map_lookup_elem(&fetch, &idx);
	__u64 acc = 0, tmp;
	__u32 i;

	if (!p || !out || !regs)
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
			if (op->reg > 16)
				return -1;
			acc = regs->r[op->reg];
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
			acc = regs->r[7] + op->arg;
			break;
		case LP_OP_RETVAL:
			acc = regs->r[0];
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
