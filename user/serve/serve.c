// SPDX-License-Identifier: GPL-2.0
/*
 * serve.c - the HTTP server: libmicrohttpd in the daemon's thread, limits,
 * authentication, CSRF, the request log and routing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "user/util/log.h"
#include "user/serve/query.h"
#include "user/serve/serve.h"
#include "user/serve/serve_internal.h"
#include "user/session/reclaim.h"
#include "user/util/util.h"

#define CONN_LIMIT     128	   /* connections at once; more are refused */
#define CONN_TIMEOUT_S 10	   /* idle connections (slow clients) are closed */
#define CONN_MEMORY    (32u << 10) /* per connection: headers past this get 431 */
#define LOG_PER_SECOND 20	   /* request log lines, the rest are counted */
#define TOKEN_MAX      4096
#define SHUTDOWN_MSG   "liveprof is shutting down\n"

static void peer(struct MHD_Connection *c, char *buf, size_t len)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	snprintf(buf, len, "?");
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, len);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, len);
}

/* Printable, bounded: a URL may hold anything a client sent. */
static void clean(const char *s, char *buf, size_t len)
{
	size_t i = 0;

	for (; s && *s && i + 1 < len; s++)
		buf[i++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	buf[i] = 0;
}

static void log_line(struct serve *sv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A flood must not turn into a flood of log lines: LOG_PER_SECOND at most. */
static void log_line(struct serve *sv, const char *fmt, ...)
{
	uint64_t sec = lp_now_ns() / 1000000000ULL;
	va_list ap;

	if (sec != sv->log_sec) {
		if (sv->suppressed)
			lp_warn("http: %u more requests refused in the last second",
				sv->suppressed);
		sv->log_sec = sec;
		sv->logged = sv->suppressed = 0;
	}
	if (sv->logged++ >= LOG_PER_SECOND) {
		sv->suppressed++;
		return;
	}
	va_start(ap, fmt);
	fputs("liveprof: warning: http: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

enum MHD_Result serve__reply(struct request *r, unsigned int status, const char *ctype, char *buf,
			     size_t len)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!resp) {
		free(buf);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", ctype);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	ret = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

enum MHD_Result serve__reply_static(struct request *r, unsigned int status, const char *ctype,
				    const void *buf, size_t len)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(len, (void *)buf, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", ctype);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	ret = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

enum MHD_Result serve__error(struct request *r, unsigned int status, const char *fmt, ...)
{
	char msg[256], url[160], who[64];
	va_list ap;
	char *body;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	clean(r->url, url, sizeof(url));
	peer(r->conn, who, sizeof(who));
	r->sv->rejected++;
	log_line(r->sv, "%u %s '%s' from %s: %s", status, r->method, url, who, msg);
	if (asprintf(&body, "%s\n", msg) < 0)
		return MHD_NO;
	return serve__reply(r, status, "text/plain; charset=utf-8", body, strlen(body));
}

void serve__suspend(struct request *r)
{
	MHD_suspend_connection(r->conn);
	r->suspended = true;
	r->next = r->sv->suspended;
	r->sv->suspended = r;
}

void serve__resume(struct request *r)
{
	for (struct request **p = &r->sv->suspended; *p; p = &(*p)->next) {
		if (*p == r) {
			*p = r->next;
			break;
		}
	}
	r->suspended = false;
	MHD_resume_connection(r->conn);
}

static bool authorized(struct request *r)
{
	if (!r->sv->token)
		return true;
	return query__bearer_ok(
		MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization"),
		r->sv->token);
}

static enum MHD_Result route_get(struct request *r)
{
	const char *u = r->url;

	if (!strcmp(u, "/debug/pprof/profile"))
		return serve_pprof__profile(r);
	if (!strcmp(u, "/debug/pprof/") || !strcmp(u, "/debug/pprof"))
		return serve_pprof__index(r);
	if (!strcmp(u, "/debug/pprof/heap") || !strcmp(u, "/debug/pprof/allocs") ||
	    !strcmp(u, "/debug/pprof/delta_heap"))
		return serve_heap__get(r, u + 13);
	if (!strcmp(u, "/debug/pprof/block") || !strcmp(u, "/debug/pprof/mutex") ||
	    !strcmp(u, "/debug/pprof/delta_block") || !strcmp(u, "/debug/pprof/delta_mutex"))
		return serve_block__get(r, u + 13);
	if (!strcmp(u, "/metrics"))
		return serve_metrics__get(r);
	if (!strcmp(u, "/api/state"))
		return serve_ui__state(r);
	if (!strcmp(u, "/source"))
		return serve_source__get(r);
	if (!strncmp(u, "/debug/pprof/", 13))
		return serve__error(r, 404, "unknown profile '%s'", u + 13);
	return serve_ui__asset(r, u);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct serve *sv = cls;
	struct request *r = *con_cls;

	(void)version;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		*con_cls = r;
	}
	if (!r->started) {
		r->started = true;
		r->sv = sv;
		r->conn = conn;
		r->url = url;
		r->method = method;
		sv->requests++;
		serve_conn__request(conn, true);
		if (r->bad_uri)
			return serve__error(r, 400, "malformed url");
		/* POST bodies arrive in the next calls; GETs are answered now. */
		if (!strcmp(method, "POST"))
			return MHD_YES;
	}
	if (r->resp) { /* a profile window is done */
		enum MHD_Result ret = MHD_queue_response(conn, r->status, r->resp);

		MHD_destroy_response(r->resp);
		r->resp = NULL;
		return ret;
	}
	if (r->suspended || r->window_open)
		return MHD_YES;
	if (!strcmp(method, "POST") && *upload_data_size) {
		if (r->body_len + *upload_data_size > SERVE_MAX_BODY) {
			r->body_too_big = true;
		} else {
			char *b = realloc(r->body, r->body_len + *upload_data_size + 1);

			if (!b)
				return MHD_NO;
			memcpy(b + r->body_len, upload_data, *upload_data_size);
			r->body = b;
			r->body_len += *upload_data_size;
			b[r->body_len] = 0;
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (!authorized(r))
		return serve__error(r, 401, "missing or wrong bearer token");
	if (!strcmp(method, "GET") || !strcmp(method, "HEAD"))
		return route_get(r);
	if (!strcmp(method, "POST")) {
		if (r->body_too_big)
			return serve__error(r, 413, "request body over %d bytes", SERVE_MAX_BODY);
		if (!query__token_ok(
			    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, SERVE_CSRF_HEADER),
			    sv->csrf))
			return serve__error(r, 403, "missing or wrong %s header",
					    SERVE_CSRF_HEADER);
		if (!strcmp(url, "/api/command"))
			return serve_ui__command(r);
		return serve__error(r, 404, "no such command endpoint");
	}
	return serve__error(r, 405, "method not allowed");
}

/*
 * The URI as sent, before decoding: libmicrohttpd hands the handler a C
 * string, in which a "%00" would silently cut the path short.
 */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct request *r = calloc(1, sizeof(*r));

	(void)cls;
	(void)conn;
	if (!r)
		return NULL;
	for (const char *p = uri; *p && !r->bad_uri; p++)
		r->bad_uri = (unsigned char)*p < 0x20 || *p == 0x7f ||
			     (p[0] == '%' && p[1] == '0' && p[2] == '0');
	return r;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct request *r = *con_cls;

	(void)cls;
	(void)toe;
	serve_conn__request(conn, false);
	if (!r)
		return;
	serve_pprof__abort(r);
	if (r->resp)
		MHD_destroy_response(r->resp);
	free(r->body);
	free(r);
	*con_cls = NULL;
}

/* libmicrohttpd's own refusals (headers too large, connection limit). */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct serve *sv = cls;
	char msg[256];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '.'))
		msg[--n] = 0;
	/* Our messages start in lowercase; acronyms ("MHD_...") stay. */
	if (n > 1 && msg[0] >= 'A' && msg[0] <= 'Z' && msg[1] >= 'a' && msg[1] <= 'z')
		msg[0] = (char)(msg[0] + 32);
	log_line(sv, "%s", msg);
}

static void on_poll(void *ctx)
{
	struct serve *sv = ctx;
	int n;

	MHD_run(sv->mhd);
	n = serve_conn__reap(sv);
	if (n) {
		sv->slow_closed += (unsigned)n;
		log_line(sv, "closed %d connection%s that sent no complete request in %d s", n,
			 n > 1 ? "s" : "", SERVE_REQUEST_DEADLINE_S);
	}
}

static int read_token(const char *path, char **out)
{
	char buf[TOKEN_MAX + 1];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f) {
		int err = -errno;

		lp_err("cannot read token file '%s': %s", path, strerror(errno));
		return err;
	}
	n = fread(buf, 1, TOKEN_MAX, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		buf[--n] = 0;
	if (!n || strpbrk(buf, "\r\n")) {
		lp_err("token file '%s' must hold one non-empty line", path);
		return -EACCES;
	}
	*out = strdup(buf);
	return *out ? 0 : -ENOMEM;
}

static int random_hex(char *out, size_t bytes)
{
	unsigned char r[32];

	if (bytes > sizeof(r) || getrandom(r, bytes, 0) != (ssize_t)bytes)
		return -EIO;
	for (size_t i = 0; i < bytes; i++)
		sprintf(out + 2 * i, "%02x", r[i]);
	return 0;
}

static int listen_on(struct serve *sv, const struct sockaddr_storage *ss)
{
	const union MHD_DaemonInfo *di;
	char host[INET6_ADDRSTRLEN];
	unsigned int flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	struct MHD_OptionItem opts[] = {
		{MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, sv}, /* first, as MHD asks */
		{MHD_OPTION_SOCK_ADDR, 0, (void *)ss},
		{MHD_OPTION_CONNECTION_LIMIT, CONN_LIMIT, NULL},
		{MHD_OPTION_CONNECTION_TIMEOUT, CONN_TIMEOUT_S, NULL},
		{MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONN_MEMORY, NULL},
		{MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, sv},
		{MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)serve_conn__notify, sv},
		{MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, sv},
		{MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL},
		{MHD_OPTION_END, 0, NULL},
	};

	if (ss->ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	sv->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, sv, MHD_OPTION_ARRAY, opts,
				   MHD_OPTION_END);
	if (!sv->mhd)
		return -EADDRINUSE;
	di = MHD_get_daemon_info(sv->mhd, MHD_DAEMON_INFO_BIND_PORT);
	sv->port = di ? di->port : 0;
	if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, host,
			  sizeof(host));
	else
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, host, sizeof(host));
	lp_info("serving http://%s%s%s:%u/", ss->ss_family == AF_INET6 ? "[" : "", host,
		ss->ss_family == AF_INET6 ? "]" : "", sv->port);
	di = MHD_get_daemon_info(sv->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!di)
		return -EIO;
	return daemon__add_poller(sv->d, di->epoll_fd, on_poll, sv);
}

