// SPDX-License-Identifier: GPL-2.0
/*
 * serve_conn.c - a deadline per request against slow clients.
 *
 * libmicrohttpd's connection timeout is an idle timeout: a client that
 * sends one header byte every few seconds (slowloris) is never idle and
 * would hold a connection slot forever. Every connection here gets
 * SERVE_REQUEST_DEADLINE_S to deliver a complete request header, counted
 * from its start or from the end of its previous request; past that, its
 * socket is shut down, which libmicrohttpd sees as the client going away.
 */
#include <stdlib.h>
#include <sys/socket.h>

#include "user/serve/serve_internal.h"
#include "user/util/util.h"

struct serve_conn {
	struct MHD_Connection *c;
	int fd;
	uint64_t since_ns; /* waiting for a complete request header since */
	bool in_request;   /* the access handler has it (or a profile window) */
	bool closed;
	struct serve_conn *prev, *next;
};

void serve_conn__notify(void *cls, struct MHD_Connection *c, void **socket_context,
			enum MHD_ConnectionNotificationCode toe)
{
	struct serve *sv = cls;
	struct serve_conn *k = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		k = calloc(1, sizeof(*k));
		if (!k)
			return; /* no deadline for it, the idle timeout still applies */
		k->c = c;
		k->fd = ci ? ci->connect_fd : -1;
		k->since_ns = lp_now_ns();
		k->next = sv->conns;
		if (sv->conns)
			sv->conns->prev = k;
		sv->conns = k;
		*socket_context = k;
		return;
	}
	if (!k)
		return;
	if (k->prev)
		k->prev->next = k->next;
	else
		sv->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	free(k);
	*socket_context = NULL;
}

static struct serve_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

void serve_conn__request(struct MHD_Connection *c, bool started)
{
	struct serve_conn *k = conn_of(c);

	if (!k)
		return;
	k->in_request = started;
	k->since_ns = lp_now_ns();
}

int serve_conn__reap(struct serve *sv)
{
	uint64_t now = lp_now_ns();
	int n = 0;

	for (struct serve_conn *k = sv->conns; k; k = k->next) {
		if (k->in_request || k->closed || k->fd < 0 ||
		    now - k->since_ns < SERVE_REQUEST_DEADLINE_S * 1000000000ULL)
			continue;
		shutdown(k->fd, SHUT_RDWR);
		k->closed = true;
		n++;
	}
	return n;
}
