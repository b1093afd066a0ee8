#include "kvmap.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a: short keys, no adversary can do more than slow one scope down. */
static uint64_t hash_bytes(const void *key, size_t n)
{
	const uint8_t *p = key;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ull;
	}
	return h;
}

void dlrt_kvmap_init(struct dlrt_kvmap *m)
{
	memset(m, 0, sizeof(*m));
}

void dlrt_kvmap_clear(struct dlrt_kvmap *m, void (*free_val)(void *))
{
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct dlrt_kvmap_entry *e = m->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			if (free_val)
				free_val(e->val);
			free(e);
		}
	}
	free(m->buckets);
	dlrt_kvmap_init(m);
}

struct dlrt_kvmap_entry *dlrt_kvmap_find(const struct dlrt_kvmap *m,
					 const void *key, size_t klen)
{
	uint64_t h;

	if (!m->nbuckets)
		return NULL;
	h = hash_bytes(key, klen);
	for (struct dlrt_kvmap_entry *e = m->buckets[h & (m->nbuckets - 1)]; e; e = e->next)
		if (e->hash == h && e->klen == klen && memcmp(e->key, key, klen) == 0)
			return e;
	return NULL;
}

static int grow(struct dlrt_kvmap *m)
{
	size_t nb = m->nbuckets ? m->nbuckets * 2 : 16;
	struct dlrt_kvmap_entry **b = calloc(nb, sizeof(*b));

	if (!b)
		return -1;
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct dlrt_kvmap_entry *e = m->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->nbuckets = nb;
	return 0;
}

struct dlrt_kvmap_entry *dlrt_kvmap_add(struct dlrt_kvmap *m, const void *key,
					size_t klen, void *val)
{
	struct dlrt_kvmap_entry *e;
	size_t i;

	if (m->count >= m->nbuckets && grow(m) < 0)
		return NULL;
	e = malloc(sizeof(*e) + klen + 1);
	if (!e)
		return NULL;
	e->hash = hash_bytes(key, klen);
	e->val = val;
	e->klen = klen;
	memcpy(e->key, key, klen);
	e->key[klen] = '\0';
	i = e->hash & (m->nbuckets - 1);
	e->next = m->buckets[i];
	m->buckets[i] = e;
	m->count++;
	return e;
}

void dlrt_kvmap_remove(struct dlrt_kvmap *m, struct dlrt_kvmap_entry *e)
{
	struct dlrt_kvmap_entry **pp = &m->buckets[e->hash & (m->nbuckets - 1)];

	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
	m->count--;
	free(e);
}

void dlrt_kvmap_foreach(const struct dlrt_kvmap *m,
			void (*fn)(struct dlrt_kvmap_entry *e, void *arg), void *arg)
{
	for (size_t i = 0; i < m->nbuckets; i++)
		for (struct dlrt_kvmap_entry *e = m->buckets[i]; e; e = e->next)
			fn(e, arg);
}
