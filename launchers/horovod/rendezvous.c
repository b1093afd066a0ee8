#include "rendezvous.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/kvmap.h"

/* Counted per key on top of key and value bytes, so a flood of empty PUTs
 * also reaches max_bytes. */
#define ENTRY_OVERHEAD 64

#define RANK_AND_SIZE "rank_and_size"

struct scope {
	long size;         /* registered size, or -1 for an ad-hoc scope */
	size_t finished;   /* length of Horovod's finished_list[scope] */
	struct dlrt_kvmap keys; /* key -> struct blob */
};

struct blob {
	size_t len;
	uint8_t data[];
};

struct dlrt_hvd_store {
	struct dlrt_kvmap scopes; /* name -> struct scope */
	struct dlrt_hvd_plan plan;
	bool has_plan;
	bool barrier;
	size_t bytes;
	size_t max_bytes;
};

static void free_scope(void *p)
{
	struct scope *s = p;

	dlrt_kvmap_clear(&s->keys, free);
	free(s);
}

static struct scope *scope_get(struct dlrt_hvd_store *st, const char *name, size_t n,
			       bool create)
{
	struct dlrt_kvmap_entry *e = dlrt_kvmap_find(&st->scopes, name, n);
	struct scope *s;

	if (e)
		return e->val;
	if (!create)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->size = -1;
	dlrt_kvmap_init(&s->keys);
	if (!dlrt_kvmap_add(&st->scopes, name, n, s)) {
		free(s);
		return NULL;
	}
	return s;
}

static int register_scope(struct dlrt_hvd_store *st, const char *name, long size)
{
	struct scope *s = scope_get(st, name, strlen(name), true);

	if (!s)
		return -1;
	s->size = size;
	return 0;
}

static int register_plan(struct dlrt_hvd_store *st)
{
	const struct dlrt_hvd_plan *p = &st->plan;
	char name[512];
	int max_slots = 0;

	/* As RendezvousHTTPServer._extract_scope_size. */
	if (register_scope(st, "global", (long)p->nslots) < 0)
		return -1;
	for (size_t h = 0; h < p->nhosts; h++) {
		snprintf(name, sizeof(name), "local_%s", p->hosts[h]);
		if (register_scope(st, name, p->slots[h]) < 0)
			return -1;
		if (p->slots[h] > max_slots)
			max_slots = p->slots[h];
	}
	for (int lr = 0; lr < max_slots; lr++) {
		int cross_size = 0;

		for (size_t h = 0; h < p->nhosts; h++)
			cross_size += p->slots[h] > lr;
		snprintf(name, sizeof(name), "cross_%d", lr);
		if (register_scope(st, name, cross_size) < 0)
			return -1;
	}
	return 0;
}

int dlrt_hvd_store_create(struct dlrt_hvd_store **out, const struct dlrt_hvd_plan *plan,
			  size_t max_bytes, struct dlrt_err *err)
{
	struct dlrt_hvd_store *st = calloc(1, sizeof(*st));

	*out = NULL;
	if (!st)
		return dlrt_err_set(err, "out of memory creating the rendezvous store");
	dlrt_kvmap_init(&st->scopes);
	st->max_bytes = max_bytes;
	if (plan) {
		for (size_t h = 0; h < plan->nhosts; h++)
			if (strlen(plan->hosts[h]) > 256) {
				dlrt_hvd_store_destroy(st);
				return dlrt_err_set(err, "host name '%.40s...' is longer than 256 bytes: use the short host name",
						    plan->hosts[h]);
			}
		if (dlrt_hvd_plan_build(&st->plan, (const char *const *)plan->hosts,
					plan->slots, plan->nhosts, err) < 0) {
			free(st);
			return -1;
		}
		st->has_plan = true;
		if (register_plan(st) < 0) {
			dlrt_hvd_store_destroy(st);
			return dlrt_err_set(err, "out of memory registering the rendezvous scopes");
		}
	}
	*out = st;
	return 0;
}

