/* poolarray.h - the pool between `pool start` and its coordinator serving.
 *
 * `pool start` (and `pool restart`) submit an array whose element 0 becomes
 * the coordinator; until Slurm starts it there is no access record to
 * connect to. So that a job script can run `pool start` and `submit` at once,
 * pool start leaves the array record <pool>/array (mode 0600, the owner's,
 * written atomically, never followed through a link):
 *
 *   job=12345          the array job id sbatch printed
 *   after_epoch=3      the epoch of the access record at submission (0: none)
 *
 * A client that finds no access record newer than after_epoch knows that the
 * coordinator of this pool is still to come, asks squeue why (the array
 * still pending, and Slurm's reason), and waits for it, bounded. The records
 * and squeue's answer are parsed by the functions below (fuzzed:
 * tests/fuzz/fuzz_inferarray.c).
 */
#ifndef DLRT_INFER_POOLARRAY_H
#define DLRT_INFER_POOLARRAY_H

#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"

#define DLRT_POOL_ARRAY_MAX 4096 /* bytes of a record we read at most */

struct dlrt_pool_array {
	uint32_t job;
	uint64_t after_epoch;
};

/* The state of the array's element 0 (the coordinator), from squeue. */
struct dlrt_pool_array_state {
	char state[32];  /* PENDING, RUNNING, ...; "" when not in the queue */
	char reason[64]; /* Slurm's reason, e.g. Resources, JobHeldUser, None */
};

/* Parses a record's text (not NUL-terminated): 0, or -1 + err when a field
 * is missing, repeated, malformed or unknown. */
int dlrt_pool_array_parse(const char *text, size_t len, struct dlrt_pool_array *a,
			  struct dlrt_err *err);

/* Reads <dir>/array: 0, 1 when there is none, -1 + err when it is not the
 * user's own private regular file or does not parse. */
int dlrt_pool_array_read(const char *dir, struct dlrt_pool_array *a, struct dlrt_err *err);

/* Writes <dir>/array atomically (temporary file + rename), 0600. */
int dlrt_pool_array_write(const char *dir, const struct dlrt_pool_array *a,
			  struct dlrt_err *err);

/* Picks element 0 out of `squeue -h -r -j JOB -o %K|%T|%r` (one line per
 * element, pending elements included): 0 with *st, 1 when element 0 is not
 * listed (it ended), -1 + err for text that is not squeue's. */
int dlrt_pool_squeue_parse(const char *text, size_t len, struct dlrt_pool_array_state *st,
			   struct dlrt_err *err);

/* Runs squeue (bounded by timeout_ms) and parses its answer as above. */
int dlrt_pool_array_query(const struct dlrt_pool_array *a, int timeout_ms,
			  struct dlrt_pool_array_state *st, struct dlrt_err *err);

/* The job id in `sbatch --parsable`'s output ("12345" or "12345;cluster",
 * possibly after warning lines): 0 with *job, -1 + err. */
int dlrt_pool_sbatch_parse(const char *text, size_t len, uint32_t *job, struct dlrt_err *err);

#endif
