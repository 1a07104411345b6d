// SPDX-License-Identifier: GPL-2.0
/*
 * log.c - the verbosity every layer's lp_debug() reads, set once by the CLI,
 * and the stream a thread's messages go to (stderr unless it sets one).
 */
#include "user/util/log.h"

int lp_verbose;
__thread FILE *lp_log_stream;
