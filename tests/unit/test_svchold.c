/* test_svchold.c - services/svchold.c on a real loopback server: node relays'
 * holds keep a lingering service up until every node that held it let go,
 * nodes that never held it get the grace time, no hold at all ends it at
 * once; a hold never reaches the protocol and a client never counts as a
 * hold; a bad index, a second hold of one node, bytes after the index and a
 * hold on a server that takes none are each refused; the service still
 * serves clients while it lingers. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "services/svcauth.h"
#include "services/svchold.h"
#include "services/tcpserver.h"
#include "tap.h"

static const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN] = "0123456789abcdef0123456789abcde";

static enum dlrt_proto_result echo(struct dlrt_conn *conn, void *ctx)
{
	(void)ctx;
	if (dlrt_buf_append(&conn->out, dlrt_buf_head(&conn->in), conn->in.len) < 0)
		return DLRT_PROTO_CLOSE;
	dlrt_buf_consume(&conn->in, conn->in.len);
	return DLRT_PROTO_OK;
}

static int64_t stop_loop(struct dlrt_evloop *loop, void *arg)
{
	(void)arg;
	dlrt_evloop_stop(loop);
	return -1;
}

/* Runs the loop for about ms. */
static void spin(struct dlrt_evloop *loop, int64_t ms)
{
	dlrt_evloop_add_timer(loop, ms, stop_loop, NULL);
	dlrt_evloop_run(loop);
}

static struct dlrt_tcpserver *start(struct dlrt_evloop *loop, struct dlrt_holds *h)
{
	static const struct dlrt_proto proto = { .on_data = echo };
	struct dlrt_tcpserver_cfg cfg = {
		.bind_addr = "127.0.0.1", .max_request = 4096, .max_reply = 4096,
		.max_conns = 64, .secret = secret,
		.on_hold = h ? dlrt_holds_adopt : NULL, .hold_arg = h,
	};
	struct dlrt_tcpserver *srv = NULL;
	struct dlrt_err err = { { 0 } };

	if (dlrt_tcpserver_start(&srv, loop, &cfg, &proto, NULL, &err) < 0)
		fprintf(stderr, "# tcpserver: %s\n", err.msg);
	return srv;
}

