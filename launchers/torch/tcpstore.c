/* tcpstore.c - torch's TCPStore protocol and the key/value store behind it.
 * See tcpstore.h for the wire format. */
#include "tcpstore.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/kvmap.h"

/* What an entry costs besides its bytes (map entry, value header, malloc):
 * counted so that a flood of empty keys also fills the store. */
#define ENTRY_OVERHEAD 96u
/* What a parked WAIT costs besides its key list (the copy's malloc header). */
#define WAIT_OVERHEAD 64u

/* torch 2.x opens every connection with VALIDATE (query 0) and this number. */
#define TORCH2_MAGIC 0x3C85F7CEu

struct val {
	size_t len;
	uint8_t data[];
};

struct dlrt_tcpstore {
	struct dlrt_tcpstore_limits lim;
	struct dlrt_kvmap map;
	size_t bytes; /* keys and values */
	size_t held;  /* clients' parked key lists, unfinished requests, unread replies */
	uint64_t next_id;
	struct dlrt_tcpstore_client *parked, *clients;
	char full[320]; /* the refusal, with the bound in it */
	dlrt_tcpstore_wake_fn wake;
	void *wake_arg;
};

static const char *const names[] = {
	"SET", "COMPARE_SET", "GET", "ADD", "CHECK", "WAIT", "GETNUMKEYS", "WATCH_KEY",
	"DELETE_KEY", "VALIDATE", "APPEND", "MULTI_GET", "MULTI_SET", "CANCEL_WAIT", "PING",
};

/* torch 2.x's wire numbers (c10d::detail::QueryType) to ours. */
static const uint8_t torch2_query[] = {
	DLRT_TCPSTORE_VALIDATE, DLRT_TCPSTORE_SET, DLRT_TCPSTORE_COMPARE_SET, DLRT_TCPSTORE_GET,
	DLRT_TCPSTORE_ADD, DLRT_TCPSTORE_CHECK, DLRT_TCPSTORE_WAIT, DLRT_TCPSTORE_GETNUMKEYS,
	DLRT_TCPSTORE_DELETE_KEY, DLRT_TCPSTORE_APPEND, DLRT_TCPSTORE_MULTI_GET,
	DLRT_TCPSTORE_MULTI_SET, DLRT_TCPSTORE_CANCEL_WAIT, DLRT_TCPSTORE_PING,
};
#define TORCH2_CANCEL_WAIT 12u

const char *dlrt_tcpstore_query_name(unsigned q)
{
	return q < sizeof(names) / sizeof(names[0]) ? names[q] : "UNKNOWN";
}

struct dlrt_tcpstore *dlrt_tcpstore_create(const struct dlrt_tcpstore_limits *lim,
					   dlrt_tcpstore_wake_fn wake, void *wake_arg)
{
	struct dlrt_tcpstore *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (lim) {
		s->lim = *lim;
	} else {
		s->lim.max_key = DLRT_TCPSTORE_DEFAULT_MAX_KEY;
		s->lim.max_value = DLRT_TCPSTORE_DEFAULT_MAX_VALUE;
		s->lim.max_store = DLRT_TCPSTORE_DEFAULT_MAX_STORE;
		s->lim.max_wait_keys = DLRT_TCPSTORE_DEFAULT_MAX_WAIT_KEYS;
	}
	/* One line for the log (dlrt_c10d_store_main.c prints it after "closing: "). */
	snprintf(s->full, sizeof(s->full), "the store is full (--max-store=%zu bytes, counting "
		 "the values, the keys parked WAITs hold, unfinished requests and unread replies "
		 "of all clients): a rendezvous needs far less; check what the job's ranks set, "
		 "wait for and leave unread (an admin can raise --max-store)", s->lim.max_store);
	dlrt_kvmap_init(&s->map);
	s->wake = wake;
	s->wake_arg = wake_arg;
	return s;
}

