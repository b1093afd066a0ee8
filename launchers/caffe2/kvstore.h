/* kvstore.h - the Caffe2 helper store's keyspace and its Redis commands.
 *
 * Caffe2's RedisStoreHandler and gloo's RedisStore only need write-once keys
 * (SETNX, whose reply must be the integer 1), GET, INCRBY and a multi-key
 * EXISTS polled every 10 ms; redis-cli and redis-benchmark add PING, CONFIG
 * GET and friends. This module holds binary-safe string keys and values in a
 * chained hash table (SipHash-1-3 with a random key, as Redis uses, so a peer
 * cannot force collisions) and executes one parsed request, appending the
 * reply Redis would give - same reply types, same error texts - to an output
 * buffer. Only strings exist: there are no other types, no expiry, one
 * database (SELECT 0).
 *
 * Pure: no I/O, no printing, single-threaded.
 */
#ifndef DLRT_KVSTORE_H
#define DLRT_KVSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

struct dlrt_kv;

/* Per-connection state the commands use (CLIENT SETNAME/GETNAME/ID). */
struct dlrt_kv_client {
	uint64_t id;
	char *name;
};

/* `max_value` is reported by CONFIG GET proto-max-bulk-len and bounds the
 * values APPEND can build. NULL if memory is short. */
struct dlrt_kv *dlrt_kv_create(size_t max_value);
void dlrt_kv_destroy(struct dlrt_kv *kv);

/* The most bytes the keyspace may hold (keys, values and their bookkeeping,
 * as dlrt_kv_used counts them): a write past it fails as if memory were
 * short, and the commands answer Redis's -OOM error. Default
 * DLRT_KV_DEFAULT_MAX_MEMORY; 0 refuses every write that needs memory. */
#define DLRT_KV_DEFAULT_MAX_MEMORY ((size_t)256 << 20)
void dlrt_kv_set_max_memory(struct dlrt_kv *kv, size_t bytes);
size_t dlrt_kv_max_memory(const struct dlrt_kv *kv);
size_t dlrt_kv_used(const struct dlrt_kv *kv);
/* What storing a new key of klen bytes with a value of vlen bytes costs, and
 * whether `bytes` more still fit (commands that must not half-succeed check
 * first). */
size_t dlrt_kv_entry_cost(size_t klen, size_t vlen);
bool dlrt_kv_has_room(const struct dlrt_kv *kv, size_t bytes);

/* Keyspace primitives (also used by the tests). */
size_t dlrt_kv_count(const struct dlrt_kv *kv);
/* Returns true and points *val at the stored bytes (valid until the next
 * change of that key) if the key exists. */
bool dlrt_kv_lookup(const struct dlrt_kv *kv, const void *key, size_t klen,
		    const uint8_t **val, size_t *vlen);
/* Returns 0, or -1 if memory is short or the write would pass the store's
 * maximum memory (the key then keeps its old value). */
int dlrt_kv_put(struct dlrt_kv *kv, const void *key, size_t klen,
		const void *val, size_t vlen);
/* Returns 1 if the key was removed, 0 if it did not exist. */
int dlrt_kv_remove(struct dlrt_kv *kv, const void *key, size_t klen);
void dlrt_kv_flush(struct dlrt_kv *kv);

/* Starts a connection's state with a fresh CLIENT ID. */
void dlrt_kv_client_init(struct dlrt_kv *kv, struct dlrt_kv_client *cl);
void dlrt_kv_client_free(struct dlrt_kv_client *cl);

enum dlrt_kv_exec_result {
	DLRT_KV_EXEC_OOM = -1,  /* the reply did not fit in `out`: close */
	DLRT_KV_EXEC_OK = 0,
	DLRT_KV_EXEC_QUIT = 1,  /* QUIT: send the reply, then close */
};

/* Executes one request (argc >= 1) and appends its reply to `out`. Command
 * names are case-insensitive. Returns enum dlrt_kv_exec_result. */
int dlrt_kv_exec(struct dlrt_kv *kv, struct dlrt_kv_client *cl, size_t argc,
		 const uint8_t *const *argv, const size_t *argvlen,
		 struct dlrt_buf *out);

/* Redis's glob matcher (KEYS, CONFIG GET): * ? [a-z] [^x] and \ escapes. */
bool dlrt_kv_glob(const uint8_t *pat, size_t plen, const uint8_t *s, size_t slen);

#endif
