/* kvstore.c - the keyspace: a chained hash table of binary-safe strings,
 * with each key's expiry time (kept in the entry, so it counts in the memory
 * bound like the rest of the entry) and a list of the keys that have one. */
#include "kvstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/clock.h"
#include "kvstore_int.h"

struct entry {
	struct entry *next;
	uint64_t hash;
	uint8_t *val;
	size_t vlen, vcap;
	int64_t expire_at;           /* Unix ms, or DLRT_KV_NO_EXPIRY */
	struct dlrt_dlist_node vlink; /* on kv->volatile_keys while it has an expiry */
	size_t klen;
	uint8_t key[];
};

/* ---- SipHash-1-3 (the variant Redis uses for its dict) ----------------- */

static inline uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define SIPROUND                                                               \
	do {                                                                   \
		v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);      \
		v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                         \
		v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                         \
		v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);      \
	} while (0)

static uint64_t siphash13(const uint8_t *in, size_t len, const uint64_t k[2])
{
	uint64_t v0 = 0x736f6d6570736575ULL ^ k[0];
	uint64_t v1 = 0x646f72616e646f6dULL ^ k[1];
	uint64_t v2 = 0x6c7967656e657261ULL ^ k[0];
	uint64_t v3 = 0x7465646279746573ULL ^ k[1];
	uint64_t b = (uint64_t)len << 56, m;
	const uint8_t *end = in + (len & ~(size_t)7);

	for (; in != end; in += 8) {
		memcpy(&m, in, 8); /* little-endian hosts only: x86_64, aarch64 */
		v3 ^= m;
		SIPROUND;
		v0 ^= m;
	}
	switch (len & 7) {
	case 7: b |= (uint64_t)in[6] << 48; /* fall through */
	case 6: b |= (uint64_t)in[5] << 40; /* fall through */
	case 5: b |= (uint64_t)in[4] << 32; /* fall through */
	case 4: b |= (uint64_t)in[3] << 24; /* fall through */
	case 3: b |= (uint64_t)in[2] << 16; /* fall through */
	case 2: b |= (uint64_t)in[1] << 8;  /* fall through */
	case 1: b |= (uint64_t)in[0];       /* fall through */
	default: break;
	}
	v3 ^= b;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t dlrt_kv_hash(const struct dlrt_kv *kv, const void *key, size_t klen)
{
	return siphash13(key, klen, kv->seed);
}

/* ---- table ------------------------------------------------------------- */

/* What malloc adds to each block: counted so a flood of tiny keys costs
 * what it really costs. */
#define MALLOC_OVERHEAD DLRT_KV_MALLOC_OVERHEAD

size_t dlrt_kv_entry_cost(size_t klen, size_t vlen)
{
	return sizeof(struct entry) + klen + (vlen ? vlen : 1) + 2 * MALLOC_OVERHEAD;
}

void dlrt_kv_set_max_memory(struct dlrt_kv *kv, size_t bytes)
{
	kv->max_memory = bytes;
	snprintf(kv->full, sizeof(kv->full),
		 "OOM dlrt-store is full (--max-memory=%zu bytes, counting keys, values and "
		 "every client's queued MULTI commands, watched keys and name): the transaction "
		 "is discarded; queue less per MULTI/EXEC (an admin can raise --max-memory)",
		 bytes);
}

const char *dlrt_kv_full_message(const struct dlrt_kv *kv)
{
	return kv->full + 4; /* past the reply's "OOM " */
}

size_t dlrt_kv_max_memory(const struct dlrt_kv *kv)
{
	return kv->max_memory;
}

size_t dlrt_kv_used(const struct dlrt_kv *kv)
{
	return kv->used + kv->held;
}

size_t dlrt_kv_held(const struct dlrt_kv *kv)
{
	return kv->held;
}

void dlrt_kv_hold(struct dlrt_kv *kv, size_t *held, size_t now)
{
	kv->held = kv->held - *held + now;
	*held = now;
}

/* One budget: the keyspace and what clients hold are counted together, so
 * neither can take the store past --max-memory at the other's expense. */
bool dlrt_kv_has_room(const struct dlrt_kv *kv, size_t bytes)
{
	size_t used = dlrt_kv_used(kv);

	return used <= kv->max_memory && bytes <= kv->max_memory - used;
}

struct dlrt_kv *dlrt_kv_create(size_t max_value)
{
	struct dlrt_kv *kv = calloc(1, sizeof(*kv));

	if (!kv)
		return NULL;
	kv->nbuckets = 16;
	kv->buckets = calloc(kv->nbuckets, sizeof(*kv->buckets));
	if (!kv->buckets) {
		free(kv);
		return NULL;
	}
	if (getrandom(kv->seed, sizeof(kv->seed), GRND_NONBLOCK) != sizeof(kv->seed)) {
		/* No entropy yet (early boot): still distinct per process. */
		kv->seed[0] = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)kv;
		kv->seed[1] = (uint64_t)clock() * 0x9e3779b97f4a7c15ULL;
	}
	kv->max_value = max_value;
	dlrt_kv_set_max_memory(kv, DLRT_KV_DEFAULT_MAX_MEMORY);
	kv->used = kv->nbuckets * sizeof(*kv->buckets);
	kv->next_client_id = 1;
	kv->tx_max_bytes = DLRT_KV_DEFAULT_TX_BYTES;
	kv->tx_max_count = DLRT_KV_DEFAULT_TX_COUNT;
	{
		/* The one wall-clock read: where the monotonic clock stands in
		 * Unix time. Expiry then never jumps with NTP or `date`. */
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		kv->clock_base = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 -
				 dlrt_now_ms();
	}
	return kv;
}

