#include "tcpserver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nofile.h"
#include "common/crypto.h"
#include "common/dlist.h"
#include "svcauth.h"

/* The room for connections still to prove the secret. A stranger's flood
 * only ever sheds its own connections if the step's connection has answered
 * before this many newer ones arrived: 4096 gives it 2 s at 2,000 connections
 * a second, 0.4 s at 10,000 (what one core can send), against a round trip
 * for a relay or a task. Each costs a descriptor and a few hundred bytes here
 * (no buffer is allocated before the proof), plus the kernel's socket. */
#define AUTH_DEFAULT_MAX 4096
#define AUTH_DEFAULT_TIMEOUT_MS 5000
/* New connections accepted per wake-up: a flood faster than the loop cannot
 * keep it from the step's proven connections (the listener is
 * level-triggered: the rest wakes it again at once). */
#define ACCEPT_BATCH 1024
/* The kernel caps it at net.core.somaxconn (4096 by default since Linux
 * 5.4): what a flood fills between two wake-ups must not spill the step's
 * connection requests (a dropped SYN is retried only after a second). */
#define LISTEN_BACKLOG 65535

/* A connection that has not yet answered the challenge, on the server's
 * list of them in accept order (the head is the oldest). */
struct dlrt_conn_auth {
	uint8_t challenge[DLRT_SVCAUTH_CHALLENGE_LEN];
	uint8_t answer[DLRT_SVCAUTH_ANSWER_LEN];
	size_t got;
	int64_t deadline_ms;
	struct dlrt_conn *conn;
	struct dlrt_dlist_node link; /* on the server's unproven list */
};

struct dlrt_tcpserver {
	struct dlrt_evloop *loop;
	struct dlrt_tcpserver_cfg cfg;
	uint32_t *allow;
	struct dlrt_proto proto;
	void *ctx;
	int listen_fd;
	uint16_t port;
	struct dlrt_conn **conns; /* indexed by fd */
	int nconns_cap;
	unsigned nconns;
	int64_t sweep_timer;
	bool has_secret;
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN];
	struct dlrt_dlist unproven; /* dlrt_conn_auth, the oldest first */
	int reserve_fd;          /* /dev/null, given up to shed a connection on EMFILE */
	int64_t resume_timer;    /* the listener is paused after an accept failure */
	unsigned long nofile;    /* RLIMIT_NOFILE's soft limit at start */
	unsigned long nofile_drops;
	unsigned long auth_shed;  /* unproven connections closed to admit newer ones */
};

static void conn_event(struct dlrt_evloop *loop, int fd, unsigned events, void *arg);

static bool peer_allowed(const struct dlrt_tcpserver *srv, uint32_t ip)
{
	if ((ntohl(ip) >> 24) == 127 || srv->cfg.nallow == 0)
		return true;
	for (size_t i = 0; i < srv->cfg.nallow; i++)
		if (srv->allow[i] == ip)
			return true;
	return false;
}

static struct dlrt_conn_auth *oldest_unproven(const struct dlrt_tcpserver *srv)
{
	return DLRT_DLIST_ENTRY(srv->unproven.head, struct dlrt_conn_auth, link);
}

/* The connection proved the secret or goes: off the unproven list. */
static void auth_end(struct dlrt_conn *conn)
{
	struct dlrt_tcpserver *srv = conn->server;
	struct dlrt_conn_auth *a = conn->auth;

	dlrt_dlist_unlink(&srv->unproven, &a->link);
	free(a);
	conn->auth = NULL;
}

/* Frees a connection but not its descriptor, which it returns. */
static int conn_detach(struct dlrt_conn *conn)
{
	struct dlrt_tcpserver *srv = conn->server;
	int fd = conn->fd;

	if (conn->auth)
		auth_end(conn);
	dlrt_evloop_del_fd(srv->loop, fd);
	srv->conns[fd] = NULL;
	srv->nconns--;
	dlrt_buf_free(&conn->in);
	dlrt_buf_free(&conn->out);
	free(conn);
	return fd;
}

