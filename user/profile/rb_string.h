/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rb_string.h - CRuby Strings of a running process, as C strings.
 */
#ifndef LP_RB_STRING_H
#define LP_RB_STRING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../dwarf/ruby_runtime.h"

#define RB_NAME_MAX 128
#define RB_PATH_MAX 256

/**
 * rb_read_string() - read a Ruby String of process @pid.
 * @pid: the process
 * @o: its interpreter's offsets
 * @v: the String's VALUE
 * @out: the text, NUL-terminated, cut on a UTF-8 character boundary,
 *	bytes that are not UTF-8 (and control bytes) as '?'
 * @cap: size of @out, at most RB_PATH_MAX
 *
 * Return: 0, or a negative errno: -EINVAL (@v is not a String, or its
 * length is absurd), -EFAULT or -ESRCH (a read failed).
 */
int rb_read_string(pid_t pid, const struct rb_offsets *o, uint64_t v, char *out, size_t cap);

/**
 * rb_read_path() - read an iseq's path of process @pid.
 * @pid: the process
 * @o: its interpreter's offsets
 * @pathobj: location.pathobj: a String, or an Array [path, realpath]
 * @out: the path, as rb_read_string() gives it
 * @cap: size of @out, at most RB_PATH_MAX
 *
 * Return: 0, or a negative errno as rb_read_string()'s (-EINVAL also for
 * an Array that is empty or absurdly long).
 */
int rb_read_path(pid_t pid, const struct rb_offsets *o, uint64_t pathobj, char *out, size_t cap);

#endif /* LP_RB_STRING_H */
