/* SPDX-License-Identifier: GPL-2.0 */
/*
 * py_code.h - names of CPython code objects in a running process.
 *
 * The BPF sampler records, per Python frame, the address of the frame's
 * code object and of the code unit it was executing. This turns that pair
 * into `qualname`, `file.py` and a line, reading the target's memory only
 * through process_vm_readv(2) (never ptrace: the target is not stopped),
 * and caches per (pid, code object) what it read: the names and the
 * code's line table, so that each further instruction offset costs a
 * decode of the cached table and no read.
 */
#ifndef LP_PY_CODE_H
#define LP_PY_CODE_H

#include <stdint.h>
#include <sys/types.h>

#include "../../dwarf/python_runtime.h"

#define PY_NAME_MAX 128
#define PY_FILE_MAX 256

struct py_code_cache;

struct py_frame_name {
	char qualname[PY_NAME_MAX]; /* co_qualname, e.g. "Handler.parse" */
	char filename[PY_FILE_MAX]; /* co_filename as Python has it */
	int line;		    /* of the instruction, else co_firstlineno; 0 if unknown */
};

/**
 * py_code_cache__new() - an empty cache.
 *
 * Return: the cache, or NULL without memory.
 */
struct py_code_cache *py_code_cache__new(void);

/**
 * py_code_cache__free() - free @c and everything it cached.
 * @c: the cache, or NULL
 */
void py_code_cache__free(struct py_code_cache *c);

/**
 * py_code_cache__forget_pid() - drop what was cached for process @pid
 * (it exited, or exec'd into something else).
 * @c: the cache
 * @pid: the process
 */
void py_code_cache__forget_pid(struct py_code_cache *c, pid_t pid);

/**
 * py_code_resolve() - name a Python frame.
 * @c: the cache
 * @pid: the process the code object lives in
 * @rt: its interpreter's version and offsets (python_runtime_find())
 * @code: address of the PyCodeObject
 * @instr: address of the code unit the frame was executing (3.11, 3.12:
 *	   _PyInterpreterFrame.prev_instr; 3.13: instr_ptr), or 0 if unknown
 * @ident: the hash of the code object's identity window when the frame was
 *	   sampled (lp_interp_frame.aux, bpf/liveprof.h), or 0 if unknown:
 *	   an object at @code that hashes otherwise is another one, made
 *	   after the sample's was freed, and is not named
 * @out: filled on success
 *
 * Memory that changes while it is read (the object was freed, a string
 * is not what it claims to be) is rejected, never trusted: lengths are
 * bounded, strings must be compact and of a known kind.
 *
 * Return: 0, or a negative errno: -ESRCH (process gone), -EFAULT (a read
 * failed), -EINVAL (what was read is not a code object), -ESTALE (not the
 * object that was sampled, or it changed while it was read).
 */
int py_code_resolve(struct py_code_cache *c, pid_t pid, const struct py_runtime *rt, uint64_t code,
		    uint64_t instr, uint16_t ident, struct py_frame_name *out);

/**
 * py_code_ident_offset() - where a code object's identity window starts
 * @o: the interpreter's offsets
 *
 * The window is LP_PY_IDENT_WORDS words (bpf/liveprof.h) that hold its
 * first line and its file, name, qualname and line table pointers.
 *
 * Return: its offset in the object, or 0 if those members do not fit.
 */
uint32_t py_code_ident_offset(const struct py_offsets *o);

#endif /* LP_PY_CODE_H */