void dlrt_tcpstore_destroy(struct dlrt_tcpstore *s)
{
	if (!s)
		return;
	dlrt_kvmap_clear(&s->map, free);
	free(s);
}

size_t dlrt_tcpstore_nkeys(const struct dlrt_tcpstore *s)
{
	return s->map.count;
}

size_t dlrt_tcpstore_bytes(const struct dlrt_tcpstore *s)
{
	return s->bytes;
}

size_t dlrt_tcpstore_held(const struct dlrt_tcpstore *s)
{
	return s->held;
}

/* Recounts what the store holds for c: the request being executed is as good
 * as consumed, a parked WAIT holds its copy of the key list. */
static void count(struct dlrt_tcpstore_client *c)
{
	size_t h = c->out ? c->out->len : 0;

	if (c->in && c->in->len > c->skip)
		h += c->in->len - c->skip;
	if (c->waiting)
		h += c->wait_len + WAIT_OVERHEAD;
	c->store->held = c->store->held - c->held + h;
	c->held = h;
}

/* True if `more` bytes would take the store past --max-store. Other clients'
 * counts may be high (the server has since sent their replies or they were
 * parked and woken), so they are all recounted before a refusal: the common
 * case costs nothing, a refusal is exact. */
static bool full(struct dlrt_tcpstore *s, size_t more)
{
	if (s->bytes + s->held + more <= s->lim.max_store)
		return false;
	for (struct dlrt_tcpstore_client *c = s->clients; c; c = c->cnext)
		count(c);
	return s->bytes + s->held + more > s->lim.max_store;
}

void dlrt_tcpstore_client_init(struct dlrt_tcpstore *s, struct dlrt_tcpstore_client *c,
			       struct dlrt_buf *out, void *owner)
{
	memset(c, 0, sizeof(*c));
	c->store = s;
	c->out = out;
	c->owner = owner;
	c->id = ++s->next_id;
	c->cnext = s->clients;
	if (s->clients)
		s->clients->cprev = c;
	s->clients = c;
}

static void unpark(struct dlrt_tcpstore_client *c)
{
	if (!c->waiting)
		return;
	if (c->wprev)
		c->wprev->wnext = c->wnext;
	else
		c->store->parked = c->wnext;
	if (c->wnext)
		c->wnext->wprev = c->wprev;
	c->wprev = c->wnext = NULL;
	c->waiting = false;
	free(c->wait_keys);
	c->wait_keys = NULL;
	c->wait_len = c->wait_n = 0;
}

void dlrt_tcpstore_client_free(struct dlrt_tcpstore_client *c)
{
	struct dlrt_tcpstore *s = c->store;

	unpark(c);
	s->held -= c->held;
	c->held = 0;
	if (c->cprev)
		c->cprev->cnext = c->cnext;
	else if (s->clients == c)
		s->clients = c->cnext;
	if (c->cnext)
		c->cnext->cprev = c->cprev;
	c->cprev = c->cnext = NULL;
}

/* ---- parsing --------------------------------------------------------------- */

struct cursor {
	const uint8_t *p;
	size_t n, off;
	size_t need; /* set when short: bytes the request needs at least */
};

static uint64_t load_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8); /* host order, as torch sends it */
	return v;
}

static bool take(struct cursor *c, size_t len, const uint8_t **out)
{
	if (c->n - c->off < len) {
		c->need = c->off + len;
		return false;
	}
	if (out)
		*out = c->p + c->off;
	c->off += len;
	return true;
}

static bool take_u64(struct cursor *c, uint64_t *v)
{
	const uint8_t *p;

	if (!take(c, 8, &p))
		return false;
	*v = load_u64(p);
	return true;
}

/* A length-prefixed string of at most `max` bytes: 1 done, 0 short, -1 too long. */
static int take_str(struct cursor *c, size_t max, const uint8_t **s, size_t *len)
{
	uint64_t l;

	if (!take_u64(c, &l))
		return 0;
	if (l > max)
		return -1;
	*len = (size_t)l;
	return take(c, *len, s) ? 1 : 0;
}

