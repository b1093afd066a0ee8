/* kvstore_int.h - what the command table (kvcmd.c) shares with the table
 * (kvstore.c); not for other modules. */
#ifndef DLRT_KVSTORE_INT_H
#define DLRT_KVSTORE_INT_H

#include <stddef.h>
#include <stdint.h>

struct entry;

struct dlrt_kv {
	struct entry **buckets;
	size_t nbuckets; /* a power of two */
	size_t count;
	uint64_t seed[2];
	size_t max_value;
	size_t max_memory; /* refuse writes past this many bytes of `used` */
	size_t used;       /* entries (keys, values, headers) and the bucket array */
	uint64_t next_client_id;
};

/* Calls fn for every key until it returns < 0; returns that, or 0. */
typedef int (*dlrt_kv_visit_fn)(const uint8_t *key, size_t klen, void *arg);
int dlrt_kv_foreach(const struct dlrt_kv *kv, dlrt_kv_visit_fn fn, void *arg);

#endif
