#include "relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peeruid.h"

#define DEFAULT_MAX_CONNS 1024
#define DEFAULT_BUF (64 * 1024)
#define DEFAULT_TARGET_WAIT_MS 60000
#define DEFAULT_CONNECT_MS 10000
#define SWEEP_MS 250

enum pair_state {
	WAIT_TARGET, /* admitted before the relay knew the service */
	CONNECTING,  /* non-blocking connect to the service */
	CHALLENGE,   /* reading the service's challenge */
	FORWARD,
};

/* One direction: bytes read from one side, not yet written to the other. */
struct dir {
	uint8_t *data;
	size_t off, len;
	bool eof;  /* the source side sent FIN */
	bool shut; /* passed on: shutdown(SHUT_WR) of the destination */
};

struct pair {
	struct dlrt_relay *r;
	int cfd, ufd;
	enum pair_state st;
	uint8_t chal[DLRT_SVCAUTH_CHALLENGE_LEN];
	size_t chal_got;
	int64_t deadline_ms; /* until FORWARD */
	struct dir c2u, u2c;
	struct pair *prev, *next;
};

struct dlrt_relay {
	struct dlrt_evloop *loop;
	struct dlrt_relay_cfg cfg;
	int lfd;
	uint16_t port;
	bool have_target;
	struct sockaddr_in target;
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN];
	struct pair *pairs;
	unsigned npairs;
	int64_t timer;
	struct dlrt_relay_stats stats;
};

static void pair_update(struct pair *p);

static void pair_close(struct pair *p)
{
	struct dlrt_relay *r = p->r;

	dlrt_evloop_del_fd(r->loop, p->cfd);
	close(p->cfd);
	if (p->ufd >= 0) {
		dlrt_evloop_del_fd(r->loop, p->ufd);
		close(p->ufd);
	}
	if (p->prev)
		p->prev->next = p->next;
	else
		r->pairs = p->next;
	if (p->next)
		p->next->prev = p->prev;
	r->npairs--;
	free(p->c2u.data);
	free(p->u2c.data);
	free(p);
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
 * never a silently lost request or answer). */
static int dir_flush(struct dir *d, int fd)
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
		if (shutdown(fd, SHUT_WR) < 0 && errno != ENOTCONN)
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

static void challenge_read(struct pair *p)
{
	struct dlrt_relay *r = p->r;
	uint8_t answer[DLRT_SVCAUTH_ANSWER_LEN];
	ssize_t n = recv(p->ufd, p->chal + p->chal_got, sizeof(p->chal) - p->chal_got, 0);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
		r->stats.upstream_failed++;
		pair_close(p);
		return;
	}
	if (n > 0)
		p->chal_got += (size_t)n;
	if (p->chal_got < sizeof(p->chal)) {
		pair_update(p);
		return;
	}
	/* The answer goes out first; the client's bytes follow it (c2u is empty:
	 * the client is not read before FORWARD). */
	dlrt_svcauth_answer(r->secret, p->chal, answer);
	memcpy(p->c2u.data, answer, sizeof(answer));
	p->c2u.len = sizeof(answer);
	p->st = FORWARD;
	if (dir_flush(&p->c2u, p->ufd) < 0) {
		pair_close(p);
		return;
	}
	pair_update(p);
}