void dlrt_hvd_store_destroy(struct dlrt_hvd_store *st)
{
	if (!st)
		return;
	dlrt_kvmap_clear(&st->scopes, free_scope);
	if (st->has_plan)
		dlrt_hvd_plan_free(&st->plan);
	free(st);
}

static size_t entry_cost(size_t klen, size_t vlen)
{
	return klen + vlen + ENTRY_OVERHEAD;
}

static void drop_key(struct dlrt_hvd_store *st, struct scope *s, struct dlrt_kvmap_entry *e)
{
	struct blob *b = e->val;

	st->bytes -= entry_cost(e->klen, b->len);
	free(b);
	dlrt_kvmap_remove(&s->keys, e);
}

static void sub_key_bytes(struct dlrt_kvmap_entry *e, void *arg)
{
	struct dlrt_hvd_store *st = arg;
	struct blob *b = e->val;

	st->bytes -= entry_cost(e->klen, b->len);
}

static void reset_finished(struct dlrt_kvmap_entry *e, void *arg)
{
	struct scope *s = e->val;

	(void)arg;
	s->finished = 0;
}

static void do_put(struct dlrt_hvd_store *st, const char *scope, size_t slen,
		   const char *key, size_t klen, const uint8_t *body, size_t blen,
		   struct dlrt_hvd_reply *r)
{
	struct scope *s;
	struct dlrt_kvmap_entry *e;
	struct blob *b;
	size_t old = 0;

	s = scope_get(st, scope, slen, false);
	e = s ? dlrt_kvmap_find(&s->keys, key, klen) : NULL;
	if (e)
		old = entry_cost(klen, ((struct blob *)e->val)->len);
	if (st->max_bytes && st->bytes - old + entry_cost(klen, blen) > st->max_bytes) {
		r->status = 507;
		return;
	}
	r->status = 500;
	b = malloc(sizeof(*b) + blen);
	if (!b)
		return;
	b->len = blen;
	if (blen)
		memcpy(b->data, body, blen);
	if (!s)
		s = scope_get(st, scope, slen, true);
	if (!s) {
		free(b);
		return;
	}
	if (e) {
		free(e->val);
		e->val = b;
	} else if (!dlrt_kvmap_add(&s->keys, key, klen, b)) {
		free(b);
		return;
	}
	st->bytes = st->bytes - old + entry_cost(klen, blen);
	r->status = 200;
}

static void do_get(struct dlrt_hvd_store *st, const char *scope, size_t slen,
		   const char *key, size_t klen, struct dlrt_hvd_reply *r)
{
	struct scope *s = scope_get(st, scope, slen, false);
	struct dlrt_kvmap_entry *e = s ? dlrt_kvmap_find(&s->keys, key, klen) : NULL;
	struct blob *b;

	if (!e) {
		r->status = 404;
		return;
	}
	b = e->val;
	r->status = 200;
	r->body = b->data;
	r->len = b->len;
}

static void do_delete(struct dlrt_hvd_store *st, const char *scope, size_t slen,
		      const char *key, size_t klen, struct dlrt_hvd_reply *r)
{
	struct scope *s = scope_get(st, scope, slen, false);
	struct dlrt_kvmap_entry *e;

	r->status = 200;
	if (!s)
		return;
	if (s->size >= 0) {
		/* A scope of the host plan: the key is the rank that is done. */
		s->finished++;
		if ((size_t)s->size == s->finished) {
			dlrt_kvmap_foreach(&s->keys, sub_key_bytes, st);
			dlrt_kvmap_clear(&s->keys, free);
			/* Horovod clears every finished list here, not only this one. */
			dlrt_kvmap_foreach(&st->scopes, reset_finished, NULL);
			r->cleared = 1;
		}
		return;
	}
	e = dlrt_kvmap_find(&s->keys, key, klen);
	if (e)
		drop_key(st, s, e);
	if (!s->keys.count) {
		e = dlrt_kvmap_find(&st->scopes, scope, slen);
		free_scope(s);
		dlrt_kvmap_remove(&st->scopes, e);
	}
}