/* Frees a connection; the protocol's on_close runs only for one it opened. */
static void conn_drop(struct dlrt_conn *conn)
{
	close(conn_detach(conn));
}

void dlrt_conn_close(struct dlrt_conn *conn)
{
	struct dlrt_tcpserver *srv = conn->server;

	if (!conn->auth && srv->proto.on_close)
		srv->proto.on_close(conn, srv->ctx);
	conn_drop(conn);
}

/* How long a connection we hang up on may keep sending before we close it. */
#define LINGER_MS 1000

/* Hangs up after the last reply without losing it: close() on a socket with
 * unread input sends a RST, and a client still writing (a request over the
 * size limit) would see "connection reset" instead of our error reply. So shut
 * the write side (the client reads the reply, then EOF) and discard its input
 * until it closes or LINGER_MS pass (sweep() enforces the bound). */
static void conn_linger(struct dlrt_conn *conn)
{
	shutdown(conn->fd, SHUT_WR);
	conn->linger_until_ms = dlrt_now_ms() + LINGER_MS;
	dlrt_evloop_set_events(conn->server->loop, conn->fd, DLRT_EV_READ);
}

/* Lingering: reads and drops input; -1 once the client has closed. */
static int conn_drain(struct dlrt_conn *conn)
{
	char scrap[16384];

	for (;;) {
		ssize_t n = recv(conn->fd, scrap, sizeof(scrap), 0);

		if (n > 0)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		return -1;
	}
}

/* A buffer that held a burst (a large value, a pipeline) goes back to the
 * allocator once empty, so idle connections do not keep their peak. */
#define BUF_KEEP (64 * 1024)

static void buf_trim(struct dlrt_buf *b)
{
	if (!b->len && b->cap > BUF_KEEP)
		dlrt_buf_free(b);
}

/* Backpressure: while out_pause bytes of replies wait, the connection is
 * neither read nor parsed; the client's requests wait in its own socket
 * buffer, and it blocks once that is full. */
static void conn_update_pause(struct dlrt_conn *conn)
{
	size_t lim = conn->server->cfg.out_pause;

	conn->out_paused = lim && conn->out.len >= lim;
}

/* Writes what it can; returns -1 if the connection is gone. */
static int conn_write(struct dlrt_conn *conn)
{
	while (conn->out.len) {
		ssize_t n = send(conn->fd, dlrt_buf_head(&conn->out), conn->out.len,
				 MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -1;
		}
		dlrt_buf_consume(&conn->out, (size_t)n);
		conn->last_active_ms = dlrt_now_ms();
	}
	buf_trim(&conn->out);
	if (!conn->out.len && conn->close_after_write) {
		if (!conn->linger_until_ms)
			conn_linger(conn);
		return 0;
	}
	conn_update_pause(conn);
	dlrt_evloop_set_events(conn->server->loop, conn->fd,
			       (conn->out_paused ? 0 : DLRT_EV_READ) |
			       (conn->out.len ? DLRT_EV_WRITE : 0));
	return 0;
}

void dlrt_conn_flush(struct dlrt_conn *conn)
{
	if (conn_write(conn) < 0)
		dlrt_conn_close(conn);
}

/* Lets the protocol consume what the input holds, then writes. A protocol
 * that stopped at out_pause may have left complete requests in the input; if
 * the write then drained the replies, nothing would ever wake us for those
 * requests (their bytes were read already), so parse again. Every round
 * consumes at least one request, so this ends. */
static int conn_parse(struct dlrt_conn *conn)
{
	struct dlrt_tcpserver *srv = conn->server;

	for (;;) {
		bool full;

		if (conn->in.len && srv->proto.on_data(conn, srv->ctx) == DLRT_PROTO_CLOSE)
			conn->close_after_write = true;
		full = srv->cfg.out_pause && conn->out.len >= srv->cfg.out_pause;
		buf_trim(&conn->in);
		if (conn_write(conn) < 0)
			return -1;
		if (!full || conn->out_paused || !conn->in.len || conn->close_after_write)
			return 0;
	}
}

