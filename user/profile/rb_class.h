/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rb_class.h - the class that qualifies a CRuby frame's method name, as
 * Ruby's rb_profile_frame_full_label() (and 3.4's backtraces) name it:
 * "Handler#call", "Handler.build", "block in Handler#call",
 * "Object#unit" for a method defined at the top level.
 *
 * Ruby 3.1 compiles a method without a parent iseq, so its class is found
 * from the frame instead: the method entry the BPF walk read at the
 * frame's local ep[-2] (lp_interp_frame.aux), its defined class (the
 * module, for a module's method reached through an iclass), and that
 * class's path, which 3.1 keeps in the class's instance variables under
 * the internal ID of "__classpath__" (for a singleton class, the path of
 * the object under "__attached__"). Those IDs are numbers fixed at the
 * interpreter's boot, learned once per process from Object (rb_cObject),
 * whose own path is "Object" and whose singleton class is attached to it.
 *
 * Read with process_vm_readv(2) only, cached per (pid, method entry).
 */
#ifndef LP_RB_CLASS_H
#define LP_RB_CLASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../dwarf/ruby_runtime.h"
#include "rb_iseq.h"

#define RB_CLASS_MAX 128

struct rb_class_cache;

/** rb_class_cache__new() - an empty cache; NULL without memory */
struct rb_class_cache *rb_class_cache__new(void);

/** rb_class_cache__free() - free @c (or NULL) and what it cached */
void rb_class_cache__free(struct rb_class_cache *c);

/** rb_class_cache__forget_pid() - drop what was cached of process @pid */
void rb_class_cache__forget_pid(struct rb_class_cache *c, pid_t pid);

/**
 * rb_method_owner() - the class path that qualifies a frame's method.
 * @c: the cache
 * @pid: the process
 * @rt: its interpreter's version and offsets
 * @cobject: the address, in @pid, of the variable rb_cObject
 *	(@rt->cobject_addr plus the load bias); 0 if unknown
 * @aux: what the BPF walk read for the frame (a method entry, an svar
 *	holding one, a cref, or 0)
 * @out: the path ("Handler", "Outer::Inner"), @cap bytes with the NUL
 * @singleton: set when the method is a singleton method ("Handler.build")
 *
 * Return: 0; -ENOENT when the frame is in no method Ruby would qualify
 * (the top level, a class body, a block outside a method, a method made
 * by define_method, an anonymous class, a singleton of a plain object):
 * its label stands as it is; -EINVAL, -EFAULT, -ESRCH when what should
 * be a method entry, a class or a path could not be read.
 */
int rb_method_owner(struct rb_class_cache *c, pid_t pid, const struct rb_runtime *rt,
		    uint64_t cobject, uint64_t aux, char *out, size_t cap, bool *singleton);

/**
 * rb_qualify_label() - @nm's label with its method name qualified by
 * @owner: the label's prefix before the base label ("block in "), then
 * "Owner#base" ("Owner.base" for a singleton method)
 * @out: the result, @cap bytes with the NUL (cut if longer)
 *
 * Return: true; false (and @out untouched) when the label does not end
 * with its base label, which no iseq of a method has.
 */
bool rb_qualify_label(const struct rb_frame_name *nm, const char *owner, bool singleton, char *out,
		      size_t cap);

#endif /* LP_RB_CLASS_H */
