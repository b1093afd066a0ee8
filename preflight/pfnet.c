#include "pfnet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/crypto.h"

#define PF_CONN_MAX 1024     /* connections served at once */
#define PF_PENDING_MAX 64    /* of which not yet proven: a new one ends the oldest */
#define PF_AUTH_MS 1000      /* to prove the secret */
#define PF_SAMPLE_MAX_MS 5000 /* the longest bandwidth sample a peer may ask for */

struct dlrt_pf_server {
	int fd, stop_pipe[2];
	pthread_t thread;
	uint8_t secret[DLRT_SVCAUTH_SECRET_LEN];
	atomic_int conns;
	/* The step's nodes' addresses, once known (dlrt_pf_server_allow): a
	 * connection from anywhere else is closed at once. */
	struct in_addr *_Atomic allow;
	size_t nallow;
	/* Connections that have not proven the secret yet, oldest first out:
	 * another user's idle connections cannot crowd out the peers' probes,
	 * which prove it within a round trip. */
	pthread_mutex_t mu;
	int pending[PF_PENDING_MAX];
	int64_t since[PF_PENDING_MAX];
};

/* Whether fd's peer may talk to the server (every peer before the list). */
static bool admitted(struct dlrt_pf_server *s, int fd)
{
	struct in_addr *list = atomic_load(&s->allow);
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	if (!list)
		return true;
	if (getpeername(fd, (struct sockaddr *)&a, &len) < 0 || a.sin_family != AF_INET)
		return false;
	for (size_t i = 0; i < s->nallow; i++)
		if (list[i].s_addr == a.sin_addr.s_addr)
			return true;
	return false;
}

void dlrt_pf_server_allow(struct dlrt_pf_server *s, const char *const *ips, size_t n)
{
	struct in_addr *list = calloc(n ? n : 1, sizeof(*list));
	size_t k = 0;

	if (!list || atomic_load(&s->allow)) {
		free(list);
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (ips[i] && inet_pton(AF_INET, ips[i], &list[k]) == 1)
			k++;
	s->nallow = k;
	atomic_store(&s->allow, list); /* after nallow: the thread reads it after the list */
}

struct pf_conn {
	struct dlrt_pf_server *s;
	int fd, slot;
};

/* A slot for a new connection; the oldest pending one is ended for it when
 * none is free (shutdown: its thread then sees its end and cleans up). */
static int pending_add(struct dlrt_pf_server *s, int fd)
{
	int slot = -1, oldest = 0;

	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < PF_PENDING_MAX && slot < 0; i++)
		if (s->pending[i] < 0)
			slot = i;
	if (slot < 0) {
		for (int i = 1; i < PF_PENDING_MAX; i++)
			if (s->since[i] < s->since[oldest])
				oldest = i;
		shutdown(s->pending[oldest], SHUT_RDWR);
		slot = oldest;
	}
	s->pending[slot] = fd;
	s->since[slot] = dlrt_now_ms();
	pthread_mutex_unlock(&s->mu);
	return slot;
}

/* The connection proved the secret, or ended: it leaves the table (unless a
 * newer one took its slot already). */
static void pending_done(struct dlrt_pf_server *s, int slot, int fd)
{
	pthread_mutex_lock(&s->mu);
	if (s->pending[slot] == fd)
		s->pending[slot] = -1;
	pthread_mutex_unlock(&s->mu);
}