/* Reads everything available, then lets the protocol parse. */
static int conn_read(struct dlrt_conn *conn)
{
	bool got = false;

	if (conn->linger_until_ms)
		return conn_drain(conn);
	if (conn->out_paused)
		return conn_write(conn); /* not reading: a stale event */
	for (;;) {
		ssize_t n;

		if (dlrt_buf_reserve(&conn->in, 4096) < 0) {
			/* A request larger than the limit: the protocol gets one look
			 * at the full buffer (to answer with an error), then we close. */
			if (!got)
				conn->close_after_write = true;
			break;
		}
		n = recv(conn->fd, conn->in.data + conn->in.off + conn->in.len, 4096, 0);
		if (n == 0)
			return -1;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -1;
		}
		conn->in.len += (size_t)n;
		got = true;
		conn->last_active_ms = dlrt_now_ms();
		/* A short read means the socket is drained: skip the recv that
		 * would only say EAGAIN (a third of the syscalls of a small
		 * request/reply). epoll is level-triggered, so bytes that arrive
		 * meanwhile wake us again. */
		if (n < 4096)
			break;
	}
	return conn_parse(conn);
}

/* The authentication phase. Reads no more than the answer's bytes, so what a
 * relay sends right behind it stays in the socket for the protocol, and a
 * peer without the secret can make the server hold nothing but this. */
static int auth_read(struct dlrt_conn *conn)
{
	struct dlrt_tcpserver *srv = conn->server;
	struct dlrt_conn_auth *a = conn->auth;

	while (a->got < sizeof(a->answer)) {
		ssize_t n = recv(conn->fd, a->answer + a->got, sizeof(a->answer) - a->got, 0);

		if (n == 0)
			return -1;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
		a->got += (size_t)n;
	}
	if (!dlrt_svcauth_check(srv->secret, a->challenge, a->answer)) {
		/* A node's hold on the service (svchold.h) is not the
		 * protocol's: it goes, with its descriptor, to on_hold. */
		if (!srv->cfg.on_hold || !dlrt_svcauth_check_for(DLRT_SVCAUTH_HOLD, srv->secret,
								 a->challenge, a->answer))
			return -1;
		srv->cfg.on_hold(conn_detach(conn), srv->cfg.hold_arg);
		return -2;
	}
	auth_end(conn);
	conn->last_active_ms = dlrt_now_ms();
	/* With a secret, max_conns counts the proven connections only: the
	 * unproven ones have their own room (max_unauthed). */
	if (srv->nconns - srv->unproven.n > srv->cfg.max_conns) {
		conn_drop(conn);
		return -2;
	}
	if (srv->proto.on_open && srv->proto.on_open(conn, srv->ctx) < 0) {
		conn_drop(conn); /* never opened: no on_close */
		return -2;
	}
	return 1;
}

/* Before a new connection enters the unproven room: if it is full, the
 * oldest unproven connection goes at once. Under a flood of a stranger's
 * silent connections that is one of them, as long as the step's own
 * connections answer before max_unauthed newer ones arrive (AUTH_DEFAULT_MAX);
 * no grace period, no waiting in the listen backlog, where the step's
 * connections would queue behind the stranger's. An answer that already waits unread is read first
 * (the loop has not come to that socket yet): that connection is proven, not
 * shed, and the next oldest is looked at. */
static void auth_make_room(struct dlrt_tcpserver *srv)
{
	while (srv->unproven.n >= srv->cfg.max_unauthed && srv->unproven.head) {
		struct dlrt_conn *oldest = oldest_unproven(srv)->conn;

		switch (auth_read(oldest)) {
		case 0:
			srv->auth_shed++;
			dlrt_conn_close(oldest);
			break;
		case -1:
			dlrt_conn_close(oldest); /* a wrong answer, or gone */
			break;
		default:
			break; /* proven (its request is read on its next event) */
		}
	}
}

