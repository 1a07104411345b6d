/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * interp_cfg.h - what BPF and user space share about interpreters: the
 * frames of CPython and Ruby read at a sample, the per-process layouts
 * the walks and the py:/rb: traces read them with, and the hashes of the
 * identities that name a frame. Part of the ABI liveprof.h declares,
 * which includes it.
 */
#ifndef LIVEPROF_INTERP_CFG_H
#define LIVEPROF_INTERP_CFG_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/*
 * One CPython frame at a sample, innermost first: its code object and
 * the code unit it was executing (python.bpf.h). Code units are 2-byte
 * aligned, so bit 0 of instr is free: LP_PYF_ENTRY marks the first frame
 * of one call of the evaluator, whose C frame it replaces in the stack.
 */
struct lp_interp_frame {
	__u64 code;
	__u64 instr;
	/*
	 * Ruby: what names the frame's method, read while the frame exists
	 * (ruby.bpf.h): ep[-2] of its local environment, or of the first
	 * block environment on the way there that holds a method entry
	 * (LP_RBF_ME_MASK), and the iseq's identity in the top bits (below).
	 * User space checks what it is. Python: the hash of the code
	 * object's identity window (below), 0 if it was not read.
	 */
	__u64 aux;
};

#define LP_PYF_ENTRY 1ull

/*
 * Python frames: a code object is named after the sample, and one freed
 * in between may have been replaced by another at its address (CPython's
 * allocator hands the last freed block out first). So BPF also reads the
 * code object's identity window at the sample (LP_PY_IDENT_WORDS words
 * from lp_py_cfg.code_ident: its first line and its file, name, qualname
 * and line table pointers) and keeps a 16-bit hash of it in the frame's
 * aux; 0: not read. User space names the frame only if the object it
 * reads hashes alike.
 */
#define LP_PY_IDENT_WORDS 10

/* The hash of @n words of an identity window, never 0 (shared by BPF and
 * user space; @n is a constant, so BPF's loop unrolls). */
static inline __u16 lp_ident_hash(const __u64 *w, int n)
{
	__u64 h = 0x9e3779b97f4a7c15ull;
	int i;

	for (i = 0; i < n; i++) {
		h ^= w[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 29;
	}
	h ^= h >> 16 ^ h >> 32 ^ h >> 48;
	return (__u16)h ? (__u16)h : 1;
}

static inline __u16 lp_py_ident_hash(const __u64 *w)
{
	return lp_ident_hash(w, LP_PY_IDENT_WORDS);
}

/* Where CPython keeps what python.bpf.h reads, per process (py_procs). */
#define LP_PY_OFF_NONE	      0xffffu /* a member this version does not have */
#define LP_PY_OWNED_BY_CSTACK 3	      /* _PyInterpreterFrame.owner of a 3.12+ shim */
struct lp_py_cfg {
	__u64 runtime; /* address of _PyRuntime in the process */
	__u16 runtime_interpreters_head;
	__u16 interp_threads_head;
	__u16 tstate_next;
	__u16 tstate_thread_id;
	__u16 tstate_cframe;	    /* 3.11, 3.12 */
	__u16 tstate_current_frame; /* 3.13 */
	__u16 cframe_current_frame;
	__u16 iframe_code;
	__u16 iframe_previous;
	__u16 iframe_instr;
	__u16 iframe_owner;
	__u16 iframe_is_entry; /* 3.11 */
	__u16 minor;	       /* 11, 12, 13 */
	/* --trace py: (pytrace.bpf.h): a code object's qualname and first
	 * code unit, and where a compact ASCII str keeps its length, state
	 * bits and characters */
	__u16 code_qualname;
	__u16 code_adaptive;
	__u16 unicode_length;
	__u16 unicode_state;
	__u16 unicode_ascii_data;
	__u16 code_filename; /* py:module.QUALNAME: the module is the file's */
	__u16 code_ident;    /* the identity window (LP_PY_IDENT_WORDS); 0: none */
	/* generators and coroutines, timed across their resumptions
	 * (pygen.bpf.h): the code's co_flags, and from a generator's frame
	 * (its gi_iframe) back to its gi_frame_state byte */
	__u16 code_flags;
	__u16 gen_state_back;
	__u16 op_return_generator; /* that opcode in this version; 0: untimed */
	__u16 pad;
};

/*
 * Where CRuby keeps what ruby.bpf.h reads, per process (rb_procs). A Ruby
 * process's samples use interp[] too (a process is never both): code is
 * the frame's iseq, instr its pc, which points at a VALUE and so is
 * 8-byte aligned; LP_PYF_ENTRY then marks the frame one call of the VM
 * loop (rb_vm_exec) began with, the one CRuby flags VM_FRAME_FLAG_FINISH.
 */
struct lp_rb_cfg {
	__u64 vm_ptr; /* address of ruby_current_vm_ptr in the process */
	__u16 vm_main_ractor;
	__u16 ractor_threads_set; /* a list head: next at +0 */
	__u16 thread_lt_node;	  /* the thread's links in that list */
	__u16 thread_ec;
	__u16 thread_native_id; /* pthread_self(): the thread's fs base */
	__u16 ec_vm_stack;
	__u16 ec_vm_stack_size; /* in VALUEs */
	__u16 ec_cfp;
	__u16 cfp_pc;
	__u16 cfp_iseq;
	__u16 cfp_ep;
	__u16 cfp_size;
	__u16 iseq_body; /* rb_iseq_t.body, for the identity below; 0: none */
	__u16 reserved[3];
};

/* Words of a control frame ruby.bpf.h reads at once, from its start (a
 * power of 2; 3.1's frame is 8): cfp_pc, cfp_iseq and cfp_ep lie in them. */
#define LP_RB_CFP_WORDS 8

/*
 * Ruby frames: an iseq is named after the sample, and GC may have freed
 * it in between and given its heap slot to another (a method defined by
 * eval and removed, a class made and dropped): the name cached for the
 * address, or read there now, is then another method's. So BPF also reads
 * the iseq's identity at the sample: its body pointer (rb_iseq_t.body) and
 * the body's first LP_RB_IDENT_WORDS - 1 words (type and size, the
 * instructions' address, the parameters, and the location: path, labels,
 * first line, node id and source range), and keeps a 16-bit hash of them
 * in the top bits of the frame's aux (a method entry, a user address,
 * stays below 2^47); 0: not read. User space names the frame only if the
 * iseq it reads hashes alike.
 */
#define LP_RBF_IDENT_SHIFT 48
#define LP_RBF_ME_MASK	   ((1ull << LP_RBF_IDENT_SHIFT) - 1)
#define LP_RB_IDENT_WORDS  16

static inline __u16 lp_rb_ident_hash(const __u64 *w)
{
	return lp_ident_hash(w, LP_RB_IDENT_WORDS);
}

#endif /* LIVEPROF_INTERP_CFG_H */
