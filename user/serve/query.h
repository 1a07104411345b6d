/* SPDX-License-Identifier: GPL-2.0 */
/*
 * query.h - parsing of what an HTTP client controls: query parameters,
 * the listen address, the bearer token. Pure functions, no libmicrohttpd,
 * so that tests/fuzz can drive them with any bytes.
 */
#ifndef LP_SERVE_QUERY_H
#define LP_SERVE_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* Longest profile a scrape may ask for (Go has no limit of its own). */
#define QUERY_MAX_SECONDS 3600

/**
 * query__seconds - the value of a "seconds" parameter
 * @v: the decoded value, NULL when absent
 * @len: its length in bytes (it may hold NUL bytes)
 * @def: the value when absent
 * @out: the number of seconds, 1..@max
 *
 * Only decimal digits are accepted (no sign, space, fraction or exponent).
 * Return: 0, -EINVAL for anything but a positive integer, -ERANGE above @max.
 */
int query__seconds(const char *v, size_t len, int def, int max, int *out);

/**
 * query__bool - a boolean parameter: "1"/"true" or "0"/"false"; NULL is @def
 *
 * Return: 0, or -EINVAL.
 */
int query__bool(const char *v, bool def, bool *out);

/**
 * query__addr - parse "ADDR:PORT", "[V6ADDR]:PORT" or ":PORT" (loopback)
 * @ss, @len: the socket address
 * @loopback: whether the address is 127.0.0.0/8 or ::1
 *
 * Return: 0, or -EINVAL.
 */
int query__addr(const char *s, struct sockaddr_storage *ss, socklen_t *len, bool *loopback);

/**
 * query__bearer_ok - whether the Authorization header @hdr carries "Bearer @token"
 *
 * The comparison takes the same time wherever the first difference is.
 */
bool query__bearer_ok(const char *hdr, const char *token);

/**
 * query__token_ok - constant-time comparison of a presented token with @token
 */
bool query__token_ok(const char *presented, const char *token);

#endif