/* At accept: the challenge. -1: close the connection. */
static int auth_begin(struct dlrt_conn *conn)
{
	struct dlrt_tcpserver *srv = conn->server;
	struct dlrt_conn_auth *a = calloc(1, sizeof(*a));
	ssize_t n;

	if (!a)
		return -1;
	if (dlrt_crypto_random(a->challenge, sizeof(a->challenge)) < 0) {
		free(a);
		return -1;
	}
	/* A fresh socket's send buffer always takes these few bytes. */
	n = send(conn->fd, a->challenge, sizeof(a->challenge), MSG_NOSIGNAL);
	if (n != (ssize_t)sizeof(a->challenge)) {
		free(a);
		return -1;
	}
	a->deadline_ms = dlrt_now_ms() + srv->cfg.auth_timeout_ms;
	a->conn = conn;
	auth_make_room(srv);
	dlrt_dlist_append(&srv->unproven, &a->link);
	conn->auth = a;
	return 0;
}

static void conn_event(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct dlrt_conn *conn = arg;

	(void)loop;
	(void)fd;
	if (conn->auth) {
		int r = auth_read(conn);

		if (r == -1)
			dlrt_conn_close(conn);
		else if (r > 0 && conn_read(conn) < 0)
			dlrt_conn_close(conn);
		return;
	}
	if ((events & DLRT_EV_WRITE) && !conn->linger_until_ms) {
		bool was_paused = conn->out_paused;

		if (conn_write(conn) < 0) {
			dlrt_conn_close(conn);
			return;
		}
		/* Drained below the pause: the requests already read come first
		 * (no read event may ever announce them again). */
		if (was_paused && !conn->out_paused) {
			if (conn_parse(conn) < 0)
				dlrt_conn_close(conn);
			return;
		}
	}
	if ((events & DLRT_EV_READ) && conn_read(conn) < 0)
		dlrt_conn_close(conn);
}

/* How long the listener rests after an accept failure that retrying at once
 * would only repeat (no memory, no buffers, no descriptor even in reserve). */
#define ACCEPT_PAUSE_MS 100

static int64_t listener_resume(struct dlrt_evloop *loop, void *arg)
{
	struct dlrt_tcpserver *srv = arg;

	srv->resume_timer = 0;
	if (srv->reserve_fd < 0) /* lost in accept_shed: try again */
		srv->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	dlrt_evloop_set_events(loop, srv->listen_fd, DLRT_EV_READ);
	return -1;
}

static void listener_pause(struct dlrt_tcpserver *srv)
{
	if (srv->resume_timer)
		return;
	dlrt_evloop_set_events(srv->loop, srv->listen_fd, 0);
	srv->resume_timer = dlrt_evloop_add_timer(srv->loop, ACCEPT_PAUSE_MS, listener_resume, srv);
	if (srv->resume_timer < 0) { /* no memory for a timer: keep listening */
		srv->resume_timer = 0;
		dlrt_evloop_set_events(srv->loop, srv->listen_fd, DLRT_EV_READ);
	}
}

/* Out of descriptors, the pending connection stays in the backlog and the
 * level-triggered listener wakes the loop again at once, forever. Give up the
 * reserve descriptor, accept that connection and close it (the client sees
 * its connection closed, as when max_conns is reached), take the reserve back
 * (the nginx/libev way). 1: shed one, 0: none was pending, -1: cannot. */
