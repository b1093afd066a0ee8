/* kvtx.c - Redis transactions for the Caffe2 helper store: MULTI, EXEC,
 * DISCARD, WATCH, UNWATCH, and the request dispatcher that queues commands
 * between MULTI and EXEC.
 *
 * As redis-server 7.0 (multi.c, server.c processCommand):
 *   - after MULTI an unknown command or a wrong argument count is answered
 *     with its error and flags the transaction: EXEC then answers EXECABORT
 *     and runs nothing; any other command is queued (+QUEUED), except EXEC,
 *     DISCARD, MULTI, WATCH and QUIT, which run at once;
 *   - EXEC runs the whole queue inside this one call (the server is single-
 *     threaded, so no other client's command comes in between) and answers
 *     an array of the replies; a command failing at run time (a syntax
 *     error, a value that is not an integer) fails alone, the rest run;
 *   - WATCH records keys; any change of one of them by anyone (a write, a
 *     delete, an expiry, FLUSHALL of a key that existed) before EXEC makes
 *     EXEC answer a null array (*-1) and run nothing. EXEC, DISCARD and
 *     UNWATCH forget the watched keys.
 * The queue and the watched keys of one client are bounded together
 * (dlrt_kv_set_tx_limits); a command past the bound is refused with an error
 * and flags the transaction, as an unknown command would. They also count in
 * the store's --max-memory with the keyspace and every other client's, so
 * many clients cannot together hold more than the store may: a command
 * queued past it gets dlrt_kv_full_message and likewise flags the
 * transaction, whose queue is given back at once.
 */
#include <stdlib.h>
#include <string.h>

#include "kvstore.h"
#include "kvstore_int.h"
#include "resp.h"

/* What one queued command or watched key costs besides its bytes. */
#define TX_OVERHEAD 48

struct dlrt_kv_watch {
	struct dlrt_kv_watch *bnext; /* in kv's bucket */
	struct dlrt_kv_watch *cnext; /* the client's next */
	struct dlrt_kv_tx *tx;
	uint64_t hash;
	size_t klen;
	uint8_t key[];
};

struct dlrt_kv_tx {
	struct dlrt_kv *kv;
	bool multi;
	bool dirty_exec; /* an error while queueing: EXEC answers EXECABORT */
	bool dirty_cas;  /* a watched key changed: EXEC answers *-1 */
	/* Queued commands, each: argc, then (length, bytes) per argument. */
	uint8_t *q;
	size_t qlen, qcap, qcount;
	struct dlrt_kv_watch *watches;
	size_t nwatches, wbytes;
	size_t running; /* the queue EXEC is running, still held until it is done */
	size_t held;    /* what this counts in the store's bound (tx_count) */
};

static const char ERR_FULL[] =
	"ERR dlrt-store: this transaction passed the per-client bound on queued commands "
	"and watched keys: split it into smaller MULTI/EXEC blocks";

/* ---- the registry of watched keys --------------------------------------- */

static void wtable_insert(struct dlrt_kv *kv, struct dlrt_kv_watch *w)
{
	size_t i = w->hash & (kv->nwbuckets - 1);

	w->bnext = kv->wbuckets[i];
	kv->wbuckets[i] = w;
}

/* Doubles the bucket array when the load passes 1; on failure the chains
 * just get longer. */
static int wtable_room(struct dlrt_kv *kv)
{
	size_t n = kv->nwbuckets ? kv->nwbuckets * 2 : 16;
	struct dlrt_kv_watch **old = kv->wbuckets, **b;
	size_t oldn = kv->nwbuckets;

	if (kv->nwbuckets && kv->nwatch < kv->nwbuckets)
		return 0;
	b = calloc(n, sizeof(*b));
	if (!b)
		return kv->nwbuckets ? 0 : -1;
	kv->wbuckets = b;
	kv->nwbuckets = n;
	for (size_t i = 0; i < oldn; i++) {
		struct dlrt_kv_watch *w = old[i], *next;

		for (; w; w = next) {
			next = w->bnext;
			wtable_insert(kv, w);
		}
	}
	free(old);
	return 0;
}

