/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ruby_runtime.h - what liveprof needs to know about a CRuby binary to read
 * its frames from outside: where ruby_current_vm_ptr is, which version it
 * is, the address range of the VM loop whose C frames Ruby frames replace,
 * and the offsets of the struct members on the path from the VM to a
 * thread's control frames and from an iseq to its names and line table.
 *
 * Distributions strip libruby of its DWARF (Debian's has none and no -dbg
 * package), so the offsets come from a table per minor version that ships
 * with liveprof (ruby_offsets.c), keyed by the version string the binary
 * carries. Supported: CRuby 3.1 on x86-64.
 */
#ifndef LP_RUBY_RUNTIME_H
#define LP_RUBY_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An offset that does not exist in this version. */
#define RB_OFF_NONE UINT32_MAX

/*
 * Member offsets, in bytes from the start of the struct named before the
 * underscore (vm = rb_vm_t, ractor = rb_ractor_t, thread = rb_thread_t,
 * ec = rb_execution_context_t, cfp = rb_control_frame_t, iseq = rb_iseq_t,
 * body = struct rb_iseq_constant_body, insn_info = struct
 * iseq_insn_info_entry, rstring = struct RString, rarray = struct RArray),
 * and the flag bits that say how a string or an array holds its contents.
 */
struct rb_offsets {
	/* rb_vm_t */
	uint32_t vm_main_ractor; /* .ractor.main_ractor */
	uint32_t vm_main_thread; /* .ractor.main_thread */
	/* rb_ractor_t */
	uint32_t ractor_threads_set;  /* .threads.set: list head of thread_lt_node */
	uint32_t ractor_threads_cnt;  /* .threads.cnt (unsigned int) */
	uint32_t ractor_threads_main; /* .threads.main */
	/* rb_thread_t */
	uint32_t thread_lt_node;   /* list links: next at +0, prev at +8 */
	uint32_t thread_ec;	   /* rb_execution_context_t *ec */
	uint32_t thread_native_id; /* thread_id: pthread_self(), the fs base */
	uint32_t thread_tid;	   /* int tid: gettid() (Thread#native_thread_id) */
	/* rb_execution_context_t */
	uint32_t ec_vm_stack;	   /* VALUE *vm_stack */
	uint32_t ec_vm_stack_size; /* size_t, in VALUEs */
	uint32_t ec_cfp;	   /* the current (innermost) control frame */
	/*
	 * rb_control_frame_t: frames sit at the top of the VM stack and grow
	 * down, so the caller of a frame is at frame + cfp_size, up to the
	 * end of the stack. A C function's frame has iseq 0 (its method entry
	 * is at ep[-2]); the last frame, just below the end, is a dummy
	 * (VM_FRAME_MAGIC_DUMMY in ep[0]) that Ruby's backtraces skip.
	 */
	uint32_t cfp_pc;
	uint32_t cfp_iseq;
	uint32_t cfp_self;
	uint32_t cfp_ep;
	uint32_t cfp_size; /* sizeof(rb_control_frame_t) */
	/* rb_iseq_t */
	uint32_t iseq_body;
	/* struct rb_iseq_constant_body */
	uint32_t body_type;	    /* enum iseq_type (4 bytes) */
	uint32_t body_iseq_size;    /* unsigned int, in VALUEs */
	uint32_t body_iseq_encoded; /* VALUE *: the instructions */
	uint32_t body_pathobj;	    /* location.pathobj: String or [path, realpath] */
	uint32_t body_label;	    /* location.label: String */
	uint32_t body_first_lineno; /* location.first_lineno: a Fixnum VALUE */
	uint32_t body_insns_info;   /* insns_info.body: iseq_insn_info_entry[] */
	uint32_t body_insns_pos;    /* insns_info.positions: NULL once compiled */
	uint32_t body_insns_size;   /* insns_info.size (unsigned int) */
	uint32_t body_insns_succ;   /* insns_info.succ_index_table */
	uint32_t body_parent_iseq;  /* a block's enclosing iseq; 0 for a method */
	uint32_t body_base_label;   /* location.base_label: the method's name in a block */
	uint32_t insn_info_line_no; /* int line_no */
	uint32_t insn_info_size;    /* sizeof(struct iseq_insn_info_entry) */
	/* struct RString / RArray; RBasic.flags is at 0 in both */
	uint32_t rstring_len;	    /* as.heap.len */
	uint32_t rstring_ptr;	    /* as.heap.ptr */
	uint32_t rstring_embed;	    /* as.embed.ary */
	uint32_t rstring_size;	    /* sizeof(struct RString): embed.ary ends here */
	uint32_t rstring_noembed;   /* flag: contents at rstring_ptr */
	uint32_t rstring_elen_mask; /* flags bits holding an embedded length */
	uint32_t rstring_elen_shift;
	uint32_t rarray_len;	    /* as.heap.len */
	uint32_t rarray_ptr;	    /* as.heap.ptr */
	uint32_t rarray_embed;	    /* as.ary */
	uint32_t rarray_embed_flag; /* flag: elements at rarray_embed */
	uint32_t rarray_elen_mask;
	uint32_t rarray_elen_shift;
	/*
	 * What names a method's class (rb_profile_frame_full_label): the
	 * method entry (me = rb_method_entry_t, an imemo ment) at a frame's
	 * local ep[-2], or inside the svar there (struct vm_svar); its
	 * definition's type (VM_METHOD_TYPE_ISEQ is 0); its defined class
	 * (an iclass for a module's method: the module is RBasic.klass);
	 * and a class's instance variables (rclass = struct RClass, ext =
	 * struct rb_classext_struct, st = st_table and its entries), where
	 * 3.1 keeps the class path (__classpath__) and a singleton class's
	 * object (__attached__).
	 */
	uint32_t svar_cref_or_me;
	uint32_t me_defined_class;
	uint32_t me_def;
	uint32_t def_type_mask; /* bits of the definition's first word holding the type */
	uint32_t rbasic_klass;
	uint32_t rclass_ext; /* struct rb_classext_struct *ptr (without USE_RVARGC) */
	uint32_t ext_iv_tbl; /* st_table *iv_tbl */
	uint32_t st_entries_start;
	uint32_t st_entries_bound;
	uint32_t st_entries;
	uint32_t st_entry_size; /* sizeof(st_table_entry): hash, key, record */
	uint32_t st_entry_key;
	uint32_t st_entry_record;
};