/* Waits for ev on fd until deadline_ms; 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short ev, int64_t deadline_ms)
{
	for (;;) {
		int64_t left = deadline_ms - dlrt_now_ms();
		struct pollfd p = { .fd = fd, .events = ev };
		int rc;

		if (left <= 0)
			return 0;
		rc = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
		if (rc > 0)
			return (p.revents & (ev | POLLHUP | POLLERR)) ? 1 : 0;
		if (rc < 0 && errno != EINTR)
			return -1;
	}
}

/* All n bytes, or -1 (closed, error, deadline). */
static int io_all(int fd, void *buf, size_t n, bool out, int64_t deadline_ms)
{
	size_t done = 0;

	while (done < n) {
		ssize_t k;

		if (wait_fd(fd, out ? POLLOUT : POLLIN, deadline_ms) != 1)
			return -1;
		k = out ? send(fd, (char *)buf + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT) :
			  recv(fd, (char *)buf + done, n - done, MSG_DONTWAIT);
		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
			return -1;
		if (k > 0)
			done += (size_t)k;
	}
	return 0;
}

static uint64_t get_be64(const uint8_t b[8])
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

static void put_be64(uint8_t b[8], uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		b[i] = (uint8_t)v;
}

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The bandwidth sample's receiving side: counts for ms from the first byte
 * (not from the command: a sender descheduled right after it, on a busy
 * node, would look slow), then answers. */
static void serve_sample(int fd, uint32_t ms)
{
	int64_t until;
	uint64_t got = 0;
	uint8_t b[8];
	static __thread char sink[65536];

	if (wait_fd(fd, POLLIN, dlrt_now_ms() + 2 * PF_AUTH_MS) != 1)
		return;
	until = dlrt_now_ms() + ms;
	while (dlrt_now_ms() < until) {
		ssize_t k;

		if (wait_fd(fd, POLLIN, until) != 1)
			break;
		k = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
			return;
		if (k > 0)
			got += (uint64_t)k;
	}
	put_be64(b, got);
	if (io_all(fd, b, 8, true, dlrt_now_ms() + 1000) < 0)
		return;
	/* Closing with the sender's data still unread would send a reset that
	 * can overtake the count: wait (bounded) for the sender to close. */
	shutdown(fd, SHUT_WR);
	until = dlrt_now_ms() + 1000;
	while (wait_fd(fd, POLLIN, until) == 1) {
		ssize_t k = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);

		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
			break;
	}
}

static void *serve_conn(void *arg)
{
	struct pf_conn *c = arg;
	uint8_t chal[DLRT_SVCAUTH_CHALLENGE_LEN], ans[DLRT_SVCAUTH_ANSWER_LEN], cmd[5], b[8];
	int64_t deadline = dlrt_now_ms() + PF_AUTH_MS;

	if (dlrt_crypto_random(chal, sizeof(chal)) < 0 || io_all(c->fd, chal, sizeof(chal), true, deadline) < 0 ||
	    io_all(c->fd, ans, sizeof(ans), false, deadline) < 0 ||
	    !dlrt_svcauth_check(c->s->secret, chal, ans)) {
		pending_done(c->s, c->slot, c->fd);
		goto out;
	}
	pending_done(c->s, c->slot, c->fd);
	/* Proven: one command after another until the peer closes (bounded). */
	deadline = dlrt_now_ms() + 2 * PF_SAMPLE_MAX_MS;
	while (io_all(c->fd, cmd, 1, false, deadline) == 0) {
		if (cmd[0] == 'P') {
			put_be64(b, (uint64_t)realtime_ns());
			if (io_all(c->fd, b, 8, true, deadline) < 0)
				break;
		} else if (cmd[0] == 'B' && io_all(c->fd, cmd + 1, 4, false, deadline) == 0) {
			uint32_t ms = (uint32_t)cmd[1] << 24 | (uint32_t)cmd[2] << 16 |
				      (uint32_t)cmd[3] << 8 | cmd[4];

			serve_sample(c->fd, ms > PF_SAMPLE_MAX_MS ? PF_SAMPLE_MAX_MS : ms);
			break;
		} else {
			break;
		}
	}
out:
	close(c->fd);
	atomic_fetch_sub(&c->s->conns, 1);
	free(c);
	return NULL;
}

