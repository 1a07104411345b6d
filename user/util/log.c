// SPDX-License-Identifier: GPL-2.0
/*
 * log.c - the verbosity every layer's lp_debug() reads; set once by the CLI.
 */
#include "user/util/log.h"

int lp_verbose;
