// SPDX-License-Identifier: GPL-2.0
/*
 * query.c - parsing of client-controlled strings for the HTTP server.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "user/serve/query.h"

int query__seconds(const char *v, size_t len, int def, int max, int *out)
{
	long n = 0;

	if (!v) {
		*out = def;
		return 0;
	}
	if (!len)
		return -EINVAL;
	/* By length: a decoded "%00" must not end the value early. */
	for (const char *p = v; p < v + len; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		/* Saturate instead of overflowing: "99999999999999" is out of range. */
		if (n <= max)
			n = n * 10 + (*p - '0');
	}
	if (n == 0)
		return -EINVAL;
	if (n > max)
		return -ERANGE;
	*out = (int)n;
	return 0;
}

int query__bool(const char *v, bool def, bool *out)
{
	if (!v) {
		*out = def;
		return 0;
	}
	if (!strcmp(v, "1") || !strcmp(v, "true")) {
		*out = true;
		return 0;
	}
	if (!strcmp(v, "0") || !strcmp(v, "false")) {
		*out = false;
		return 0;
	}
	return -EINVAL;
}

static int parse_port(const char *s, unsigned short *port)
{
	long n = 0;

	if (!*s || strlen(s) > 5)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		n = n * 10 + (*p - '0');
	}
	if (n > 65535)
		return -EINVAL;
	*port = (unsigned short)n;
	return 0;
}

int query__addr(const char *s, struct sockaddr_storage *ss, socklen_t *len, bool *loopback)
{
	char host[64];
	const char *colon, *h = s;
	size_t hn;
	unsigned short port;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return -EINVAL;
		h = s + 1;
		hn = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		hn = (size_t)(colon - s);
	}
	if (hn >= sizeof(host) || parse_port(colon + 1, &port))
		return -EINVAL;
	memcpy(host, h, hn);
	host[hn] = 0;
	if (!hn || !strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	if (s[0] == '[') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return -EINVAL;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		*len = sizeof(*a);
		*loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return -EINVAL;
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		*len = sizeof(*a);
		*loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	return 0;
}

bool query__token_ok(const char *presented, const char *token)
{
	size_t n = strlen(token), m = presented ? strlen(presented) : 0;
	unsigned char diff = (unsigned char)(n != m);

	if (!presented)
		return false;
	/* Walk the whole token whatever was presented: no early exit. */
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)token[i] ^ (unsigned char)(i < m ? presented[i] : 0);
	return !diff;
}

bool query__bearer_ok(const char *hdr, const char *token)
{
	static const char prefix[] = "Bearer ";

	if (!hdr || strncmp(hdr, prefix, sizeof(prefix) - 1))
		return false;
	return query__token_ok(hdr + sizeof(prefix) - 1, token);
}
