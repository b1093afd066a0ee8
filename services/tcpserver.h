/* tcpserver.h - the connection handling shared by dlrt's request/reply services.
 *
 * A service supplies a protocol (`struct dlrt_proto`): a function that parses
 * complete requests from the front of `conn->in` and appends replies to
 * `conn->out`. This module does everything else the same way for every
 * service: non-blocking accept, the peer allowlist (only the step's nodes may
 * connect), per-connection buffer limits, an idle timeout so a slow or silent
 * client cannot hold a slot, and a connection cap.
 *
 * With a step secret (cfg.secret) every connection must first prove it holds
 * the secret (services/svcauth.h): the server sends a challenge at accept and
 * reads at most the answer's bytes; only a right answer within
 * auth_timeout_ms makes the connection reach the protocol (on_open). A wrong
 * answer closes it. At most max_unauthed connections wait for their answer;
 * when the room is full, a new connection closes the oldest waiting one at
 * once, unless that one's answer is already readable (then it is proven and
 * the next oldest is looked at). So a stranger's flood of connections that
 * never answer, however fast, only sheds its own: the step's connections are
 * accepted at once (the listener never waits, so they never queue in the
 * backlog behind the stranger's) and keep their slot until max_unauthed newer
 * ones came, far longer than a relay or task takes to answer. A client hung
 * up on before the challenge came connects again (services/relay.c,
 * exchange/rdvclient.c). max_conns counts the proven connections only; both
 * rooms are fitted to the descriptor limit.
 *
 * Bounds: a connection holds at most max_request bytes of input and
 * max_reply bytes of output, so N connections cost at most N x (max_request +
 * max_reply). With out_pause, a client that sends requests without reading
 * the replies is not read from while out_pause bytes wait for it (its socket
 * buffer fills and it blocks), so it costs out_pause plus one reply. Out of
 * descriptors (EMFILE), a pending connection is accepted with a reserved
 * descriptor and closed at once instead of waking the loop forever; other
 * accept failures pause the listener briefly. At start the soft descriptor
 * limit is raised to the hard one and max_conns is capped to what it allows.
 */
#ifndef DLRT_TCPSERVER_H
#define DLRT_TCPSERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/dlrt_err.h"
#include "evloop.h"

struct dlrt_tcpserver;

struct dlrt_conn {
	int fd;
	struct dlrt_buf in;
	struct dlrt_buf out;
	uint32_t peer_ipv4;      /* network byte order */
	int64_t last_active_ms;
	bool close_after_write;  /* set by the protocol: reply, then hang up */
	bool out_paused;         /* out_pause reached: not reading or parsing input */
	int64_t linger_until_ms; /* hanging up: write side shut, input discarded until then */
	void *state;             /* the protocol's per-connection state */
	struct dlrt_conn_auth *auth; /* non-NULL until the peer proved the step secret */
	struct dlrt_tcpserver *server;
};

enum dlrt_proto_result {
	DLRT_PROTO_OK = 0,      /* keep the connection */
	DLRT_PROTO_CLOSE = -1,  /* flush conn->out, then close */
};

struct dlrt_proto {
	/* New bytes are in conn->in: consume complete requests, append replies. */
	enum dlrt_proto_result (*on_data)(struct dlrt_conn *conn, void *ctx);
	/* Optional: set up / tear down conn->state. */
	int (*on_open)(struct dlrt_conn *conn, void *ctx);
	void (*on_close)(struct dlrt_conn *conn, void *ctx);
};

struct dlrt_tcpserver_cfg {
	const char *bind_addr;     /* numeric IPv4; NULL or "" = all addresses */
	uint16_t port;             /* 0 = any free port (read it back with _port) */
	uint16_t port_lo, port_hi; /* with port 0: a free port in this range
				    * (0 = none; srun's rendezvous in SrunPortRange) */
	size_t max_request;        /* limit of conn->in */
	size_t max_reply;          /* limit of conn->out (hard: a reply past it closes) */
	size_t out_pause;          /* stop reading input while conn->out holds this
				    * much; resume once it drains (0 = never) */
	int64_t idle_timeout_ms;   /* close a connection silent this long (0 = never) */
	unsigned max_conns;
	/* Peers allowed to connect, IPv4 in network order. Loopback is always allowed
	 * (a local task of the same step). nallow == 0 allows everyone: tests only. */
	const uint32_t *allow;
	size_t nallow;
	/* The step secret (DLRT_SVCAUTH_SECRET_LEN bytes, copied), or NULL: no
	 * authentication phase. */
	const uint8_t *secret;
	unsigned max_unauthed;     /* connections still to prove it (0 = 4096) */
	int64_t auth_timeout_ms;   /* time to answer the challenge (0 = 5000) */
	/* With a secret: a connection that proved it under the hold label
	 * (svcauth.h, DLRT_SVCAUTH_HOLD: a node relay's hold on the service,
	 * svchold.h) is handed to on_hold with its descriptor, which on_hold
	 * owns from then on; it never reaches the protocol. NULL: such an
	 * answer is a wrong one. */
	void (*on_hold)(int fd, void *hold_arg);
	void *hold_arg;
};

int dlrt_tcpserver_start(struct dlrt_tcpserver **out, struct dlrt_evloop *loop,
			 const struct dlrt_tcpserver_cfg *cfg,
			 const struct dlrt_proto *proto, void *ctx,
			 struct dlrt_err *err);
uint16_t dlrt_tcpserver_port(const struct dlrt_tcpserver *srv);
unsigned dlrt_tcpserver_nconns(const struct dlrt_tcpserver *srv);
/* The connection cap in force (cfg.max_conns, lowered to fit the descriptor
 * limit) and that limit (RLIMIT_NOFILE's soft limit after raising it). */
unsigned dlrt_tcpserver_max_conns(const struct dlrt_tcpserver *srv);
unsigned long dlrt_tcpserver_nofile(const struct dlrt_tcpserver *srv);
/* Connections accepted and closed at once because no descriptor was left. */
unsigned long dlrt_tcpserver_nofile_drops(const struct dlrt_tcpserver *srv);
/* Connections closed before they proved the secret, to admit a newer one
 * (max_unauthed reached). */
unsigned long dlrt_tcpserver_auth_shed(const struct dlrt_tcpserver *srv);
/* Closes the listener and every connection. */
void dlrt_tcpserver_stop(struct dlrt_tcpserver *srv);

/* Call after appending to conn->out outside on_data (e.g. a pushed message). */
void dlrt_conn_flush(struct dlrt_conn *conn);
void dlrt_conn_close(struct dlrt_conn *conn);

#endif
