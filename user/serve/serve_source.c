// SPDX-License-Identifier: GPL-2.0
/*
 * serve_source.c - GET /source?function=F[&view=window|run]: the samples
 * per source line and per instruction of F (the hot functions without
 * F), as text like perf annotate --stdio: the Source view of the TUI and
 * -o annotate.txt, over HTTP.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user/profile/annotate.h"
#include "user/profile/stack_store.h"
#include "user/serve/serve_internal.h"
#include "user/session/daemon.h"
#include "user/session/report.h"

#define MAX_FUNC_NAME 256

enum MHD_Result serve_source__get(struct request *r)
{
	const char *fn = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "function");
	const char *v = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "view");
	struct daemon *d = r->sv->d;
	struct counts win;
	struct profile *p;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	if (v && strcmp(v, "window") && strcmp(v, "run"))
		return serve__error(r, 400, "invalid view '%.32s' (window or run)", v);
	if (fn && (!*fn || strlen(fn) > MAX_FUNC_NAME))
		return serve__error(r, 400, "invalid function name");
	daemon__symbolize_new(d);
	counts__init(&win);
	/* the whole run by default: a page opened late still shows everything */
	if (v && !strcmp(v, "window") && daemon__window_counts(d, &win)) {
		counts__free(&win);
		return serve__error(r, 500, "out of memory");
	}
	p = report__build_profile(d, v && !strcmp(v, "window") ? &win : NULL);
	counts__free(&win);
	f = p ? open_memstream(&buf, &len) : NULL;
	if (!f) {
		profile__free(p);
		return serve__error(r, 500, "out of memory");
	}
	err = write_annotate(p, f, &(struct annotate_opts){.func = fn});
	fclose(f);
	profile__free(p);
	if (err) {
		free(buf);
		return serve__error(r, 500, "cannot annotate: %s", strerror(-err));
	}
	return serve__reply(r, 200, "text/plain; charset=utf-8", buf, len);
}
