// SPDX-License-Identifier: GPL-2.0
/*
 * ruby_offsets.c - the member offsets of CRuby 3.1 on x86-64 (LP64), for
 * libruby builds without DWARF (Debian's libruby-3.1.so.3.1: stripped, no
 * debug package).
 *
 * Derived by hand from the struct definitions of the 3.1 sources (the
 * layouts 3.1.7's headers give; member order and types as in vm_core.h,
 * iseq.h, ractor_core.h, thread_pthread.h, include/ruby/internal/core/
 * rstring.h and rarray.h), with the LP64 rules: pointers, VALUE, long and
 * size_t 8 bytes; int, unsigned int and enums 4; pthread_mutex_t 40 and
 * pthread_cond_t 48 (glibc, aligned to 8); a struct aligned to its widest
 * member. The build options that change these layouts are 3.1's defaults:
 * USE_RVARGC 0 (string length in the flags, not in the embed struct),
 * USE_ISEQ_NODE_ID 1 (a node_id in every insn info entry and in the
 * location), VM_DEBUG_BP_CHECK 0, VM_CHECK_MODE 0 (insns_info.positions is
 * freed once the succinct index is built, so lines come from the index).
 *
 * Checked against a live Debian ruby 3.1.7 by tests/unit/test_rb_iseq.c:
 * the walk VM -> main thread -> EC -> frames -> iseq -> names and lines
 * finds the script's methods at their lines, the main ractor's thread list
 * holds the main thread, thread_id is a glibc TCB (self pointers) and tid
 * is the process id. That test is what proves each value below; a value it
 * does not touch is marked "not checked".
 *
 * Other minor versions are not here on purpose: 3.2 moved the embedded
 * string length into the embed struct (USE_RVARGC 1) and the thread's
 * pthread_t into a struct rb_native_thread that rb_thread_t points to
 * (one more dereference); 3.3 also moved RString's len out of the union
 * and dropped cfp->__bp__ (56-byte frames). Each needs a table derived and
 * checked against a live interpreter with the same care as this one, and
 * none is installed here to check against.
 */
#include "ruby_runtime.h"

#define FL_USER(n) (1u << (12 + (n))) /* RUBY_FL_USHIFT is 12 */

