#include "svchold.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A node gone without a word (power, network) lets go after about
 * IDLE + INTVL x CNT seconds of silence on its hold. */
#define HOLD_KEEPALIVE_IDLE_S 10
#define HOLD_KEEPALIVE_INTVL_S 5
#define HOLD_KEEPALIVE_CNT 3
/* How often the service sweeps its holds, and the relay tries again. */
#define HOLD_TICK_MS 1000
/* A proven hold has this long to send its index; a relay's connection this
 * long to be proven. */
#define HOLD_SETUP_MS 10000

static void keepalive(int fd)
{
	int on = 1, idle = HOLD_KEEPALIVE_IDLE_S, intvl = HOLD_KEEPALIVE_INTVL_S,
	    cnt = HOLD_KEEPALIVE_CNT;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* ---- the service's side ------------------------------------------------ */

struct hold {
	struct dlrt_holds *h;
	int fd;
	int64_t node;           /* -1 until its index came */
	uint8_t idx[DLRT_HOLD_NODE_LEN];
	size_t got;
	int64_t deadline_ms;    /* for the index */
};

struct dlrt_holds {
	struct dlrt_evloop *loop;
	uint32_t nnodes;
	struct hold **v;        /* at most cap: a node's hold and room for its next */
	size_t n, cap;
	uint8_t *seen;          /* by node index */
	unsigned nseen;
	int64_t timer;
	bool lingering;
	int64_t grace_end_ms;
	void (*done)(void *arg);
	void *done_arg;
};

static void linger_check(struct dlrt_holds *h)
{
	void (*done)(void *arg) = h->done;

	if (!h->lingering || h->n > 0)
		return;
	if (h->nseen != 0 && h->nseen < h->nnodes && dlrt_now_ms() < h->grace_end_ms)
		return;
	h->lingering = false;
	h->done = NULL;
	done(h->done_arg);
}

static void hold_drop(struct hold *x)
{
	struct dlrt_holds *h = x->h;

	for (size_t i = 0; i < h->n; i++) {
		if (h->v[i] == x) {
			h->v[i] = h->v[--h->n];
			break;
		}
	}
	dlrt_evloop_close_fd(h->loop, x->fd);
	free(x);
}

/* The index has come: the newest hold of a node wins (its relay connected
 * again after the old one broke). */
static int hold_register(struct hold *x)
{
	struct dlrt_holds *h = x->h;
	uint32_t node = ((uint32_t)x->idx[0] << 24) | ((uint32_t)x->idx[1] << 16) |
			((uint32_t)x->idx[2] << 8) | x->idx[3];

	if (node >= h->nnodes)
		return -1;
	for (size_t i = 0; i < h->n; i++) {
		if (h->v[i] != x && h->v[i]->node == (int64_t)node) {
			hold_drop(h->v[i]);
			break;
		}
	}
	x->node = node;
	if (!h->seen[node]) {
		h->seen[node] = 1;
		h->nseen++;
	}
	return 0;
}

static void hold_event(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct hold *x = arg;
	struct dlrt_holds *h = x->h;
	uint8_t scrap[64];
	ssize_t n;

	(void)loop;
	(void)events;
	if (x->node < 0) {
		n = recv(fd, x->idx + x->got, sizeof(x->idx) - x->got, 0);
		if (n > 0) {
			x->got += (size_t)n;
			if (x->got < sizeof(x->idx) || hold_register(x) == 0)
				return;
		}
	} else {
		n = recv(fd, scrap, sizeof(scrap), 0);
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	/* The end of a hold (or a relay that broke the protocol: it sends
	 * nothing after its index). */
	hold_drop(x);
	linger_check(h);
}

static int64_t holds_tick(struct dlrt_evloop *loop, void *arg)
{
	struct dlrt_holds *h = arg;
	int64_t now = dlrt_now_ms();

	(void)loop;
	for (size_t i = 0; i < h->n;) {
		if (h->v[i]->node < 0 && now > h->v[i]->deadline_ms)
			hold_drop(h->v[i]); /* the last one moved to i */
		else
			i++;
	}
	linger_check(h);
	return HOLD_TICK_MS;
}

struct dlrt_holds *dlrt_holds_create(struct dlrt_evloop *loop, uint32_t nnodes)
{
	struct dlrt_holds *h = calloc(1, sizeof(*h));

	if (!h || nnodes == 0)
		goto fail;
	h->loop = loop;
	h->nnodes = nnodes;
	h->cap = 2 * (size_t)nnodes + 4;
	h->v = calloc(h->cap, sizeof(*h->v));
	h->seen = calloc(nnodes, 1);
	if (!h->v || !h->seen)
		goto fail;
	h->timer = dlrt_evloop_add_timer(loop, HOLD_TICK_MS, holds_tick, h);
	if (h->timer < 0)
		goto fail;
	return h;
fail:
	if (h) {
		free(h->v);
		free(h->seen);
	}
	free(h);
	return NULL;
}

void dlrt_holds_destroy(struct dlrt_holds *h)
{
	if (!h)
		return;
	while (h->n)
		hold_drop(h->v[0]);
	dlrt_evloop_del_timer(h->loop, h->timer);
	free(h->v);
	free(h->seen);
	free(h);
}

void dlrt_holds_adopt(int fd, void *arg)
{
	struct dlrt_holds *h = arg;
	struct hold *x;

	/* Only a holder of the step secret gets here; still, bounded. */
	if (h->n >= h->cap || !(x = calloc(1, sizeof(*x)))) {
		close(fd);
		return;
	}
	*x = (struct hold){ .h = h, .fd = fd, .node = -1,
			    .deadline_ms = dlrt_now_ms() + HOLD_SETUP_MS };
	keepalive(fd);
	if (dlrt_evloop_add_fd(h->loop, fd, DLRT_EV_READ, hold_event, x) < 0) {
		close(fd);
		free(x);
		return;
	}
	h->v[h->n++] = x;
}

void dlrt_holds_linger(struct dlrt_holds *h, int64_t grace_ms, void (*done)(void *arg),
		       void *arg)
{
	h->lingering = true;
	h->grace_end_ms = dlrt_now_ms() + grace_ms;
	h->done = done;
	h->done_arg = arg;
	linger_check(h);
}

unsigned dlrt_holds_held(const struct dlrt_holds *h)
{
	return (unsigned)h->n;
}

unsigned dlrt_holds_seen(const struct dlrt_holds *h)
{
	return h->nseen;
}

/* ---- a node relay's side ----------------------------------------------- */

enum client_state { IDLE, CONNECTING, CHALLENGE, HELD };

struct dlrt_hold_client {
	struct dlrt_evloop *loop;
	struct sockaddr_in target;
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN];
	uint32_t node;
	int fd;
	enum client_state st;
	uint8_t chal[DLRT_SVCAUTH_CHALLENGE_LEN];
	size_t got;
	int64_t deadline_ms;    /* CONNECTING and CHALLENGE */
	int64_t timer;
};

static void client_close(struct dlrt_hold_client *c)
{
	if (c->fd >= 0)
		dlrt_evloop_close_fd(c->loop, c->fd);
	c->fd = -1;
	c->st = IDLE; /* the next tick connects again */
}

/* The challenge is in: the answer under the hold label, then the index. */
static int client_answer(struct dlrt_hold_client *c)
{
	uint8_t msg[DLRT_SVCAUTH_ANSWER_LEN + DLRT_HOLD_NODE_LEN];
	uint8_t *idx = msg + DLRT_SVCAUTH_ANSWER_LEN;

	dlrt_svcauth_answer_for(DLRT_SVCAUTH_HOLD, c->secret, c->chal, msg);
	idx[0] = (uint8_t)(c->node >> 24);
	idx[1] = (uint8_t)(c->node >> 16);
	idx[2] = (uint8_t)(c->node >> 8);
	idx[3] = (uint8_t)c->node;
	/* A fresh socket's send buffer always takes these few bytes. */
	if (send(c->fd, msg, sizeof(msg), MSG_NOSIGNAL) != (ssize_t)sizeof(msg))
		return -1;
	c->st = HELD;
	return 0;
}

static void client_event(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct dlrt_hold_client *c = arg;
	uint8_t scrap[64];
	int e = 0;
	socklen_t elen = sizeof(e);
	ssize_t n;

	(void)events;
	if (c->st == CONNECTING) {
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) < 0 || e) {
			client_close(c);
			return;
		}
		c->st = CHALLENGE;
		dlrt_evloop_set_events(loop, fd, DLRT_EV_READ);
		return;
	}
	if (c->st == CHALLENGE) {
		n = recv(fd, c->chal + c->got, sizeof(c->chal) - c->got, 0);
		if (n > 0) {
			c->got += (size_t)n;
			if (c->got < sizeof(c->chal) || client_answer(c) == 0)
				return;
		}
	} else {
		n = recv(fd, scrap, sizeof(scrap), 0); /* the service sends nothing */
		if (n > 0)
			return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	client_close(c);
}

