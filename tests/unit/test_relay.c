/* test_relay.c - the node relay (services/relay.c), the peer-uid lookup
 * (services/peeruid.c) and the services' authentication phase
 * (services/tcpserver.c with a secret, services/svcauth.c), against real sockets
 * on loopback: an echo service behind a relay, in one event loop run by a
 * thread, and blocking clients in the test. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "services/peeruid.h"
#include "services/relay.h"
#include "services/svcauth.h"
#include "tap.h"
#include "services/tcpserver.h"

static const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN] = "0123456789abcdef0123456789abcde";

static enum dlrt_proto_result echo(struct dlrt_conn *c, void *ctx)
{
	(void)ctx;
	if (dlrt_buf_append(&c->out, dlrt_buf_head(&c->in), c->in.len) < 0)
		return DLRT_PROTO_CLOSE;
	dlrt_buf_consume(&c->in, c->in.len);
	return DLRT_PROTO_OK;
}

static int dial(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 10 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads until EOF or `cap` bytes; the byte count, or -1 on an error. */
static ssize_t read_all(int fd, uint8_t *buf, size_t cap)
{
	size_t n = 0;

	while (n < cap) {
		ssize_t r = recv(fd, buf + n, cap - n, 0);

		if (r == 0)
			break;
		if (r < 0)
			return n ? (ssize_t)n : -1;
		n += (size_t)r;
	}
	return (ssize_t)n;
}

/* Sends `len` bytes and then FIN while reading the echo (a full duplex
 * exchange, so both directions' buffers of the relay fill and drain). */
static size_t roundtrip(int fd, const uint8_t *out, size_t len, uint8_t *in, size_t cap)
{
	size_t sent = 0, got = 0;
	bool shut = false;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN | (shut ? 0 : POLLOUT) };

		if (poll(&p, 1, 10000) <= 0)
			break;
		if (p.revents & POLLOUT) {
			ssize_t n = send(fd, out + sent, len - sent > 65536 ? 65536 : len - sent,
					 MSG_DONTWAIT | MSG_NOSIGNAL);

			if (n > 0)
				sent += (size_t)n;
			if (sent == len) {
				shutdown(fd, SHUT_WR);
				shut = true;
			}
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t n = recv(fd, in + got, cap - got, MSG_DONTWAIT);

			if (n == 0 || (n < 0 && errno != EAGAIN))
				break;
			if (n > 0)
				got += (size_t)n;
		}
	}
	return got;
}

struct late {
	struct dlrt_relay *relay;
	uint16_t port;
};

/* Runs in the loop: the relay learns its target only now, after a client
 * already came (as when a task connects before its node's first task wrote
 * the relay's config line). */
static int64_t set_target_late(struct dlrt_evloop *loop, void *arg)
{
	struct late *l = arg;

	(void)loop;
	dlrt_relay_set_target(l->relay, "127.0.0.1", l->port, secret);
	return -1;
}

static void *run(void *arg)
{
	dlrt_evloop_run(arg);
	return NULL;
}

