// SPDX-License-Identifier: GPL-2.0
/*
 * serve_ui.c - the live web UI: embedded assets, its state as JSON, and
 * the commands it sends.
 */
#include "user/serve/serve_internal.h"

enum MHD_Result serve_ui__asset(struct request *r, const char *path)
{
	return serve__error(r, 404, "not found '%s'", path);
}

enum MHD_Result serve_ui__state(struct request *r)
{
	return serve__error(r, 404, "not found");
}

enum MHD_Result serve_ui__command(struct request *r)
{
	return serve__error(r, 404, "not found");
}
