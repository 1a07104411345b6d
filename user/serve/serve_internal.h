/* SPDX-License-Identifier: GPL-2.0 */
/*
 * serve_internal.h - what the endpoint files of user/serve share.
 */
#ifndef LP_SERVE_INTERNAL_H
#define LP_SERVE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <microhttpd.h>

#include "user/session/daemon.h"

#define SERVE_MAX_WINDOWS	 32   /* profile scrapes waiting at once */
#define SERVE_MAX_BODY		 4096 /* bytes of a POST body */
#define SERVE_CSRF_HEADER	 "X-Liveprof-Csrf"
#define SERVE_REQUEST_DEADLINE_S 10 /* to send a complete request header */

struct request;
struct serve_conn;
struct heap_prev;

struct serve {
	struct daemon *d;
	struct MHD_Daemon *mhd;
	char *token; /* bearer token, NULL: none needed */
	char csrf[33];
	unsigned short port;
	int n_windows;		   /* profile windows open */
	struct request *suspended; /* connections waiting for a window */
	uint64_t log_sec;	   /* rate limit of the request log */
	unsigned int logged, suppressed;
	uint64_t requests, rejected;
	struct serve_conn *conns;	      /* open connections, see serve_conn.c */
	uint64_t slow_closed;		      /* connections closed for want of a request */
	struct heap_prev *heap_prev;	      /* delta_heap's previous scrape */
	struct counts prev_block, prev_mutex; /* delta_block's and delta_mutex's */
	struct counts prev_block_waker, prev_mutex_waker; /* the same with ?stack=waker */
	bool reclaim_holder; /* the prev_* counts are remapped by reclaim passes */
};

enum prof_kind {
	PROF_CPU = 0,
	PROF_BLOCK,
	PROF_MUTEX,
};

struct request {
	struct serve *sv;
	struct MHD_Connection *conn;
	const char *url, *method;
	struct daemon_window w;
	bool started;	     /* the access handler has seen it */
	bool bad_uri;	     /* a NUL or control character in the URI */
	bool window_open;    /* w is subscribed */
	enum prof_kind kind; /* what the window becomes */
	bool waker_stacks;   /* block/mutex by the waker's stack (?stack=waker|holder) */
	bool suspended;
	struct MHD_Response *resp; /* ready to queue once resumed */
	unsigned int status;
	char *body;
	size_t body_len;
	bool body_too_big;
	struct request *next; /* in sv->suspended */
};

/**
 * serve__reply - queue a response with @len bytes of @buf (malloc'ed, taken over)
 *
 * Return: MHD_YES or MHD_NO.
 */
enum MHD_Result serve__reply(struct request *r, unsigned int status, const char *ctype, char *buf,
			     size_t len);

/**
 * serve__reply_static - queue a response of constant data (not copied)
 */
enum MHD_Result serve__reply_static(struct request *r, unsigned int status, const char *ctype,
				    const void *buf, size_t len);

/**
 * serve__error - log "METHOD URL from PEER: STATUS MESSAGE" (rate-limited)
 * and answer @status with the message as text/plain
 */
enum MHD_Result serve__error(struct request *r, unsigned int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** serve__suspend - park @r until serve__resume() (a profile window) */
void serve__suspend(struct request *r);
/** serve__resume - wake @r; its handler runs again and queues r->resp */
void serve__resume(struct request *r);

/**
 * serve__profile_of - symbolized profile of @c, taken in [@since, @until):
 * samples in split calls labelled class=slow|fast and function=F, other
 * samples inside a traced function labelled function=F
 *
 * Return: a profile the caller frees, or NULL on allocation failure.
 */
struct profile *serve__profile_of(struct daemon *d, const struct counts *c, uint64_t since,
				  uint64_t until);

/** serve__unix_ns - the Unix time in ns of monotonic instant @mono_ns */
uint64_t serve__unix_ns(uint64_t mono_ns);

/* Endpoints. Each answers @r; GET unless said otherwise. */
enum MHD_Result serve_pprof__profile(struct request *r);
enum MHD_Result serve_pprof__index(struct request *r);
enum MHD_Result serve_metrics__get(struct request *r);
/* serve_source.c: GET /source?function=F, per-line samples as text */
enum MHD_Result serve_source__get(struct request *r);
/* @which: "heap", "allocs" or "delta_heap" */
enum MHD_Result serve_heap__get(struct request *r, const char *which);
/** serve_heap__free - free delta_heap's state */
void serve_heap__free(struct serve *sv);
enum MHD_Result serve_ui__asset(struct request *r, const char *path);
enum MHD_Result serve_ui__state(struct request *r);
enum MHD_Result serve_ui__command(struct request *r); /* POST */

/** serve_conn__notify - libmicrohttpd's connection start/close callback */
void serve_conn__notify(void *cls, struct MHD_Connection *c, void **socket_context,
			enum MHD_ConnectionNotificationCode toe);
/** serve_conn__request - a request on @c began (@started) or ended */
void serve_conn__request(struct MHD_Connection *c, bool started);
/**
 * serve_conn__reap - shut down connections that have not sent a complete
 * request within SERVE_REQUEST_DEADLINE_S
 *
 * Return: how many were shut down.
 */
int serve_conn__reap(struct serve *sv);

/**
 * serve_pprof__window - answer @r with a @kind profile of the next
 * ?seconds=N (a window subscription; the connection waits)
 */
enum MHD_Result serve_pprof__window(struct request *r, enum prof_kind kind);

/* @which: "block", "mutex", "delta_block" or "delta_mutex" */
enum MHD_Result serve_block__get(struct request *r, const char *which);

/**
 * serve_block__filter - the off-CPU stacks of @src (@mutex: only those
 * waiting on a lock) into @out
 */
int serve_block__filter(struct daemon *d, const struct counts *src, bool mutex, struct counts *out);

/**
 * serve_block__wakers - the blocks of @pairs (counts by pair id of
 * d->holders) by their waker's stack (@mutex: only lock waits, whose
 * waker is the holder releasing the lock), into @out
 *
 * Return: 0 or a negative errno.
 */
int serve_block__wakers(struct daemon *d, const struct counts *pairs, bool mutex,
			struct counts *out);

/** serve_block__encode - @c as a contentions/delay pprof in a malloc'ed buffer */
int serve_block__encode(struct daemon *d, const struct counts *c, uint64_t start_ns,
			uint64_t duration_ns, char **buf, size_t *len);

/** serve_pprof__abort - free what a request that never completed still holds */
void serve_pprof__abort(struct request *r);

#endif
