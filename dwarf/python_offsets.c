// SPDX-License-Identifier: GPL-2.0
/*
 * python_offsets.c - the member offsets of CPython 3.11, 3.12 and 3.13 on
 * x86-64, for binaries without DWARF (Debian's /usr/bin/python3.11).
 *
 * Each table was written by hand from what python_runtime_find() read out
 * of the DWARF of a pyenv build on the development machine (release
 * builds, default configure: no Py_DEBUG, no Py_TRACE_REFS), and checked
 * against offsetof() compiled with -DPy_BUILD_CORE against the same
 * version's installed headers (Include/internal/pycore_frame.h,
 * pycore_runtime.h, pycore_interp.h, cpython/pystate.h, cpython/code.h,
 * cpython/unicodeobject.h, cpython/bytesobject.h): every value agreed.
 * tests/unit/test_python_runtime.c repeats both comparisons.
 *
 * Why one table per minor version is enough: CPython changes these
 * internal layouts only between minor versions; 3.13's
 * Include/internal/pycore_runtime.h says of _Py_DebugOffsets, the offsets
 * it publishes for out-of-process tools (most of the ones here), that the
 * layout "is only guaranteed to be stable between patch versions for a
 * given minor version". Checked here for 3.11: Debian's 3.11.2 headers
 * (/usr/include/python3.11, libpython3.11-dev 3.11.2-6+deb12u6) give
 * offsetof() values identical to pyenv's 3.11.7 for every field. Not
 * checked: 3.12 patch releases other than 3.12.1, 3.13 other than 3.13.0.
 * A debug build (Py_DEBUG / Py_TRACE_REFS adds two pointers to every
 * object header) differs; such builds ship their DWARF, which wins.
 */
#include "python_runtime.h"

/* From /root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0 (3.11.7). */
static const struct py_offsets py311 = {
	.runtime_interpreters_head = 40,
	.interp_threads_head = 16,
	.tstate_next = 8,
	.tstate_thread_id = 152,
	.tstate_cframe = 56,
	.tstate_current_frame = PY_OFF_NONE,
	.cframe_current_frame = 8,
	.iframe_code = 32,
	.iframe_previous = 48,
	.iframe_instr = 56,
	.iframe_owner = 69,
	.iframe_is_entry = 68,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_firstlineno = 72,
	.code_linetable = 136,
	.code_code_adaptive = 184,
	.code_flags = 48,
	.gen_frame_state = 75,
	.gen_iframe = 80,
	.unicode_length = 16,
	.unicode_state = 32,
	.ascii_size = 48, /* 3.11 still has the wstr pointer */
	.compact_size = 72,
	.bytes_size = 16,
	.bytes_sval = 32,
};

/* From /root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0 (3.12.1). */
static const struct py_offsets py312 = {
	.runtime_interpreters_head = 40,
	.interp_threads_head = 72,
	.tstate_next = 8,
	.tstate_thread_id = 136,
	.tstate_cframe = 56,
	.tstate_current_frame = PY_OFF_NONE,
	.cframe_current_frame = 0,
	.iframe_code = 0,
	.iframe_previous = 8,
	.iframe_instr = 56,
	.iframe_owner = 70,
	.iframe_is_entry = PY_OFF_NONE, /* replaced by FRAME_OWNED_BY_CSTACK shims */
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_firstlineno = 68,
	.code_linetable = 136,
	.code_code_adaptive = 192,
	.code_flags = 48,
	.gen_frame_state = 67,
	.gen_iframe = 72,
	.unicode_length = 16,
	.unicode_state = 32,
	.ascii_size = 40,
	.compact_size = 56,
	.bytes_size = 16,
	.bytes_sval = 32,
};

/* From /root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0 (3.13.0). */
static const struct py_offsets py313 = {
	.runtime_interpreters_head = 632, /* after _Py_DebugOffsets */
	.interp_threads_head = 7344,
	.tstate_next = 8,
	.tstate_thread_id = 152,
	.tstate_cframe = PY_OFF_NONE, /* _PyCFrame is gone */
	.tstate_current_frame = 72,
	.cframe_current_frame = PY_OFF_NONE,
	.iframe_code = 0, /* f_executable */
	.iframe_previous = 8,
	.iframe_instr = 56, /* instr_ptr */
	.iframe_owner = 70,
	.iframe_is_entry = PY_OFF_NONE,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_firstlineno = 68,
	.code_linetable = 136,
	.code_code_adaptive = 200,
	.code_flags = 48,
	.gen_frame_state = 67,
	.gen_iframe = 72,
	.unicode_length = 16,
	.unicode_state = 32,
	.ascii_size = 40,
	.compact_size = 56,
	.bytes_size = 16,
	.bytes_sval = 32,
};

/* Lib/opcode.py of 3.11: def_op('RETURN_GENERATOR', 75) */
#define PY311_RETURN_GENERATOR 75

unsigned int python_op_return_generator(unsigned int major, unsigned int minor)
{
	return major == 3 && minor == 11 ? PY311_RETURN_GENERATOR : 0;
}

const struct py_offsets *python_offsets_builtin(unsigned int major, unsigned int minor)
{
	if (major != 3)
		return NULL;
	switch (minor) {
	case 11:
		return &py311;
	case 12:
		return &py312;
	case 13:
		return &py313;
	default:
		return NULL;
	}
}
