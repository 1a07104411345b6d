/* SPDX-License-Identifier: GPL-2.0 */
/*
 * python_runtime.h - what liveprof needs to know about a CPython binary to
 * read its frames from outside: where _PyRuntime is, which version it is,
 * and the offsets of the struct members on the path from the runtime to a
 * thread's frames and from a code object to its names and line table.
 *
 * Offsets come from the binary's own DWARF when it has it (a pyenv or
 * distribution -dbg build), otherwise from a table per minor version that
 * ships with liveprof (python_offsets.c), keyed by the version read from
 * the binary. Supported: CPython 3.11, 3.12 and 3.13 on x86-64.
 */
#ifndef LP_PYTHON_RUNTIME_H
#define LP_PYTHON_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An offset that does not exist in this version. */
#define PY_OFF_NONE UINT32_MAX

/*
 * Member offsets, in bytes from the start of the struct named before the
 * underscore. Names follow CPython's members, paths joined by '_'.
 */
struct py_offsets {
	/* _PyRuntimeState */
	uint32_t runtime_interpreters_head; /* .interpreters.head */
	/* PyInterpreterState (struct _is) */
	uint32_t interp_threads_head; /* .threads.head */
	/* PyThreadState (struct _ts) */
	uint32_t tstate_next;
	uint32_t tstate_thread_id;     /* pthread_self() of the thread: its fs base */
	uint32_t tstate_cframe;	       /* 3.11, 3.12: _PyCFrame *cframe */
	uint32_t tstate_current_frame; /* 3.13: _PyInterpreterFrame *current_frame */
	/* _PyCFrame (3.11, 3.12) */
	uint32_t cframe_current_frame;
	/* _PyInterpreterFrame */
	uint32_t iframe_code;	  /* f_code (3.11, 3.12), f_executable (3.13) */
	uint32_t iframe_previous; /* previous */
	uint32_t iframe_instr;	  /* prev_instr (3.11, 3.12), instr_ptr (3.13) */
	uint32_t iframe_owner;	  /* owner (char) */
	uint32_t iframe_is_entry; /* 3.11: is_entry (bool) */
	/* PyCodeObject */
	uint32_t code_filename;
	uint32_t code_name;
	uint32_t code_qualname;
	uint32_t code_firstlineno;   /* int */
	uint32_t code_linetable;     /* PyBytesObject * */
	uint32_t code_code_adaptive; /* co_code_adaptive: the first code unit */
	uint32_t code_flags;	     /* co_flags (int): CO_GENERATOR and kin */
	/* PyGenObject (coroutines and async generators share its layout) */
	uint32_t gen_frame_state; /* gi_frame_state (int8_t): < 0 while suspended */
	uint32_t gen_iframe;	  /* gi_iframe: the generator's own frame */
	/* PyUnicodeObject */
	uint32_t unicode_length; /* PyASCIIObject.length */
	uint32_t unicode_state;	 /* PyASCIIObject.state: the bit-field word */
	uint32_t ascii_size;	 /* sizeof(PyASCIIObject): compact ASCII data follow */
	uint32_t compact_size;	 /* sizeof(PyCompactUnicodeObject): other compact data */
	/* PyBytesObject */
	uint32_t bytes_size; /* ob_base.ob_size */
	uint32_t bytes_sval; /* ob_sval */
};

/* _PyInterpreterFrame.owner of a shim frame that marks a C call into the
 * evaluator (3.12+: FRAME_OWNED_BY_CSTACK). */
#define PY_FRAME_OWNED_BY_CSTACK 3

struct py_runtime {
	unsigned int major, minor; /* 3, 11 */
	uint64_t runtime_addr;	   /* ELF virtual address of _PyRuntime */
	uint64_t eval_lo, eval_hi; /* ELF addresses of _PyEval_EvalFrameDefault */
	bool from_dwarf;	   /* offsets read from the binary's DWARF */
	struct py_offsets off;
};

/**
 * python_runtime_find() - recognize a CPython interpreter binary.
 * @path: an ELF file: a python executable or a libpython shared library
 * @out: filled on success
 * @err: on failure, a one-line reason (for a warning that names the version)
 * @errlen: size of @err
 *
 * Return: 0 if @path is a CPython of a supported version, -ENOENT if it
 * is not CPython at all (no _PyRuntime), -ENOTSUP if it is a CPython
 * whose version liveprof has no offsets for (and no usable DWARF), another
 * negative errno if the file cannot be read.
 */
int python_runtime_find(const char *path, struct py_runtime *out, char *err, size_t errlen);

/**
 * python_offsets_builtin() - the offsets table shipped for a version.
 * @major: 3
 * @minor: 11, 12 or 13
 *
 * Return: the table, or NULL for a version without one.
 */
const struct py_offsets *python_offsets_builtin(unsigned int major, unsigned int minor);

/**
 * python_op_return_generator() - the opcode RETURN_GENERATOR in a version
 * whose generators and coroutines --trace py: times across resumptions.
 * @major: 3
 * @minor: the minor version
 *
 * A generator's frame that has not run yet stopped at that instruction
 * (its creating call ran it), which tells its first resumption from the
 * others. Only 3.11, where every resumption enters the evaluator anew and
 * every yield leaves it; 3.12 resumes and yields inside the caller's
 * evaluator loop (SEND_GEN, FOR_ITER_GEN), which the probes are not
 * checked against.
 *
 * Return: the opcode, or 0 where generators are not timed.
 */
unsigned int python_op_return_generator(unsigned int major, unsigned int minor);

/* A probe point in the evaluator. */
struct py_eval_point {
	uint64_t vaddr;	 /* link-time address, proven an instruction boundary */
	uint64_t offset; /* its file offset, for the uprobe */
};

#define PY_MAX_STARTS 8

/* Where the evaluator starts frames, and where they end. */
struct py_eval_points {
	/* the jumps into the block each start runs before resume_frame
	 * (python_starts.c), else resume_frame itself (resume true) */
	struct py_eval_point start[PY_MAX_STARTS];
	int n_start;
	bool resume;		     /* start[0] is resume_frame: BPF tells starts from resumes */
	uint64_t resume_vaddr;	     /* resume_frame's address */
	struct py_eval_point ret[2]; /* TARGET_RETURN_VALUE, exit_unwind */
	int n_ret;
	/* TARGET_YIELD_VALUE, with the returns: where a generator's frame
	 * yields (bpf/pygen.bpf.h) */
	struct py_eval_point yield;
};

/**
 * python_eval_points() - find and prove the labels of
 * _PyEval_EvalFrameDefault where py: traces probe, in @path's DWARF (its
 * own or its debug file's, found by build-id)
 * @path: the interpreter executable or libpython
 * @returns: also the return labels (for a build without USDT probes)
 * @out: filled on success
 * @err: on failure, one line saying what is missing and what would work
 * @errlen: size of @err
 *
 * Return: 0; -ENOENT when no DWARF (or no address for a label) is found;
 * another negative errno when an address cannot be proven.
 */
int python_eval_points(const char *path, bool returns, struct py_eval_points *out, char *err,
		       size_t errlen);

#endif /* LP_PYTHON_RUNTIME_H */
