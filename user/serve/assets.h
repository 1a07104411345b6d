/* SPDX-License-Identifier: GPL-2.0 */
/*
 * assets.h - the web UI's files, embedded at build time from
 * user/serve/assets/ by user/serve/gen_assets.sh (no network, no framework).
 */
#ifndef LP_SERVE_ASSETS_H
#define LP_SERVE_ASSETS_H

#include <stddef.h>

struct serve_asset {
	const char *path; /* "/app.js"; index.html is also "/" */
	const char *ctype;
	const unsigned char *data;
	size_t len;
};

extern const struct serve_asset serve_assets[];
extern const size_t serve_n_assets;

#endif
