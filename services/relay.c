#include "relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/dlist.h"
#include "peeruid.h"

#define DEFAULT_MAX_CONNS 1024
#define DEFAULT_BUF (64 * 1024)
#define DEFAULT_TARGET_WAIT_MS 60000
#define DEFAULT_CONNECT_MS 10000
#define DEFAULT_SPARES 8
#define DEFAULT_SPARE_AGE_MS 1000
#define SWEEP_MS 250

enum pair_state {
	WAIT_TARGET, /* admitted before the relay knew the service */
	CHALLENGE,   /* connecting, then reading the service's challenge */
	SPARE,       /* a spare: answered, waiting for a client */
	FORWARD,
};

/* One direction: bytes read from one side, not yet written to the other. */
struct dir {
	uint8_t *data;
	size_t off, len;
	bool eof;  /* the source side sent FIN */
	bool shut; /* passed on: shutdown(SHUT_WR) of the destination */
};

/* A client and its upstream connection; a spare has no client (cfd -1) and
 * sits on the relay's spares list instead of pairs (`link`). */
struct pair {
	struct dlrt_relay *r;
	int cfd, ufd;
	enum pair_state st;
	uint8_t chal[DLRT_SVCAUTH_CHALLENGE_LEN];
	size_t chal_got;
	unsigned hangups;    /* the service closed it before its challenge */
	int64_t deadline_ms; /* until FORWARD; a spare's end of life */
	struct dir c2u, u2c;
	struct dlrt_dlist_node link;
};

struct dlrt_relay {
	struct dlrt_evloop *loop;
	struct dlrt_relay_cfg cfg;
	int lfd, lfd6, nl;
	struct sockaddr_in laddr; /* the listener's: every client's local address */
	struct sockaddr_in6 laddr6; /* the [::1] listener's (lfd6 -1: none) */
	uint16_t port;
	bool have_target;
	struct sockaddr_in target;
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN];
	struct dlrt_dlist pairs, spares; /* oldest first */
	int64_t timer;
	struct dlrt_relay_stats stats;
};

static void pair_update(struct pair *p);
static int upstream_open(struct pair *p);
static bool spare_ended(const struct pair *p);

static void relay_note(const struct dlrt_relay *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void relay_note(const struct dlrt_relay *r, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!r->cfg.note)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	r->cfg.note(line, r->cfg.note_arg);
}

static struct pair *pair_of(struct dlrt_dlist_node *n)
{
	return n ? DLRT_DLIST_ENTRY(n, struct pair, link) : NULL;
}

static void pair_close(struct pair *p)
{
	struct dlrt_relay *r = p->r;

	if (p->cfd >= 0) {
		dlrt_evloop_close_fd(r->loop, p->cfd);
		dlrt_dlist_unlink(&r->pairs, &p->link);
	} else {
		dlrt_dlist_unlink(&r->spares, &p->link);
	}
	if (p->ufd >= 0)
		dlrt_evloop_close_fd(r->loop, p->ufd);
	free(p->c2u.data);
	free(p->u2c.data);
	free(p);
}

static struct pair *pair_new(struct dlrt_relay *r)
{
	struct pair *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->c2u.data = malloc(r->cfg.buf_size);
	p->u2c.data = malloc(r->cfg.buf_size);
	if (!p->c2u.data || !p->u2c.data) {
		free(p->c2u.data);
		free(p->u2c.data);
		free(p);
		return NULL;
	}
	p->r = r;
	p->cfd = -1;
	p->ufd = -1;
	return p;
}

/* Reads what fits into d from fd: 0, or -1 when the connection failed. */
static int dir_fill(struct dir *d, size_t cap, int fd)
{
	ssize_t n;

	if (d->off && d->off + d->len == cap) {
		memmove(d->data, d->data + d->off, d->len);
		d->off = 0;
	}
	n = recv(fd, d->data + d->off + d->len, cap - d->off - d->len, 0);
	if (n > 0)
		d->len += (size_t)n;
	else if (n == 0)
		d->eof = true;
	else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		return -1;
	return 0;
}

