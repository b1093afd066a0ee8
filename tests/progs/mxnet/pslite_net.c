/* pslite_net.c - poll(2) transport of pslite_contract (see pslite_net.h). */
#include "pslite_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "services/evloop.h"

#define RETRY_MS    100   /* ZMQ_RECONNECT_IVL default */
#define POLL_MAX_MS 100   /* re-check timers at least this often */
#define READ_CHUNK  65536
#define IN_LIMIT    (DLRT_PSLITE_HDR_LEN + DLRT_PSLITE_MAX_BODY)
#define OUT_LIMIT   (64u << 20)

static void logv(const struct pnet *n, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void logv(const struct pnet *n, int level, const char *fmt, ...)
{
	va_list ap;

	if (n->verbose < level)
		return;
	fprintf(stderr, "pslite_contract[%s]: ", n->who);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void pnet_init(struct pnet *n, pnet_msg_fn on_msg, pnet_close_fn on_close, void *ctx,
	       int verbose)
{
	memset(n, 0, sizeof(*n));
	n->lfd = -1;
	n->max_conns = 3 * DLRT_PSLITE_MAX_NODES + 16;
	n->on_msg = on_msg;
	n->on_close = on_close;
	n->ctx = ctx;
	n->verbose = verbose;
	n->last_msg_ms = dlrt_now_ms();
	snprintf(n->who, sizeof(n->who), "?");
}

static void conn_close_fd(struct pnet_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

void pnet_destroy(struct pnet *n)
{
	for (size_t i = 0; i < n->nconns; i++) {
		conn_close_fd(n->conns[i]);
		dlrt_buf_free(&n->conns[i]->in);
		dlrt_buf_free(&n->conns[i]->out);
		free(n->conns[i]);
	}
	free(n->conns);
	if (n->lfd >= 0)
		close(n->lfd);
	n->conns = NULL;
	n->nconns = n->cap = 0;
	n->lfd = -1;
}

static void set_sockopts(int fd)
{
	int one = 1, idle = 2, intvl = 1, cnt = 3;

	/* Small control messages must not wait for Nagle. Keepalive notices a
	 * peer whose host vanished without a FIN (a killed node) within seconds. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

int pnet_listen(struct pnet *n, const char *ip, uint16_t port, struct dlrt_err *err)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	socklen_t alen = sizeof(a);
	int fd, one = 1;

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		return dlrt_err_set(err, "'%s' is not a numeric IPv4 address", ip);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return dlrt_err_errno(err, errno, "socket");
	/* ZMQ's tcp_listener sets SO_REUSEADDR: a port in TIME_WAIT is reusable,
	 * one that another process listens on is still EADDRINUSE. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 1024) < 0) {
		int e = errno;

		close(fd);
		return dlrt_err_errno(err, e, "bind %s:%u", ip, port);
	}
	getsockname(fd, (struct sockaddr *)&a, &alen);
	n->lfd = fd;
	n->laddr = a;
	logv(n, 1, "listening on %s:%u", ip, ntohs(a.sin_port));
	return 0;
}

uint16_t pnet_port(const struct pnet *n)
{
	return ntohs(n->laddr.sin_port);
}

static struct pnet_conn *conn_new(struct pnet *n, struct dlrt_err *err)
{
	struct pnet_conn *c;

	if (n->nconns >= n->max_conns) {
		dlrt_err_set(err, "more than %u connections", n->max_conns);
		return NULL;
	}
	if (n->nconns == n->cap) {
		size_t cap = n->cap ? 2 * n->cap : 16;
		struct pnet_conn **p = realloc(n->conns, cap * sizeof(*p));

		if (!p) {
			dlrt_err_set(err, "out of memory");
			return NULL;
		}
		n->conns = p;
		n->cap = cap;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		dlrt_err_set(err, "out of memory");
		return NULL;
	}
	c->fd = -1;
	c->peer_id = -1;
	c->tag = -1;
	dlrt_buf_init(&c->in, IN_LIMIT);
	dlrt_buf_init(&c->out, OUT_LIMIT);
	n->conns[n->nconns++] = c;
	return c;
}

/* One non-blocking connect attempt; the result is seen by poll. */
static void conn_attempt(struct pnet *n, struct pnet_conn *c)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	c->state = PNET_CONNECTING;
	if (fd < 0) {
		c->last_errno = errno;
		c->state = PNET_RETRY_WAIT;
		c->retry_at_ms = dlrt_now_ms() + RETRY_MS;
		return;
	}
	set_sockopts(fd);
	c->fd = fd;
	if (connect(fd, (struct sockaddr *)&c->addr, sizeof(c->addr)) == 0) {
		c->state = PNET_OPEN;
		logv(n, 1, "connected to %s", c->what);
		return;
	}
	if (errno == EINPROGRESS)
		return;
	c->last_errno = errno;
	conn_close_fd(c);
	c->state = PNET_RETRY_WAIT;
	c->retry_at_ms = dlrt_now_ms() + RETRY_MS;
}

struct pnet_conn *pnet_connect(struct pnet *n, const char *ip, uint16_t port, int32_t peer_id,
			       const char *what, int64_t give_up_at_ms, struct dlrt_err *err)
{
	struct pnet_conn *c;
	struct in_addr a;

	if (inet_pton(AF_INET, ip, &a) != 1) {
		dlrt_err_set(err, "%s: '%s' is not a numeric IPv4 address", what, ip);
		return NULL;
	}
	c = conn_new(n, err);
	if (!c)
		return NULL;
	c->outgoing = true;
	c->peer_id = peer_id;
	c->addr.sin_family = AF_INET;
	c->addr.sin_addr = a;
	c->addr.sin_port = htons(port);
	c->give_up_at_ms = give_up_at_ms;
	c->last_errno = ETIMEDOUT;
	snprintf(c->what, sizeof(c->what), "%s", what);
	conn_attempt(n, c);
	return c;
}

static int conn_ended(struct pnet *n, struct pnet_conn *c, int e, struct dlrt_err *err)
{
	conn_close_fd(c);
	c->state = PNET_CLOSED;
	logv(n, 1, "connection with %s ended%s%s", c->what, e ? ": " : "", e ? strerror(e) : "");
	return n->on_close ? n->on_close(n, c, n->ctx, err) : 0;
}

static int do_accept(struct pnet *n, struct dlrt_err *err)
{
	for (;;) {
		struct sockaddr_in a;
		socklen_t alen = sizeof(a);
		struct pnet_conn *c;
		char ip[INET_ADDRSTRLEN];
		int fd = accept4(n->lfd, (struct sockaddr *)&a, &alen, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED ||
			    errno == EINTR)
				return 0;
			return dlrt_err_errno(err, errno, "accept");
		}
		c = conn_new(n, err);
		if (!c) {
			close(fd);
			return -1;
		}
		set_sockopts(fd);
		c->fd = fd;
		c->state = PNET_OPEN;
		c->addr = a;
		inet_ntop(AF_INET, &a.sin_addr, ip, sizeof(ip));
		snprintf(c->what, sizeof(c->what), "a peer at %s:%u", ip, ntohs(a.sin_port));
		n->last_msg_ms = dlrt_now_ms();
		logv(n, 1, "accepted %s", c->what);
	}
}

static int do_read(struct pnet *n, struct pnet_conn *c, struct dlrt_err *err)
{
	for (;;) {
		struct dlrt_pslite_msg m;
		struct dlrt_err derr;
		size_t used;
		ssize_t r;
		int rc;

		if (dlrt_buf_reserve(&c->in, READ_CHUNK) < 0 &&
		    dlrt_buf_reserve(&c->in, 1) < 0)
			return dlrt_err_set(err, "%s sent more than %u bytes without a whole message",
					    c->what, IN_LIMIT);
		r = read(c->fd, dlrt_buf_head(&c->in) + c->in.len,
			 c->in.cap - c->in.off - c->in.len);
		if (r == 0)
			return conn_ended(n, c, 0, err);
		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return 0;
			return conn_ended(n, c, errno, err);
		}
		c->in.len += (size_t)r;
		while ((rc = dlrt_pslite_msg_decode(dlrt_buf_head(&c->in), c->in.len, &m, &used,
						    &derr)) == 1) {
			n->last_msg_ms = dlrt_now_ms();
			logv(n, 2, "%s from id %d via %s", dlrt_pslite_type_name(m.type),
			     (int)m.sender, c->what);
			if (n->on_msg(n, c, &m, n->ctx, err) < 0)
				return -1;
			dlrt_buf_consume(&c->in, used);
			if (c->state != PNET_OPEN)
				return 0;
		}
		if (rc < 0)
			return dlrt_err_set(err, "bad message from %s: %s", c->what, derr.msg);
	}
}

static int do_write(struct pnet *n, struct pnet_conn *c, struct dlrt_err *err)
{
	while (c->out.len) {
		ssize_t w = send(c->fd, dlrt_buf_head(&c->out), c->out.len, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return 0;
			return conn_ended(n, c, errno, err);
		}
		dlrt_buf_consume(&c->out, (size_t)w);
	}
	return 0;
}

static int connect_done(struct pnet *n, struct pnet_conn *c, struct dlrt_err *err)
{
	int e = 0;
	socklen_t elen = sizeof(e);

	(void)err;
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &elen) < 0)
		e = errno;
	if (e == 0) {
		c->state = PNET_OPEN;
		n->last_msg_ms = dlrt_now_ms();
		logv(n, 1, "connected to %s", c->what);
		return 0;
	}
	/* Refused or unreachable: the peer may not listen yet; retry as ZMQ does. */
	c->last_errno = e;
	conn_close_fd(c);
	c->state = PNET_RETRY_WAIT;
	c->retry_at_ms = dlrt_now_ms() + RETRY_MS;
	logv(n, 2, "connect to %s: %s, retrying", c->what, strerror(e));
	return 0;
}

