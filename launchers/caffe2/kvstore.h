/* kvstore.h - the Caffe2 helper store's keyspace and its Redis commands.
 *
 * Caffe2's RedisStoreHandler and gloo's RedisStore only need write-once keys
 * (SETNX, whose reply must be the integer 1), GET, INCRBY and a multi-key
 * EXISTS polled every 10 ms; redis-cli and redis-benchmark add PING, CONFIG
 * GET and friends. This module holds binary-safe string keys and values in a
 * chained hash table (SipHash-1-3 with a random key, as Redis uses, so a peer
 * cannot force collisions) and executes one parsed request, appending the
 * reply Redis would give - same reply types, same error texts - to an output
 * buffer. Only strings exist: there are no other types, one database
 * (SELECT 0). Keys may expire (SET ... EX/PX, EXPIRE; kvttl.c) and clients
 * may run transactions (MULTI/EXEC, WATCH; kvtx.c).
 *
 * Pure: no I/O, no printing, single-threaded. Expiry reads dlrt's monotonic
 * clock (common/clock.h), anchored once to the wall clock when the store is
 * created so that EXAT/PXAT and Redis's overflow rules see Unix times.
 */
#ifndef DLRT_KVSTORE_H
#define DLRT_KVSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct dlrt_kv;

struct dlrt_kv_tx;

/* Per-connection state the commands use (CLIENT SETNAME/GETNAME/ID, and a
 * transaction's queue and watched keys, allocated on first MULTI/WATCH).
 * What a client can grow here counts in the store's --max-memory like the
 * keyspace does (dlrt_kv_used). */
struct dlrt_kv_client {
	struct dlrt_kv *kv;
	uint64_t id;
	char *name;
	size_t name_held; /* what the name counts in the store's bound */
	struct dlrt_kv_tx *tx;
	/* Set when a request of this client was refused because the store is
	 * full (dlrt_kv_full_message); the server logs it and clears it. */
	bool refused_full;
};

/* `max_value` is reported by CONFIG GET proto-max-bulk-len and bounds the
 * values APPEND can build. NULL if memory is short. */
struct dlrt_kv *dlrt_kv_create(size_t max_value);
void dlrt_kv_destroy(struct dlrt_kv *kv);

/* The most bytes the store may hold, as dlrt_kv_used counts them: keys,
 * values and their bookkeeping, and what it holds for its clients (every
 * client's queued MULTI commands, watched keys and name). A write past it
 * fails as if memory were short, and the commands answer Redis's -OOM
 * error; a command queued past it is refused with dlrt_kv_full_message and
 * discards its transaction. Default DLRT_KV_DEFAULT_MAX_MEMORY; 0 refuses
 * every write that needs memory. */
#define DLRT_KV_DEFAULT_MAX_MEMORY ((size_t)256 << 20)
void dlrt_kv_set_max_memory(struct dlrt_kv *kv, size_t bytes);
size_t dlrt_kv_max_memory(const struct dlrt_kv *kv);
size_t dlrt_kv_used(const struct dlrt_kv *kv);
/* The clients' part of dlrt_kv_used (0 once no client holds anything). */
size_t dlrt_kv_held(const struct dlrt_kv *kv);
/* Why a client's queued command, watched key or name was refused past
 * --max-memory: one line naming the bound, for the log (the client gets it
 * as Redis's error "OOM <this>"). */
const char *dlrt_kv_full_message(const struct dlrt_kv *kv);
/* What storing a new key of klen bytes with a value of vlen bytes costs, and
 * whether `bytes` more still fit (commands that must not half-succeed check
 * first). */
size_t dlrt_kv_entry_cost(size_t klen, size_t vlen);
bool dlrt_kv_has_room(const struct dlrt_kv *kv, size_t bytes);

/* Keyspace primitives (also used by the tests). */
/* Keys held, including expired keys not reclaimed yet (as Redis's DBSIZE). */
size_t dlrt_kv_count(const struct dlrt_kv *kv);
/* Keys with a time to live (INFO's "expires="). */
size_t dlrt_kv_volatile_count(const struct dlrt_kv *kv);
/* Returns true and points *val at the stored bytes (valid until the next
 * change of that key) if the key exists. An expired key does not: it is
 * removed here (lazy expiry). */
bool dlrt_kv_lookup(struct dlrt_kv *kv, const void *key, size_t klen,
		    const uint8_t **val, size_t *vlen);