/* Writes what it can of d to fd, then passes an end of file on: 0, or -1
 * when the destination is gone (the client then sees its connection end,
 * never a silently lost request or answer). `last`: the other direction is
 * passed on already, so the pair is closed right after and close() sends the
 * FIN (both sides' input was read to its end: no reset). */
static int dir_flush(struct dir *d, int fd, bool last)
{
	while (d->len) {
		ssize_t n = send(fd, d->data + d->off, d->len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -1;
		}
		d->off += (size_t)n;
		d->len -= (size_t)n;
	}
	d->off = 0;
	if (d->eof && !d->shut) {
		d->shut = true;
		if (!last && shutdown(fd, SHUT_WR) < 0 && errno != ENOTCONN)
			return -1;
	}
	return 0;
}

/* Without interest in reading, epoll still reports an error or a hang-up:
 * a reset connection must end the pair, not spin the loop. */
static bool side_failed(int fd)
{
	int e = 0;
	socklen_t l = sizeof(e);

	return getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l) < 0 || e != 0;
}

/* The service hung up before it could hear our answer: shed as the oldest
 * unproven connection of a flooded service, or closed at accept by one out
 * of descriptors. Nothing of the client's went out yet, so its connection is
 * made again: at once the first time (under a flood a newer slot is free at
 * once), then at the sweeps, every SWEEP_MS, so that a service that closes
 * every connection is not hammered; the sweep ends the pair at the connect
 * deadline. */
static void upstream_retry(struct pair *p)
{
	struct dlrt_relay *r = p->r;

	p->hangups++;
	r->stats.hung_up++;
	dlrt_evloop_close_fd(r->loop, p->ufd);
	p->ufd = -1;
	p->chal_got = 0;
	if (p->hangups == 1 && upstream_open(p) < 0) {
		r->stats.upstream_failed++;
		pair_close(p);
	}
}

static void challenge_read(struct pair *p)
{
	struct dlrt_relay *r = p->r;
	uint8_t answer[DLRT_SVCAUTH_ANSWER_LEN];
	ssize_t n = recv(p->ufd, p->chal + p->chal_got, sizeof(p->chal) - p->chal_got, 0);
	int e = n < 0 ? errno : 0;

	if (n > 0)
		p->chal_got += (size_t)n;
	/* The whole challenge with the service's end of file behind it: closed
	 * before our answer could count, as if before the challenge. */
	if (n > 0 && p->chal_got == sizeof(p->chal) && spare_ended(p))
		n = 0;
	if (n == 0 || (n < 0 && e != EAGAIN && e != EWOULDBLOCK && e != EINTR)) {
		if ((e == 0 || e == ECONNRESET) && p->cfd >= 0 &&
		    dlrt_now_ms() < p->deadline_ms) {
			upstream_retry(p);
			return;
		}
		if (e == ECONNREFUSED)
			relay_note(r, "nothing listens at the service's address (connection "
				   "refused: did the step's service exit?)");
		else
			relay_note(r, "the service %s before its challenge (%s)",
				   e ? "failed" : "closed the connection",
				   e ? strerror(e) : "end of file");
		r->stats.upstream_failed++;
		pair_close(p);
		return;
	}
	if (p->chal_got < sizeof(p->chal)) {
		pair_update(p);
		return;
	}
	/* The answer goes out first; the client's bytes follow it (c2u is empty:
	 * the client is not read before FORWARD). */
	dlrt_svcauth_answer(r->secret, p->chal, answer);
	memcpy(p->c2u.data, answer, sizeof(answer));
	p->c2u.len = sizeof(answer);
	if (p->cfd >= 0) {
		p->st = FORWARD;
	} else {
		p->st = SPARE;
		p->deadline_ms = dlrt_now_ms() + r->cfg.spare_max_age_ms;
	}
	if (dir_flush(&p->c2u, p->ufd, false) < 0) {
		r->stats.upstream_failed++;
		pair_close(p);
		return;
	}
	pair_update(p);
}

/* One side of a forwarding pair is ready: `fd` writes what waits in `to`
 * (bytes for it), reads into `from` (its bytes for the other side, `peer`)
 * while there is room, and passes them on at once. */