static void up_event(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct pair *p = arg;

	(void)loop;
	if (p->st == CONNECTING) {
		if (side_failed(fd)) {
			p->r->stats.upstream_failed++;
			pair_close(p);
			return;
		}
		p->st = CHALLENGE;
		pair_update(p);
		return;
	}
	if (p->st == CHALLENGE) {
		if (events & DLRT_EV_READ)
			challenge_read(p);
		return;
	}
	if ((events & DLRT_EV_WRITE) && dir_flush(&p->c2u, p->ufd) < 0)
		goto fail;
	if (events & DLRT_EV_READ) {
		if (!p->u2c.eof && p->u2c.len < p->r->cfg.buf_size) {
			if (dir_fill(&p->u2c, p->r->cfg.buf_size, p->ufd) < 0)
				goto fail;
			if (dir_flush(&p->u2c, p->cfd) < 0)
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

static void client_event(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct pair *p = arg;

	(void)loop;
	if (p->st != FORWARD) {
		if (side_failed(fd))
			pair_close(p);
		return;
	}
	if ((events & DLRT_EV_WRITE) && dir_flush(&p->u2c, p->cfd) < 0)
		goto fail;
	if (events & DLRT_EV_READ) {
		if (!p->c2u.eof && p->c2u.len < p->r->cfg.buf_size) {
			if (dir_fill(&p->c2u, p->r->cfg.buf_size, p->cfd) < 0)
				goto fail;
			if (dir_flush(&p->c2u, p->ufd) < 0)
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
	case CONNECTING:
		uev = DLRT_EV_WRITE;
		break;
	case CHALLENGE:
		uev = DLRT_EV_READ;
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
	dlrt_evloop_set_events(r->loop, p->cfd, cev);
	dlrt_evloop_set_events(r->loop, p->ufd, uev);
}

static void pair_connect(struct pair *p)
{
	struct dlrt_relay *r = p->r;
	int one = 1;

	p->ufd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->ufd < 0)
		goto fail;
	setsockopt(p->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(p->ufd, (struct sockaddr *)&r->target, sizeof(r->target)) < 0 &&
	    errno != EINPROGRESS) {
		close(p->ufd);
		p->ufd = -1;
		goto fail;
	}
	if (dlrt_evloop_add_fd(r->loop, p->ufd, DLRT_EV_WRITE, up_event, p) < 0) {
		close(p->ufd);
		p->ufd = -1;
		goto fail;
	}
	p->st = CONNECTING;
	p->deadline_ms = dlrt_now_ms() + r->cfg.connect_timeout_ms;
	return;
fail:
	r->stats.upstream_failed++;
	pair_close(p);
}

/* Admits the job user's sockets only; everything else is closed at once,
 * before a byte is read or a buffer allocated. */
static void accept_event(struct dlrt_evloop *loop, int lfd, unsigned events, void *arg)
{
	struct dlrt_relay *r = arg;

	(void)events;
	for (;;) {
		struct dlrt_err err;
		struct pair *p;
		uid_t uid;
		int one = 1;
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		if (dlrt_peeruid_of(fd, &uid, &err) < 0 || uid != r->cfg.uid ||
		    r->npairs >= r->cfg.max_conns) {
			r->stats.refused++;
			close(fd);
			continue;
		}
		p = calloc(1, sizeof(*p));
		if (p) {
			p->c2u.data = malloc(r->cfg.buf_size);
			p->u2c.data = malloc(r->cfg.buf_size);
		}
		if (!p || !p->c2u.data || !p->u2c.data ||
		    dlrt_evloop_add_fd(loop, fd, 0, client_event, p) < 0) {
			if (p) {
				free(p->c2u.data);
				free(p->u2c.data);
			}
			free(p);
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		r->stats.admitted++;
		p->r = r;
		p->cfd = fd;
		p->ufd = -1;
		p->st = WAIT_TARGET;
		p->deadline_ms = dlrt_now_ms() + r->cfg.target_wait_ms;
		p->next = r->pairs;
		if (r->pairs)
			r->pairs->prev = p;
		r->pairs = p;
		r->npairs++;
		if (r->have_target)
			pair_connect(p);
	}
}

/* Ends the clients whose service did not answer in time. */
static int64_t sweep(struct dlrt_evloop *loop, void *arg)
{
	struct dlrt_relay *r = arg;
	int64_t now = dlrt_now_ms();

	(void)loop;
	for (struct pair *p = r->pairs, *next; p; p = next) {
		next = p->next;
		if (p->st != FORWARD && now > p->deadline_ms) {
			if (p->st != WAIT_TARGET)
				r->stats.upstream_failed++;
			pair_close(p);
		}
	}
	return SWEEP_MS;
}

int dlrt_relay_start(struct dlrt_relay **out, struct dlrt_evloop *loop,
		     const struct dlrt_relay_cfg *cfg, struct dlrt_err *err)
{
	struct dlrt_relay *r = calloc(1, sizeof(*r));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t salen = sizeof(sa);

	if (!r)
		return dlrt_err_set(err, "out of memory starting the relay");
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
	sa.sin_port = htons(cfg->port);
	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (r->lfd < 0) {
		dlrt_err_errno(err, errno, "cannot create the relay's socket");
		goto fail;
	}
	if (bind(r->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(r->lfd, 1024) < 0 ||
	    getsockname(r->lfd, (struct sockaddr *)&sa, &salen) < 0) {
		dlrt_err_errno(err, errno, "cannot listen on 127.0.0.1:%u", cfg->port);
		goto fail;
	}
	r->port = ntohs(sa.sin_port);
	if (dlrt_evloop_add_fd(loop, r->lfd, DLRT_EV_READ, accept_event, r) < 0 ||
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
	for (struct pair *p = r->pairs, *next; p; p = next) {
		next = p->next;
		if (p->st == WAIT_TARGET)
			pair_connect(p);
	}
}

unsigned dlrt_relay_nconns(const struct dlrt_relay *r)
{
	return r->npairs;
}

void dlrt_relay_stats(const struct dlrt_relay *r, struct dlrt_relay_stats *out)
{
	*out = r->stats;
}

void dlrt_relay_stop(struct dlrt_relay *r)
{
	if (!r)
		return;
	while (r->pairs)
		pair_close(r->pairs);
	dlrt_evloop_del_timer(r->loop, r->timer);
	dlrt_evloop_del_fd(r->loop, r->lfd);
	close(r->lfd);
	memset(r->secret, 0, sizeof(r->secret));
	free(r);
}