/* Returns 0, or -1 if memory is short or the write would pass the store's
 * maximum memory (the key then keeps its old value). A key that is written
 * loses its time to live, as with Redis's SET (dlrt_kv_put_keepttl keeps
 * it). */
int dlrt_kv_put(struct dlrt_kv *kv, const void *key, size_t klen,
		const void *val, size_t vlen);
int dlrt_kv_put_keepttl(struct dlrt_kv *kv, const void *key, size_t klen,
			const void *val, size_t vlen);

/* Expiry, in Unix milliseconds on the store's clock (dlrt_kv_now_ms). */
#define DLRT_KV_NO_EXPIRY INT64_MIN
int64_t dlrt_kv_now_ms(const struct dlrt_kv *kv);
/* Tests: expiry without sleeping, and answers that do not depend on how
 * fast the machine is. dlrt_kv_stop_clock freezes the store's clock where it
 * stands (a loaded machine would otherwise let a millisecond pass between a
 * SET PX and its PTTL); dlrt_kv_advance_clock moves it forward by ms. */
void dlrt_kv_stop_clock(struct dlrt_kv *kv);
void dlrt_kv_advance_clock(struct dlrt_kv *kv, int64_t ms);
/* The key's expiry time, or DLRT_KV_NO_EXPIRY (also for a missing key). */
int64_t dlrt_kv_get_expire(struct dlrt_kv *kv, const void *key, size_t klen);
/* Sets (at != DLRT_KV_NO_EXPIRY) or removes the key's expiry; returns 1 if
 * the key exists (and changed), 0 if not. An expiry time not after now
 * removes the key, as Redis does. */
int dlrt_kv_set_expire(struct dlrt_kv *kv, const void *key, size_t klen, int64_t at);
/* Active expiry: looks at up to `budget` keys with a time to live, removes
 * the expired ones, and returns how many it removed. The server calls it
 * from a timer so that memory of keys nobody reads again is returned. */
size_t dlrt_kv_expire_cycle(struct dlrt_kv *kv, size_t budget);

/* The bound on one client's MULTI queue and WATCHed keys together: at most
 * `bytes` (arguments plus bookkeeping) and `count` entries. Defaults
 * DLRT_KV_DEFAULT_TX_BYTES and DLRT_KV_DEFAULT_TX_COUNT. */
#define DLRT_KV_DEFAULT_TX_BYTES ((size_t)129 << 20)
#define DLRT_KV_DEFAULT_TX_COUNT ((size_t)1 << 20)
void dlrt_kv_set_tx_limits(struct dlrt_kv *kv, size_t bytes, size_t count);
/* Returns 1 if the key was removed, 0 if it did not exist. */
int dlrt_kv_remove(struct dlrt_kv *kv, const void *key, size_t klen);
void dlrt_kv_flush(struct dlrt_kv *kv);

/* Starts a connection's state with a fresh CLIENT ID. */
void dlrt_kv_client_init(struct dlrt_kv *kv, struct dlrt_kv_client *cl);
/* Drops the client's transaction queue and watched keys too. */
void dlrt_kv_client_free(struct dlrt_kv_client *cl);
/* True while the client is between MULTI and EXEC/DISCARD. */
bool dlrt_kv_client_in_multi(const struct dlrt_kv_client *cl);

enum dlrt_kv_exec_result {
	DLRT_KV_EXEC_OOM = -1,  /* the reply did not fit in `out`: close */
	DLRT_KV_EXEC_OK = 0,
	DLRT_KV_EXEC_QUIT = 1,  /* QUIT: send the reply, then close */
};

/* Executes one request (argc >= 1) and appends its reply to `out`. Command
 * names are case-insensitive. Between MULTI and EXEC a request is checked
 * and queued (+QUEUED); EXEC runs the queue in this one call, so no other
 * client's command comes in between. Returns enum dlrt_kv_exec_result. */
int dlrt_kv_exec(struct dlrt_kv *kv, struct dlrt_kv_client *cl, size_t argc,
		 const uint8_t *const *argv, const size_t *argvlen,
		 struct dlrt_buf *out);

/* Redis's glob matcher (KEYS, CONFIG GET): * ? [a-z] [^x] and \ escapes. */
bool dlrt_kv_glob(const uint8_t *pat, size_t plen, const uint8_t *s, size_t slen);

#endif