static void forward(struct pair *p, unsigned events, int fd, struct dir *to, struct dir *from,
		    int peer)
{
	size_t cap = p->r->cfg.buf_size;

	if ((events & DLRT_EV_WRITE) && dir_flush(to, fd, from->shut) < 0)
		goto fail;
	if (events & DLRT_EV_READ) {
		if (!from->eof && from->len < cap) {
			if (dir_fill(from, cap, fd) < 0 || dir_flush(from, peer, to->shut) < 0)
				goto fail;
		} else if (side_failed(fd)) {
			goto fail;
		}
	}
	pair_update(p);
	return;
fail:
	pair_close(p);
}

static void up_event(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct pair *p = arg;

	(void)loop;
	if (p->st == SPARE) {
		/* Once its answer is out, a spare has nothing to hear: the service
		 * closed it (its idle timeout, its end) or broke the protocol.
		 * Never hand it out. */
		if ((events & DLRT_EV_READ) || dir_flush(&p->c2u, p->ufd, false) < 0) {
			pair_close(p);
			return;
		}
		pair_update(p);
		return;
	}
	if (p->st == CHALLENGE) {
		if (events & DLRT_EV_READ)
			challenge_read(p);
		return;
	}
	forward(p, events, fd, &p->c2u, &p->u2c, p->cfd);
}

static void client_event(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct pair *p = arg;

	(void)loop;
	if (p->st != FORWARD) {
		if (side_failed(fd))
			pair_close(p);
		return;
	}
	forward(p, events, fd, &p->u2c, &p->c2u, p->ufd);
}

/* Sets what each side waits for; ends the pair once both directions are
 * passed on. Backpressure: a side is read only while its direction's buffer
 * has room. */
static void pair_update(struct pair *p)
{
	struct dlrt_relay *r = p->r;
	unsigned cev = 0, uev = 0;

	switch (p->st) {
	case WAIT_TARGET:
		return;
	case CHALLENGE:
	case SPARE:
		uev = p->c2u.len ? DLRT_EV_WRITE : DLRT_EV_READ;
		break;
	case FORWARD:
		if (p->c2u.shut && p->u2c.shut) {
			pair_close(p);
			return;
		}
		if (!p->c2u.eof && p->c2u.len < r->cfg.buf_size)
			cev |= DLRT_EV_READ;
		if (p->u2c.len)
			cev |= DLRT_EV_WRITE;
		if (!p->u2c.eof && p->u2c.len < r->cfg.buf_size)
			uev |= DLRT_EV_READ;
		if (p->c2u.len)
			uev |= DLRT_EV_WRITE;
		break;
	}
	if (p->cfd >= 0)
		dlrt_evloop_set_events(r->loop, p->cfd, cev);
	dlrt_evloop_set_events(r->loop, p->ufd, uev);
}

/* Connects to the service and waits for its challenge: no wait for
 * writability in between, since the challenge can only come once connected,
 * and a failed connect wakes the read as an error. -1: no socket (p->ufd -1). */
static int upstream_open(struct pair *p)
{
	struct dlrt_relay *r = p->r;
	int one = 1;

	p->ufd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->ufd < 0)
		return -1;
	setsockopt(p->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if ((connect(p->ufd, (struct sockaddr *)&r->target, sizeof(r->target)) < 0 &&
	     errno != EINPROGRESS) ||
	    dlrt_evloop_add_fd(r->loop, p->ufd, DLRT_EV_READ, up_event, p) < 0) {
		close(p->ufd);
		p->ufd = -1;
		return -1;
	}
	return 0;
}

/* Opens the pair's upstream connection: forwarding at once without a
 * challenge, else CHALLENGE until connect_timeout_ms. -1: p was closed. */
static int pair_connect(struct pair *p)
{
	struct dlrt_relay *r = p->r;

	if (upstream_open(p) < 0)
		goto fail;
	if (r->cfg.no_challenge) {
		/* Bytes sent before the connect completes wait in c2u (send says
		 * EAGAIN until then); a failed connect ends the pair as a reset. */
		if (p->cfd >= 0) {
			p->st = FORWARD;
		} else {
			p->st = SPARE;
			p->deadline_ms = dlrt_now_ms() + r->cfg.spare_max_age_ms;
		}
		pair_update(p);
		return 0;
	}
	p->st = CHALLENGE;
	p->deadline_ms = dlrt_now_ms() + r->cfg.connect_timeout_ms;
	return 0;
fail:
	r->stats.upstream_failed++;
	pair_close(p);
	return -1;
}

