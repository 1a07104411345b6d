/* SPDX-License-Identifier: GPL-2.0 */
/* causal_cmd.h - `liveprof causal` (causal_cmd.c) */
#ifndef LP_CLI_CAUSAL_CMD_H
#define LP_CLI_CAUSAL_CMD_H

/**
 * cmd_causal - `liveprof causal`: argv[0] is "causal"
 *
 * Return: the exit status (user/util/exit_codes.h).
 */
int cmd_causal(int argc, char **argv);

#endif
