/* exchange.h - the PMIx address exchange run by each task before exec. */
#ifndef DLRT_EXCHANGE_H
#define DLRT_EXCHANGE_H

#include <slurm/spank.h>
#include <stdbool.h>

#include "runtime.h"

struct dlrt_exchange_req {
	uint32_t rank;      /* this task */
	uint32_t root;      /* the task whose node hosts the root (scheduler, rank 0) */
	const char *iface;  /* --dl-iface or NULL */
	int timeout_s;      /* bound of every wait */
};

/* True if the step has PMIx (srun --mpi=pmix or MpiDefault=pmix). */
bool dlrt_exchange_possible(spank_t sp);

/* Fills `mine` (and, if not NULL, `all[ntasks]` with every task's node address). */
int dlrt_exchange_root(spank_t sp, const struct dlrt_exchange_req *req, struct dlrt_addrs *mine,
		       struct dlrt_addrs *all, struct dlrt_err *err);

#endif
