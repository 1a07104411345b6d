/* SPDX-License-Identifier: GPL-2.0 */
/*
 * serve.h - liveprof over HTTP: Go's /debug/pprof conventions for
 * continuous profilers, /metrics for Prometheus, and a live web UI at /.
 *
 * The server runs in the daemon's thread (libmicrohttpd driven from
 * daemon__poll), so every request reads the daemon between polls like the
 * TUI does, and no endpoint loads BPF of its own: a CPU profile of the next
 * N seconds is a window subscription on the one sampler.
 */
#ifndef LP_SERVE_SERVE_H
#define LP_SERVE_SERVE_H

struct daemon;
struct serve;

struct serve_opts {
	const char *addr;	/* "ADDR:PORT", loopback when ADDR is empty */
	const char *token_file; /* bearer token, required off loopback; NULL: none */
};

/**
 * serve__start - listen on @o->addr and serve daemon @d until serve__stop()
 * @out: the server, owned by the caller
 *
 * Prints a one-line message on failure.
 * Return: 0, -EINVAL (bad address, or no token for a non-loopback address:
 * a usage error), -EACCES (unreadable or empty token file) or another
 * negative errno (cannot listen).
 */
int serve__start(struct serve **out, struct daemon *d, const struct serve_opts *o);

/**
 * serve__stop - close every connection (pending scrapes get 503), stop
 * listening and free @s; NULL is ignored
 */
void serve__stop(struct serve *s);

/** serve__port - the port the server listens on (useful with port 0) */
unsigned short serve__port(const struct serve *s);

#endif