/* One more spare, up to the pool's size. Called once per admitted client, so
 * the pool follows the clients' rate and a relay nobody uses holds nothing. */
static void spare_start(struct dlrt_relay *r)
{
	struct pair *p;

	if (!r->have_target || r->spares.n >= (size_t)r->cfg.spares)
		return;
	p = pair_new(r);
	if (!p)
		return;
	dlrt_dlist_append(&r->spares, &p->link);
	pair_connect(p);
}

/* The service ended a spare (its idle timeout, its end) or broke the
 * protocol, and the loop has not come to that event yet: up_event would drop
 * it, but a client accepted earlier in the same round must not get it (its
 * request would meet end of file). */
static bool spare_ended(const struct pair *p)
{
	uint8_t b;
	ssize_t n = recv(p->ufd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

/* A spare that is connected, answered and still open, or NULL: the newest
 * first, the one with the most of its life left. */
static struct pair *spare_take(struct dlrt_relay *r)
{
	for (struct pair *p = pair_of(r->spares.tail), *prev; p; p = prev) {
		prev = pair_of(p->link.prev);
		if (p->st != SPARE || p->c2u.len)
			continue;
		if (spare_ended(p)) {
			pair_close(p);
			continue;
		}
		dlrt_dlist_unlink(&r->spares, &p->link);
		return p;
	}
	return NULL;
}

/* Admits the job user's sockets only; everything else is closed at once,
 * before a byte is read or a buffer allocated. An admitted client gets a
 * spare if one is ready (its bytes go to the service at once), else its own
 * connection as the spares do. */
static void accept_event(struct dlrt_evloop *loop, int lfd, unsigned events, void *arg)
{
	struct dlrt_relay *r = arg;

	(void)events;
	for (;;) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		struct dlrt_err err = { .msg = "the kernel did not name the client socket's owner" };
		struct pair *p;
		uid_t uid;
		int fd = accept4(lfd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		int rc = -1;

		if (fd < 0)
			return;
		if (r->nl < 0)
			r->nl = dlrt_peeruid_open(&err);
		uid = (uid_t)-1; /* nobody's: refused unless the kernel names the owner */
		if (r->nl >= 0 && lfd == r->lfd6 && plen == sizeof(struct sockaddr_in6))
			rc = dlrt_peeruid_lookup6(r->nl, (struct sockaddr_in6 *)&peer, &r->laddr6,
						  &uid, &err);
		else if (r->nl >= 0 && lfd == r->lfd && plen == sizeof(struct sockaddr_in))
			rc = dlrt_peeruid_lookup(r->nl, (struct sockaddr_in *)&peer, &r->laddr,
						 &uid, &err);
		if (r->nl >= 0 && rc < 0) {
			/* A peer gone already, or a netlink socket in a bad state
			 * (an answer lost to a full buffer): a fresh one next time. */
			close(r->nl);
			r->nl = -1;
			uid = (uid_t)-1;
		}
		if (uid != r->cfg.uid || r->pairs.n >= r->cfg.max_conns) {
			if (uid == (uid_t)-1)
				relay_note(r, "refused a client: %s", err.msg);
			else if (uid != r->cfg.uid)
				relay_note(r, "refused a client of uid %u", (unsigned)uid);
			else
				relay_note(r, "refused a client: %zu clients already", r->pairs.n);
			r->stats.refused++;
			close(fd);
			continue;
		}
		p = spare_take(r);
		if (!p)
			p = pair_new(r);
		if (!p || dlrt_evloop_add_fd(loop, fd, p->st == SPARE ? DLRT_EV_READ : 0,
					     client_event, p) < 0) {
			if (p && p->st == SPARE) {
				dlrt_dlist_append(&r->spares, &p->link);
			} else if (p) {
				free(p->c2u.data);
				free(p->u2c.data);
				free(p);
			}
			close(fd);
			continue;
		}
		/* TCP_NODELAY comes from the listener: Linux copies it to the
		 * accepted socket. */
		r->stats.admitted++;
		p->cfd = fd;
		dlrt_dlist_append(&r->pairs, &p->link);
		if (p->st == SPARE) {
			r->stats.spare_used++;
			p->st = FORWARD;
			pair_update(p);
		} else {
			p->st = WAIT_TARGET;
			p->deadline_ms = dlrt_now_ms() + r->cfg.target_wait_ms;
			if (r->have_target)
				pair_connect(p);
		}
		spare_start(r);
	}
}

/* Ends the clients whose service did not answer in time. */
static int64_t sweep(struct dlrt_evloop *loop, void *arg)
{
	struct dlrt_relay *r = arg;
	int64_t now = dlrt_now_ms();

	(void)loop;
	for (struct pair *p = pair_of(r->pairs.head), *next; p; p = next) {
		next = pair_of(p->link.next);
		if (p->st == CHALLENGE && p->ufd < 0 && now <= p->deadline_ms) {
			if (upstream_open(p) < 0) { /* upstream_retry's next try */
				r->stats.upstream_failed++;
				pair_close(p);
			}
			continue;
		}
		if (p->st != FORWARD && now > p->deadline_ms) {
			if (p->st == WAIT_TARGET)
				relay_note(r, "a client waited in vain for the service's address");
			else if (p->hangups)
				relay_note(r, "the service hung up before the relay could "
					   "answer its challenge, %u times within the connect "
					   "timeout: it is overloaded (another process flooding it "
					   "with connections, or out of descriptors?)", p->hangups);
			else
				relay_note(r, "the service sent no challenge within the connect "
					   "timeout (is it overloaded, or its node unreachable?)");
			if (p->st != WAIT_TARGET)
				r->stats.upstream_failed++;
			pair_close(p);
		}
	}
	/* A spare lives less than the services' idle timeout (the Horovod
	 * driver's is 3 s), so the service never closes one under a client. */
	for (struct pair *p = pair_of(r->spares.head), *next; p; p = next) {
		next = pair_of(p->link.next);
		if (now > p->deadline_ms) {
			if (p->st == CHALLENGE)
				r->stats.upstream_failed++;
			pair_close(p);
		}
	}
	return SWEEP_MS;
}

/* Listens on 127.0.0.1 and [::1] on the same port. A program that connects
 * to "localhost" where it resolves to ::1 first (glibc's default order) would
 * reach whoever holds [::1]:PORT: left free, another user could bind it and
 * receive the job's connections. So the relay holds it too, with its
 * own-user check. With port 0 it looks for a port free on both; a host
 * without an IPv6 loopback has no [::1] anyone could bind. */
#define LISTEN_TRIES 64

static int listen_on(int family, const struct sockaddr *sa, socklen_t len)
{
	int one = 1, fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), e;

	if (fd < 0)
		return -1;
	/* Accepted sockets inherit it: no setsockopt per client. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, sa, len) == 0 && listen(fd, 1024) == 0)
		return fd;
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

static int relay_listen(struct dlrt_relay *r, uint16_t port, struct dlrt_err *err)
{
	for (int i = 0; i < LISTEN_TRIES; i++) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
		socklen_t salen = sizeof(sa);
		int e;

		r->lfd = listen_on(AF_INET, (struct sockaddr *)&sa, sizeof(sa));
		if (r->lfd < 0 || getsockname(r->lfd, (struct sockaddr *)&sa, &salen) < 0)
			return dlrt_err_errno(err, errno, "cannot listen on 127.0.0.1:%u", port);
		r->laddr = sa;
		r->port = ntohs(sa.sin_port);
		sa6.sin6_port = sa.sin_port;
		r->lfd6 = listen_on(AF_INET6, (struct sockaddr *)&sa6, sizeof(sa6));
		if (r->lfd6 >= 0) {
			r->laddr6 = sa6;
			return 0;
		}
		e = errno;
		if (e == EAFNOSUPPORT || e == EADDRNOTAVAIL)
			return 0; /* no IPv6 loopback here */
		close(r->lfd);
		r->lfd = -1;
		if (e != EADDRINUSE || port)
			return dlrt_err_errno(err, e, "cannot listen on [::1]:%u (a client "
					      "connecting to localhost would reach whoever holds "
					      "it instead of the relay)", r->port);
	}
	return dlrt_err_set(err, "no port was free on both 127.0.0.1 and [::1] in %d tries: "
			    "another process holds many [::1] ports", LISTEN_TRIES);
}

