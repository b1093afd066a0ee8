/* gate.h - what a connection to the coordinator may cost before it has
 * authenticated (auth.h): anyone who can reach the port gets this far, so it
 * must stay small and short.
 *
 *   - input: only HELLO and AUTH frames, of at most DLRT_GATE_FRAME_MAX bytes
 *     (an AUTH with the longest proof); a header announcing more is refused
 *     at once instead of buffered. The full frame limit (DLRT_IP_MAX_FRAME)
 *     applies only after authentication.
 *   - time: DLRT_GATE_DEADLINE_MS from accept to WELCOME, whether the peer is
 *     silent, slow or stuck in the middle of a frame.
 *   - number: at most DLRT_GATE_MAX_PENDING such connections; a new one
 *     closes the oldest, so a flood cannot hold all of the server's slots,
 *     while the pool's own peers authenticate within milliseconds.
 *
 * The queue is intrusive (an entry lives in the coordinator's per-connection
 * state) and in accept order, so the oldest is always at the head.
 */
#ifndef DLRT_INFER_GATE_H
#define DLRT_INFER_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dlist.h"
#include "common/dlrt_err.h"
#include "proto.h"

/* AUTH: header, u8 mode, the client nonce, u32 length + the proof. HELLO
 * (u8 role, u64 epoch, u32 length + a name) is smaller. */
#define DLRT_GATE_FRAME_MAX (DLRT_IP_HDR + 1 + DLRT_IP_NONCE + 4 + DLRT_IP_PROOF_MAX)
/* The input buffer before authentication: one frame, plus the 4 KiB the
 * server reserves for each read (services/tcpserver.c). */
#define DLRT_GATE_INPUT_MAX (DLRT_GATE_FRAME_MAX + 4096)
#define DLRT_GATE_DEADLINE_MS 10000
#define DLRT_GATE_MAX_PENDING 64

struct dlrt_gate_ent {
	struct dlrt_dlist_node link;
	int64_t since_ms;   /* accepted at (monotonic) */
	bool queued;
	void *owner;        /* the coordinator's connection */
};

struct dlrt_gate {
	struct dlrt_dlist queue; /* accept order: the oldest first */
};

/* Queues a connection that has not authenticated yet. */
void dlrt_gate_add(struct dlrt_gate *g, struct dlrt_gate_ent *e, int64_t now_ms);
/* Unqueues it (authenticated, or closed); a no-op when not queued. */
void dlrt_gate_remove(struct dlrt_gate *g, struct dlrt_gate_ent *e);
/* The connection to close now, if any: the oldest, when more than `max`
 * wait or it has waited past `deadline_ms`. The caller closes it (which
 * removes it) and asks again. */
struct dlrt_gate_ent *dlrt_gate_due(const struct dlrt_gate *g, int64_t now_ms,
				    int64_t deadline_ms, unsigned max);

/* Checks the start of an unauthenticated peer's input: 0 while it may become
 * a HELLO or AUTH frame within DLRT_GATE_FRAME_MAX (also when the header is
 * not complete yet), -1 with err (sent to the peer) otherwise. Pure: fuzzed. */
int dlrt_gate_check(const uint8_t *buf, size_t len, struct dlrt_err *err);

#endif
