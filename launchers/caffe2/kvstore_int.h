/* kvstore_int.h - what the keyspace (kvstore.c), the command table
 * (kvcmd.c), expiry (kvttl.c) and transactions (kvtx.c) share; not for other
 * modules. */
#ifndef DLRT_KVSTORE_INT_H
#define DLRT_KVSTORE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/dlist.h"
#include "kvstore.h"

struct entry;
struct dlrt_kv_watch;

struct dlrt_kv {
	struct entry **buckets;
	size_t nbuckets; /* a power of two */
	size_t count;
	uint64_t seed[2];
	size_t max_value;
	size_t max_memory; /* refuse writes past this many bytes of `used` */
	size_t used;       /* entries (keys, values, headers) and the bucket array */
	size_t held;       /* clients' MULTI queues, watched keys and names */
	char full[320];    /* "OOM " and dlrt_kv_full_message: the refusal, naming the bound */
	uint64_t next_client_id;

	/* Expiry: the clock is dlrt_now_ms() + clock_base (Unix ms at start),
	 * or clock_base alone once a test stopped it. */
	int64_t clock_base;
	bool clock_stopped;
	struct dlrt_dlist volatile_keys; /* keys with a time to live, oldest TTL set first */

	/* WATCHed keys of all clients, hashed like the keyspace. */
	struct dlrt_kv_watch **wbuckets;
	size_t nwbuckets; /* 0 until the first WATCH, then a power of two */
	size_t nwatch;

	size_t tx_max_bytes, tx_max_count;
};

/* Calls fn for every live key until it returns < 0; returns that, or 0. */
typedef int (*dlrt_kv_visit_fn)(const uint8_t *key, size_t klen, void *arg);
int dlrt_kv_foreach(struct dlrt_kv *kv, dlrt_kv_visit_fn fn, void *arg);

uint64_t dlrt_kv_hash(const struct dlrt_kv *kv, const void *key, size_t klen);

/* What malloc adds to each block (a size header, rounding). */
#define DLRT_KV_MALLOC_OVERHEAD 16

/* What the store holds for one client changes from *held to `now` bytes
 * (kv->held follows). Callers check dlrt_kv_has_room for growth first. */
void dlrt_kv_hold(struct dlrt_kv *kv, size_t *held, size_t now);

/* Marks every client watching the key (hash h) as touched (kvtx.c). */
void dlrt_kv_touch(struct dlrt_kv *kv, const void *key, size_t klen, uint64_t h);
/* Before FLUSHALL: touches the watched keys that exist (kvtx.c). */
void dlrt_kv_touch_existing(struct dlrt_kv *kv);
/* Unlinks a key's entry from the keyspace (lazy and active expiry). */
void dlrt_kv_unlink_expired(struct dlrt_kv *kv, struct entry **pe);

/* ---- the command table's context ---------------------------------------- */

struct dlrt_kv_ctx {
	struct dlrt_kv *kv;
	struct dlrt_kv_client *cl;
	struct dlrt_buf *out;
	int rc; /* 0, or -1 once an append failed */
	bool quit;
};

#define DLRT_KV_ARGS size_t argc, const uint8_t *const *argv, const size_t *argvlen

typedef void (*dlrt_kv_cmd_fn)(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);

struct dlrt_kv_cmd {
	const char *name;
	int arity; /* like Redis: n = exactly n, -n = at least n */
	dlrt_kv_cmd_fn fn;
};

/* The command of that name (case-insensitive), or NULL. */
const struct dlrt_kv_cmd *dlrt_kv_cmd_find(const uint8_t *name, size_t n);
bool dlrt_kv_cmd_arity_ok(const struct dlrt_kv_cmd *cmd, size_t argc);
/* Runs one checked command (name known, arity right). */
void dlrt_kv_cmd_run(struct dlrt_kv_ctx *c, const struct dlrt_kv_cmd *cmd, DLRT_KV_ARGS);
/* Redis's replies for an unknown command and a wrong argument count. */
void dlrt_kv_reply_unknown(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);
void dlrt_kv_reply_arity(struct dlrt_kv_ctx *c, const char *name);
bool dlrt_kv_arg_is(const uint8_t *a, size_t n, const char *s);
void dlrt_kv_reply_oom(struct dlrt_kv_ctx *c);
/* Answers dlrt_kv_full_message and marks the client for the server's log. */
void dlrt_kv_reply_full(struct dlrt_kv_ctx *c);

/* Commands that live outside kvcmd.c. */
void dlrt_kv_cmd_set(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);      /* kvttl.c */
void dlrt_kv_cmd_setex(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);
void dlrt_kv_cmd_psetex(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);
void dlrt_kv_cmd_expire(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);
void dlrt_kv_cmd_pexpire(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);
void dlrt_kv_cmd_expireat(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);
void dlrt_kv_cmd_pexpireat(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);
void dlrt_kv_cmd_ttl(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);
void dlrt_kv_cmd_pttl(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);
void dlrt_kv_cmd_persist(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);
void dlrt_kv_cmd_multi(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);     /* kvtx.c */
void dlrt_kv_cmd_exec(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);
void dlrt_kv_cmd_discard(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);
void dlrt_kv_cmd_watch(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);
void dlrt_kv_cmd_unwatch(struct dlrt_kv_ctx *c, DLRT_KV_ARGS);

#endif