static void test_svcauth(void)
{
	uint8_t chal[DLRT_SVCAUTH_CHALLENGE_LEN] = { 1, 2, 3 }, ans[DLRT_SVCAUTH_ANSWER_LEN];
	uint8_t other[DLRT_SVCAUTH_SECRET_LEN] = { 9 }, back[DLRT_SVCAUTH_SECRET_LEN];
	char line[DLRT_SVCADDR_MAX], ip[16];
	uint16_t port = 0;

	dlrt_svcauth_answer(secret, chal, ans);
	TAP_OK(dlrt_svcauth_check(secret, chal, ans), "the right answer passes");
	TAP_OK(!dlrt_svcauth_check(other, chal, ans), "an answer made with another secret fails");
	chal[0] ^= 1;
	TAP_OK(!dlrt_svcauth_check(secret, chal, ans), "an answer to another challenge fails");
	dlrt_svcaddr_format(line, "10.1.2.3", 4567, secret);
	TAP_OK(strlen(line) == strlen("10.1.2.3:4567#") + 64, "address line: ip:port#64 hex");
	TAP_OK(dlrt_svcaddr_parse(line, strlen(line), ip, &port, back) == 0 &&
	       !strcmp(ip, "10.1.2.3") && port == 4567 && !memcmp(back, secret, sizeof(back)),
	       "address line round trip");
	TAP_OK(dlrt_svcaddr_parse(line, strlen(line) - 1, ip, &port, back) < 0,
	       "a short secret is refused");
	TAP_OK(dlrt_svcaddr_parse("10.1.2.3:4567", 12, ip, &port, back) < 0,
	       "an address without a secret is refused");
	line[20] = 'G';
	TAP_OK(dlrt_svcaddr_parse(line, strlen(line), ip, &port, back) < 0,
	       "a non-hex secret is refused");
}

static void test_peeruid(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(sa);
	struct dlrt_err err;
	uid_t uid = (uid_t)-1;
	int lfd = socket(AF_INET, SOCK_STREAM, 0), c, s;

	bind(lfd, (struct sockaddr *)&sa, sizeof(sa));
	listen(lfd, 4);
	getsockname(lfd, (struct sockaddr *)&sa, &l);
	c = dial(ntohs(sa.sin_port));
	s = accept(lfd, NULL, NULL);
	TAP_OK(dlrt_peeruid_of(s, &uid, &err) == 0, "the kernel names the peer's owner");
	TAP_IS_INT(uid, getuid(), "the peer's owner is this process's user");
	{
		struct sockaddr_in peer, me;
		socklen_t pl = sizeof(peer), ml = sizeof(me);
		int nl = dlrt_peeruid_open(&err);

		getpeername(s, (struct sockaddr *)&peer, &pl);
		getsockname(s, (struct sockaddr *)&me, &ml);
		uid = (uid_t)-1;
		TAP_OK(nl >= 0 && dlrt_peeruid_lookup(nl, &peer, &me, &uid, &err) == 0 &&
		       uid == getuid() && dlrt_peeruid_lookup(nl, &peer, &me, &uid, &err) == 0,
		       "a kept netlink socket answers lookup after lookup");
		peer.sin_port = htons((uint16_t)(ntohs(peer.sin_port) ^ 1));
		TAP_OK(dlrt_peeruid_lookup(nl, &peer, &me, &uid, &err) < 0,
		       "a socket that does not exist has no owner: %s", err.msg);
		close(nl);
	}
	close(c);
	close(s);
	close(lfd);
}

/* Holders of the secret are never shed for arriving together. The clients
 * connect before the service's loop runs, so one accept round finds all of
 * them in the backlog, 256 at once, more than a step's relays and tasks
 * open at a time: with the default room for unproven connections each must
 * still get its challenge and, once it answers, its reply. (A service that
 * evicted the oldest unproven connection at every accept past a small cap
 * closed the burst's first ones before they could have answered: a relay saw
 * the challenge, answered, forwarded its client's request and got end of
 * file, which Horovod's client reports as a malformed HTTP response.) */