static void client_connect(struct dlrt_hold_client *c)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	keepalive(fd);
	if (connect(fd, (struct sockaddr *)&c->target, sizeof(c->target)) < 0 &&
	    errno != EINPROGRESS) {
		close(fd);
		return;
	}
	if (dlrt_evloop_add_fd(c->loop, fd, DLRT_EV_WRITE, client_event, c) < 0) {
		close(fd);
		return;
	}
	c->fd = fd;
	c->st = CONNECTING;
	c->got = 0;
	c->deadline_ms = dlrt_now_ms() + HOLD_SETUP_MS;
}

static int64_t client_tick(struct dlrt_evloop *loop, void *arg)
{
	struct dlrt_hold_client *c = arg;

	(void)loop;
	if ((c->st == CONNECTING || c->st == CHALLENGE) && dlrt_now_ms() > c->deadline_ms)
		client_close(c);
	if (c->st == IDLE)
		client_connect(c);
	return HOLD_TICK_MS;
}

int dlrt_hold_client_start(struct dlrt_hold_client **out, struct dlrt_evloop *loop,
			   const char *ip, uint16_t port,
			   const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN], uint32_t node,
			   struct dlrt_err *err)
{
	struct dlrt_hold_client *c = calloc(1, sizeof(*c));

	if (!c)
		return dlrt_err_set(err, "out of memory holding the step's service");
	c->loop = loop;
	c->fd = -1;
	c->node = node;
	c->target.sin_family = AF_INET;
	c->target.sin_port = htons(port);
	memcpy(c->secret, secret, sizeof(c->secret));
	if (inet_pton(AF_INET, ip, &c->target.sin_addr) != 1) {
		free(c);
		return dlrt_err_set(err, "the service's address '%s' is not a numeric IPv4 "
				    "address", ip);
	}
	c->timer = dlrt_evloop_add_timer(loop, HOLD_TICK_MS, client_tick, c);
	if (c->timer < 0) {
		free(c);
		return dlrt_err_set(err, "out of memory holding the step's service");
	}
	client_connect(c);
	*out = c;
	return 0;
}

bool dlrt_hold_client_held(const struct dlrt_hold_client *c)
{
	return c && c->st == HELD;
}

void dlrt_hold_client_stop(struct dlrt_hold_client *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		dlrt_evloop_close_fd(c->loop, c->fd);
	dlrt_evloop_del_timer(c->loop, c->timer);
	memset(c->secret, 0, sizeof(c->secret));
	free(c);
}
