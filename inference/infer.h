/* infer.h - the three programs of a dlrt-infer pool, as library entry points
 * (dlrt_infer_main.c is only the command line around them).
 */
#ifndef DLRT_INFER_H
#define DLRT_INFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dlrt_err.h"

struct dlrt_coord_opts {
	const char *pool;      /* pool directory (access record, results, timeline) */
	uint32_t prefetch;     /* tasks in flight per worker (default 1) */
	double window;         /* rate window in seconds (default 0.5) */
	const char *address;   /* address to advertise; NULL = this node's */
	const char *heartbeat; /* silent-worker bound in seconds (text); NULL = default 2 */
	const char *auth;      /* munge, secret, auto; NULL = $DLRT_INFER_AUTH, else auto */
	/* A standby taking over: the change log it holds (CHANGE frames), used
	 * instead of the journal. NULL = start from DIR/journal, if any. */
	const uint8_t *log;
	size_t loglen;
	bool takeover;
};

/* Runs the coordinator until `pool stop`, SIGTERM or SIGINT. */
int dlrt_coord_run(const struct dlrt_coord_opts *o, struct dlrt_err *err);

struct dlrt_worker_opts {
	const char *pool;
	const char *name;        /* shown in status: node/array index */
	const char *model_dir;   /* NULL = $DLRT_MODEL_DIR, else next to the binary */
	int wait_s;              /* how long to wait for a coordinator (default 300) */
	const char *walltime_margin; /* seconds (text): no new task this close to the
				      * Slurm time limit; NULL = default 60, "0" = off */
};

/* Serves tasks until the pool stops (the access record disappears) or the
 * coordinator is gone for longer than wait_s. */
int dlrt_worker_run(const struct dlrt_worker_opts *o, struct dlrt_err *err);

#endif
