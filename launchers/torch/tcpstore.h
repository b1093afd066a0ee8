/* tcpstore.h - torch.distributed's TCPStore, server side, as dlrt-c10d-store
 * hosts it for a step (the agent's store of torchrun), and as srun hosts it
 * for every step's address exchange (the rendezvous, exchange/rdvclient.h).
 *
 * The wire protocols are the ones torch 1.x's and 2.x's c10d clients speak
 * (Debian 12's python3-torch 1.13, Debian 13's 2.6; TCPStore.cpp), told apart
 * per connection by its first request: a request is one query-type byte, then
 * its arguments; a string or byte vector is a 64-bit length and the bytes,
 * integers are 64-bit; all in the host's byte order (every node of a step is
 * the same architecture, and torch sends native order). Replies likewise.
 *
 *   SET         key, value                  (no reply)
 *   COMPARE_SET key, expected, desired      -> value now stored
 *   GET         key                         -> value
 *   ADD         key, int64                  -> new value (stored as decimal text)
 *   CHECK       count, keys                 -> byte 0 all present, 1 not
 *   WAIT        count, keys                 -> byte 0 once all are present
 *   GETNUMKEYS                              -> int64
 *   DELETE_KEY  key                         -> int64 keys deleted
 *
 * torch 2.x opens every connection with VALIDATE (its query 0, then the
 * 32-bit magic number 0x3C85F7CE; no reply) and PING (a 32-bit nonce, sent
 * back); from then on its query numbers are 1.x's shifted by one (SET is 1 ...
 * GETNUMKEYS 7; DELETE_KEY stays 8, 1.x's WATCH_KEY is gone), and it adds
 *
 *   APPEND      key, value                  (no reply) appended, or set
 *   MULTI_GET   count, keys                 -> each value (all must exist)
 *   MULTI_SET   count, (key, value)...      (no reply)
 *   CANCEL_WAIT (a parked WAIT timed out)   -> byte 1 (WAIT_CANCELED)
 *
 * WAIT never blocks the server: the client is parked and answered when the
 * last of its keys appears (wake callback). WATCH_KEY (only reachable from
 * C++ Store::watchKey, never from init_process_group or a barrier) and
 * torch 2.x's queue queries are refused with a reason. Everything is bounded: key and value lengths, keys in
 * one WAIT/CHECK, and the bytes the whole store holds: --max-store counts the
 * values and everything held for a client besides (the key list of a parked
 * WAIT, an unfinished request, replies not yet sent), so many clients that
 * each hold a little cannot add up past it.
 *
 * No socket here: the service (dlrt_c10d_store_main.c) feeds bytes in, the
 * unit test and the fuzzer do the same.
 */
#ifndef DLRT_TCPSTORE_H
#define DLRT_TCPSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

enum dlrt_tcpstore_query {
	DLRT_TCPSTORE_SET,
	DLRT_TCPSTORE_COMPARE_SET,
	DLRT_TCPSTORE_GET,
	DLRT_TCPSTORE_ADD,
	DLRT_TCPSTORE_CHECK,
	DLRT_TCPSTORE_WAIT,
	DLRT_TCPSTORE_GETNUMKEYS,
	DLRT_TCPSTORE_WATCH_KEY,
	DLRT_TCPSTORE_DELETE_KEY,
	/* torch 2.x's own (its wire numbers differ: see tcpstore.c, torch2_query) */
	DLRT_TCPSTORE_VALIDATE,
	DLRT_TCPSTORE_APPEND,
	DLRT_TCPSTORE_MULTI_GET,
	DLRT_TCPSTORE_MULTI_SET,
	DLRT_TCPSTORE_CANCEL_WAIT,
	DLRT_TCPSTORE_PING,
};

#define DLRT_TCPSTORE_DEFAULT_MAX_KEY       4096u
#define DLRT_TCPSTORE_DEFAULT_MAX_VALUE     (16u << 20)
#define DLRT_TCPSTORE_DEFAULT_MAX_STORE     (256u << 20)
#define DLRT_TCPSTORE_DEFAULT_MAX_WAIT_KEYS 4096u

struct dlrt_tcpstore_limits {
	size_t max_key;       /* longest key */
	size_t max_value;     /* longest value (SET, COMPARE_SET) */
	size_t max_store;     /* bytes the store holds in all: keys, values, clients' */
	size_t max_wait_keys; /* keys in one WAIT or CHECK */
};

struct dlrt_tcpstore;

struct dlrt_tcpstore_client {
	struct dlrt_tcpstore *store;
	struct dlrt_buf *out; /* replies are appended here */
	struct dlrt_buf *in;  /* the requests, as last fed */
	void *owner;          /* handed to the wake callback */
	uint64_t id;
	size_t need;          /* bytes the request at the front needs, once known */
	/* A parked WAIT: its key list as sent (length, bytes, ...). */
	uint8_t *wait_keys;
	size_t wait_len, wait_n;
	struct dlrt_tcpstore_client *wprev, *wnext;
	struct dlrt_tcpstore_client *cprev, *cnext; /* every client of the store */
	size_t held;          /* what this client holds, as last counted */
	size_t skip;          /* the request being executed: counted as done */
	bool waiting;
	bool torch2;          /* the client opened with torch 2.x's VALIDATE */
	const char *error;    /* why feed asked to close */
};

/* Called when a parked client got its answer in client->out. */
typedef void (*dlrt_tcpstore_wake_fn)(struct dlrt_tcpstore_client *c, void *arg);
/* Called after each executed request (for --verbose). */
typedef void (*dlrt_tcpstore_log_fn)(void *arg, const struct dlrt_tcpstore_client *c,
				     unsigned query, const uint8_t *key, size_t klen,
				     const char *note);

/* NULL if memory is short. `lim` NULL: the defaults. */
struct dlrt_tcpstore *dlrt_tcpstore_create(const struct dlrt_tcpstore_limits *lim,
					   dlrt_tcpstore_wake_fn wake, void *wake_arg);
void dlrt_tcpstore_destroy(struct dlrt_tcpstore *s);
size_t dlrt_tcpstore_nkeys(const struct dlrt_tcpstore *s);
/* Keys and values (with their overhead) the store holds. */
size_t dlrt_tcpstore_bytes(const struct dlrt_tcpstore *s);
/* What it holds for its clients besides, as last counted (at most --max-store
 * with the above, give or take one read of a client's input). */
size_t dlrt_tcpstore_held(const struct dlrt_tcpstore *s);

void dlrt_tcpstore_client_init(struct dlrt_tcpstore *s, struct dlrt_tcpstore_client *c,
			       struct dlrt_buf *out, void *owner);
/* Unparks the client and frees what it holds. */
void dlrt_tcpstore_client_free(struct dlrt_tcpstore_client *c);

/* Executes every complete request at the front of `in` (a parked client's
 * later requests wait in `in` until it is answered; feed again then).
 * Returns 0 to keep the connection, -1 to send what is in `out` and close:
 * c->error says why (malformed or oversized request, store full, reply
 * buffer full, refused query). The store full also when the bytes `in` holds
 * for this request would take it past --max-store. `log` may be NULL. */
int dlrt_tcpstore_feed(struct dlrt_tcpstore_client *c, struct dlrt_buf *in,
		       dlrt_tcpstore_log_fn log, void *log_arg);

/* True if `in` holds part of a request (a stalled client to time out). */
bool dlrt_tcpstore_partial(const struct dlrt_tcpstore_client *c, const struct dlrt_buf *in);

const char *dlrt_tcpstore_query_name(unsigned query);

#endif
