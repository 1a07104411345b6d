/* SPDX-License-Identifier: GPL-2.0 */
/*
 * command_libs.h - the files a launched command will map, before it runs:
 * to put a library's probes on the file before the exec, and to know that
 * the process will map a C++ runtime however deep it is needed.
 */
#ifndef LP_USER_SESSION_COMMAND_LIBS_H
#define LP_USER_SESSION_COMMAND_LIBS_H

/**
 * command_libs__each - call @fn with each file command @cmd will map
 * @cmd: the command as given (searched in $PATH as execvp does; a '#!'
 *	script's interpreter: lp_exec_resolve())
 * @fn: called with each file's path, in the dynamic linker's order, until
 *	it returns nonzero
 * @ctx: passed to @fn
 *
 * Asks the dynamic linker @cmd names (PT_INTERP, only one named like one:
 * ld-*, ld.so*) with --list, as ldd does, for at most 2 s.
 *
 * Return: what @fn returned last (0 if it never stopped the walk), or
 * -ENOENT when there is no listing (a static program, a script, a missing
 * file, a linker that failed), or -ENOMEM.
 */
int command_libs__each(const char *cmd, int (*fn)(const char *path, void *ctx), void *ctx);

#endif
