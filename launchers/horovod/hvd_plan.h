/* hvd_plan.h - Horovod's host assignment plan (get_host_assignments).
 *
 * horovod/runner/common/util/hosts.py: ranks fill the first host's slots, then
 * the second host's, and so on. On each host local_rank is the slot index and
 * local_size the host's slot count. cross_rank is the index of the host among
 * the hosts that have a slot with this local_rank, cross_size the number of
 * such hosts, so with unequal slots cross_size differs between local ranks.
 * The driver registers its scope sizes from this plan and answers
 * GET /rank_and_size/<host>:<local_rank> from it.
 */
#ifndef DLRT_HVD_PLAN_H
#define DLRT_HVD_PLAN_H

#include <stddef.h>

#include "common/dlrt_err.h"

struct dlrt_hvd_slot {
	const char *hostname; /* points into the plan */
	int rank, size;
	int local_rank, local_size;
	int cross_rank, cross_size;
};

struct dlrt_hvd_plan {
	size_t nhosts;
	char **hosts;                 /* ordered, distinct */
	int *slots;                   /* per host, >= 1 */
	int *first_rank;              /* per host: rank of its local_rank 0 */
	size_t nslots;                /* = world size */
	struct dlrt_hvd_slot *slot;   /* indexed by rank */
};

/* Builds the plan from ordered hosts and their slot counts (each >= 1,
 * hostnames distinct). */
int dlrt_hvd_plan_build(struct dlrt_hvd_plan *plan, const char *const *hosts,
			const int *slots, size_t nhosts, struct dlrt_err *err);

/* Parses horovodrun's -H syntax "node1:2,node2:1,node3:3" and builds the
 * plan. Hostnames follow Horovod's pattern [A-Za-z0-9_.-]+. */
int dlrt_hvd_plan_parse(struct dlrt_hvd_plan *plan, const char *spec,
			struct dlrt_err *err);

void dlrt_hvd_plan_free(struct dlrt_hvd_plan *plan);

/* Elastic Horovod's next round: what ElasticDriver._update_host_assignments
 * computes once hosts are gone (horovod/runner/elastic/driver.py). The hosts
 * of `cur` keep their order (HostManager's host_assignment_order drops a
 * blacklisted host and keeps the others' order), those with drop[h] set are
 * left out, and get_host_assignments(hosts, min_np, max_np)
 * (horovod/runner/common/util/hosts.py) fills ranks host by host, slot by
 * slot, stopping at max_np (0 = no maximum); a host left with no slot is not
 * in the plan. Fewer than min_np slots, or no host of `cur` left, is an
 * error (Horovod's ValueError / "No hosts from previous set remaining"). */
int dlrt_hvd_plan_without(struct dlrt_hvd_plan *next, const struct dlrt_hvd_plan *cur,
			  const unsigned char *drop, int min_np, int max_np,
			  struct dlrt_err *err);

/* Index of a host in the plan, or -1. */
long dlrt_hvd_plan_host(const struct dlrt_hvd_plan *plan, const char *host, size_t hostlen);

/* The slot of <host>:<local_rank>, or NULL if the plan has none. */
const struct dlrt_hvd_slot *dlrt_hvd_plan_find(const struct dlrt_hvd_plan *plan,
					       const char *host, size_t hostlen,
					       long local_rank);

/* SlotInfo.to_response_string: "rank,size,local_rank,local_size,cross_rank,
 * cross_size"; a NULL slot gives Horovod's INVALID_SLOT_INFO "-1,-1,-1,-1,-1,-1".
 * Returns the length, like snprintf. */
int dlrt_hvd_slot_format(const struct dlrt_hvd_slot *s, char *buf, size_t n);

#endif