/* Python's int() on the text of a local rank, as Horovod parses it: an
 * optional sign, digits with single '_' between them, any length. Values
 * past PYINT_SAT are kept as PYINT_SAT: no plan has that many slots, so the
 * answer is the same as for the exact number. 0, or -1 where int() raises. */
#define PYINT_SAT 1000000000000L

static int parse_pyint(const char *s, const char *end, long *out)
{
	int neg = 0, digits = 0;
	long v = 0;

	if (s < end && (*s == '+' || *s == '-'))
		neg = *s++ == '-';
	for (; s < end; s++) {
		if (*s == '_') {
			if (!digits || s + 1 == end || s[1] < '0' || s[1] > '9')
				return -1;
			continue;
		}
		if (*s < '0' || *s > '9')
			return -1;
		digits++;
		v = v >= PYINT_SAT ? PYINT_SAT : v * 10 + (*s - '0');
	}
	if (!digits)
		return -1;
	*out = neg ? -v : v;
	return 0;
}

/* GET /rank_and_size/<host>:<local_rank> (elastic Horovod). Answers what
 * Horovod's ElasticDriver.get_slot_info() returns: the slot when
 * len(host's slots) > local_rank, Python indexing included (-1 is the
 * host's last slot, -0 slot 0), else INVALID_SLOT_INFO (-1,...). Where
 * Horovod raises (no single ':', int() fails, an index below -len) and
 * drops the connection, the driver answers 400. */
static void do_rank_and_size(struct dlrt_hvd_store *st, const char *key, size_t klen,
			     struct dlrt_hvd_reply *r, bool may_park)
{
	const char *colon = memchr(key, ':', klen), *end = key + klen;
	const struct dlrt_hvd_slot *slot = NULL;
	size_t hlen;
	long lr = 0;
	int n;

	if (!colon || memchr(colon + 1, ':', (size_t)(end - colon - 1)) ||
	    parse_pyint(colon + 1, end, &lr) < 0)
		goto bad;
	hlen = (size_t)(colon - key);
	for (size_t h = 0; h < st->plan.nhosts; h++) {
		if (strlen(st->plan.hosts[h]) != hlen || memcmp(st->plan.hosts[h], key, hlen))
			continue;
		if (lr < -(long)st->plan.slots[h])
			goto bad; /* Python's IndexError */
		if (lr < 0)
			lr += st->plan.slots[h];
		slot = dlrt_hvd_plan_find(&st->plan, key, hlen, lr);
		break;
	}
	if (slot && may_park && st->barrier) {
		r->status = 0;
		r->park = 1;
		r->park_rank = slot->rank;
		return;
	}
	n = dlrt_hvd_slot_format(slot, r->text, sizeof(r->text));
	r->status = 200;
	r->body = (const uint8_t *)r->text;
	r->len = (size_t)n;
	return;
bad:
	r->status = 400;
}

/* PUT /worker_addresses/<host>:<local_rank> (elastic Horovod): Horovod's
 * ElasticRendezvousHandler splits the key at ':', int()s the local rank and
 * base64-decodes the body (codec.loads_base64) before storing it; where that
 * raises it drops the connection and stores nothing. The driver answers 400
 * instead, for a key that is not "host:int" or a body that is not base64
 * (it cannot tell whether the decoded bytes unpickle: those are stored). */
static bool worker_addresses_ok(const char *scope, size_t slen, const char *key,
				size_t klen, const uint8_t *body, size_t blen)
{
	static const char WA[] = "worker_addresses";
	const char *colon = memchr(key, ':', klen);
	long lr;

	if (slen != sizeof(WA) - 1 || memcmp(scope, WA, slen) != 0)
		return true;
	return colon && !memchr(colon + 1, ':', (size_t)(key + klen - colon - 1)) &&
	       parse_pyint(colon + 1, key + klen, &lr) == 0 && blen &&
	       dlrt_http_base64_len(body, blen, NULL);
}