static void test_burst(void)
{
	enum { N = 256 };
	struct dlrt_evloop *loop = dlrt_evloop_create();
	struct dlrt_tcpserver *srv = NULL;
	struct dlrt_tcpserver_cfg cfg = {
		.bind_addr = "127.0.0.1", .max_request = 4096, .max_reply = 4096,
		.secret = secret, .auth_timeout_ms = 60000,
	};
	struct dlrt_proto proto = { .on_data = echo };
	struct dlrt_err err;
	int fds[N], served = 0;
	pthread_t th;

	TAP_OK(dlrt_tcpserver_start(&srv, loop, &cfg, &proto, NULL, &err) == 0,
	       "burst: a service with a secret starts");
	for (int i = 0; i < N; i++)
		fds[i] = dial(dlrt_tcpserver_port(srv));
	pthread_create(&th, NULL, run, loop);
	/* In the order they connected: the service takes them in that order. */
	for (int i = 0; i < N; i++) {
		uint8_t chal[DLRT_SVCAUTH_CHALLENGE_LEN], msg[DLRT_SVCAUTH_ANSWER_LEN + 4];
		uint8_t back[8];

		if (fds[i] < 0 || recv(fds[i], chal, sizeof(chal), MSG_WAITALL) != sizeof(chal))
			continue;
		dlrt_svcauth_answer(secret, chal, msg);
		memcpy(msg + DLRT_SVCAUTH_ANSWER_LEN, "ping", 4);
		if (send(fds[i], msg, sizeof(msg), MSG_NOSIGNAL) != sizeof(msg))
			continue;
		if (recv(fds[i], back, 4, MSG_WAITALL) == 4 && !memcmp(back, "ping", 4))
			served++;
	}
	TAP_IS_INT(served, N, "burst: all %d connections that arrived at once and answered "
		   "were served (none shed)", N);
	for (int i = 0; i < N; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	dlrt_evloop_stop(loop);
	pthread_join(th, NULL);
	dlrt_tcpserver_stop(srv);
	dlrt_evloop_destroy(loop);
}

/* A service that hangs up on its first 3 connections before any challenge
 * (as a flooded service sheds its oldest unproven ones), then serves the
 * 4th: challenge, the relay's answer checked, one request echoed. */
struct shedder {
	int lfd;
	int served;
};

static void *shedder_run(void *arg)
{
	struct shedder *sh = arg;

	for (int i = 0; i < 4; i++) {
		uint8_t chal[DLRT_SVCAUTH_CHALLENGE_LEN] = { 7 }, ans[DLRT_SVCAUTH_ANSWER_LEN];
		uint8_t req[4];
		struct timeval tv = { .tv_sec = 5 };
		int fd = accept(sh->lfd, NULL, NULL);

		if (fd < 0)
			return NULL;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (i == 3 && send(fd, chal, sizeof(chal), MSG_NOSIGNAL) == sizeof(chal) &&
		    recv(fd, ans, sizeof(ans), MSG_WAITALL) == sizeof(ans) &&
		    dlrt_svcauth_check(secret, chal, ans) &&
		    recv(fd, req, sizeof(req), MSG_WAITALL) == sizeof(req) &&
		    send(fd, req, sizeof(req), MSG_NOSIGNAL) == sizeof(req))
			sh->served = 1;
		close(fd);
	}
	return NULL;
}

/* Hung up on before the challenge, the relay connects again (within its
 * connect timeout) instead of ending its client's connection. */
static void test_hung_up(void)
{
	struct dlrt_evloop *loop = dlrt_evloop_create();
	struct dlrt_relay_cfg cfg = { .uid = getuid(), .spares = -1 };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(sa);
	struct shedder sh = { .lfd = socket(AF_INET, SOCK_STREAM, 0) };
	struct dlrt_relay *r = NULL;
	struct dlrt_relay_stats st;
	struct dlrt_err err;
	pthread_t th, sth;
	uint8_t back[4];
	int fd;

	bind(sh.lfd, (struct sockaddr *)&sa, sizeof(sa));
	listen(sh.lfd, 8);
	getsockname(sh.lfd, (struct sockaddr *)&sa, &l);
	TAP_OK(dlrt_relay_start(&r, loop, &cfg, &err) == 0, "hung up: a relay without spares starts");
	dlrt_relay_set_target(r, "127.0.0.1", ntohs(sa.sin_port), secret);
	pthread_create(&sth, NULL, shedder_run, &sh);
	pthread_create(&th, NULL, run, loop);
	fd = dial(dlrt_relay_port(r));
	TAP_OK(fd >= 0 && send(fd, "ping", 4, MSG_NOSIGNAL) == 4 &&
	       recv(fd, back, 4, MSG_WAITALL) == 4 && !memcmp(back, "ping", 4),
	       "hung up: the client is served by the service's 4th connection");
	dlrt_evloop_stop(loop);
	pthread_join(th, NULL);
	pthread_join(sth, NULL);
	dlrt_relay_stats(r, &st);
	TAP_IS_INT(st.hung_up, 3, "hung up: the relay connected again after each of 3 hang-ups");
	TAP_IS_INT(st.upstream_failed, 0, "hung up: and counted no failure");
	if (fd >= 0)
		close(fd);
	close(sh.lfd);
	dlrt_relay_stop(r);
	dlrt_evloop_destroy(loop);
}

/* A listener on [::1]:P whose 127.0.0.1:P was free a moment ago: the relay
 * given --port P then fails on [::1] only. The machine runs other tests, so
 * the port is one the kernel just found free on 127.0.0.1, not [::1]'s own
 * pick, whose 127.0.0.1 twin may be anyone's. */
static int squat_v6_only(struct sockaddr_in6 *sa)
{
	for (int i = 0; i < 50; i++) {
		struct sockaddr_in v4 = { .sin_family = AF_INET,
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t l = sizeof(v4);
		int probe = socket(AF_INET, SOCK_STREAM, 0), fd, one = 1;

		if (probe < 0 || bind(probe, (struct sockaddr *)&v4, sizeof(v4)) < 0 ||
		    getsockname(probe, (struct sockaddr *)&v4, &l) < 0) {
			if (probe >= 0)
				close(probe);
			return -1;
		}
		fd = socket(AF_INET6, SOCK_STREAM, 0);
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		*sa = (struct sockaddr_in6){ .sin6_family = AF_INET6, .sin6_port = v4.sin_port,
					     .sin6_addr = IN6ADDR_LOOPBACK_INIT };
		if (fd >= 0 && bind(fd, (struct sockaddr *)sa, sizeof(*sa)) == 0 && listen(fd, 1) == 0) {
			close(probe);
			return fd;
		}
		close(probe);
		if (fd >= 0)
			close(fd);
	}
	return -1;
}

/* [::1] on the relay's port is the relay's too: a client connecting to
 * "localhost" that tries ::1 first reaches the relay (and its own-user
 * check), and nobody else can bind it; with --port given and [::1]:PORT
 * taken, the relay refuses to start. */
static void test_v6(void)
{
	struct dlrt_evloop *loop = dlrt_evloop_create();
	struct dlrt_tcpserver_cfg scfg = {
		.bind_addr = "127.0.0.1", .max_request = 4096, .max_reply = 4096,
		.secret = secret,
	};
	struct dlrt_proto proto = { .on_data = echo };
	struct dlrt_relay_cfg cfg = { .uid = getuid() };
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct dlrt_tcpserver *srv = NULL;
	struct dlrt_relay *r = NULL, *r2 = NULL;
	struct timeval tv = { .tv_sec = 5 };
	struct dlrt_err err;
	uint8_t back[4];
	pthread_t th;
	int fd, one = 1, squat = socket(AF_INET6, SOCK_STREAM, 0);

	setsockopt(squat, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (squat < 0 || bind(squat, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		TAP_OK(1, "# SKIP no IPv6 loopback here");
		if (squat >= 0)
			close(squat);
		dlrt_evloop_destroy(loop);
		return;
	}
	TAP_OK(dlrt_tcpserver_start(&srv, loop, &scfg, &proto, NULL, &err) == 0 &&
	       dlrt_relay_start(&r, loop, &cfg, &err) == 0, "v6: a service and its relay start");
	dlrt_relay_set_target(r, "127.0.0.1", dlrt_tcpserver_port(srv), secret);
	sa.sin6_port = htons(dlrt_relay_port(r));
	fd = socket(AF_INET6, SOCK_STREAM, 0);
	TAP_OK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno == EADDRINUSE,
	       "v6: nobody else can bind [::1] on the relay's port");
	close(fd);
	pthread_create(&th, NULL, run, loop);
	fd = socket(AF_INET6, SOCK_STREAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	TAP_OK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	       send(fd, "ping", 4, MSG_NOSIGNAL) == 4 && recv(fd, back, 4, MSG_WAITALL) == 4 &&
	       !memcmp(back, "ping", 4), "v6: a client of the job's user on [::1] is relayed");
	close(fd);
	dlrt_evloop_stop(loop);
	pthread_join(th, NULL);
	/* Another user's client on [::1]: closed before a byte, as on 127.0.0.1. */
	cfg.uid = getuid() + 1;
	TAP_OK(dlrt_relay_start(&r2, loop, &cfg, &err) == 0, "v6: a relay for another uid starts");
	dlrt_relay_set_target(r2, "127.0.0.1", dlrt_tcpserver_port(srv), secret);
	sa.sin6_port = htons(dlrt_relay_port(r2));
	pthread_create(&th, NULL, run, loop);
	fd = socket(AF_INET6, SOCK_STREAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	TAP_OK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	       send(fd, "ping", 4, MSG_NOSIGNAL) <= 4 && recv(fd, back, 4, 0) <= 0,
	       "v6: a client of another user on [::1] is closed without an answer");
	close(fd);
	dlrt_evloop_stop(loop);
	pthread_join(th, NULL);
	dlrt_relay_stop(r2);
	r2 = NULL;
	cfg.uid = getuid();
	close(squat);
	squat = squat_v6_only(&sa);
	cfg.port = ntohs(sa.sin6_port);
	TAP_OK(squat >= 0 && dlrt_relay_start(&r2, loop, &cfg, &err) < 0 &&
	       strstr(err.msg, "[::1]"),
	       "v6: with [::1]:PORT someone else's, the relay does not start: %s", err.msg);
	if (squat >= 0)
		close(squat);
	dlrt_relay_stop(r);
	dlrt_tcpserver_stop(srv);
	dlrt_evloop_destroy(loop);
}

int main(void)
{
	struct dlrt_evloop *loop = dlrt_evloop_create();
	struct dlrt_tcpserver *srv = NULL;
	struct dlrt_relay *relay = NULL, *closed = NULL, *early = NULL;
	struct late late;
	struct dlrt_tcpserver_cfg scfg = {
		.bind_addr = "127.0.0.1", .max_request = 8u << 20, .max_reply = 8u << 20,
		.secret = secret, .max_unauthed = 16, .auth_timeout_ms = 500,
	};
	/* Spares live long here so that a slow test thread still finds one. */
	struct dlrt_relay_cfg rcfg = { .uid = getuid(), .buf_size = 4096,
				       .spare_max_age_ms = 60000 };
	struct dlrt_tcpserver_cfg icfg = scfg;
	struct dlrt_tcpserver *isrv = NULL;
	struct dlrt_relay *irelay = NULL;
	/* A service without dlrt's challenge (a redis-server in the benchmark)
	 * behind a --no-challenge relay, and such a relay in front of a service
	 * that does challenge. */
	struct dlrt_tcpserver_cfg pcfg = scfg;
	struct dlrt_tcpserver *psrv = NULL;
	struct dlrt_relay_cfg ncfg = rcfg;
	struct dlrt_relay *nrelay = NULL, *nauth = NULL;
	struct dlrt_relay_cfg other = { .uid = getuid() + 1 };
	struct dlrt_proto proto = { .on_data = echo };
	struct dlrt_relay_stats st;
	struct dlrt_err err;
	size_t big = 1u << 20;
	uint8_t *out = malloc(big), *in = malloc(big + 1), buf[256];
	int idle[100], fd;
	pthread_t th;

	test_svcauth();
	test_peeruid();
	test_burst();
	test_hung_up();
	test_v6();
	for (size_t i = 0; i < big; i++)
		out[i] = (uint8_t)(i * 7 + i / 251);
	TAP_OK(dlrt_tcpserver_start(&srv, loop, &scfg, &proto, NULL, &err) == 0,
	       "echo service with a secret starts");
	TAP_OK(dlrt_relay_start(&relay, loop, &rcfg, &err) == 0, "relay starts");
	TAP_OK(dlrt_relay_start(&closed, loop, &other, &err) == 0,
	       "a relay for another uid starts");
	dlrt_relay_set_target(relay, "127.0.0.1", dlrt_tcpserver_port(srv), secret);
	dlrt_relay_set_target(closed, "127.0.0.1", dlrt_tcpserver_port(srv), secret);
	/* A service that closes idle connections long before the relay would
	 * retire its spares. */
	icfg.idle_timeout_ms = 250;
	TAP_OK(dlrt_tcpserver_start(&isrv, loop, &icfg, &proto, NULL, &err) == 0 &&
	       dlrt_relay_start(&irelay, loop, &rcfg, &err) == 0,
	       "a service with a 250 ms idle timeout and its relay start");
	dlrt_relay_set_target(irelay, "127.0.0.1", dlrt_tcpserver_port(isrv), secret);
	TAP_OK(dlrt_relay_start(&early, loop, &rcfg, &err) == 0, "a relay without a target starts");
	late = (struct late){ early, dlrt_tcpserver_port(srv) };
	dlrt_evloop_add_timer(loop, 300, set_target_late, &late);
	pcfg.secret = NULL;
	ncfg.no_challenge = true;
	TAP_OK(dlrt_tcpserver_start(&psrv, loop, &pcfg, &proto, NULL, &err) == 0 &&
	       dlrt_relay_start(&nrelay, loop, &ncfg, &err) == 0 &&
	       dlrt_relay_start(&nauth, loop, &ncfg, &err) == 0,
	       "a service without a secret and two no-challenge relays start");
	dlrt_relay_set_target(nrelay, "127.0.0.1", dlrt_tcpserver_port(psrv), secret);
	dlrt_relay_set_target(nauth, "127.0.0.1", dlrt_tcpserver_port(srv), secret);
	pthread_create(&th, NULL, run, loop);

	fd = dial(dlrt_relay_port(early));
	TAP_OK(fd >= 0 && roundtrip(fd, (const uint8_t *)"early", 5, in, big) == 5 &&
	       !memcmp(in, "early", 5), "a client that comes before the target waits, then is served");
	close(fd);

	fd = dial(dlrt_relay_port(relay));
	TAP_OK(fd >= 0 && roundtrip(fd, (const uint8_t *)"hello", 5, in, big) == 5 &&
	       !memcmp(in, "hello", 5), "a small request comes back through the relay");
	close(fd);
	fd = dial(dlrt_relay_port(relay));
	TAP_OK(fd >= 0 && roundtrip(fd, out, big, in, big + 1) == big && !memcmp(in, out, big),
	       "1 MiB through 4 KiB relay buffers comes back intact, then EOF");
	close(fd);

	/* Without the secret: the service sends its challenge, reads at most the
	 * answer's bytes, and a wrong answer gets no byte of the protocol. */
	fd = dial(dlrt_tcpserver_port(srv));
	TAP_IS_INT(recv(fd, buf, 32, MSG_WAITALL), 32, "a direct client gets a challenge");
	send(fd, "*1\r\n$4\r\nPING\r\n0123456789abcdef01", 32, MSG_NOSIGNAL);
	send(fd, "hello", 5, MSG_NOSIGNAL);
	TAP_OK(read_all(fd, buf, sizeof(buf)) <= 0, "a wrong answer is closed with no reply");
	close(fd);

	fd = dial(dlrt_tcpserver_port(srv));
	TAP_OK(read_all(fd, buf, sizeof(buf)) == 32,
	       "a client that never answers gets the challenge, then is closed at the deadline");
	close(fd);

	/* Idle connections that never answer cannot lock the relay out. */
	for (int i = 0; i < 100; i++)
		idle[i] = dial(dlrt_tcpserver_port(srv));
	fd = dial(dlrt_relay_port(relay));
	TAP_OK(fd >= 0 && roundtrip(fd, (const uint8_t *)"still", 5, in, big) == 5,
	       "100 idle unauthenticated connections (cap 16) do not lock the relay out");
	close(fd);
	for (int i = 0; i < 100; i++)
		close(idle[i]);

	/* The first client leaves a spare behind; the service closes it when
	 * idle, and the relay must drop it, not hand it to the next client. */
	fd = dial(dlrt_relay_port(irelay));
	TAP_OK(fd >= 0 && roundtrip(fd, (const uint8_t *)"one", 3, in, big) == 3,
	       "a client through the relay of the idle-closing service");
	close(fd);
	usleep(1500 * 1000);
	fd = dial(dlrt_relay_port(irelay));
	TAP_OK(fd >= 0 && roundtrip(fd, (const uint8_t *)"two", 3, in, big) == 3 &&
	       !memcmp(in, "two", 3), "a spare the service closed is never handed to a client");
	close(fd);

	fd = dial(dlrt_relay_port(closed));
	send(fd, "hello", 5, MSG_NOSIGNAL);
	TAP_OK(read_all(fd, buf, sizeof(buf)) <= 0,
	       "a relay admitting another uid closes this user's connection at once");
	close(fd);

	fd = dial(dlrt_relay_port(nrelay));
	TAP_OK(fd >= 0 && roundtrip(fd, (const uint8_t *)"plain", 5, in, big) == 5 &&
	       !memcmp(in, "plain", 5), "no challenge: a small request comes back");
	close(fd);
	fd = dial(dlrt_relay_port(nrelay));
	TAP_OK(fd >= 0 && roundtrip(fd, out, big, in, big + 1) == big && !memcmp(in, out, big),
	       "no challenge: 1 MiB comes back intact on a spare, then EOF");
	close(fd);
	/* The mode skips the relay's answer, never the service's check. */
	fd = dial(dlrt_relay_port(nauth));
	TAP_OK(fd >= 0 && roundtrip(fd, out, 64, in, big) == 32,
	       "no challenge in front of a service with a secret: only its challenge "
	       "comes back, no byte of the protocol");
	close(fd);

	dlrt_evloop_stop(loop);
	pthread_join(th, NULL);
	dlrt_relay_stats(nrelay, &st);
	TAP_IS_INT(st.admitted, 2, "no challenge: both clients admitted");
	TAP_OK(st.spare_used >= 1, "no challenge: the second client got a spare (%llu of 2)",
	       (unsigned long long)st.spare_used);
	dlrt_relay_stop(nrelay);
	dlrt_relay_stop(nauth);
	dlrt_tcpserver_stop(psrv);
	dlrt_relay_stats(closed, &st);
	TAP_IS_INT(st.refused, 1, "the refusal is counted");
	TAP_IS_INT(st.admitted, 0, "nothing admitted");
	dlrt_relay_stats(relay, &st);
	TAP_IS_INT(st.admitted, 3, "the job user's connections were admitted");
	TAP_OK(st.spare_used >= 1, "a later client was paired with a ready spare (%llu of 3)",
	       (unsigned long long)st.spare_used);
	TAP_IS_INT(st.upstream_failed, 0, "no upstream connection failed");
	dlrt_relay_stats(irelay, &st);
	TAP_IS_INT(st.spare_used, 0, "the closed spare was not used");
	dlrt_relay_stop(irelay);
	dlrt_tcpserver_stop(isrv);
	dlrt_relay_stop(relay);
	dlrt_relay_stop(closed);
	dlrt_relay_stop(early);
	dlrt_tcpserver_stop(srv);
	dlrt_evloop_destroy(loop);
	free(out);
	free(in);
	return tap_done();
}
