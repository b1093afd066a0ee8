/* pslite_net.h - the poll(2) transport of pslite_contract.
 *
 * Stands in for ps-lite's ZMQ van with plain TCP: one listening socket per
 * process (ps-lite's ROUTER), outgoing connections that are retried every
 * 100 ms until they open (ZMQ's default reconnect interval; ZMQ queues the
 * first message meanwhile, so do we), and length-prefixed messages
 * (pslite_msg.h). Unlike ZMQ, a connection that breaks once open is reported
 * to the program instead of being reconnected silently: the test must fail
 * fast where ps-lite would hang.
 *
 * Single-threaded. Every wait is bounded: pnet_wait() gives up after a period
 * with no incoming message, and a connection gives up at its own deadline.
 */
#ifndef PSLITE_NET_H
#define PSLITE_NET_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include "common/buf.h"
#include "common/dlrt_err.h"
#include "pslite_msg.h"

enum pnet_state { PNET_CONNECTING, PNET_RETRY_WAIT, PNET_OPEN, PNET_CLOSED };

struct pnet_conn {
	int fd;
	bool outgoing;
	enum pnet_state state;
	int32_t peer_id;          /* -1 until the first message names the peer */
	long tag;                 /* the program's index for this peer, -1 = none */
	char what[96];            /* "the scheduler at 10.0.0.1:9000", for messages */
	struct sockaddr_in addr;  /* peer (outgoing: where we connect) */
	struct dlrt_buf in, out;
	int64_t retry_at_ms, give_up_at_ms;
	int last_errno;           /* of the last failed connect attempt */
};

struct pnet;

/* A whole message arrived on `c`; `m` points into c->in and is valid only
 * during the call. Return -1 with `err` set to stop the program. */
typedef int (*pnet_msg_fn)(struct pnet *n, struct pnet_conn *c,
			   const struct dlrt_pslite_msg *m, void *ctx, struct dlrt_err *err);
/* An open connection ended (EOF or error). Return -1 with `err` set if this
 * is fatal at this point of the protocol. */
typedef int (*pnet_close_fn)(struct pnet *n, struct pnet_conn *c, void *ctx,
			     struct dlrt_err *err);

/* Called on every poll round (at least every 100 ms); -1 with `err` set stops
 * the program. For conditions that are fatal only after a grace period. */
typedef int (*pnet_tick_fn)(struct pnet *n, void *ctx, struct dlrt_err *err);

struct pnet {
	int lfd;
	struct sockaddr_in laddr;
	struct pnet_conn **conns;
	size_t nconns, cap;
	unsigned max_conns;
	pnet_msg_fn on_msg;
	pnet_close_fn on_close;
	pnet_tick_fn on_tick;     /* optional */
	void *ctx;
	int verbose;              /* PS_VERBOSE: 1 = connections, 2 = every message */
	char who[64];             /* log prefix, e.g. "worker 1" */
	int64_t last_msg_ms;      /* last incoming message or new connection */
	/* Heartbeats to the scheduler while a node waits (cf. PS_HEARTBEAT_INTERVAL). */
	struct pnet_conn *hb_conn;
	int32_t hb_sender;
	int64_t hb_every_ms, hb_next_ms;
};

void pnet_init(struct pnet *n, pnet_msg_fn on_msg, pnet_close_fn on_close, void *ctx,
	       int verbose);
void pnet_destroy(struct pnet *n);

/* Binds and listens on ip:port (numeric IPv4; port 0 = OS-chosen) once, with
 * SO_REUSEADDR as ZMQ sets it. -1 with `err` naming the address and errno. */
int pnet_listen(struct pnet *n, const char *ip, uint16_t port, struct dlrt_err *err);
uint16_t pnet_port(const struct pnet *n);

/* Starts connecting to ip:port (retrying every 100 ms until give_up_at_ms).
 * Messages may be queued on the result at once. NULL with `err` on a bad
 * address or when out of connection slots. */
struct pnet_conn *pnet_connect(struct pnet *n, const char *ip, uint16_t port, int32_t peer_id,
			       const char *what, int64_t give_up_at_ms, struct dlrt_err *err);

/* Waits until done(ctx) is true. Returns 0 when done, -1 on a fatal error
 * (err set, by a callback or the transport), -2 when no message arrived for
 * idle_ms (err not set: the caller says what it was waiting for).
 * done == NULL waits the whole idle_ms and returns 0 (a sleep that keeps
 * serving the connections). */
int pnet_wait(struct pnet *n, bool (*done)(void *ctx), int64_t idle_ms, struct dlrt_err *err);

/* Sends what is queued on every open connection, for at most timeout_ms. */
int pnet_flush(struct pnet *n, int64_t timeout_ms, struct dlrt_err *err);

#endif