void dlrt_kv_set_tx_limits(struct dlrt_kv *kv, size_t bytes, size_t count)
{
	kv->tx_max_bytes = bytes;
	kv->tx_max_count = count;
}

int64_t dlrt_kv_now_ms(const struct dlrt_kv *kv)
{
	return kv->clock_stopped ? kv->clock_base : dlrt_now_ms() + kv->clock_base;
}

void dlrt_kv_stop_clock(struct dlrt_kv *kv)
{
	kv->clock_base = dlrt_kv_now_ms(kv);
	kv->clock_stopped = true;
}

void dlrt_kv_advance_clock(struct dlrt_kv *kv, int64_t ms)
{
	kv->clock_base += ms;
}

static bool expired(const struct entry *e, int64_t now)
{
	return e->expire_at != DLRT_KV_NO_EXPIRY && now > e->expire_at;
}

static void vol_unlink(struct dlrt_kv *kv, struct entry *e)
{
	if (e->expire_at == DLRT_KV_NO_EXPIRY)
		return;
	dlrt_dlist_unlink(&kv->volatile_keys, &e->vlink);
	e->expire_at = DLRT_KV_NO_EXPIRY;
}

static void vol_append(struct dlrt_kv *kv, struct entry *e, int64_t at)
{
	e->expire_at = at;
	dlrt_dlist_append(&kv->volatile_keys, &e->vlink);
}

size_t dlrt_kv_volatile_count(const struct dlrt_kv *kv)
{
	return kv->volatile_keys.n;
}

void dlrt_kv_flush(struct dlrt_kv *kv)
{
	dlrt_kv_touch_existing(kv);
	dlrt_dlist_clear(&kv->volatile_keys);
	for (size_t i = 0; i < kv->nbuckets; i++) {
		struct entry *e = kv->buckets[i];

		while (e) {
			struct entry *next = e->next;

			free(e->val);
			free(e);
			e = next;
		}
		kv->buckets[i] = NULL;
	}
	kv->count = 0;
	kv->used = kv->nbuckets * sizeof(*kv->buckets);
}

void dlrt_kv_destroy(struct dlrt_kv *kv)
{
	if (!kv)
		return;
	dlrt_kv_flush(kv);
	free(kv->buckets);
	free(kv->wbuckets); /* the watches themselves belong to their clients */
	free(kv);
}

size_t dlrt_kv_count(const struct dlrt_kv *kv)
{
	return kv->count;
}

static size_t entry_size(const struct entry *e);

/* Removes *pe from the table (it is not freed elsewhere). */
static void unlink_entry(struct dlrt_kv *kv, struct entry **pe)
{
	struct entry *e = *pe;

	dlrt_kv_touch(kv, e->key, e->klen, e->hash);
	vol_unlink(kv, e);
	*pe = e->next;
	kv->used -= entry_size(e);
	free(e->val);
	free(e);
	kv->count--;
}

void dlrt_kv_unlink_expired(struct dlrt_kv *kv, struct entry **pe)
{
	unlink_entry(kv, pe);
}

static struct entry **find(const struct dlrt_kv *kv, const void *key, size_t klen,
			   uint64_t h)
{
	struct entry **pe = &kv->buckets[h & (kv->nbuckets - 1)];

	for (; *pe; pe = &(*pe)->next)
		if ((*pe)->hash == h && (*pe)->klen == klen &&
		    memcmp((*pe)->key, key, klen) == 0)
			return pe;
	return pe;
}

/* The live entry's slot: an expired entry is removed on the way (lazy
 * expiry) and *result is NULL as for a missing key. */