/* RBasic.flags: the type in the low five bits (enum ruby_value_type), and
 * for T_IMEMO the imemo type in four bits at FL_USHIFT (internal/imemo.h). */
#define RB_T_MASK	0x1f
#define RB_T_STRING	0x05
#define RB_T_ARRAY	0x07
#define RB_T_IMEMO	0x1a
#define RB_IMEMO_SHIFT	12
#define RB_IMEMO_MASK	0x0f
#define RB_IMEMO_ISEQ	7
#define RB_IMEMO_CREF	1
#define RB_IMEMO_SVAR	2
#define RB_IMEMO_MENT	6
#define RB_T_CLASS	0x02
#define RB_T_MODULE	0x03
#define RB_T_ICLASS	0x1c
#define RB_FL_SINGLETON (1u << 12) /* FL_USER0: a singleton class */

struct rb_runtime {
	unsigned int major, minor, patch; /* 3, 1, 7 */
	/* the ELF the addresses are in: the input, or the libruby it links */
	char file[256];
	uint64_t vm_ptr_addr;	   /* ELF vaddr of ruby_current_vm_ptr (rb_vm_t *) */
	uint64_t cobject_addr;	   /* ELF vaddr of rb_cObject (VALUE); 0 if absent */
	uint64_t loop_lo, loop_hi; /* ELF addresses of the VM loop function */
	const char *loop_sym;	   /* its symbol: "vm_exec_core" or "rb_vm_exec" */
	bool loop_is_core;	   /* vm_exec_core itself (needs a .symtab) */
	struct rb_offsets off;
};

/**
 * ruby_runtime_find() - recognize a CRuby executable or libruby.
 * @path: an ELF file: a ruby executable (static libruby) or libruby-X.Y.so
 * @out: filled on success
 * @err: on failure, a one-line reason (names the version when known)
 * @errlen: size of @err
 *
 * A ruby executable linked against a shared libruby (Debian's /usr/bin/ruby)
 * holds none of the symbols: the libruby named in its DT_NEEDED entries is
 * looked up in its DT_RUNPATH/DT_RPATH and the system library directories,
 * read instead, and named in @out->file. For a running process, prefer the
 * libruby of its /proc/PID/maps: that is the one it really loaded.
 *
 * The VM loop: vm_exec_core() runs the instructions; rb_vm_exec() calls it.
 * vm_exec_core is static, so only a .symtab names it; without one (Debian's
 * is stripped) @out has rb_vm_exec, and the caller of the merge must know
 * that an unnamed libruby frame just above it is vm_exec_core.
 *
 * Return: 0 if @path is a CRuby of a supported version, -ENOENT if it is
 * not CRuby (no ruby_current_vm_ptr), -ENOTSUP if it is a CRuby whose
 * version liveprof has no offsets for, another negative errno if the file
 * cannot be read.
 */
int ruby_runtime_find(const char *path, struct rb_runtime *out, char *err, size_t errlen);

/**
 * ruby_offsets_builtin() - the offsets table shipped for a version.
 * @major: 3
 * @minor: 1
 *
 * Return: the table, or NULL for a version without one.
 */
const struct rb_offsets *ruby_offsets_builtin(unsigned int major, unsigned int minor);

#endif /* LP_RUBY_RUNTIME_H */