/* Connection timers: retries and give-up deadlines. */
static int conn_timers(struct pnet *n, int64_t now, struct dlrt_err *err)
{
	for (size_t i = 0; i < n->nconns; i++) {
		struct pnet_conn *c = n->conns[i];

		if (c->state != PNET_CONNECTING && c->state != PNET_RETRY_WAIT)
			continue;
		if (now >= c->give_up_at_ms)
			return dlrt_err_set(err, "cannot connect to %s: %s (gave up after retrying "
					    "every %d ms)", c->what, strerror(c->last_errno),
					    RETRY_MS);
		if (c->state == PNET_RETRY_WAIT && now >= c->retry_at_ms)
			conn_attempt(n, c);
	}
	if (n->hb_conn && n->hb_every_ms > 0 && now >= n->hb_next_ms) {
		n->hb_next_ms = now + n->hb_every_ms;
		if (n->hb_conn->state != PNET_CLOSED &&
		    dlrt_pslite_put_ctl(&n->hb_conn->out, DLRT_PSLITE_HEARTBEAT, n->hb_sender, 0,
					err) < 0)
			return -1;
	}
	return 0;
}

/* One poll round of at most max_ms. */
static int pump(struct pnet *n, int max_ms, struct dlrt_err *err)
{
	struct pollfd *pf;
	size_t np = 0, nc = n->nconns;
	int rc;

	if (conn_timers(n, dlrt_now_ms(), err) < 0)
		return -1;
	if (n->on_tick && n->on_tick(n, n->ctx, err) < 0)
		return -1;
	pf = calloc(nc + 1, sizeof(*pf));
	if (!pf)
		return dlrt_err_set(err, "out of memory");
	for (size_t i = 0; i < nc; i++) {
		struct pnet_conn *c = n->conns[i];

		pf[i].fd = -1;
		if (c->state == PNET_CONNECTING) {
			pf[i].fd = c->fd;
			pf[i].events = POLLOUT;
		} else if (c->state == PNET_OPEN) {
			pf[i].fd = c->fd;
			pf[i].events = POLLIN | (c->out.len ? POLLOUT : 0);
		}
	}
	np = nc;
	if (n->lfd >= 0) {
		pf[np].fd = n->lfd;
		pf[np].events = POLLIN;
		np++;
	}
	rc = poll(pf, np, max_ms);
	if (rc < 0) {
		free(pf);
		return errno == EINTR ? 0 : dlrt_err_errno(err, errno, "poll");
	}
	for (size_t i = 0; rc > 0 && i < nc; i++) {
		struct pnet_conn *c = n->conns[i];
		short re = pf[i].revents;

		if (!re || pf[i].fd < 0 || c->fd != pf[i].fd)
			continue;
		if (c->state == PNET_CONNECTING) {
			if (connect_done(n, c, err) < 0)
				goto fail;
			continue;
		}
		/* Read first: a peer's last messages come before its EOF. */
		if ((re & (POLLIN | POLLHUP | POLLERR)) && do_read(n, c, err) < 0)
			goto fail;
		if (c->state == PNET_OPEN && (re & POLLOUT) && do_write(n, c, err) < 0)
			goto fail;
	}
	if (n->lfd >= 0 && (pf[nc].revents & POLLIN) && do_accept(n, err) < 0)
		goto fail;
	/* Send what the handlers queued without waiting for the next poll. */
	for (size_t i = 0; i < n->nconns; i++)
		if (n->conns[i]->state == PNET_OPEN && n->conns[i]->out.len &&
		    do_write(n, n->conns[i], err) < 0)
			goto fail;
	free(pf);
	return 0;
fail:
	free(pf);
	return -1;
}

