/* test_tcpserver.c - services/tcpserver.c's bounds, on a real loopback server:
 * out of descriptors it sheds pending connections instead of spinning, a
 * client that pipelines without reading is not read from while its replies
 * wait (and gets every reply once it reads), the connection cap fits the
 * descriptor limit (services/nofile.c), and a flood of connections that never
 * prove the step secret does not keep one that does from being served. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "services/nofile.h"
#include "services/svcauth.h"
#include "services/tcpserver.h"
#include "tap.h"

#define REPLY 16384
#define LINES 1000
#define PAUSE 65536

struct counts {
	unsigned lines;
	size_t peak_out;
	size_t received;
	int client;
};

/* One REPLY-byte answer per "\n"-ended line, stopping at the pause the way
 * dlrt-store's session does. */
static enum dlrt_proto_result on_data(struct dlrt_conn *conn, void *ctx)
{
	struct counts *c = ctx;
	static char reply[REPLY];
	uint8_t *nl;

	while (conn->out.len < PAUSE &&
	       (nl = memchr(dlrt_buf_head(&conn->in), '\n', conn->in.len))) {
		dlrt_buf_consume(&conn->in, (size_t)(nl - dlrt_buf_head(&conn->in)) + 1);
		memset(reply, 'r', sizeof(reply));
		if (dlrt_buf_append(&conn->out, reply, sizeof(reply)) < 0)
			return DLRT_PROTO_CLOSE;
		c->lines++;
		if (conn->out.len > c->peak_out)
			c->peak_out = conn->out.len;
	}
	return DLRT_PROTO_OK;
}

static int64_t stop_loop(struct dlrt_evloop *loop, void *arg)
{
	(void)arg;
	dlrt_evloop_stop(loop);
	return -1;
}

static int connect_to(uint16_t port, int rcvbuf)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	/* Before connect, so the window is small from the start. */
	if (fd >= 0 && rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static struct dlrt_tcpserver *start(struct dlrt_evloop *loop, struct counts *c, size_t pause)
{
	static const struct dlrt_proto proto = { .on_data = on_data };
	struct dlrt_tcpserver_cfg cfg = {
		.bind_addr = "127.0.0.1",
		.max_request = 1 << 20,
		.max_reply = 4 << 20,
		.out_pause = pause,
		.max_conns = 100,
	};
	struct dlrt_tcpserver *srv = NULL;
	struct dlrt_err err = { { 0 } };

	if (dlrt_tcpserver_start(&srv, loop, &cfg, &proto, c, &err) < 0)
		printf("# %s\n", err.msg);
	return srv;
}

/* 20 clients wait in the backlog; the server may open only 3 more
 * descriptors. Before, accept4 failed with EMFILE, the connections stayed
 * pending and the level-triggered listener woke the loop at once, forever. */
static void test_emfile(void)
{
	struct dlrt_evloop *loop = dlrt_evloop_create();
	struct counts c = { 0 };
	struct dlrt_tcpserver *srv = start(loop, &c, 0);
	struct rlimit old, low;
	int cl[20], lowest, eof = 0, open_ = 0;

	TAP_OK(srv != NULL, "server started");
	if (!srv)
		return;
	for (int i = 0; i < 20; i++)
		cl[i] = connect_to(dlrt_tcpserver_port(srv), 0);
	lowest = dup(0);
	close(lowest);
	getrlimit(RLIMIT_NOFILE, &old);
	low = old;
	low.rlim_cur = (rlim_t)lowest + 3;
	TAP_OK(setrlimit(RLIMIT_NOFILE, &low) == 0, "descriptor limit lowered to %d", lowest + 3);
	dlrt_evloop_add_timer(loop, 500, stop_loop, NULL);
	dlrt_evloop_run(loop);
	setrlimit(RLIMIT_NOFILE, &old);
	TAP_IS_INT(dlrt_tcpserver_nconns(srv), 3, "the server took what its limit allows");
	TAP_IS_INT(dlrt_tcpserver_nofile_drops(srv), 17,
		   "and accepted and closed the rest at once (nothing left pending)");
	for (int i = 0; i < 20; i++) {
		char b;
		ssize_t n = recv(cl[i], &b, 1, MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno == ECONNRESET))
			eof++;
		else if (n < 0 && errno == EAGAIN)
			open_++;
	}
	TAP_IS_INT(eof, 17, "the shed clients see their connection closed");
	TAP_IS_INT(open_, 3, "the accepted ones stay open");
	for (int i = 0; i < 20; i++)
		close(cl[i]);
	/* With descriptors back, new clients are served again. */
	cl[0] = connect_to(dlrt_tcpserver_port(srv), 0);
	dlrt_evloop_add_timer(loop, 200, stop_loop, NULL);
	dlrt_evloop_run(loop);
	TAP_IS_INT(dlrt_tcpserver_nconns(srv), 1, "after the flood, a new client is accepted");
	close(cl[0]);
	dlrt_tcpserver_stop(srv);
	dlrt_evloop_destroy(loop);
}

