/* SPDX-License-Identifier: GPL-2.0 */
/*
 * log.h - the one place messages for users are formatted:
 * "liveprof: <lowercase message, subject quoted, no final full stop>".
 */
#ifndef LP_USER_LOG_H
#define LP_USER_LOG_H

#include <stdio.h>

#define lp_err(fmt, ...)  fprintf(stderr, "liveprof: " fmt "\n", ##__VA_ARGS__)
#define lp_info(fmt, ...)  fprintf(stderr, "liveprof: " fmt "\n", ##__VA_ARGS__)
#define lp_warn(fmt, ...) fprintf(stderr, "liveprof: warning: " fmt "\n", ##__VA_ARGS__)

extern int lp_verbose;
#define lp_debug(fmt, ...)                                                                         \
	do {                                                                                       \
		if (lp_verbose)                                                                    \
			fprintf(stderr, "liveprof: " fmt "\n", ##__VA_ARGS__);                     \
	} while (0)

#endif