int dlrt_relay_start(struct dlrt_relay **out, struct dlrt_evloop *loop,
		     const struct dlrt_relay_cfg *cfg, struct dlrt_err *err)
{
	struct dlrt_relay *r = calloc(1, sizeof(*r));

	if (!r)
		return dlrt_err_set(err, "out of memory starting the relay");
	r->lfd = -1;
	r->lfd6 = -1;
	r->loop = loop;
	r->cfg = *cfg;
	if (!r->cfg.max_conns)
		r->cfg.max_conns = DEFAULT_MAX_CONNS;
	if (r->cfg.buf_size < DLRT_SVCAUTH_ANSWER_LEN)
		r->cfg.buf_size = DEFAULT_BUF;
	if (r->cfg.target_wait_ms <= 0)
		r->cfg.target_wait_ms = DEFAULT_TARGET_WAIT_MS;
	if (r->cfg.connect_timeout_ms <= 0)
		r->cfg.connect_timeout_ms = DEFAULT_CONNECT_MS;
	if (r->cfg.spares == 0)
		r->cfg.spares = DEFAULT_SPARES;
	else if (r->cfg.spares < 0)
		r->cfg.spares = 0;
	if (r->cfg.spare_max_age_ms <= 0)
		r->cfg.spare_max_age_ms = DEFAULT_SPARE_AGE_MS;
	r->nl = -1;
	r->nl = dlrt_peeruid_open(err);
	if (r->nl < 0 || relay_listen(r, cfg->port, err) < 0)
		goto fail;
	if (dlrt_evloop_add_fd(loop, r->lfd, DLRT_EV_READ, accept_event, r) < 0 ||
	    (r->lfd6 >= 0 &&
	     dlrt_evloop_add_fd(loop, r->lfd6, DLRT_EV_READ, accept_event, r) < 0) ||
	    (r->timer = dlrt_evloop_add_timer(loop, SWEEP_MS, sweep, r)) < 0) {
		dlrt_err_set(err, "out of memory starting the relay");
		goto fail;
	}
	*out = r;
	return 0;
fail:
	if (r->lfd >= 0) {
		dlrt_evloop_del_fd(loop, r->lfd);
		close(r->lfd);
	}
	if (r->lfd6 >= 0) {
		dlrt_evloop_del_fd(loop, r->lfd6);
		close(r->lfd6);
	}
	if (r->nl >= 0)
		close(r->nl);
	free(r);
	return -1;
}

