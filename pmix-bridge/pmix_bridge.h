/* pmix_bridge.h - step-wide key/value exchange over PMIx, with bounded waits.
 *
 * Slurm's mpi/pmix plugin runs a PMIx server in every slurmstepd; a task of a
 * `srun --mpi=pmix` step is a PMIx client of it. dlrt-kv, the job scripts'
 * exchange tool, is built on this, and so is the plugin's address exchange
 * through Slurm's PMIx (spank/exchange_pmix.c, --dl-exchange=pmix): one
 * dlrt-kv per node, started by the node's first task.
 *
 * Rule: never call this from a task whose program uses PMIx or MPI itself. An
 * Init/Finalize before exec makes Open MPI's MPI_Init fail on Debian 12
 * (docs/contracts.md, "PMIx and Open MPI").
 *
 * Every wait is bounded: fences and gets run non-blocking and are abandoned at
 * the deadline, because PMIx itself would wait for Slurm's PMIxTimeout (300 s).
 */
#ifndef DLRT_PMIX_BRIDGE_H
#define DLRT_PMIX_BRIDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"

#define DLRT_PMIX_DEFAULT_TIMEOUT_S 30

struct dlrt_pmix {
	bool open;
	uint32_t rank;
	uint32_t size;
	char nspace[256];
	int timeout_s;
	unsigned barrier_gen; /* node barriers done in this session */
	long max_pause_ms;    /* await's back-off between asks (0 = 25 ms) */
};

/* True if this process was started as a PMIx client (srun --mpi=pmix). */
bool dlrt_pmix_available(void);

/* Connects to the local PMIx server. Fails at once, with the fix, when the
 * step has no PMIx. `timeout_s` bounds every later wait (0 = default). */
int dlrt_pmix_open(struct dlrt_pmix *p, int timeout_s, struct dlrt_err *err);

/* Publishes key=value for this rank (keys get a "dlrt." prefix) and commits it. */
int dlrt_pmix_put(struct dlrt_pmix *p, const char *key, const char *value,
		  struct dlrt_err *err);

/* Waits until every rank of the step has called it, collecting their data. On
 * timeout the error names ranks that did not arrive. */
int dlrt_pmix_fence(struct dlrt_pmix *p, struct dlrt_err *err);

/* Reads `key` of `rank` (after a fence, from the local store). */
int dlrt_pmix_get(struct dlrt_pmix *p, uint32_t rank, const char *key, char *out, size_t len,
		  struct dlrt_err *err);

/* Reads `key` of `rank` without a fence: asks again (with a short back-off)
 * until that rank has published it, for at most the session's timeout. No
 * collective, so a task that starts late only delays those that need its key. */
int dlrt_pmix_await(struct dlrt_pmix *p, uint32_t rank, const char *key, char *out, size_t len,
		    struct dlrt_err *err);

/* Like dlrt_pmix_await for every rank in turn, calling got() for each; on
 * timeout the error names the ranks that did not publish. */
int dlrt_pmix_await_all(struct dlrt_pmix *p, const char *key,
			void (*got)(uint32_t rank, const char *value, void *arg), void *arg,
			struct dlrt_err *err);

/* Waits for the ranks on this node only. */
int dlrt_pmix_local_barrier(struct dlrt_pmix *p, struct dlrt_err *err);

void dlrt_pmix_close(struct dlrt_pmix *p);

#endif
