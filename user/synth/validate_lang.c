// SPDX-License-Identifier: GPL-2.0
/*
 * validate_lang.c - what `liveprof validate` needs to know per language:
 * the tool that builds or runs an emitted program (cc, go, python3, ruby),
 * how to start it, and which frame of a measured stack is the emitted
 * function whose self work the sample counts.
 *
 * C and Go programs are built, and their leaf frame is the function
 * (Go prefixes "main."). Python and Ruby programs run in their
 * interpreter, and liveprof merges the interpreter's frames into the
 * native stack as "NAME (FILE:LINE)" (Ruby's "Object#NAME": the emitted
 * defs are top-level methods, of Object). Below the deepest of them are the
 * evaluator's own C frames that execute that function's bytecode, so the
 * function with the self work is the deepest frame from the emitted file,
 * as py-spy and rbspy count it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "user/util/exit_codes.h"
#include "user/util/log.h"
#include "user/util/util.h"
#include "user/synth/validate.h"

static const struct vlang langs[] = {
	{"c", "C", "c", "cc", "C compiler", false},
	{"go", "Go", "go", "go", "Go toolchain", false},
	{"python", "Python", "py", "python3", "Python interpreter", true},
	{"ruby", "Ruby", "rb", "ruby", "Ruby interpreter", true},
};

const struct vlang *vlang_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(langs) / sizeof(langs[0]); i++)
		if (!strcmp(langs[i].name, name))
			return &langs[i];
	return NULL;
}

/* The program that builds or runs @vo's language: --interpreter or the default. */
static const char *tool_of(const struct vopts *vo, const struct vlang *l)
{
	return l->script && vo->interpreter ? vo->interpreter : l->tool;
}

const char *validate_tool(const struct vopts *vo)
{
	return tool_of(vo, vlang_find(vo->lang));
}

int validate_check_tool(const struct vopts *vo)
{
	const struct vlang *l = vlang_find(vo->lang);
	const char *tool = tool_of(vo, l);
	char path[4096];

	if (strchr(tool, '/') ? !access(tool, X_OK) : !lp_path_search(tool, path, sizeof(path)))
		return 0;
	lp_err("validate: cannot %s the %s program: the %s '%s' is %s", l->script ? "run" : "build",
	       l->title, l->tool_desc, tool,
	       strchr(tool, '/') ? "not an executable file" : "not installed (not in PATH)");
	return EXIT_NO_TARGET;
}

int validate_build(const char *lang, const char *dir, const char *src, const char *prog)
{
	char gocache[4096];
	int ret;

	if (!strcmp(lang, "c")) {
		/*
		 * -O0: the emitted file asks for frame pointers and no sibling
		 * calls itself, every function is noipa and the busy loop is
		 * always inlined, so the shares do not depend on the level, and
		 * -O1 takes ~4x longer on a 2,000-function program.
		 */
		char *argv[] = {"cc", "-O0", (char *)src, "-o", (char *)prog, "-lpthread", NULL};

		ret = validate_wait(validate_spawn(argv, NULL, false));
	} else if (!strcmp(lang, "go")) {
		char *argv[] = {"go", "build", "-o", (char *)prog, (char *)src, NULL};
		char *env[] = {"GO111MODULE=off", "GOFLAGS=", NULL, NULL};

		/* go needs a writable cache even for one file; HOME may be unset. */
		if (!getenv("GOCACHE") && !getenv("HOME")) {
			snprintf(gocache, sizeof(gocache), "GOCACHE=%s/gocache", dir);
			env[2] = gocache;
		}
		ret = validate_wait(validate_spawn(argv, env, false));
	} else {
		return 0; /* an interpreter runs the source itself */
	}
	if (ret) {
		lp_err("validate: building '%s' failed (%s %d)", src, ret < 0 ? "error" : "exit",
		       ret);
		return EXIT_NO_TARGET;
	}
	return 0;
}

pid_t validate_start_program(const struct vopts *vo, const char *src, const char *prog,
			     const char *seconds)
{
	const struct vlang *l = vlang_find(vo->lang);

	if (l->script) {
		char *argv[] = {(char *)tool_of(vo, l), (char *)(vo->program ? vo->program : src),
				(char *)seconds, NULL};

		return validate_spawn(argv, NULL, true);
	} else {
		char *argv[] = {(char *)prog, (char *)seconds, NULL};

		return validate_spawn(argv, NULL, true);
	}
}

/* The profile index of emitted function @name (@len bytes), or -1. */
static long ident_index(const struct emit_tree *t, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < t->n_names; i++)
		if (strlen(t->names[i].ident) == len && !memcmp(t->names[i].ident, name, len))
			return (long)i;
	return -1;
}

size_t validate_script_frame_name(const char *frame, const char *file)
{
	const char *open = strrchr(frame, '(');
	size_t flen = strlen(file);
	const char *p;

	if (!open || open < frame + 2 || open[-1] != ' ' || strncmp(open + 1, file, flen) ||
	    open[1 + flen] != ':')
		return 0;
	p = open + 2 + flen;
	if (*p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9')
		p++;
	return strcmp(p, ")") ? 0 : (size_t)(open - 1 - frame);
}

long validate_leaf_ident(const struct emit_tree *t, const struct vopts *vo, const char *src_base,
			 const struct profile *m, const struct profile_sample *s)
{
	const struct vlang *l = vlang_find(vo->lang);
	const char *name;
	uint32_t d;
	size_t len;

	if (!s->depth)
		return -1;
	if (!l->script) {
		if (s->frames[s->depth - 1] >= m->n_frames)
			return -1;
		name = m->frames[s->frames[s->depth - 1]].name;
		/* Go shows package main's functions as main.NAME. */
		if (!strcmp(l->name, "go")) {
			if (strncmp(name, "main.", 5) != 0)
				return -1;
			name += 5;
		}
		return ident_index(t, name, strlen(name));
	}
	for (d = s->depth; d-- > 0;) {
		if (s->frames[d] >= m->n_frames)
			continue;
		name = m->frames[s->frames[d]].name;
		len = validate_script_frame_name(name, src_base);
		/* Ruby qualifies a method by its class, and the emitted defs
		 * are top-level ones, methods of Object: Object#NAME is NAME,
		 * as Go's main.NAME is. */
		if (len > 7 && !strcmp(l->name, "ruby") && !strncmp(name, "Object#", 7)) {
			name += 7;
			len -= 7;
		}
		/* The deepest frame of the script; its harness (_lp_*) is elsewhere. */
		if (len)
			return ident_index(t, name, len);
	}
	return -1;
}
