/* test_tcpserver.c - services/tcpserver.c's bounds, on a real loopback server:
 * out of descriptors it sheds pending connections instead of spinning, a
 * client that pipelines without reading is not read from while its replies
 * wait (and gets every reply once it reads), and the connection cap fits the
 * descriptor limit (services/nofile.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "services/nofile.h"
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

int main(void)
{
	test_emfile();
	test_backpressure();
	test_nofile();
	return tap_done();
}