void dlrt_hvd_store_handle(struct dlrt_hvd_store *st, enum dlrt_http_method method,
			   const char *target, size_t target_len,
			   const uint8_t *body, size_t body_len,
			   struct dlrt_hvd_reply *r)
{
	const char *scope, *slash, *key;
	size_t slen, klen;

	memset(r, 0, sizeof(*r));
	r->status = 400;
	if (target_len < 4 || target[0] != '/')
		return;
	scope = target + 1;
	slash = memchr(scope, '/', target_len - 1);
	if (!slash)
		return;
	slen = (size_t)(slash - scope);
	key = slash + 1;
	klen = target_len - 2 - slen;
	if (!slen || !klen || memchr(key, '/', klen))
		return;
	switch (method) {
	case DLRT_HTTP_PUT:
		if (!worker_addresses_ok(scope, slen, key, klen, body, body_len))
			break; /* 400: Horovod's elastic handler raises and stores nothing */
		do_put(st, scope, slen, key, klen, body, body_len, r);
		break;
	case DLRT_HTTP_GET:
		if (st->has_plan && slen == strlen(RANK_AND_SIZE) &&
		    memcmp(scope, RANK_AND_SIZE, slen) == 0)
			do_rank_and_size(st, key, klen, r, true);
		else
			do_get(st, scope, slen, key, klen, r);
		break;
	case DLRT_HTTP_DELETE:
		do_delete(st, scope, slen, key, klen, r);
		break;
	}
}

void dlrt_hvd_store_rank_and_size(struct dlrt_hvd_store *st, const char *key, size_t klen,
				  struct dlrt_hvd_reply *reply)
{
	memset(reply, 0, sizeof(*reply));
	reply->status = 400;
	if (st->has_plan)
		do_rank_and_size(st, key, klen, reply, false);
}

void dlrt_hvd_store_set_barrier(struct dlrt_hvd_store *st, int on)
{
	st->barrier = on != 0;
}

const struct dlrt_hvd_plan *dlrt_hvd_store_plan(const struct dlrt_hvd_store *st)
{
	return st->has_plan ? &st->plan : NULL;
}

int dlrt_hvd_store_reinit(struct dlrt_hvd_store *st, const struct dlrt_hvd_plan *plan,
			  struct dlrt_err *err)
{
	struct dlrt_hvd_plan copy;

	if (dlrt_hvd_plan_build(&copy, (const char *const *)plan->hosts, plan->slots,
				plan->nhosts, err) < 0)
		return -1;
	/* cache.clear(), finished_list.clear(), scope_size.clear(). */
	dlrt_kvmap_clear(&st->scopes, free_scope);
	dlrt_kvmap_init(&st->scopes);
	st->bytes = 0;
	if (st->has_plan)
		dlrt_hvd_plan_free(&st->plan);
	st->plan = copy;
	st->has_plan = true;
	if (register_plan(st) < 0)
		return dlrt_err_set(err, "out of memory registering the rendezvous scopes");
	return 0;
}

size_t dlrt_hvd_store_nkeys(const struct dlrt_hvd_store *st, const char *scope)
{
	struct dlrt_kvmap_entry *e = dlrt_kvmap_find(&st->scopes, scope, strlen(scope));

	return e ? ((struct scope *)e->val)->keys.count : 0;
}

size_t dlrt_hvd_store_finished(const struct dlrt_hvd_store *st, const char *scope)
{
	struct dlrt_kvmap_entry *e = dlrt_kvmap_find(&st->scopes, scope, strlen(scope));

	return e ? ((struct scope *)e->val)->finished : 0;
}

long dlrt_hvd_store_scope_size(const struct dlrt_hvd_store *st, const char *scope)
{
	struct dlrt_kvmap_entry *e = dlrt_kvmap_find(&st->scopes, scope, strlen(scope));

	return e ? ((struct scope *)e->val)->size : -1;
}

size_t dlrt_hvd_store_bytes(const struct dlrt_hvd_store *st)
{
	return st->bytes;
}