static void client_read(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct counts *c = arg;
	char buf[65536];
	ssize_t n;

	(void)events;
	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		c->received += (size_t)n;
	if (n == 0 || c->received >= (size_t)LINES * REPLY)
		dlrt_evloop_stop(loop);
}

/* A client sends LINES requests and does not read: the server stops at the
 * pause instead of buffering every reply; once the client reads, the rest
 * of its requests (already read into the server) are answered, none lost. */
static void test_backpressure(void)
{
	struct dlrt_evloop *loop = dlrt_evloop_create();
	struct counts c = { 0 };
	struct dlrt_tcpserver *srv = start(loop, &c, PAUSE);
	char req[2 * LINES];
	int fd;

	TAP_OK(srv != NULL, "server started");
	if (!srv)
		return;
	fd = connect_to(dlrt_tcpserver_port(srv), 4096); /* the kernel holds little */
	for (int i = 0; i < LINES; i++)
		memcpy(req + 2 * i, "x\n", 2);
	TAP_IS_INT(send(fd, req, sizeof(req), 0), (long long)sizeof(req), "pipelined %d requests", LINES);
	dlrt_evloop_add_timer(loop, 300, stop_loop, NULL);
	dlrt_evloop_run(loop);
	TAP_OK(c.lines > 0 && c.lines < LINES, "a client that does not read: answering stops (%u of %d)",
	       c.lines, LINES);
	TAP_OK(c.peak_out <= PAUSE + REPLY, "its waiting replies stay within the pause plus one (%zu)",
	       c.peak_out);
	dlrt_evloop_add_fd(loop, fd, DLRT_EV_READ, client_read, &c);
	dlrt_evloop_add_timer(loop, 30000, stop_loop, NULL); /* a bound, not a measure */
	dlrt_evloop_run(loop);
	TAP_IS_INT(c.lines, LINES, "once it reads, every request is answered");
	TAP_IS_INT(c.received, (long long)LINES * REPLY, "and every reply arrives");
	TAP_OK(c.peak_out <= PAUSE + REPLY, "never more than the pause plus one reply waited (%zu)",
	       c.peak_out);
	dlrt_evloop_del_fd(loop, fd);
	close(fd);
	dlrt_tcpserver_stop(srv);
	dlrt_evloop_destroy(loop);
}

static void test_nofile(void)
{
	struct rlimit rl;
	unsigned long lim = dlrt_nofile_raise();

	getrlimit(RLIMIT_NOFILE, &rl);
	TAP_OK(lim == rl.rlim_cur || rl.rlim_cur > (1ul << 20),
	       "the soft limit in force is what dlrt_nofile_raise says (%lu)", lim);
	TAP_OK(rl.rlim_cur == rl.rlim_max || rl.rlim_cur >= (1ul << 20),
	       "and it was raised to the hard limit");
	TAP_IS_INT(dlrt_nofile_cap_conns(4096, 1024), 1024 - DLRT_NOFILE_HEADROOM,
		   "4096 connections under 1024 descriptors: capped, headroom kept");
	TAP_IS_INT(dlrt_nofile_cap_conns(100, 1024), 100, "a cap under the limit stays");
	TAP_IS_INT(dlrt_nofile_cap_conns(4096, 100), 50, "a tiny limit: half for connections");
	TAP_IS_INT(dlrt_nofile_cap_conns(4096, 1), 1, "at least one");
}

static const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN] = "0123456789abcdef0123456789abcde";

static enum dlrt_proto_result echo(struct dlrt_conn *conn, void *ctx)
{
	(void)ctx;
	if (dlrt_buf_append(&conn->out, dlrt_buf_head(&conn->in), conn->in.len) < 0)
		return DLRT_PROTO_CLOSE;
	dlrt_buf_consume(&conn->in, conn->in.len);
	return DLRT_PROTO_OK;
}

static struct dlrt_tcpserver *start_auth(struct dlrt_evloop *loop, unsigned max_unauthed)
{
	static const struct dlrt_proto proto = { .on_data = echo };
	struct dlrt_tcpserver_cfg cfg = {
		.bind_addr = "127.0.0.1", .max_request = 4096, .max_reply = 4096,
		.secret = secret, .max_unauthed = max_unauthed, .auth_timeout_ms = 60000,
	};
	struct dlrt_tcpserver *srv = NULL;
	struct dlrt_err err = { { 0 } };

	if (dlrt_tcpserver_start(&srv, loop, &cfg, &proto, NULL, &err) < 0)
		printf("# %s\n", err.msg);
	return srv;
}

/* Reads the challenge of fd (within 2 s) and sends the answer, then `req`. */
static bool prove(int fd, const char *req)
{
	uint8_t chal[DLRT_SVCAUTH_CHALLENGE_LEN], msg[DLRT_SVCAUTH_ANSWER_LEN + 16];
	size_t len = strlen(req);
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, 2000) != 1 || recv(fd, chal, sizeof(chal), MSG_WAITALL) != sizeof(chal))
		return false;
	dlrt_svcauth_answer(secret, chal, msg);
	memcpy(msg + DLRT_SVCAUTH_ANSWER_LEN, req, len);
	return send(fd, msg, DLRT_SVCAUTH_ANSWER_LEN + len, MSG_NOSIGNAL) ==
	       (ssize_t)(DLRT_SVCAUTH_ANSWER_LEN + len);
}