static const struct rb_offsets rb31 = {
	/*
	 * rb_vm_t: VALUE self (0); struct { list_head set (8, 16 bytes);
	 * unsigned cnt (24), blocking_cnt (28); main_ractor (32);
	 * main_thread (40); ... } ractor.
	 */
	.vm_main_ractor = 32,
	.vm_main_thread = 40,
	/*
	 * rb_ractor_t: pub {self 0, id 8, hooks 16..40} (40 bytes); sync
	 * (40..240: lock 40, cond 48, incoming_queue 32, taking_ractors 16,
	 * two bools, wait 56 at +144); receiving_mutex 240; bool
	 * yield_atexit 248; barrier_wait_cond 256..304; threads at 304:
	 * set 304, cnt 320, blocking_cnt 324, sleeper 328, gvl 336..520
	 * (owner, lock, waitq, timer, timer_err, two conds, two ints: 184
	 * bytes), running_ec 520, main 528.
	 */
	.ractor_threads_set = 304,
	.ractor_threads_cnt = 320,
	.ractor_threads_main = 528,
	/*
	 * rb_thread_t: list_node lt_node (0); self 16; ractor 24; vm 32; ec
	 * 40; last_status 48; calling 56; top_self 64; top_wrapper 72;
	 * rb_nativethread_id_t (pthread_t) thread_id 80; int tid 88
	 * (RB_THREAD_T_HAS_NATIVE_ID on Linux).
	 */
	.thread_lt_node = 0,
	.thread_ec = 40,
	.thread_native_id = 80,
	.thread_tid = 88,
	/* rb_execution_context_t: vm_stack 0; vm_stack_size 8; cfp 16 */
	.ec_vm_stack = 0,
	.ec_vm_stack_size = 8,
	.ec_cfp = 16,
	/*
	 * rb_control_frame_t: pc 0; sp 8; iseq 16; self 24; ep 32;
	 * block_code 40; __bp__ 48; jit_return 56: 64 bytes.
	 */
	.cfp_pc = 0,
	.cfp_iseq = 16,
	.cfp_self = 24,
	.cfp_ep = 32,
	.cfp_size = 64,
	/* rb_iseq_t: VALUE flags 0; VALUE wrapper 8; body 16 */
	.iseq_body = 16,
	/*
	 * struct rb_iseq_constant_body: enum type 0; unsigned iseq_size 4;
	 * iseq_encoded 8; param 16..64 (a 4-byte bit-field word, seven ints,
	 * two pointers); location 64..120 (pathobj 64, base_label 72, label
	 * 80, first_lineno 88, int node_id 96, rb_code_location_t 100..116,
	 * padded); insns_info 120..152 (body 120, positions 128, unsigned
	 * size 136, succ_index_table 144); local_table 152; catch_table
	 * 160; parent_iseq 168.
	 */
	.body_type = 0,
	.body_iseq_size = 4,
	.body_iseq_encoded = 8,
	.body_pathobj = 64,
	.body_label = 80,
	.body_first_lineno = 88,
	.body_insns_info = 120,
	.body_insns_pos = 128,
	.body_insns_size = 136,
	.body_insns_succ = 144,
	.body_parent_iseq = 168,
	.body_base_label = 72,
	/* struct iseq_insn_info_entry: int line_no, int node_id, events */
	.insn_info_line_no = 0,
	.insn_info_size = 12,
	/*
	 * struct RString: RBasic {flags, klass} (16); union as { heap {long
	 * len 16; char *ptr 24; aux 32}; embed {char ary[24] 16} }.
	 * RSTRING_NOEMBED is FL_USER1; the embedded length is in FL_USER2..6,
	 * RSTRING_EMBED_LEN_SHIFT = FL_USHIFT + 2.
	 */
	.rstring_len = 16,
	.rstring_ptr = 24,
	.rstring_embed = 16,
	.rstring_size = 40,
	.rstring_noembed = FL_USER(1),
	.rstring_elen_mask = FL_USER(2) | FL_USER(3) | FL_USER(4) | FL_USER(5) | FL_USER(6),
	.rstring_elen_shift = 14,
	/*
	 * struct RArray: RBasic (16); union as { heap {long len 16; aux 24;
	 * const VALUE *ptr 32}; const VALUE ary[3] 16 }. RARRAY_EMBED_FLAG
	 * is FL_USER1; the embedded length is in FL_USER3..4,
	 * RARRAY_EMBED_LEN_SHIFT = FL_USHIFT + 3. Not checked live: len and
	 * ptr (a pathobj is a two-element array, always embedded), and the
	 * length bits only as far as "at least one".
	 */
	.rarray_len = 16,
	.rarray_ptr = 32,
	.rarray_embed = 16,
	.rarray_embed_flag = FL_USER(1),
	.rarray_elen_mask = FL_USER(3) | FL_USER(4),
	.rarray_elen_shift = 15,
	/*
	 * struct vm_svar: flags 0, cref_or_me 8. rb_method_entry_t: flags 0,
	 * defined_class 8, def 16, called_id 24, owner 32. struct
	 * rb_method_definition_struct: type in its first 4 bits
	 * (VM_METHOD_TYPE_MINIMUM_BITS), then alias_count... RBasic: flags
	 * 0, klass 8. struct RClass: RBasic (16), super 16, ptr 24 (then
	 * class_serial: m_tbl is in the ext). struct rb_classext_struct:
	 * iv_index_tbl 0, iv_tbl 8. st_table: three bytes and an unsigned
	 * (8), type 8, num_entries 16, bins 24, entries_start 32,
	 * entries_bound 40, entries 48; st_table_entry: hash 0, key 8,
	 * record 16 (24 bytes). Checked live by tests/unit/test_rb_class.c:
	 * the frames of methods of a class, a nested class, a module, a
	 * singleton and the top level get their classes.
	 */
	.svar_cref_or_me = 8,
	.me_defined_class = 8,
	.me_def = 16,
	.def_type_mask = 0xf,
	.rbasic_klass = 8,
	.rclass_ext = 24,
	.ext_iv_tbl = 8,
	.st_entries_start = 32,
	.st_entries_bound = 40,
	.st_entries = 48,
	.st_entry_size = 24,
	.st_entry_key = 8,
	.st_entry_record = 16,
};

const struct rb_offsets *ruby_offsets_builtin(unsigned int major, unsigned int minor)
{
	if (major == 3 && minor == 1)
		return &rb31;
	return NULL;
}