static void *serve(void *arg)
{
	struct dlrt_pf_server *s = arg;

	for (;;) {
		struct pollfd p[2] = { { .fd = s->fd, .events = POLLIN },
				       { .fd = s->stop_pipe[0], .events = POLLIN } };
		struct pf_conn *c;
		pthread_attr_t at;
		pthread_t t;
		int fd;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			continue;
		if (!admitted(s, fd)) {
			close(fd);
			continue;
		}
		if (atomic_fetch_add(&s->conns, 1) >= PF_CONN_MAX || !(c = malloc(sizeof(*c)))) {
			atomic_fetch_sub(&s->conns, 1);
			close(fd);
			continue;
		}
		c->s = s;
		c->fd = fd;
		c->slot = pending_add(s, fd);
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&at, 256 * 1024);
		if (pthread_create(&t, &at, serve_conn, c) != 0) {
			pending_done(s, c->slot, fd);
			atomic_fetch_sub(&s->conns, 1);
			close(fd);
			free(c);
		}
		pthread_attr_destroy(&at);
	}
	return NULL;
}

struct dlrt_pf_server *dlrt_pf_server_start(const char *ip, const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
					    uint16_t *port, struct dlrt_err *err)
{
	struct dlrt_pf_server *s = calloc(1, sizeof(*s));
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);

	if (!s) {
		dlrt_err_set(err, "preflight: out of memory");
		return NULL;
	}
	s->fd = s->stop_pipe[0] = s->stop_pipe[1] = -1;
	pthread_mutex_init(&s->mu, NULL);
	for (int i = 0; i < PF_PENDING_MAX; i++)
		s->pending[i] = -1;
	memcpy(s->secret, secret, DLRT_SVCAUTH_SECRET_LEN);
	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
		dlrt_err_set(err, "preflight: '%s' is not an IPv4 address", ip);
		goto fail;
	}
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(s->fd, 512) < 0 || getsockname(s->fd, (struct sockaddr *)&a, &alen) < 0 ||
	    pipe2(s->stop_pipe, O_CLOEXEC) < 0) {
		dlrt_err_errno(err, errno, "preflight: cannot listen on %s", ip);
		goto fail;
	}
	*port = ntohs(a.sin_port);
	if (pthread_create(&s->thread, NULL, serve, s) != 0) {
		dlrt_err_set(err, "preflight: cannot start the probe server's thread");
		goto fail;
	}
	return s;
fail:
	if (s->fd >= 0)
		close(s->fd);
	if (s->stop_pipe[0] >= 0) {
		close(s->stop_pipe[0]);
		close(s->stop_pipe[1]);
	}
	free(s);
	return NULL;
}

void dlrt_pf_server_stop(struct dlrt_pf_server *s)
{
	if (!s)
		return;
	if (write(s->stop_pipe[1], "x", 1) != 1)
		return; /* the thread may still use it: left to the process's end */
	pthread_join(s->thread, NULL);
	close(s->fd);
	close(s->stop_pipe[0]);
	close(s->stop_pipe[1]);
	/* Connection threads end by their own deadlines; freed once they have
	 * (bounded: else left to the process's end, which comes right after). */
	for (int i = 0; i < 300 && atomic_load(&s->conns) > 0; i++)
		usleep(10 * 1000);
	if (atomic_load(&s->conns) > 0)
		return;
	free(atomic_load(&s->allow));
	free(s);
}