/* A raw connection that answers the challenge for `use`, then sends `tail`. */
static int raw(struct dlrt_evloop *loop, uint16_t port, enum dlrt_svcauth_use use,
	       const void *tail, size_t tlen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	uint8_t chal[DLRT_SVCAUTH_CHALLENGE_LEN], msg[DLRT_SVCAUTH_ANSWER_LEN + 64];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { .tv_sec = 2 };

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto fail;
	spin(loop, 30);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (recv(fd, chal, sizeof(chal), MSG_WAITALL) != (ssize_t)sizeof(chal))
		goto fail;
	dlrt_svcauth_answer_for(use, secret, chal, msg);
	if (tlen)
		memcpy(msg + DLRT_SVCAUTH_ANSWER_LEN, tail, tlen);
	if (send(fd, msg, DLRT_SVCAUTH_ANSWER_LEN + tlen, MSG_NOSIGNAL) < 0)
		goto fail;
	spin(loop, 30);
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* The server closed fd (end of file or a reset), without sending anything. */
static bool closed(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static bool echoes(struct dlrt_evloop *loop, int fd)
{
	char buf[8] = "";

	if (send(fd, "ping", 4, MSG_NOSIGNAL) != 4)
		return false;
	spin(loop, 30);
	return recv(fd, buf, sizeof(buf), MSG_DONTWAIT) == 4 && !memcmp(buf, "ping", 4);
}

static const uint8_t node1[DLRT_HOLD_NODE_LEN] = { 0, 0, 0, 1 };

static void on_done(void *arg)
{
	*(int64_t *)arg = dlrt_now_ms();
}

static void test_linger(void)
{
	struct dlrt_evloop *loop = dlrt_evloop_create();
	struct dlrt_holds *h = dlrt_holds_create(loop, 3);
	struct dlrt_tcpserver *srv = start(loop, h);
	struct dlrt_hold_client *c0 = NULL, *c1 = NULL;
	struct dlrt_err err = { { 0 } };
	int64_t done_at = 0, t0;
	uint16_t port = dlrt_tcpserver_port(srv);
	int cli;

	TAP_OK(dlrt_hold_client_start(&c0, loop, "127.0.0.1", port, secret, 0, &err) == 0 &&
	       dlrt_hold_client_start(&c1, loop, "127.0.0.1", port, secret, 1, &err) == 0,
	       "two relays' hold clients start");
	spin(loop, 100);
	TAP_OK(dlrt_hold_client_held(c0) && dlrt_hold_client_held(c1), "both are held");
	TAP_IS_INT(dlrt_holds_held(h), 2, "the service counts two holds");
	TAP_IS_INT(dlrt_holds_seen(h), 2, "from two nodes");
	TAP_IS_INT(dlrt_tcpserver_nconns(srv), 0, "no hold is a protocol connection");
	cli = raw(loop, port, DLRT_SVCAUTH_CLIENT, NULL, 0);
	TAP_OK(cli >= 0 && echoes(loop, cli), "a client is served beside the holds");
	TAP_IS_INT(dlrt_holds_held(h), 2, "and is no hold");

	dlrt_holds_linger(h, 400, on_done, &done_at);
	spin(loop, 50);
	TAP_IS_INT(done_at, 0, "lingering while two nodes hold it");
	TAP_OK(echoes(loop, cli), "the lingering service still answers its clients");
	dlrt_hold_client_stop(c0);
	spin(loop, 50);
	TAP_IS_INT(dlrt_holds_held(h), 1, "node 0 let go");
	TAP_IS_INT(done_at, 0, "still lingering while node 1 holds it");
	t0 = dlrt_now_ms();
	dlrt_hold_client_stop(c1);
	spin(loop, 100);
	TAP_IS_INT(dlrt_holds_held(h), 0, "node 1 let go");
	TAP_IS_INT(done_at, 0, "node 2 never held it: it still has its grace time");
	spin(loop, 1500);
	TAP_OK(done_at > 0, "done once the grace time is over");
	TAP_OK(done_at - t0 >= 250, "not before (%lld ms after the last let go)",
	       (long long)(done_at - t0));
	close(cli);
	dlrt_tcpserver_stop(srv);
	dlrt_holds_destroy(h);
	dlrt_evloop_destroy(loop);
}

static void test_linger_at_once(void)
{
	struct dlrt_evloop *loop = dlrt_evloop_create();
	struct dlrt_holds *h = dlrt_holds_create(loop, 2);
	struct dlrt_tcpserver *srv = start(loop, h);
	struct dlrt_hold_client *c[2] = { NULL, NULL };
	struct dlrt_err err = { { 0 } };
	int64_t done_at = 0;

	dlrt_holds_linger(h, 60000, on_done, &done_at);
	TAP_OK(done_at > 0, "no node ever held it: done at once");

	dlrt_holds_destroy(h);
	dlrt_tcpserver_stop(srv);
	h = dlrt_holds_create(loop, 2);
	srv = start(loop, h);
	for (uint32_t i = 0; i < 2; i++)
		dlrt_hold_client_start(&c[i], loop, "127.0.0.1", dlrt_tcpserver_port(srv), secret,
				       i, &err);
	spin(loop, 100);
	TAP_IS_INT(dlrt_holds_seen(h), 2, "every node held it");
	dlrt_hold_client_stop(c[0]);
	dlrt_hold_client_stop(c[1]);
	spin(loop, 50);
	done_at = 0;
	dlrt_holds_linger(h, 60000, on_done, &done_at);
	TAP_OK(done_at > 0, "every node held it and let go: done at once, no grace");
	dlrt_tcpserver_stop(srv);
	dlrt_holds_destroy(h);
	dlrt_evloop_destroy(loop);
}

static void test_refused(void)
{
	struct dlrt_evloop *loop = dlrt_evloop_create();
	struct dlrt_holds *h = dlrt_holds_create(loop, 3);
	struct dlrt_tcpserver *srv = start(loop, h), *plain = start(loop, NULL);
	uint16_t port = dlrt_tcpserver_port(srv);
	const uint8_t node7[DLRT_HOLD_NODE_LEN] = { 0, 0, 0, 7 };
	const uint8_t extra[DLRT_HOLD_NODE_LEN + 1] = { 0, 0, 0, 1, 'x' };
	int a, b, fd;

	fd = raw(loop, port, DLRT_SVCAUTH_HOLD, node7, sizeof(node7));
	TAP_OK(fd >= 0 && closed(fd), "a hold for node 7 of 3 is closed");
	TAP_IS_INT(dlrt_holds_seen(h), 0, "and not counted");
	close(fd);

	a = raw(loop, port, DLRT_SVCAUTH_HOLD, node1, sizeof(node1));
	b = raw(loop, port, DLRT_SVCAUTH_HOLD, node1, sizeof(node1));
	TAP_OK(a >= 0 && closed(a), "a second hold of node 1 replaces the first");
	TAP_OK(b >= 0 && !closed(b), "the newer one is kept");
	TAP_IS_INT(dlrt_holds_held(h), 1, "one hold for node 1");
	TAP_OK(!echoes(loop, b), "a hold never reaches the protocol");
	spin(loop, 30);
	TAP_OK(closed(b), "and a hold that sends more than its index is closed");
	close(a);
	close(b);

	fd = raw(loop, port, DLRT_SVCAUTH_HOLD, extra, sizeof(extra));
	TAP_OK(fd >= 0 && closed(fd), "bytes right behind the index close the hold");
	close(fd);

	fd = raw(loop, dlrt_tcpserver_port(plain), DLRT_SVCAUTH_HOLD, node1, sizeof(node1));
	TAP_OK(fd >= 0 && closed(fd), "a server that takes no holds refuses one as a wrong answer");
	close(fd);
	fd = raw(loop, port, DLRT_SVCAUTH_CLIENT, node1, 0);
	TAP_OK(fd >= 0 && echoes(loop, fd), "the client label still reaches the protocol");
	TAP_IS_INT(dlrt_holds_held(h), 0, "holds left: none");
	close(fd);
	dlrt_tcpserver_stop(plain);
	dlrt_tcpserver_stop(srv);
	dlrt_holds_destroy(h);
	dlrt_evloop_destroy(loop);
}

int main(void)
{
	test_linger();
	test_linger_at_once();
	test_refused();
	return tap_done();
}