enum { PARSED = 1, SHORT = 0, BAD = -1 };

struct request {
	unsigned q;
	uint32_t word; /* VALIDATE's magic, PING's nonce */
	const uint8_t *key, *v1, *v2, *list;
	size_t klen, v1len, v2len, list_len, list_n;
	int64_t delta;
};

static int bad(struct dlrt_tcpstore_client *cl, const char *why)
{
	cl->error = why;
	return BAD;
}

/* A key list (count, then that many strings), as CHECK, WAIT and MULTI_GET
 * send it; with `values`, each key followed by its value (MULTI_SET). */
static int parse_list(struct dlrt_tcpstore_client *cl, struct cursor *c, struct request *r,
		      bool values)
{
	const struct dlrt_tcpstore_limits *lim = &cl->store->lim;
	uint64_t n;
	size_t start;

	if (!take_u64(c, &n))
		return SHORT;
	if (n > lim->max_wait_keys)
		return bad(cl, "too many keys in one CHECK, WAIT, MULTI_GET or MULTI_SET "
			   "(--max-wait-keys)");
	start = c->off;
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *k;
		size_t kl;
		int rc = take_str(c, lim->max_key, &k, &kl);

		if (rc < 0)
			return bad(cl, "a key is longer than --max-key");
		if (rc == 0)
			return SHORT;
		if (!values)
			continue;
		rc = take_str(c, lim->max_value, &k, &kl);
		if (rc < 0)
			return bad(cl, "a value is longer than --max-value");
		if (rc == 0)
			return SHORT;
	}
	r->list = c->p + start;
	r->list_len = c->off - start;
	r->list_n = (size_t)n;
	return PARSED;
}

static int parse(struct dlrt_tcpstore_client *cl, struct cursor *c, struct request *r)
{
	const struct dlrt_tcpstore_limits *lim = &cl->store->lim;
	const uint8_t *p;
	uint64_t d;
	int rc;

	if (!take(c, 1, &p))
		return SHORT;
	r->q = p[0];
	if (cl->torch2) {
		if (r->q >= sizeof(torch2_query))
			return bad(cl, "unknown query type (torch 2.x's queue queries are not "
				   "supported: init_process_group and barriers never send them)");
		r->q = torch2_query[r->q];
	} else if (r->q > DLRT_TCPSTORE_DELETE_KEY) {
		return bad(cl, "unknown query type (not torch's TCPStore protocol)");
	} else if (r->q == 0 && c->n - c->off >= 4) {
		/* torch 2.x's first message: query 0 with a 4-byte magic number,
		 * which torch 1.x would read as a SET with an absurd key length. */
		uint32_t m;

		memcpy(&m, c->p + c->off, 4);
		if (m == TORCH2_MAGIC)
			r->q = DLRT_TCPSTORE_VALIDATE;
	}
	switch (r->q) {
	case DLRT_TCPSTORE_VALIDATE:
	case DLRT_TCPSTORE_PING:
		if (!take(c, 4, &p))
			return SHORT;
		memcpy(&r->word, p, 4);
		if (r->q == DLRT_TCPSTORE_VALIDATE && r->word != TORCH2_MAGIC)
			return bad(cl, "VALIDATE with a wrong magic number (not torch's client)");
		return PARSED;
	case DLRT_TCPSTORE_CANCEL_WAIT:
		return PARSED;
	case DLRT_TCPSTORE_MULTI_GET:
	case DLRT_TCPSTORE_MULTI_SET:
		return parse_list(cl, c, r, r->q == DLRT_TCPSTORE_MULTI_SET);
	case DLRT_TCPSTORE_SET:
	case DLRT_TCPSTORE_COMPARE_SET:
	case DLRT_TCPSTORE_GET:
	case DLRT_TCPSTORE_ADD:
	case DLRT_TCPSTORE_WATCH_KEY:
	case DLRT_TCPSTORE_DELETE_KEY:
	case DLRT_TCPSTORE_APPEND:
		rc = take_str(c, lim->max_key, &r->key, &r->klen);
		if (rc < 0)
			return bad(cl, "a key is longer than --max-key");
		if (rc == 0)
			return SHORT;
		break;
	case DLRT_TCPSTORE_CHECK:
	case DLRT_TCPSTORE_WAIT:
		return parse_list(cl, c, r, false);
	case DLRT_TCPSTORE_GETNUMKEYS:
		return PARSED;
	default:
		return bad(cl, "unknown query type (not torch's TCPStore protocol)");
	}
	if (r->q == DLRT_TCPSTORE_SET || r->q == DLRT_TCPSTORE_COMPARE_SET ||
	    r->q == DLRT_TCPSTORE_APPEND) {
		rc = take_str(c, lim->max_value, &r->v1, &r->v1len);
		if (rc < 0)
			return bad(cl, "a value is longer than --max-value");
		if (rc == 0)
			return SHORT;
	}
	if (r->q == DLRT_TCPSTORE_COMPARE_SET) {
		rc = take_str(c, lim->max_value, &r->v2, &r->v2len);
		if (rc < 0)
			return bad(cl, "a value is longer than --max-value");
		if (rc == 0)
			return SHORT;
	}
	if (r->q == DLRT_TCPSTORE_ADD) {
		if (!take_u64(c, &d))
			return SHORT;
		r->delta = (int64_t)d;
	}
	return PARSED;
}