static struct entry **find_live(struct dlrt_kv *kv, const void *key, size_t klen,
				uint64_t h)
{
	struct entry **pe = find(kv, key, klen, h);

	if (*pe && (*pe)->expire_at != DLRT_KV_NO_EXPIRY && expired(*pe, dlrt_kv_now_ms(kv))) {
		unlink_entry(kv, pe);
		pe = find(kv, key, klen, h); /* where a new entry would go */
	}
	return pe;
}

bool dlrt_kv_lookup(struct dlrt_kv *kv, const void *key, size_t klen,
		    const uint8_t **val, size_t *vlen)
{
	struct entry *e = *find_live(kv, key, klen, siphash13(key, klen, kv->seed));

	if (!e)
		return false;
	*val = e->val ? e->val : (const uint8_t *)"";
	*vlen = e->vlen;
	return true;
}

/* Doubles the bucket array once the load passes 1 (few keys in a
 * rendezvous; a benchmark's 100k keys rehash a handful of times). */
static void grow(struct dlrt_kv *kv)
{
	size_t n = kv->nbuckets * 2;
	struct entry **b;

	/* The bucket array counts against the limit too; at the limit, or
	 * short of memory, keep working with longer chains. */
	if (!dlrt_kv_has_room(kv, (n - kv->nbuckets) * sizeof(*b)))
		return;
	b = calloc(n, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < kv->nbuckets; i++) {
		struct entry *e = kv->buckets[i];

		while (e) {
			struct entry *next = e->next;

			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
			e = next;
		}
	}
	free(kv->buckets);
	kv->buckets = b;
	kv->used += (n - kv->nbuckets) * sizeof(*b);
	kv->nbuckets = n;
}

/* Gives e a value of vlen bytes. A larger buffer is only taken if the store
 * has room for the growth; e is unchanged on failure. */
static int set_value(struct dlrt_kv *kv, struct entry *e, const void *val, size_t vlen)
{
	if (vlen > e->vcap || (e->vcap > 4096 && vlen < e->vcap / 4)) {
		size_t cap = vlen ? vlen : 1;
		uint8_t *v;

		if (cap > e->vcap && !dlrt_kv_has_room(kv, cap - e->vcap))
			return -1;
		v = malloc(cap);
		if (!v)
			return -1;
		free(e->val);
		e->val = v;
		kv->used = kv->used - e->vcap + cap;
		e->vcap = cap;
	}
	if (vlen)
		memcpy(e->val, val, vlen);
	e->vlen = vlen;
	return 0;
}

static size_t entry_size(const struct entry *e)
{
	return sizeof(*e) + e->klen + e->vcap + 2 * MALLOC_OVERHEAD;
}

static int put(struct dlrt_kv *kv, const void *key, size_t klen,
	       const void *val, size_t vlen, bool keepttl)
{
	uint64_t h = siphash13(key, klen, kv->seed);
	struct entry **pe = find_live(kv, key, klen, h), *e = *pe;

	if (e) {
		if (set_value(kv, e, val, vlen) < 0)
			return -1;
		if (!keepttl)
			vol_unlink(kv, e);
		dlrt_kv_touch(kv, key, klen, h);
		return 0;
	}
	if (!dlrt_kv_has_room(kv, dlrt_kv_entry_cost(klen, vlen)))
		return -1;
	e = calloc(1, sizeof(*e) + klen);
	if (!e)
		return -1;
	e->expire_at = DLRT_KV_NO_EXPIRY;
	e->hash = h;
	e->klen = klen;
	if (klen)
		memcpy(e->key, key, klen);
	if (set_value(kv, e, val, vlen) < 0) {
		free(e);
		return -1;
	}
	/* set_value counted the value's buffer; add the rest of the entry. */
	kv->used += entry_size(e) - e->vcap;
	*pe = e;
	dlrt_kv_touch(kv, key, klen, h);
	if (++kv->count > kv->nbuckets)
		grow(kv);
	return 0;
}

int dlrt_kv_put(struct dlrt_kv *kv, const void *key, size_t klen,
		const void *val, size_t vlen)
{
	return put(kv, key, klen, val, vlen, false);
}

int dlrt_kv_put_keepttl(struct dlrt_kv *kv, const void *key, size_t klen,
			const void *val, size_t vlen)
{
	return put(kv, key, klen, val, vlen, true);
}

int dlrt_kv_remove(struct dlrt_kv *kv, const void *key, size_t klen)
{
	struct entry **pe = find_live(kv, key, klen, siphash13(key, klen, kv->seed));

	if (!*pe)
		return 0;
	unlink_entry(kv, pe);
	return 1;
}

int64_t dlrt_kv_get_expire(struct dlrt_kv *kv, const void *key, size_t klen)
{
	struct entry *e = *find_live(kv, key, klen, siphash13(key, klen, kv->seed));

	return e ? e->expire_at : DLRT_KV_NO_EXPIRY;
}