static void wtable_remove(struct dlrt_kv *kv, struct dlrt_kv_watch *w)
{
	struct dlrt_kv_watch **pw = &kv->wbuckets[w->hash & (kv->nwbuckets - 1)];

	while (*pw != w)
		pw = &(*pw)->bnext;
	*pw = w->bnext;
	kv->nwatch--;
}

static bool watch_is(const struct dlrt_kv_watch *w, const void *key, size_t klen, uint64_t h)
{
	return w->hash == h && w->klen == klen && memcmp(w->key, key, klen) == 0;
}

void dlrt_kv_touch(struct dlrt_kv *kv, const void *key, size_t klen, uint64_t h)
{
	if (!kv->nwatch)
		return;
	for (struct dlrt_kv_watch *w = kv->wbuckets[h & (kv->nwbuckets - 1)]; w; w = w->bnext)
		if (watch_is(w, key, klen, h))
			w->tx->dirty_cas = true;
}

void dlrt_kv_touch_existing(struct dlrt_kv *kv)
{
	for (size_t i = 0; kv->nwatch && i < kv->nwbuckets; i++)
		for (struct dlrt_kv_watch *w = kv->wbuckets[i]; w; w = w->bnext) {
			const uint8_t *v;
			size_t vl;

			if (!w->tx->dirty_cas && dlrt_kv_lookup(kv, w->key, w->klen, &v, &vl))
				w->tx->dirty_cas = true;
		}
}

/* What the client's transaction holds (the queue's whole buffer, which is
 * what malloc took; each watch with its bookkeeping, which also covers its
 * share of the watch table) counts in the store's bound. */
static void tx_count(struct dlrt_kv_tx *tx)
{
	dlrt_kv_hold(tx->kv, &tx->held, tx->qcap + tx->wbytes + tx->running);
}

static void unwatch_all(struct dlrt_kv_tx *tx)
{
	struct dlrt_kv_watch *w = tx->watches, *next;

	for (; w; w = next) {
		next = w->cnext;
		wtable_remove(tx->kv, w);
		free(w);
	}
	tx->watches = NULL;
	tx->nwatches = 0;
	tx->wbytes = 0;
	tx_count(tx);
}

/* ---- per-client state ----------------------------------------------------- */

static struct dlrt_kv_tx *tx_of(struct dlrt_kv_ctx *c)
{
	if (!c->cl->tx) {
		c->cl->tx = calloc(1, sizeof(*c->cl->tx));
		if (c->cl->tx)
			c->cl->tx->kv = c->kv;
	}
	return c->cl->tx;
}

static bool tx_fits(const struct dlrt_kv_tx *tx, size_t more_bytes)
{
	const struct dlrt_kv *kv = tx->kv;
	size_t used = tx->qcap + tx->wbytes;

	return tx->qcount + tx->nwatches < kv->tx_max_count && used <= kv->tx_max_bytes &&
	       more_bytes <= kv->tx_max_bytes - used;
}

static void free_queue(struct dlrt_kv_tx *tx)
{
	free(tx->q);
	tx->q = NULL;
	tx->qlen = tx->qcap = tx->qcount = 0;
	tx_count(tx);
}

/* Redis's discardTransaction: out of MULTI, flags cleared, keys unwatched. */
static void discard(struct dlrt_kv_tx *tx)
{
	if (!tx)
		return;
	free_queue(tx);
	tx->multi = tx->dirty_exec = tx->dirty_cas = false;
	unwatch_all(tx);
}

void dlrt_kv_client_free(struct dlrt_kv_client *cl)
{
	free(cl->name);
	cl->name = NULL;
	if (cl->kv)
		dlrt_kv_hold(cl->kv, &cl->name_held, 0);
	if (cl->tx) {
		discard(cl->tx);
		free(cl->tx);
		cl->tx = NULL;
	}
}