/* ---- the store ------------------------------------------------------------- */

static size_t cost(size_t klen, size_t vlen)
{
	return klen + vlen + ENTRY_OVERHEAD;
}

static struct val *find(struct dlrt_tcpstore *s, const uint8_t *k, size_t kl)
{
	struct dlrt_kvmap_entry *e = dlrt_kvmap_find(&s->map, k, kl);

	return e ? e->val : NULL;
}

static void wake_waiters(struct dlrt_tcpstore *s);

/* Stores a copy of v under k: 0, or -1 with the reason in cl->error. */
static int put(struct dlrt_tcpstore_client *cl, const uint8_t *k, size_t kl,
	       const uint8_t *v, size_t vl)
{
	struct dlrt_tcpstore *s = cl->store;
	struct dlrt_kvmap_entry *e = dlrt_kvmap_find(&s->map, k, kl);
	size_t old = e ? cost(kl, ((struct val *)e->val)->len) : 0;
	struct val *nv;

	if (cost(kl, vl) > old && full(s, cost(kl, vl) - old)) {
		cl->error = s->full;
		return -1;
	}
	nv = malloc(sizeof(*nv) + vl + 1);
	if (!nv) {
		cl->error = "out of memory";
		return -1;
	}
	nv->len = vl;
	if (vl)
		memcpy(nv->data, v, vl);
	if (e) {
		free(e->val);
		e->val = nv;
	} else if (!dlrt_kvmap_add(&s->map, k, kl, nv)) {
		free(nv);
		cl->error = "out of memory";
		return -1;
	}
	s->bytes = s->bytes - old + cost(kl, vl);
	if (!e)
		wake_waiters(s);
	return 0;
}

static bool all_present(struct dlrt_tcpstore *s, const uint8_t *list, size_t len, size_t n)
{
	struct cursor c = { .p = list, .n = len };

	for (size_t i = 0; i < n; i++) {
		const uint8_t *k;
		size_t kl;

		if (take_str(&c, SIZE_MAX, &k, &kl) != 1 || !find(s, k, kl))
			return false;
	}
	return true;
}

/* Replies count until the server has sent them: a client that never reads
 * holds them in the store's memory. */