int dlrt_kv_set_expire(struct dlrt_kv *kv, const void *key, size_t klen, int64_t at)
{
	uint64_t h = siphash13(key, klen, kv->seed);
	struct entry **pe = find_live(kv, key, klen, h), *e = *pe;

	if (!e)
		return 0;
	if (at != DLRT_KV_NO_EXPIRY && at <= dlrt_kv_now_ms(kv)) {
		unlink_entry(kv, pe); /* Redis: an expiry in the past deletes */
		return 1;
	}
	vol_unlink(kv, e);
	if (at != DLRT_KV_NO_EXPIRY)
		vol_append(kv, e, at);
	dlrt_kv_touch(kv, key, klen, h);
	return 1;
}

/* Looks at the oldest entries of the list; the live ones go to the back, so
 * the next cycle looks at others and every key is seen in turn. */
size_t dlrt_kv_expire_cycle(struct dlrt_kv *kv, size_t budget)
{
	int64_t now = dlrt_kv_now_ms(kv);
	size_t removed = 0;

	for (size_t i = 0; i < budget && kv->volatile_keys.head; i++) {
		struct entry *e = DLRT_DLIST_ENTRY(kv->volatile_keys.head, struct entry, vlink);

		if (expired(e, now)) {
			uint64_t h = e->hash;

			unlink_entry(kv, find(kv, e->key, e->klen, h));
			removed++;
		} else if (&e->vlink != kv->volatile_keys.tail) {
			int64_t at = e->expire_at;

			vol_unlink(kv, e);
			vol_append(kv, e, at);
		} else {
			break;
		}
	}
	return removed;
}

int dlrt_kv_foreach(struct dlrt_kv *kv, dlrt_kv_visit_fn fn, void *arg)
{
	int64_t now = dlrt_kv_now_ms(kv);

	for (size_t i = 0; i < kv->nbuckets; i++)
		for (struct entry *e = kv->buckets[i]; e; e = e->next)
			if (!expired(e, now) && fn(e->key, e->klen, arg) < 0)
				return -1;
	return 0;
}

void dlrt_kv_client_init(struct dlrt_kv *kv, struct dlrt_kv_client *cl)
{
	cl->kv = kv;
	cl->id = kv->next_client_id++;
	cl->name = NULL;
	cl->name_held = 0;
	cl->tx = NULL;
	cl->refused_full = false;
}

/* ---- glob (Redis's stringmatchlen semantics, without recursion) -------- */

/* Matches one class "[...]" at *pp against c; advances *pp past it. */
static bool match_class(const uint8_t **pp, const uint8_t *pend, uint8_t c)
{
	const uint8_t *p = *pp + 1;
	bool neg = false, hit = false;

	if (p < pend && *p == '^') {
		neg = true;
		p++;
	}
	while (p < pend && *p != ']') {
		if (*p == '\\' && p + 1 < pend) {
			p++;
			hit |= *p == c;
		} else if (p + 2 < pend && p[1] == '-' && p[2] != ']') {
			uint8_t lo = p[0], hi = p[2];

			if (lo > hi) {
				uint8_t t = lo;

				lo = hi;
				hi = t;
			}
			hit |= c >= lo && c <= hi;
			p += 2;
		} else {
			hit |= *p == c;
		}
		p++;
	}
	*pp = p < pend ? p + 1 : p; /* past ']' (an unclosed class ends the pattern) */
	return neg ? !hit : hit;
}

bool dlrt_kv_glob(const uint8_t *pat, size_t plen, const uint8_t *s, size_t slen)
{
	const uint8_t *p = pat, *pend = pat + plen, *send = s + slen;
	const uint8_t *star_p = NULL, *star_s = NULL;

	for (;;) {
		if (p < pend && *p == '*') {
			while (p < pend && *p == '*')
				p++;
			if (p == pend)
				return true;
			star_p = p;
			star_s = s;
			continue;
		}
		if (s < send && p < pend) {
			const uint8_t *np = p + 1;
			bool ok;

			if (*p == '?') {
				ok = true;
			} else if (*p == '[') {
				np = p;
				ok = match_class(&np, pend, *s);
			} else if (*p == '\\' && p + 1 < pend) {
				ok = p[1] == *s;
				np = p + 2;
			} else {
				ok = *p == *s;
			}
			if (ok) {
				p = np;
				s++;
				continue;
			}
		} else if (s == send && p == pend) {
			return true;
		}
		/* Mismatch: let the last '*' swallow one more byte. */
		if (!star_p || star_s >= send)
			return false;
		p = star_p;
		s = ++star_s;
	}
}