/* The previous delta scrapes by waiter stack follow the stacks the daemon
 * folds, so that a fold shows in no delta (user/session/reclaim.h). The
 * ?stack=waker ones need nothing: waker stacks are pinned, never folded. */
static int remap_prev(void *ctx, const uint32_t *map, size_t n_map)
{
	struct serve *sv = ctx;

	return counts__remap(&sv->prev_block, map, n_map) ||
			       counts__remap(&sv->prev_mutex, map, n_map)
		       ? -ENOMEM
		       : 0;
}

int serve__start(struct serve **out, struct daemon *d, const struct serve_opts *o)
{
	struct sockaddr_storage ss;
	struct serve *sv;
	socklen_t len;
	bool loopback;
	int err;

	*out = NULL;
	if (query__addr(o->addr, &ss, &len, &loopback)) {
		lp_err("invalid --http address '%s' (expected ADDR:PORT, e.g. 127.0.0.1:6060)",
		       o->addr);
		return -EINVAL;
	}
	if (!loopback && !o->token_file) {
		lp_err("--http '%s' is not a loopback address: that needs --http-token FILE",
		       o->addr);
		return -EINVAL;
	}
	sv = calloc(1, sizeof(*sv));
	if (!sv)
		return -ENOMEM;
	sv->d = d;
	counts__init(&sv->prev_block);
	counts__init(&sv->prev_mutex);
	counts__init(&sv->prev_block_waker);
	counts__init(&sv->prev_mutex_waker);
	err = reclaim__add_holder(d->reclaim, remap_prev, sv);
	if (!err)
		sv->reclaim_holder = true;
	if (!err)
		err = o->token_file ? read_token(o->token_file, &sv->token) : 0;
	if (!err)
		err = random_hex(sv->csrf, 16);
	if (!err) {
		err = listen_on(sv, &ss);
		if (err == -EADDRINUSE)
			lp_err("cannot listen on '%s': address in use or not available", o->addr);
		else if (err)
			lp_err("cannot listen on '%s': %s", o->addr, strerror(-err));
	}
	if (err) {
		serve__stop(sv);
		return err;
	}
	*out = sv;
	return 0;
}

void serve__stop(struct serve *sv)
{
	if (!sv)
		return;
	/* MHD refuses to stop with suspended connections: wake them with 503. */
	while (sv->suspended) {
		struct request *r = sv->suspended;

		serve_pprof__abort(r);
		r->status = 503;
		r->resp = MHD_create_response_from_buffer(
			strlen(SHUTDOWN_MSG), (void *)SHUTDOWN_MSG, MHD_RESPMEM_PERSISTENT);
		serve__resume(r);
	}
	daemon__remove_poller(sv->d, sv);
	if (sv->mhd) {
		MHD_run(sv->mhd);
		MHD_stop_daemon(sv->mhd);
	}
	serve_heap__free(sv);
	if (sv->reclaim_holder)
		reclaim__remove_holder(sv->d->reclaim, sv);
	counts__free(&sv->prev_block);
	counts__free(&sv->prev_mutex);
	counts__free(&sv->prev_block_waker);
	counts__free(&sv->prev_mutex_waker);
	free(sv->token);
	free(sv);
}

unsigned short serve__port(const struct serve *sv)
{
	return sv->port;
}