/* True when fd gets `want` back within 2 s. */
static bool echoed(int fd, const char *want)
{
	char back[16] = { 0 };
	size_t len = strlen(want), got = 0;

	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 2000) != 1)
			return false;
		n = recv(fd, back + got, len - got, 0);
		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	return !memcmp(back, want, len);
}

static void *run_loop(void *arg)
{
	dlrt_evloop_run(arg);
	return NULL;
}

/* Opens n non-blocking connections to port, silent or sending a wrong
 * answer (garbage), as a stranger's flood does; fds[] keeps them open. */
static void flood(int *fds, int n, uint16_t port, bool garbage)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	for (int i = 0; i < n; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fds[i] >= 0)
			connect(fds[i], (struct sockaddr *)&sa, sizeof(sa));
		if (garbage && fds[i] >= 0 && i > 0 && fds[i - 1] >= 0)
			send(fds[i - 1], "garbage garbage garbage garbage garbage", 39,
			     MSG_NOSIGNAL | MSG_DONTWAIT);
	}
}

/* 2,000 connections of someone without the secret arrive first (before, at
 * most 64 a second got past the pre-authentication cap, the rest and the
 * step's connection behind them waited in the listen backlog: half a minute
 * here), then a client that proves the secret: served within a second, and
 * the server shed the stranger's oldest to make room. */
static void test_flood(bool garbage)
{
	enum { N = 2000 };
	const char *what = garbage ? "garbage" : "silent";
	struct dlrt_evloop *loop = dlrt_evloop_create();
	struct dlrt_tcpserver *srv = start_auth(loop, 64);
	static int fds[N];
	int64_t t0;
	pthread_t th;
	bool served;
	int fd;

	TAP_OK(srv != NULL, "%s flood: a server with a secret and room for 64 unproven "
	       "connections starts", what);
	if (!srv)
		return;
	pthread_create(&th, NULL, run_loop, loop);
	flood(fds, N, dlrt_tcpserver_port(srv), garbage);
	t0 = dlrt_now_ms();
	fd = connect_to(dlrt_tcpserver_port(srv), 0);
	served = fd >= 0 && prove(fd, "ping") && echoed(fd, "ping");
	TAP_OK(served && dlrt_now_ms() - t0 < 1000,
	       "%s flood: after %d connections that never prove the secret, one that does is "
	       "served (in %lld ms)", what, N, (long long)(dlrt_now_ms() - t0));
	dlrt_evloop_stop(loop);
	pthread_join(th, NULL);
	if (!garbage) /* a wrong answer is closed at once, not shed */
		TAP_OK(dlrt_tcpserver_auth_shed(srv) > 0, "silent flood: the oldest unproven "
		       "connections were shed for newer ones (%lu)", dlrt_tcpserver_auth_shed(srv));
	TAP_OK(dlrt_tcpserver_nconns(srv) <= 64 + 1, "%s flood: at most the room's 64 unproven "
	       "connections and the proven one stay (%u)", what, dlrt_tcpserver_nconns(srv));
	for (int i = 0; i < N; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (fd >= 0)
		close(fd);
	dlrt_tcpserver_stop(srv);
	dlrt_evloop_destroy(loop);
}

/* The room is full and the oldest unproven connection's answer already
 * waits in its socket (the loop has not come to it): it is proven, never
 * shed. Its answer is sent after 8 newer connections arrived, so the
 * listener's event comes first. */
static void test_answer_waiting(void)
{
	struct dlrt_evloop *loop = dlrt_evloop_create();
	struct dlrt_tcpserver *srv = start_auth(loop, 4);
	int fds[8], fd;

	TAP_OK(srv != NULL, "a server with room for 4 unproven connections starts");
	if (!srv)
		return;
	fd = connect_to(dlrt_tcpserver_port(srv), 0);
	dlrt_evloop_add_timer(loop, 50, stop_loop, NULL);
	dlrt_evloop_run(loop);
	flood(fds, 8, dlrt_tcpserver_port(srv), false);
	usleep(50000); /* their handshakes complete */
	TAP_OK(fd >= 0 && prove(fd, "pong"), "the first client answers its challenge");
	dlrt_evloop_add_timer(loop, 200, stop_loop, NULL);
	dlrt_evloop_run(loop);
	TAP_OK(echoed(fd, "pong"), "its answer waited while 8 newer connections filled the "
	       "room: it was served, not shed");
	TAP_IS_INT(dlrt_tcpserver_auth_shed(srv), 4, "4 of the 8 silent ones were shed instead");
	for (int i = 0; i < 8; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	close(fd);
	dlrt_tcpserver_stop(srv);
	dlrt_evloop_destroy(loop);
}

int main(void)
{
	test_emfile();
	test_backpressure();
	test_nofile();
	test_flood(false);
	test_flood(true);
	test_answer_waiting();
	return tap_done();
}