static int accept_shed(struct dlrt_tcpserver *srv)
{
	int fd, e;

	if (srv->reserve_fd < 0)
		return -1;
	close(srv->reserve_fd);
	fd = accept4(srv->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	e = errno;
	if (fd >= 0) {
		close(fd);
		srv->nofile_drops++;
	}
	srv->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (srv->reserve_fd < 0)
		return -1;
	if (fd >= 0)
		return 1;
	return e == EAGAIN || e == EWOULDBLOCK ? 0 : -1;
}

/* accept4 failed with `e`: true to try the next pending connection. */
static bool accept_failed(struct dlrt_tcpserver *srv, int e)
{
	switch (e) {
	case EAGAIN:
#if EWOULDBLOCK != EAGAIN
	case EWOULDBLOCK:
#endif
		return false; /* nothing pending */
	case EINTR:
	case ECONNABORTED: /* that client is gone; others may wait */
	case EPROTO:
	case EPERM:        /* a firewall rule refused that one */
		return true;
	case EMFILE:
	case ENFILE:
		switch (accept_shed(srv)) {
		case 1:
			return true;
		case 0:
			return false;
		default:
			listener_pause(srv);
			return false;
		}
	default:           /* ENOBUFS, ENOMEM: retrying now would fail again */
		listener_pause(srv);
		return false;
	}
}

static void accept_event(struct dlrt_evloop *loop, int lfd, unsigned events, void *arg)
{
	struct dlrt_tcpserver *srv = arg;

	(void)events;
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_in sa;
		socklen_t salen = sizeof(sa);
		struct dlrt_conn *conn;
		int one = 1;
		int fd;

		fd = accept4(lfd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (accept_failed(srv, errno))
				continue;
			return;
		}
		/* With a secret a new connection always gets in (auth_begin
		 * makes room): only a proven one counts against max_conns. */
		if (!peer_allowed(srv, sa.sin_addr.s_addr) ||
		    (!srv->has_secret && srv->nconns >= srv->cfg.max_conns)) {
			close(fd);
			continue;
		}
		if (fd >= srv->nconns_cap) {
			int cap = srv->nconns_cap ? srv->nconns_cap : 64;
			struct dlrt_conn **p;

			while (cap <= fd)
				cap *= 2;
			p = realloc(srv->conns, (size_t)cap * sizeof(*p));
			if (!p) {
				close(fd);
				continue;
			}
			memset(p + srv->nconns_cap, 0,
			       (size_t)(cap - srv->nconns_cap) * sizeof(*p));
			srv->conns = p;
			srv->nconns_cap = cap;
		}
		conn = calloc(1, sizeof(*conn));
		if (!conn) {
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		conn->fd = fd;
		conn->server = srv;
		conn->peer_ipv4 = sa.sin_addr.s_addr;
		conn->last_active_ms = dlrt_now_ms();
		dlrt_buf_init(&conn->in, srv->cfg.max_request);
		dlrt_buf_init(&conn->out, srv->cfg.max_reply);
		if (dlrt_evloop_add_fd(loop, fd, DLRT_EV_READ, conn_event, conn) < 0) {
			close(fd);
			free(conn);
			continue;
		}
		srv->conns[fd] = conn;
		srv->nconns++;
		if (srv->has_secret) {
			if (auth_begin(conn) < 0)
				conn_drop(conn);
			continue;
		}
		if (srv->proto.on_open && srv->proto.on_open(conn, srv->ctx) < 0)
			dlrt_conn_close(conn);
	}
}

static int64_t sweep_period_ms(const struct dlrt_tcpserver *srv)
{
	int64_t p = srv->cfg.idle_timeout_ms / 4 + 1;

	return srv->cfg.idle_timeout_ms > 0 && p < LINGER_MS / 4 ? p : LINGER_MS / 4;
}

/* Closes connections silent longer than the idle timeout, and those we hung
 * up on whose client kept sending past LINGER_MS. */
static int64_t sweep(struct dlrt_evloop *loop, void *arg)
{
	struct dlrt_tcpserver *srv = arg;
	int64_t now = dlrt_now_ms();

	(void)loop;
	/* In accept order, so in deadline order. */
	while (srv->unproven.head && now > oldest_unproven(srv)->deadline_ms)
		dlrt_conn_close(oldest_unproven(srv)->conn);
	for (int fd = 0; fd < srv->nconns_cap; fd++) {
		struct dlrt_conn *c = srv->conns[fd];

		if (!c)
			continue;
		if ((c->linger_until_ms && now > c->linger_until_ms) ||
		    (srv->cfg.idle_timeout_ms > 0 &&
		     now - c->last_active_ms > srv->cfg.idle_timeout_ms))
			dlrt_conn_close(c);
	}
	return sweep_period_ms(srv);
}

/* A free port in [lo, hi]: sites that firewall their login nodes admit only
 * SrunPortRange from the compute nodes. From a random one on, so that
 * several sruns of the host do not all try the same first, each port once. */
static int bind_in_range(int fd, struct sockaddr_in *sa, uint16_t lo, uint16_t hi)
{
	unsigned n = (unsigned)hi - lo + 1u;
	uint32_t start = 0;

	dlrt_crypto_random(&start, sizeof(start)); /* any start will do if it fails */
	for (unsigned i = 0; i < n; i++) {
		sa->sin_port = htons((uint16_t)(lo + (start + i) % n));
		if (bind(fd, (struct sockaddr *)sa, sizeof(*sa)) == 0)
			return 0;
		if (errno != EADDRINUSE)
			return -1;
	}
	errno = EADDRINUSE;
	return -1;
}

int dlrt_tcpserver_start(struct dlrt_tcpserver **out, struct dlrt_evloop *loop,
			 const struct dlrt_tcpserver_cfg *cfg,
			 const struct dlrt_proto *proto, void *ctx,
			 struct dlrt_err *err)
{
	struct dlrt_tcpserver *srv = calloc(1, sizeof(*srv));
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t salen = sizeof(sa);
	int one = 1;

	if (!srv)
		return dlrt_err_set(err, "out of memory starting a server");
	srv->loop = loop;
	srv->cfg = *cfg;
	srv->proto = *proto;
	srv->ctx = ctx;
	srv->listen_fd = -1;
	srv->reserve_fd = -1;
	if (!srv->cfg.max_conns)
		srv->cfg.max_conns = 1024;
	if (cfg->secret) {
		srv->has_secret = true;
		memcpy(srv->secret, cfg->secret, sizeof(srv->secret));
	}
	srv->cfg.secret = NULL;
	if (!srv->cfg.max_unauthed)
		srv->cfg.max_unauthed = AUTH_DEFAULT_MAX;
	if (srv->cfg.auth_timeout_ms <= 0)
		srv->cfg.auth_timeout_ms = AUTH_DEFAULT_TIMEOUT_MS;
	srv->nofile = dlrt_nofile_raise();
	srv->cfg.max_conns = dlrt_nofile_cap_conns(srv->cfg.max_conns, srv->nofile);
	if (srv->has_secret) {
		/* Both rooms fit the descriptors; where they do not, the
		 * unproven one gets half of them, the proven ones the rest. */
		unsigned all = dlrt_nofile_cap_conns(UINT_MAX, srv->nofile);

		if (srv->cfg.max_unauthed + (unsigned long)srv->cfg.max_conns > all) {
			if (srv->cfg.max_unauthed > all / 2)
				srv->cfg.max_unauthed = all / 2 ? all / 2 : 1;
			if (srv->cfg.max_conns > all - srv->cfg.max_unauthed)
				srv->cfg.max_conns = all > srv->cfg.max_unauthed ?
						     all - srv->cfg.max_unauthed : 1;
		}
	}
	if (cfg->nallow) {
		srv->allow = calloc(cfg->nallow, sizeof(*srv->allow));
		if (!srv->allow)
			goto fail_mem;
		memcpy(srv->allow, cfg->allow, cfg->nallow * sizeof(*srv->allow));
	}
	srv->cfg.allow = NULL;
	if (cfg->bind_addr && *cfg->bind_addr &&
	    inet_pton(AF_INET, cfg->bind_addr, &sa.sin_addr) != 1) {
		dlrt_err_set(err, "cannot listen on '%s': not a numeric IPv4 address",
			     cfg->bind_addr);
		goto fail;
	}
	sa.sin_port = htons(cfg->port);
	srv->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv->listen_fd < 0) {
		dlrt_err_errno(err, errno, "cannot create a socket");
		goto fail;
	}
	setsockopt(srv->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (!cfg->port && cfg->port_hi) {
		if (bind_in_range(srv->listen_fd, &sa, cfg->port_lo, cfg->port_hi) < 0) {
			dlrt_err_errno(err, errno, "cannot listen on %s at a port in %u-%u (every "
				       "one taken? widen the range)",
				       cfg->bind_addr && *cfg->bind_addr ? cfg->bind_addr : "*",
				       cfg->port_lo, cfg->port_hi);
			goto fail;
		}
	} else if (bind(srv->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		dlrt_err_errno(err, errno, "cannot listen on %s:%u",
			       cfg->bind_addr && *cfg->bind_addr ? cfg->bind_addr : "*",
			       cfg->port);
		goto fail;
	}
	if (listen(srv->listen_fd, LISTEN_BACKLOG) < 0 ||
	    getsockname(srv->listen_fd, (struct sockaddr *)&sa, &salen) < 0) {
		dlrt_err_errno(err, errno, "cannot listen");
		goto fail;
	}
	srv->port = ntohs(sa.sin_port);
	srv->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (srv->reserve_fd < 0) {
		dlrt_err_errno(err, errno, "cannot open /dev/null for a reserve descriptor");
		goto fail;
	}
	if (dlrt_evloop_add_fd(loop, srv->listen_fd, DLRT_EV_READ, accept_event, srv) < 0)
		goto fail_mem;
	srv->sweep_timer = dlrt_evloop_add_timer(loop, sweep_period_ms(srv), sweep, srv);
	*out = srv;
	return 0;
fail_mem:
	dlrt_err_set(err, "out of memory starting a server");
fail:
	if (srv->listen_fd >= 0)
		close(srv->listen_fd);
	if (srv->reserve_fd >= 0)
		close(srv->reserve_fd);
	free(srv->allow);
	free(srv);
	return -1;
}

uint16_t dlrt_tcpserver_port(const struct dlrt_tcpserver *srv)
{
	return srv->port;
}

unsigned dlrt_tcpserver_nconns(const struct dlrt_tcpserver *srv)
{
	return srv->nconns;
}

unsigned dlrt_tcpserver_max_conns(const struct dlrt_tcpserver *srv)
{
	return srv->cfg.max_conns;
}

unsigned long dlrt_tcpserver_nofile(const struct dlrt_tcpserver *srv)
{
	return srv->nofile;
}

unsigned long dlrt_tcpserver_nofile_drops(const struct dlrt_tcpserver *srv)
{
	return srv->nofile_drops;
}

unsigned long dlrt_tcpserver_auth_shed(const struct dlrt_tcpserver *srv)
{
	return srv->auth_shed;
}

void dlrt_tcpserver_stop(struct dlrt_tcpserver *srv)
{
	if (!srv)
		return;
	for (int fd = 0; fd < srv->nconns_cap; fd++) {
		struct dlrt_conn *c = srv->conns[fd];

		if (!c)
			continue;
		/* A request already applied is answered, not cut off: its
		 * reply goes out (as far as the socket takes it at once)
		 * before the end of file; what was not read yet was not
		 * applied. */
		if (!c->auth && !c->linger_until_ms && c->out.len && conn_write(c) == 0)
			shutdown(fd, SHUT_WR);
		dlrt_conn_close(c);
	}
	if (srv->sweep_timer > 0)
		dlrt_evloop_del_timer(srv->loop, srv->sweep_timer);
	if (srv->resume_timer > 0)
		dlrt_evloop_del_timer(srv->loop, srv->resume_timer);
	dlrt_evloop_del_fd(srv->loop, srv->listen_fd);
	close(srv->listen_fd);
	if (srv->reserve_fd >= 0)
		close(srv->reserve_fd);
	free(srv->conns);
	free(srv->allow);
	free(srv);
}
