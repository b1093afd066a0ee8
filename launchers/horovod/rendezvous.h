/* rendezvous.h - the key/value semantics of Horovod's rendezvous server.
 *
 * Mirrors horovod/runner/http/http_server.py (RendezvousHandler) and the
 * elastic GET of horovod/runner/elastic/rendezvous.py, request by request:
 *   PUT    /<scope>/<key>  stores the raw body (overwriting)          -> 200
 *   GET    /<scope>/<key>  the stored bytes                           -> 200 / 404
 *   DELETE /<scope>/<key>  on a scope registered from the host plan
 *          (global, local_<host>, cross_<local_rank>): appends the key to
 *          the scope's finished list; when the list is as long as the scope
 *          size, clears the scope's keys and ALL finished lists. On any
 *          other scope: deletes the key, and the scope once empty.       -> 200
 *   GET    /rank_and_size/<host>:<local_rank>  "rank,size,local_rank,
 *          local_size,cross_rank,cross_size" from the plan, or
 *          "-1,-1,-1,-1,-1,-1" for a slot the plan does not have       -> 200
 * A path that is not exactly /<scope>/<key> gets 400 (Horovod answers 400
 * for fewer parts and drops the connection for more). Pure: no I/O.
 */
#ifndef DLRT_RENDEZVOUS_H
#define DLRT_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"
#include "http.h"
#include "hvd_plan.h"

struct dlrt_hvd_store;

struct dlrt_hvd_reply {
	int status;
	const uint8_t *body; /* valid until the next request on the store */
	size_t len;
	char text[64];       /* storage for a computed body (rank_and_size) */
	int cleared;         /* a DELETE completed its registered scope */
	/* With dlrt_hvd_store_set_barrier on: a GET /rank_and_size of a slot of
	 * the plan is not answered (status 0) but held for the elastic barrier;
	 * park_rank is that slot's rank in the current plan. */
	int park;
	int park_rank;
};

/* plan may be NULL (a plain K/V store, no registered scopes); the store
 * keeps its own copy of what it needs. max_bytes bounds the keys and values
 * held in total (0 = no bound): a PUT past it gets 507. */
int dlrt_hvd_store_create(struct dlrt_hvd_store **out, const struct dlrt_hvd_plan *plan,
			  size_t max_bytes, struct dlrt_err *err);
void dlrt_hvd_store_destroy(struct dlrt_hvd_store *st);

/* RendezvousServer.init(host_alloc_plan) of elastic Horovod's next round
 * (horovod/runner/http/http_server.py): drops every key of every scope and
 * every finished list, registers the scope sizes of `plan` and answers
 * rank_and_size from it. On error nothing changed. */
int dlrt_hvd_store_reinit(struct dlrt_hvd_store *st, const struct dlrt_hvd_plan *plan,
			  struct dlrt_err *err);
const struct dlrt_hvd_plan *dlrt_hvd_store_plan(const struct dlrt_hvd_store *st);

/* On: GET /rank_and_size of a slot of the plan is held (reply.park), as
 * Horovod's WorkerStateRegistry holds it at its barrier until every worker
 * of the round reported; the caller answers it later with
 * dlrt_hvd_store_rank_and_size. A host not in the plan is answered at once. */
void dlrt_hvd_store_set_barrier(struct dlrt_hvd_store *st, int on);
/* The answer to GET /rank_and_size/<key> from the current plan, never held. */
void dlrt_hvd_store_rank_and_size(struct dlrt_hvd_store *st, const char *key, size_t klen,
				  struct dlrt_hvd_reply *reply);

/* Answers one parsed request. */
void dlrt_hvd_store_handle(struct dlrt_hvd_store *st, enum dlrt_http_method method,
			   const char *target, size_t target_len,
			   const uint8_t *body, size_t body_len,
			   struct dlrt_hvd_reply *reply);

/* Introspection for tests and logs. */
size_t dlrt_hvd_store_nkeys(const struct dlrt_hvd_store *st, const char *scope);
size_t dlrt_hvd_store_finished(const struct dlrt_hvd_store *st, const char *scope);
/* Registered size of a scope, or -1 if it is ad hoc / unknown. */
long dlrt_hvd_store_scope_size(const struct dlrt_hvd_store *st, const char *scope);
size_t dlrt_hvd_store_bytes(const struct dlrt_hvd_store *st);

#endif
