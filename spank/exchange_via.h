/* exchange_via.h - what carries one address exchange (--dl-exchange).
 *
 * spank/exchange.c decides what a task publishes and what it waits for; the
 * carrier moves the values: srun's rendezvous (exchange_srun.c, one round
 * trip to the store srun hosts) or Slurm's PMIx (exchange_pmix.c, one dlrt-kv
 * client per node). Both take the same lists and write the same answer lines, which
 * one fuzzed parser reads (exchange/exchange_reply.h).
 */
#ifndef DLRT_EXCHANGE_VIA_H
#define DLRT_EXCHANGE_VIA_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/dlrt_err.h"
#include "exchange.h"

/* One value: `what` of task `rank`, or (rank -1) the step's root value,
 * which the root task publishes. */
struct dlrt_xvalue {
	char what[16];      /* "root", "tports", "host" */
	long rank;
	/* "dlrt/<step>/<what>[/<rank>]": its name on either carrier, also bound
	 * into its signature; exchange.c names every value, the carriers only
	 * use the name. */
	char key[64];
	const char *value;  /* what is published; NULL in a list of wanted values */
};

struct dlrt_xlist {
	struct dlrt_xvalue *v;
	size_t n, cap;
	uint32_t step_id;   /* the step whose values they are (their keys) */
};

/* srun's rendezvous carries it (exchange_srun.c): publishes `pub`, then
 * waits for and reads `want`, in one round trip, and writes them to `text`
 * as below. Bounded by req->timeout_s. */
int dlrt_exchange_via_srun(const struct dlrt_exchange_req *req, const struct dlrt_xlist *pub,
			   const struct dlrt_xlist *want, struct dlrt_buf *text,
			   struct dlrt_err *err);

/* Slurm's PMIx carries it (exchange_pmix.c). Every value is signed with the
 * step secret (req->rdv->secret), as on srun's rendezvous, and checked when
 * read: Slurm's PMIx admits anyone on a node who states the job owner's uid,
 * so a value there is only the step's if its signature says so.
 * Publishes `pub`, waits for every value of `want` and writes them to
 * `text` as lines, in want's order: the value, after "RANK " for rank >= 0.
 * per_node: the caller is its node's first task and the first task of every
 * node takes part (req->reps); else every task of the step does (the dry
 * run). Bounded by about req->timeout_s. */
int dlrt_exchange_via_pmix(const struct dlrt_exchange_req *req, bool per_node,
			   const struct dlrt_xlist *pub, const struct dlrt_xlist *want,
			   struct dlrt_buf *text, struct dlrt_err *err);

#endif