/* Connects and proves the secret; the descriptor or -1. */
static int open_peer(const char *ip, uint16_t port, const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
		     int64_t deadline_ms, struct dlrt_err *err)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	uint8_t chal[DLRT_SVCAUTH_CHALLENGE_LEN], ans[DLRT_SVCAUTH_ANSWER_LEN];
	int fd, one = 1, soerr = 0;
	socklen_t sl = sizeof(soerr);

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
		dlrt_err_set(err, "'%s' is not an IPv4 address", ip);
		return -1;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		dlrt_err_errno(err, errno, "socket");
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) {
		dlrt_err_errno(err, errno, "connect to %s:%u", ip, port);
		goto fail;
	}
	if (wait_fd(fd, POLLOUT, deadline_ms) != 1 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
		dlrt_err_errno(err, soerr ? soerr : ETIMEDOUT, "connect to %s:%u", ip, port);
		goto fail;
	}
	if (io_all(fd, chal, sizeof(chal), false, deadline_ms) < 0) {
		dlrt_err_set(err, "%s:%u sent no challenge in time", ip, port);
		goto fail;
	}
	dlrt_svcauth_answer(secret, chal, ans);
	if (io_all(fd, ans, sizeof(ans), true, deadline_ms) < 0) {
		dlrt_err_set(err, "%s:%u: cannot answer its challenge", ip, port);
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

int dlrt_pf_ping(const char *ip, uint16_t port, const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
		 int npings, int64_t deadline_ms, uint32_t *rtt_us, int64_t *offset_us,
		 struct dlrt_err *err)
{
	int fd = open_peer(ip, port, secret, deadline_ms, err);
	int64_t best = INT64_MAX;

	if (fd < 0)
		return -1;
	for (int i = 0; i < npings; i++) {
		int64_t t0 = dlrt_now_ns(), r0 = realtime_ns(), t1, r1;
		uint8_t b[8];

		if (io_all(fd, "P", 1, true, deadline_ms) < 0 || io_all(fd, b, 8, false, deadline_ms) < 0) {
			dlrt_err_set(err, "%s:%u stopped answering pings", ip, port);
			close(fd);
			return -1;
		}
		t1 = dlrt_now_ns();
		r1 = realtime_ns();
		if (t1 - t0 < best) {
			best = t1 - t0;
			*offset_us = ((int64_t)get_be64(b) - (r0 + (r1 - r0) / 2)) / 1000;
		}
	}
	close(fd);
	*rtt_us = best == INT64_MAX ? 0 : (uint32_t)(best / 1000);
	return 0;
}

int dlrt_pf_bandwidth(const char *ip, uint16_t port, const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN],
		      uint32_t ms, int64_t deadline_ms, uint64_t *kBps, struct dlrt_err *err)
{
	static char chunk[65536];
	uint8_t cmd[5] = { 'B', (uint8_t)(ms >> 24), (uint8_t)(ms >> 16), (uint8_t)(ms >> 8), (uint8_t)ms };
	uint8_t b[8];
	size_t have = 0;
	int fd = open_peer(ip, port, secret, deadline_ms, err);

	if (fd < 0)
		return -1;
	if (io_all(fd, cmd, sizeof(cmd), true, deadline_ms) < 0)
		goto fail;
	/* Send until the peer answers with its count (after ms of its clock). */
	while (have < 8) {
		struct pollfd p = { .fd = fd, .events = POLLIN | POLLOUT };
		int64_t left = deadline_ms - dlrt_now_ms();
		ssize_t k;

		if (left <= 0 || poll(&p, 1, (int)(left > 1000 ? 1000 : left)) < 0)
			goto fail;
		if (p.revents & POLLIN) {
			k = recv(fd, b + have, 8 - have, MSG_DONTWAIT);
			if (k <= 0 && !(k < 0 && (errno == EAGAIN || errno == EINTR)))
				goto fail;
			if (k > 0)
				have += (size_t)k;
		} else if (p.revents & POLLOUT) {
			k = send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL | MSG_DONTWAIT);
			if (k < 0 && errno != EAGAIN && errno != EINTR)
				goto fail;
		} else if (p.revents & (POLLHUP | POLLERR)) {
			goto fail;
		}
	}
	close(fd);
	*kBps = ms ? get_be64(b) / ms : 0; /* bytes per ms = kB/s */
	return 0;
fail:
	dlrt_err_set(err, "%s:%u: the bandwidth sample did not complete", ip, port);
	close(fd);
	return -1;
}
