/* kvmap.h - a hash map from byte strings to pointers.
 *
 * The rendezvous store looks a key up for every request, and gloo polls GET
 * for every peer every 10 ms, so lookups must not be linear in the number of
 * ranks. Keys are copied; values are the caller's.
 */
#ifndef DLRT_KVMAP_H
#define DLRT_KVMAP_H

#include <stddef.h>
#include <stdint.h>

struct dlrt_kvmap_entry {
	struct dlrt_kvmap_entry *next;
	uint64_t hash;
	void *val;
	size_t klen;
	char key[]; /* klen bytes, then a NUL for convenience */
};

struct dlrt_kvmap {
	struct dlrt_kvmap_entry **buckets;
	size_t nbuckets; /* 0 or a power of two */
	size_t count;
};

void dlrt_kvmap_init(struct dlrt_kvmap *m);
/* Frees the entries and calls free_val (if not NULL) on every value. */
void dlrt_kvmap_clear(struct dlrt_kvmap *m, void (*free_val)(void *));

struct dlrt_kvmap_entry *dlrt_kvmap_find(const struct dlrt_kvmap *m,
					 const void *key, size_t klen);
/* Adds a key that is not in the map yet; NULL if memory is short. */
struct dlrt_kvmap_entry *dlrt_kvmap_add(struct dlrt_kvmap *m, const void *key,
					size_t klen, void *val);
/* Removes the entry (which must be in the map) and frees it. */
void dlrt_kvmap_remove(struct dlrt_kvmap *m, struct dlrt_kvmap_entry *e);

/* Calls fn on every entry; fn must not add or remove entries. */
void dlrt_kvmap_foreach(const struct dlrt_kvmap *m,
			void (*fn)(struct dlrt_kvmap_entry *e, void *arg), void *arg);

#endif