static int reply(struct dlrt_tcpstore_client *cl, const void *p, size_t n)
{
	if (full(cl->store, n)) {
		cl->error = cl->store->full;
		return -1;
	}
	if (dlrt_buf_append(cl->out, p, n) < 0) {
		cl->error = "the client does not read its replies (reply buffer full)";
		return -1;
	}
	return 0;
}

static int reply_u64(struct dlrt_tcpstore_client *cl, uint64_t v)
{
	return reply(cl, &v, 8); /* host order */
}

static int reply_vec(struct dlrt_tcpstore_client *cl, const uint8_t *p, size_t n)
{
	if (full(cl->store, 8 + n)) {
		cl->error = cl->store->full;
		return -1;
	}
	if (dlrt_buf_reserve(cl->out, 8 + n) < 0) {
		cl->error = "the client does not read its replies (reply buffer full)";
		return -1;
	}
	reply_u64(cl, n);
	return n ? reply(cl, p, n) : 0;
}

/* A key was created: answer every parked WAIT whose keys are all there now. */
static void wake_waiters(struct dlrt_tcpstore *s)
{
	struct dlrt_tcpstore_client *c = s->parked, *next;
	static const uint8_t stop_waiting = 0;

	for (; c; c = next) {
		next = c->wnext;
		if (!all_present(s, c->wait_keys, c->wait_len, c->wait_n))
			continue;
		unpark(c);
		/* One byte for the key list just given back: not refused. A full
		 * reply buffer is caught by the client's next feed (c->error). */
		if (dlrt_buf_append(c->out, &stop_waiting, 1) < 0) {
			c->error = "the client does not read its replies (reply buffer full)";
			continue;
		}
		count(c);
		if (s->wake)
			s->wake(c, s->wake_arg);
	}
}

static int park(struct dlrt_tcpstore_client *cl, const struct request *r)
{
	struct dlrt_tcpstore *s = cl->store;

	/* The copy of the key list stays until the WAIT is answered: many
	 * clients parked on long lists must not add up past the bound. */
	if (full(s, r->list_len + WAIT_OVERHEAD)) {
		cl->error = s->full;
		return -1;
	}
	cl->wait_keys = malloc(r->list_len ? r->list_len : 1);
	if (!cl->wait_keys) {
		cl->error = "out of memory";
		return -1;
	}
	memcpy(cl->wait_keys, r->list, r->list_len);
	cl->wait_len = r->list_len;
	cl->wait_n = r->list_n;
	cl->waiting = true;
	cl->wprev = NULL;
	cl->wnext = s->parked;
	if (s->parked)
		s->parked->wprev = cl;
	s->parked = cl;
	return 0;
}

/* ADD: torch keeps counters as decimal text (its barrier reads them with
 * GET); a value that is not a number closes the connection, as torch's own
 * server does when std::stoll throws. */
static int add(struct dlrt_tcpstore_client *cl, const struct request *r)
{
	struct val *v = find(cl->store, r->key, r->klen);
	int64_t cur = 0, sum;
	char text[24];
	int n;

	if (v) {
		char num[24];
		char *end;
		long long x;

		if (!v->len || v->len >= sizeof(num)) {
			cl->error = "ADD on a key whose value is not a number";
			return -1;
		}
		memcpy(num, v->data, v->len);
		num[v->len] = 0;
		x = strtoll(num, &end, 10);
		if (*end || end == num) {
			cl->error = "ADD on a key whose value is not a number";
			return -1;
		}
		cur = x;
	}
	if (__builtin_add_overflow(cur, r->delta, &sum)) {
		cl->error = "ADD overflows a 64-bit counter";
		return -1;
	}
	n = snprintf(text, sizeof(text), "%" PRId64, sum);
	if (put(cl, r->key, r->klen, (const uint8_t *)text, (size_t)n) < 0)
		return -1;
	return reply_u64(cl, (uint64_t)sum);
}