int pnet_wait(struct pnet *n, bool (*done)(void *ctx), int64_t idle_ms, struct dlrt_err *err)
{
	int64_t start = dlrt_now_ms();

	for (;;) {
		int64_t now = dlrt_now_ms(), last, left;

		if (done && done(n->ctx))
			return 0;
		last = done ? (n->last_msg_ms > start ? n->last_msg_ms : start) : start;
		left = last + idle_ms - now;
		if (left <= 0)
			return done ? -2 : 0;
		if (pump(n, (int)(left < POLL_MAX_MS ? left : POLL_MAX_MS), err) < 0)
			return -1;
	}
}

int pnet_flush(struct pnet *n, int64_t timeout_ms, struct dlrt_err *err)
{
	int64_t end = dlrt_now_ms() + timeout_ms;

	for (;;) {
		bool pending = false;

		for (size_t i = 0; i < n->nconns; i++)
			if (n->conns[i]->state == PNET_OPEN && n->conns[i]->out.len)
				pending = true;
		if (!pending)
			return 0;
		if (dlrt_now_ms() >= end)
			return dlrt_err_set(err, "could not send queued messages within %lld ms",
					    (long long)timeout_ms);
		if (pump(n, POLL_MAX_MS, err) < 0)
			return -1;
	}
}