uint16_t dlrt_relay_port(const struct dlrt_relay *r)
{
	return r->port;
}

void dlrt_relay_set_target(struct dlrt_relay *r, const char *ip, uint16_t port,
			   const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN])
{
	r->target = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(port) };
	inet_pton(AF_INET, ip, &r->target.sin_addr);
	memcpy(r->secret, secret, sizeof(r->secret));
	r->have_target = true;
	for (struct pair *p = pair_of(r->pairs.head), *next; p; p = next) {
		next = pair_of(p->link.next);
		if (p->st == WAIT_TARGET)
			pair_connect(p);
	}
}

unsigned dlrt_relay_nconns(const struct dlrt_relay *r)
{
	return (unsigned)r->pairs.n;
}

void dlrt_relay_stats(const struct dlrt_relay *r, struct dlrt_relay_stats *out)
{
	*out = r->stats;
}

void dlrt_relay_stop(struct dlrt_relay *r)
{
	if (!r)
		return;
	while (r->pairs.head)
		pair_close(pair_of(r->pairs.head));
	while (r->spares.head)
		pair_close(pair_of(r->spares.head));
	if (r->nl >= 0)
		close(r->nl);
	dlrt_evloop_del_timer(r->loop, r->timer);
	dlrt_evloop_del_fd(r->loop, r->lfd);
	close(r->lfd);
	if (r->lfd6 >= 0) {
		dlrt_evloop_del_fd(r->loop, r->lfd6);
		close(r->lfd6);
	}
	memset(r->secret, 0, sizeof(r->secret));
	free(r);
}