/* APPEND (torch 2.x): appended to the value stored, or stored as a new one. */
static int append(struct dlrt_tcpstore_client *cl, const struct request *r)
{
	struct val *v = find(cl->store, r->key, r->klen);
	uint8_t *joined;
	int rc;

	if (!v)
		return put(cl, r->key, r->klen, r->v1, r->v1len);
	if (v->len + r->v1len > cl->store->lim.max_value) {
		cl->error = "APPEND would make a value longer than --max-value";
		return -1;
	}
	joined = malloc(v->len + r->v1len + 1);
	if (!joined) {
		cl->error = "out of memory";
		return -1;
	}
	memcpy(joined, v->data, v->len);
	if (r->v1len)
		memcpy(joined + v->len, r->v1, r->v1len);
	rc = put(cl, r->key, r->klen, joined, v->len + r->v1len);
	free(joined);
	return rc;
}

/* MULTI_GET and MULTI_SET (torch 2.x), over the list parse_list checked. As
 * for GET, torch's client WAITs for the keys first: a missing one closes. */
static int multi(struct dlrt_tcpstore_client *cl, const struct request *r)
{
	struct cursor c = { .p = r->list, .n = r->list_len };

	for (size_t i = 0; i < r->list_n; i++) {
		const uint8_t *k = NULL, *v = NULL;
		size_t kl = 0, vl = 0;
		struct val *have;

		/* parse_list took this list whole: every length fits. */
		if (take_str(&c, SIZE_MAX, &k, &kl) != 1)
			break;
		if (r->q == DLRT_TCPSTORE_MULTI_SET) {
			if (take_str(&c, SIZE_MAX, &v, &vl) != 1)
				break;
			if (put(cl, k, kl, v, vl) < 0)
				return -1;
			continue;
		}
		have = find(cl->store, k, kl);
		if (!have) {
			cl->error = "MULTI_GET of a key that does not exist";
			return -1;
		}
		if (reply_vec(cl, have->data, have->len) < 0)
			return -1;
	}
	return 0;
}

/* torch 2.x's own queries. */
static int exec_torch2(struct dlrt_tcpstore_client *cl, const struct request *r)
{
	static const uint8_t wait_canceled = 1;

	switch (r->q) {
	case DLRT_TCPSTORE_VALIDATE:
		cl->torch2 = true;
		return 0;
	case DLRT_TCPSTORE_PING:
		return reply(cl, &r->word, 4); /* the nonce back, host order */
	case DLRT_TCPSTORE_APPEND:
		return append(cl, r);
	case DLRT_TCPSTORE_MULTI_GET:
	case DLRT_TCPSTORE_MULTI_SET:
		return multi(cl, r);
	default: /* CANCEL_WAIT: a WAIT timed out on the client's side */
		unpark(cl);
		return reply(cl, &wait_canceled, 1);
	}
}

