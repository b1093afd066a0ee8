/* pslite_msg.h - wire format of dlrt's ps-lite contract test (pslite_contract).
 *
 * The test program follows ps-lite's start-up contract (docs/contracts.md,
 * mxnet) over plain TCP instead of ZMQ, so it needs its own small framing:
 *
 *   header (16 bytes, big-endian):
 *     u32 magic "PSLT" | u16 version (1) | u16 type | i32 sender id | u32 body length
 *   body by type:
 *     ADD_NODE            u8 role | u8 iplen | ip (numeric IPv4) | u16 port
 *     NODE_TABLE          i32 your id | u16 count | count x (i32 id | u8 role | u8 iplen | ip | u16 port)
 *     HELLO, BARRIER,     u32 arg (barrier: 0 = start, 1 = finalize)
 *     BARRIER_DONE, HEARTBEAT
 *     PUSH, PULL_REPLY    u32 round | u64 first key | u32 count | count x i64 value
 *     PUSH_ACK, PULL      u32 round | u64 first key | u32 count
 *
 * Ids follow ps-lite (include/ps/internal/postoffice.h): scheduler 1,
 * server 8 + 2*rank, worker 9 + 2*rank; a node has no id (0) until the
 * scheduler's table arrives. Roles use ps-lite's Node::Role numbers.
 *
 * The decoder is strict (exact body lengths, no trailing bytes, valid roles,
 * ids and numeric addresses, a complete and duplicate-free node table) and
 * bounded (DLRT_PSLITE_MAX_BODY), because it reads bytes from the network.
 */
#ifndef DLRT_PSLITE_MSG_H
#define DLRT_PSLITE_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/dlrt_err.h"

#define DLRT_PSLITE_MAGIC     0x50534c54u /* "PSLT" */
#define DLRT_PSLITE_VERSION   1
#define DLRT_PSLITE_HDR_LEN   16
#define DLRT_PSLITE_KV_HDR    16          /* round + first key + count */
/* Largest vector slice in one message (2^21 values = 16 MiB). */
#define DLRT_PSLITE_MAX_VALUES (1u << 21)
#define DLRT_PSLITE_MAX_BODY  (DLRT_PSLITE_KV_HDR + 8u * DLRT_PSLITE_MAX_VALUES)
/* Largest node table: servers + workers of one job. */
#define DLRT_PSLITE_MAX_NODES 2048
#define DLRT_PSLITE_IP_MAX    16          /* INET_ADDRSTRLEN */

#define DLRT_PSLITE_SCHED_ID  1

enum dlrt_pslite_role {
	DLRT_PSLITE_SERVER = 0,
	DLRT_PSLITE_WORKER = 1,
	DLRT_PSLITE_SCHEDULER = 2,
};

enum dlrt_pslite_type {
	DLRT_PSLITE_ADD_NODE = 1,
	DLRT_PSLITE_NODE_TABLE,
	DLRT_PSLITE_HELLO,
	DLRT_PSLITE_BARRIER,
	DLRT_PSLITE_BARRIER_DONE,
	DLRT_PSLITE_HEARTBEAT,
	DLRT_PSLITE_PUSH,
	DLRT_PSLITE_PUSH_ACK,
	DLRT_PSLITE_PULL,
	DLRT_PSLITE_PULL_REPLY,
	DLRT_PSLITE_TYPE_MAX = DLRT_PSLITE_PULL_REPLY,
};

enum { DLRT_PSLITE_BARRIER_START = 0, DLRT_PSLITE_BARRIER_FINALIZE = 1 };

struct dlrt_pslite_node {
	int32_t id;     /* 0 in ADD_NODE */
	uint8_t role;   /* enum dlrt_pslite_role: SERVER or WORKER */
	uint16_t port;
	char ip[DLRT_PSLITE_IP_MAX];
};

/* A decoded message. Pointers point into the decoded input and are valid only
 * as long as it is. */
struct dlrt_pslite_msg {
	uint16_t type;
	int32_t sender;
	/* ADD_NODE */
	struct dlrt_pslite_node node;
	/* NODE_TABLE: read entries with dlrt_pslite_table_next() */
	int32_t your_id;
	uint16_t nnodes;
	uint16_t nservers, nworkers;
	const uint8_t *table;
	size_t table_len;
	/* HELLO, BARRIER, BARRIER_DONE, HEARTBEAT */
	uint32_t arg;
	/* PUSH, PUSH_ACK, PULL, PULL_REPLY; values only for PUSH and PULL_REPLY */
	uint32_t round;
	uint64_t key;
	uint32_t count;
	const uint8_t *values; /* count big-endian i64; read with dlrt_pslite_value() */
};

/* Decodes one message from the front of p[0..len). Returns 1 and sets *used
 * when a whole message was decoded, 0 when more bytes are needed (a bad
 * header is reported as soon as its 16 bytes are there), -1 with `err` set
 * when the bytes are not a valid message. */
int dlrt_pslite_msg_decode(const uint8_t *p, size_t len, struct dlrt_pslite_msg *m,
			   size_t *used, struct dlrt_err *err);

/* Reads the next node of a decoded NODE_TABLE; *off starts at 0. Returns 1
 * with *out filled, 0 after the last entry. */
int dlrt_pslite_table_next(const struct dlrt_pslite_msg *m, size_t *off,
			   struct dlrt_pslite_node *out);

/* Value i (< m->count) of a decoded PUSH or PULL_REPLY. */
int64_t dlrt_pslite_value(const struct dlrt_pslite_msg *m, uint32_t i);

/* Encoders append one message to `out`; -1 with `err` set if the message
 * would be invalid or the buffer is full. */
int dlrt_pslite_put_add_node(struct dlrt_buf *out, const struct dlrt_pslite_node *self,
			     struct dlrt_err *err);
int dlrt_pslite_put_table(struct dlrt_buf *out, int32_t your_id,
			  const struct dlrt_pslite_node *nodes, size_t n, struct dlrt_err *err);
/* HELLO, BARRIER, BARRIER_DONE, HEARTBEAT */
int dlrt_pslite_put_ctl(struct dlrt_buf *out, uint16_t type, int32_t sender, uint32_t arg,
			struct dlrt_err *err);
/* PUSH and PULL_REPLY need `values` (count of them); PUSH_ACK and PULL take NULL. */
int dlrt_pslite_put_kv(struct dlrt_buf *out, uint16_t type, int32_t sender, uint32_t round,
		       uint64_t key, uint32_t count, const int64_t *values,
		       struct dlrt_err *err);

/* ps-lite's id scheme (Postoffice::ServerRankToID / WorkerRankToID). */
static inline int32_t dlrt_pslite_id(uint8_t role, uint32_t rank)
{
	return (int32_t)((role == DLRT_PSLITE_SERVER ? 8u : 9u) + 2u * rank);
}

const char *dlrt_pslite_role_name(uint8_t role);
const char *dlrt_pslite_type_name(uint16_t type);

#endif
