/* SPDX-License-Identifier: GPL-2.0 */
/*
 * log.h - the one place messages for users are formatted:
 * "liveprof: <lowercase message, subject quoted, no final full stop>".
 */
#ifndef LP_USER_LOG_H
#define LP_USER_LOG_H

#include <stdio.h>

/*
 * Where this thread's messages go: stderr, unless it set its own stream.
 * A background thread keeps its lines for the main thread to print at a
 * point of its choosing, so that they never land after a run's last word.
 */
extern __thread FILE *lp_log_stream;
#define LP_LOG (lp_log_stream ? lp_log_stream : stderr)

#define lp_err(fmt, ...)  fprintf(LP_LOG, "liveprof: " fmt "\n", ##__VA_ARGS__)
#define lp_info(fmt, ...) fprintf(LP_LOG, "liveprof: " fmt "\n", ##__VA_ARGS__)
#define lp_warn(fmt, ...) fprintf(LP_LOG, "liveprof: warning: " fmt "\n", ##__VA_ARGS__)

extern int lp_verbose;
#define lp_debug(fmt, ...)                                                                         \
	do {                                                                                       \
		if (lp_verbose)                                                                    \
			fprintf(LP_LOG, "liveprof: " fmt "\n", ##__VA_ARGS__);                     \
	} while (0)

#endif