static int exec(struct dlrt_tcpstore_client *cl, const struct request *r, const char **note)
{
	struct dlrt_tcpstore *s = cl->store;
	struct dlrt_kvmap_entry *e;
	struct val *v;
	uint8_t b;

	switch (r->q) {
	case DLRT_TCPSTORE_SET:
		return put(cl, r->key, r->klen, r->v1, r->v1len);
	case DLRT_TCPSTORE_COMPARE_SET:
		/* torch's semantics: a missing key is created only when the
		 * expected value is empty; the reply is the value now stored (or
		 * the expected one for a missing key). */
		v = find(s, r->key, r->klen);
		if (!v) {
			if (r->v1len) {
				*note = "missing";
				return reply_vec(cl, r->v1, r->v1len);
			}
		} else if (v->len != r->v1len || (v->len && memcmp(v->data, r->v1, v->len))) {
			*note = "differs";
			return reply_vec(cl, v->data, v->len);
		}
		if (put(cl, r->key, r->klen, r->v2, r->v2len) < 0)
			return -1;
		return reply_vec(cl, r->v2, r->v2len);
	case DLRT_TCPSTORE_GET:
		v = find(s, r->key, r->klen);
		if (!v) {
			/* torch's server throws and drops the client; its client
			 * always WAITs first, so only a foreign client gets here. */
			cl->error = "GET of a key that does not exist";
			return -1;
		}
		return reply_vec(cl, v->data, v->len);
	case DLRT_TCPSTORE_ADD:
		return add(cl, r);
	case DLRT_TCPSTORE_CHECK:
		b = all_present(s, r->list, r->list_len, r->list_n) ? 0 : 1;
		return reply(cl, &b, 1);
	case DLRT_TCPSTORE_WAIT:
		if (all_present(s, r->list, r->list_len, r->list_n)) {
			b = 0;
			return reply(cl, &b, 1);
		}
		*note = "parked";
		return park(cl, r);
	case DLRT_TCPSTORE_GETNUMKEYS:
		return reply_u64(cl, s->map.count);
	case DLRT_TCPSTORE_DELETE_KEY:
		e = dlrt_kvmap_find(&s->map, r->key, r->klen);
		if (e) {
			s->bytes -= cost(r->klen, ((struct val *)e->val)->len);
			free(e->val);
			dlrt_kvmap_remove(&s->map, e);
		}
		return reply_u64(cl, e ? 1 : 0);
	case DLRT_TCPSTORE_WATCH_KEY:
		cl->error = "WATCH_KEY is not supported (torch's C++ Store::watchKey; "
			    "init_process_group and barriers never send it)";
		return -1;
	default:
		return exec_torch2(cl, r);
	}
}

/* A parked torch 2.x client whose WAIT timed out sends CANCEL_WAIT while it
 * is parked: the one request taken before its WAIT is answered. */
static bool cancel_pending(const struct dlrt_tcpstore_client *cl, const struct dlrt_buf *in)
{
	return cl->waiting && cl->torch2 && in->len && dlrt_buf_head(in)[0] == TORCH2_CANCEL_WAIT;
}

int dlrt_tcpstore_feed(struct dlrt_tcpstore_client *cl, struct dlrt_buf *in,
		       dlrt_tcpstore_log_fn log, void *log_arg)
{
	if (cl->error)
		return -1; /* set while the client was being woken */
	cl->in = in;
	while ((!cl->waiting || cancel_pending(cl, in)) && in->len && in->len >= cl->need) {
		struct cursor c = { .p = dlrt_buf_head(in), .n = in->len };
		struct request r = { 0 };
		const char *note = NULL;
		int rc = parse(cl, &c, &r);

		if (rc == BAD) {
			dlrt_buf_consume(in, in->len);
			count(cl);
			return -1;
		}
		if (rc == SHORT) {
			cl->need = c.need;
			break;
		}
		cl->need = 0;
		cl->skip = c.off;
		rc = exec(cl, &r, &note);
		cl->skip = 0;
		if (log)
			log(log_arg, cl, r.q, r.key ? r.key : (r.list_n ? r.list + 8 : NULL),
			    r.key ? r.klen : (r.list_n ? (size_t)load_u64(r.list) : 0),
			    rc < 0 ? cl->error : note);
		dlrt_buf_consume(in, c.off);
		if (rc < 0) {
			dlrt_buf_consume(in, in->len);
			count(cl);
			return -1;
		}
		count(cl); /* its reply, before the next request's */
	}
	/* An unfinished request counts too: 64 clients each sending most of a
	 * 16 MiB WAIT would otherwise hold 1 GiB before the first is parsed. */
	count(cl);
	if (in->len && full(cl->store, 0)) {
		cl->error = cl->store->full;
		dlrt_buf_consume(in, in->len);
		count(cl);
		return -1;
	}
	return 0;
}

bool dlrt_tcpstore_partial(const struct dlrt_tcpstore_client *c, const struct dlrt_buf *in)
{
	return !c->waiting && in->len > 0;
}