bool dlrt_kv_client_in_multi(const struct dlrt_kv_client *cl)
{
	return cl->tx && cl->tx->multi;
}

static void put_size(uint8_t *p, size_t v)
{
	memcpy(p, &v, sizeof(v));
}

static size_t get_size(const uint8_t *p)
{
	size_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Appends one command to the queue; -1 past the client's bound or short of
 * memory, -2 past the store's. */
static int enqueue(struct dlrt_kv_tx *tx, DLRT_KV_ARGS)
{
	size_t need = sizeof(size_t), cap;
	uint8_t *q, *p;

	for (size_t i = 0; i < argc; i++) {
		if (argvlen[i] > SIZE_MAX / 2 - need)
			return -1;
		need += sizeof(size_t) + argvlen[i];
	}
	/* Powers of two from 256, also after an exact growth below: the
	 * client's own bound then sees the sizes it always did. */
	cap = tx->qcap;
	if (cap - tx->qlen < need) {
		for (cap = 256; cap < tx->qlen || cap - tx->qlen < need; cap *= 2)
			if (cap > SIZE_MAX / 4)
				return -1;
	}
	if (!tx_fits(tx, cap - tx->qcap + TX_OVERHEAD))
		return -1;
	/* Near the store's bound, grow by just what this command needs rather
	 * than refuse for room the queue may never use. */
	if (cap > tx->qcap && !dlrt_kv_has_room(tx->kv, cap - tx->qcap)) {
		cap = tx->qlen + need; /* > qcap: the queue had no room for it */
		if (!dlrt_kv_has_room(tx->kv, cap - tx->qcap))
			return -2;
	}
	if (cap != tx->qcap) {
		q = realloc(tx->q, cap);
		if (!q)
			return -1;
		tx->q = q;
		tx->qcap = cap;
		tx_count(tx);
	}
	p = tx->q + tx->qlen;
	put_size(p, argc);
	p += sizeof(size_t);
	for (size_t i = 0; i < argc; i++) {
		put_size(p, argvlen[i]);
		p += sizeof(size_t);
		if (argvlen[i])
			memcpy(p, argv[i], argvlen[i]);
		p += argvlen[i];
	}
	tx->qlen += need;
	tx->qcount++;
	return 0;
}

/* ---- the commands ----------------------------------------------------------- */

void dlrt_kv_cmd_multi(struct dlrt_kv_ctx *c, DLRT_KV_ARGS)
{
	struct dlrt_kv_tx *tx = tx_of(c);

	(void)argc;
	(void)argv;
	(void)argvlen;
	if (!tx) {
		dlrt_kv_reply_oom(c);
	} else if (tx->multi) {
		c->rc |= dlrt_resp_add_error(c->out, "ERR MULTI calls can not be nested");
	} else {
		tx->multi = true;
		c->rc |= dlrt_resp_add_simple(c->out, "OK");
	}
}

void dlrt_kv_cmd_discard(struct dlrt_kv_ctx *c, DLRT_KV_ARGS)
{
	(void)argc;
	(void)argv;
	(void)argvlen;
	if (!dlrt_kv_client_in_multi(c->cl)) {
		c->rc |= dlrt_resp_add_error(c->out, "ERR DISCARD without MULTI");
		return;
	}
	discard(c->cl->tx);
	c->rc |= dlrt_resp_add_simple(c->out, "OK");
}

/* Runs one queued command at q; returns the bytes it took, 0 on OOM. */
static size_t run_queued(struct dlrt_kv_ctx *c, const uint8_t *q)
{
	size_t argc = get_size(q), off = sizeof(size_t);
	const uint8_t **argv = malloc(argc * sizeof(*argv));
	size_t *argvlen = malloc(argc * sizeof(*argvlen));

	for (size_t i = 0; argv && argvlen && i < argc; i++) {
		argvlen[i] = get_size(q + off);
		off += sizeof(size_t);
		argv[i] = q + off;
		off += argvlen[i];
	}
	if (argv && argvlen)
		/* Checked when it was queued: the name is known, the count right. */
		dlrt_kv_cmd_run(c, dlrt_kv_cmd_find(argv[0], argvlen[0]), argc,
				(const uint8_t *const *)argv, argvlen);
	else
		c->rc = -1;
	free(argv);
	free(argvlen);
	return c->rc < 0 ? 0 : off;
}

void dlrt_kv_cmd_exec(struct dlrt_kv_ctx *c, DLRT_KV_ARGS)
{
	struct dlrt_kv_tx *tx = c->cl->tx;
	uint8_t *q;
	size_t qlen, qcount, off = 0;

	(void)argc;
	(void)argv;
	(void)argvlen;
	if (!dlrt_kv_client_in_multi(c->cl)) {
		c->rc |= dlrt_resp_add_error(c->out, "ERR EXEC without MULTI");
		return;
	}
	/* A watched key that expired since WATCH is a change (Redis 7.0):
	 * looking it up removes it, and that marks the transaction. */
	for (struct dlrt_kv_watch *w = tx->watches; w && !tx->dirty_cas; w = w->cnext) {
		const uint8_t *v;
		size_t vl;

		dlrt_kv_lookup(c->kv, w->key, w->klen, &v, &vl);
	}
	if (tx->dirty_exec || tx->dirty_cas) {
		if (tx->dirty_exec)
			c->rc |= dlrt_resp_add_error(
				c->out, "EXECABORT Transaction discarded because of previous errors.");
		else
			c->rc |= dlrt_buf_append(c->out, "*-1\r\n", 5);
		discard(tx);
		return;
	}
	/* Out of MULTI before running: the queue's own writes must not abort it.
	 * The queue still counts while it runs: its SETs must not fill the room
	 * it takes itself. */
	q = tx->q;
	qlen = tx->qlen;
	qcount = tx->qcount;
	tx->running = tx->qcap;
	tx->q = NULL;
	tx->qlen = tx->qcap = tx->qcount = 0;
	discard(tx);
	c->rc |= dlrt_resp_add_array(c->out, qcount);
	while (off < qlen && c->rc == 0) {
		size_t used = run_queued(c, q + off);

		if (!used)
			break;
		off += used;
	}
	free(q);
	tx->running = 0;
	tx_count(tx);
}

void dlrt_kv_cmd_watch(struct dlrt_kv_ctx *c, DLRT_KV_ARGS)
{
	struct dlrt_kv_tx *tx = tx_of(c);

	if (!tx) {
		dlrt_kv_reply_oom(c);
		return;
	}
	if (tx->multi) {
		c->rc |= dlrt_resp_add_error(c->out, "ERR WATCH inside MULTI is not allowed");
		return;
	}
	for (size_t i = 1; i < argc; i++) {
		uint64_t h = dlrt_kv_hash(c->kv, argv[i], argvlen[i]);
		size_t cost = sizeof(struct dlrt_kv_watch) + argvlen[i] + TX_OVERHEAD;
		struct dlrt_kv_watch *w;
		const uint8_t *v;
		size_t vl;
		bool dup = false;

		/* Already watched by this client? One bucket, not the client's
		 * whole list: WATCH of many keys stays linear. */
		for (w = c->kv->nwbuckets ? c->kv->wbuckets[h & (c->kv->nwbuckets - 1)] : NULL;
		     w && !dup; w = w->bnext)
			dup = w->tx == tx && watch_is(w, argv[i], argvlen[i], h);
		if (dup)
			continue;
		if (!tx_fits(tx, cost)) {
			c->rc |= dlrt_resp_add_error(c->out, ERR_FULL);
			return;
		}
		if (!dlrt_kv_has_room(c->kv, cost)) {
			dlrt_kv_reply_full(c);
			return;
		}
		/* An already expired key goes now: that is not a change. */
		dlrt_kv_lookup(c->kv, argv[i], argvlen[i], &v, &vl);
		w = malloc(sizeof(*w) + argvlen[i]);
		if (!w || wtable_room(c->kv) < 0) {
			free(w);
			dlrt_kv_reply_oom(c);
			return;
		}
		w->tx = tx;
		w->hash = h;
		w->klen = argvlen[i];
		if (argvlen[i])
			memcpy(w->key, argv[i], argvlen[i]);
		wtable_insert(c->kv, w);
		c->kv->nwatch++;
		w->cnext = tx->watches;
		tx->watches = w;
		tx->nwatches++;
		tx->wbytes += cost;
		tx_count(tx);
	}
	c->rc |= dlrt_resp_add_simple(c->out, "OK");
}

void dlrt_kv_cmd_unwatch(struct dlrt_kv_ctx *c, DLRT_KV_ARGS)
{
	(void)argc;
	(void)argv;
	(void)argvlen;
	if (c->cl->tx) {
		unwatch_all(c->cl->tx);
		c->cl->tx->dirty_cas = false;
	}
	c->rc |= dlrt_resp_add_simple(c->out, "OK");
}

/* ---- the dispatcher ----------------------------------------------------------- */

/* Commands that run at once even between MULTI and EXEC. */
static bool runs_in_multi(const struct dlrt_kv_cmd *cmd)
{
	return cmd->fn == dlrt_kv_cmd_exec || cmd->fn == dlrt_kv_cmd_discard ||
	       cmd->fn == dlrt_kv_cmd_multi || cmd->fn == dlrt_kv_cmd_watch ||
	       dlrt_kv_arg_is((const uint8_t *)cmd->name, strlen(cmd->name), "quit");
}

static void flag(struct dlrt_kv_client *cl)
{
	if (dlrt_kv_client_in_multi(cl))
		cl->tx->dirty_exec = true;
}

int dlrt_kv_exec(struct dlrt_kv *kv, struct dlrt_kv_client *cl, size_t argc,
		 const uint8_t *const *argv, const size_t *argvlen,
		 struct dlrt_buf *out)
{
	struct dlrt_kv_ctx c = { kv, cl, out, 0, false };
	const struct dlrt_kv_cmd *cmd = dlrt_kv_cmd_find(argv[0], argvlen[0]);

	if (!cmd) {
		dlrt_kv_reply_unknown(&c, argc, argv, argvlen);
		flag(cl);
	} else if (!dlrt_kv_cmd_arity_ok(cmd, argc)) {
		if (cmd->fn == dlrt_kv_cmd_exec) {
			/* Redis: rejecting EXEC discards the transaction. */
			c.rc |= dlrt_resp_add_error(out, "EXECABORT Transaction discarded because "
						    "of: wrong number of arguments for 'exec' command");
			discard(cl->tx);
		} else {
			dlrt_kv_reply_arity(&c, cmd->name);
			flag(cl);
		}
	} else if (dlrt_kv_client_in_multi(cl) && !runs_in_multi(cmd)) {
		struct dlrt_kv_tx *tx = cl->tx;

		int rc = tx->dirty_exec ? 0 : enqueue(tx, argc, argv, argvlen);

		if (rc < 0) {
			if (rc == -2)
				dlrt_kv_reply_full(&c);
			else
				c.rc |= dlrt_resp_add_error(out, ERR_FULL);
			tx->dirty_exec = true;
			free_queue(tx); /* EXEC will not run it: give the memory back */
		} else {
			c.rc |= dlrt_resp_add_simple(out, "QUEUED");
		}
	} else {
		dlrt_kv_cmd_run(&c, cmd, argc, argv, argvlen);
	}
	if (c.rc < 0)
		return DLRT_KV_EXEC_OOM;
	return c.quit ? DLRT_KV_EXEC_QUIT : DLRT_KV_EXEC_OK;
}
