/* svchold.h - the step's nodes hold its service open until their tasks end.
 *
 * A step's service (Horovod's driver, Caffe2's store, torch's c10d store)
 * runs on the node of task 0, a child of that node's slurmstepd. Slurm ends a
 * node's part of a step when that node's tasks end, so without more the
 * service would end with task 0's node, while the tasks of the other nodes
 * still use it. So every node relay (relay.h) holds the service while its
 * node's part of the step lives: one connection, proven with the step
 * secret under its own label (svcauth.h: DLRT_SVCAUTH_HOLD), followed by
 * the node's index in the step as 4 bytes, big-endian; then nothing more is
 * sent either way. The relay closes it when its node's part of the step ends
 * (slurm_spank_exit of that node), the kernel when the relay dies, and TCP
 * keepalive when the node is gone (about HOLD_KEEPALIVE_S, svchold.c).
 *
 * When task 0's node is done (the service's lifetime pipe is closed), the
 * service lingers (dlrt_holds_linger): it serves on until every node that
 * held it has let go, and every node that never held it (its tasks never got
 * the service's address) has had a grace time to; at once if no node ever
 * held it. Its slurmstepd waits for it meanwhile (spank/service.c), so the
 * step ends on that node last, and the service still never outlives the
 * step: a time limit, a cancel or a fail-fast end every node's tasks, whose
 * relays then let go.
 */
#ifndef DLRT_SVCHOLD_H
#define DLRT_SVCHOLD_H

#include <stdbool.h>
#include <stdint.h>

#include "common/dlrt_err.h"
#include "evloop.h"
#include "svcauth.h"

/* After the answer: the node's index, big-endian. */
#define DLRT_HOLD_NODE_LEN 4
/* How long a node that never held the service may still come, once task
 * 0's node is done: its relay learns the address from its node's first task
 * right after the step's address exchange, which task 0 also waited for. */
#define DLRT_HOLD_GRACE_MS 10000

/* ---- the service's side ------------------------------------------------ */

struct dlrt_holds;

/* The holds of a step of `nnodes` nodes (>= 1). NULL: out of memory. */
struct dlrt_holds *dlrt_holds_create(struct dlrt_evloop *loop, uint32_t nnodes);
/* Closes every hold. */
void dlrt_holds_destroy(struct dlrt_holds *h);
/* tcpserver's on_hold (tcpserver.h): a connection that proved the hold
 * label; `h` (a struct dlrt_holds) owns fd from here on. */
void dlrt_holds_adopt(int fd, void *h);
/* Task 0's node is done: done(arg) runs once, from the loop, when every node
 * that held the service has let go and the nodes that never held it have had
 * grace_ms to; at once (from this call) if no node ever held it. */
void dlrt_holds_linger(struct dlrt_holds *h, int64_t grace_ms, void (*done)(void *arg),
		       void *arg);
/* Nodes holding it now (those still sending their index included), and
 * nodes that ever held it. */
unsigned dlrt_holds_held(const struct dlrt_holds *h);
unsigned dlrt_holds_seen(const struct dlrt_holds *h);

/* ---- a node relay's side ----------------------------------------------- */

struct dlrt_hold_client;

/* Holds the service at ip:port for node `node` until dlrt_hold_client_stop:
 * connects, answers the challenge, sends the index, then keeps the
 * connection; when it fails or ends it connects again (every
 * HOLD_RETRY_MS, svchold.c), as long as the relay lives. */
int dlrt_hold_client_start(struct dlrt_hold_client **out, struct dlrt_evloop *loop,
			   const char *ip, uint16_t port,
			   const uint8_t secret[DLRT_SVCAUTH_SECRET_LEN], uint32_t node,
			   struct dlrt_err *err);
/* Whether the service has taken the hold (answer and index sent). */
bool dlrt_hold_client_held(const struct dlrt_hold_client *c);
/* Lets go: closes the connection (the service sees end of file). */
void dlrt_hold_client_stop(struct dlrt_hold_client *c);

#endif
