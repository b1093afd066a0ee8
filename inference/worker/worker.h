/* worker.h - a worker of a dlrt-infer pool as a library entry point
 * (inference/cli/ is only the command line around it).
 */
#ifndef DLRT_WORKER_H
#define DLRT_WORKER_H

#include "common/dlrt_err.h"

struct dlrt_worker_opts {
	const char *pool;
	const char *name;        /* shown in status: node/array index */
	const char *model_dir;   /* NULL = $DLRT_MODEL_DIR, else next to the binary */
	int wait_s;              /* how long to wait for a coordinator (default 300) */
	const char *walltime_margin; /* seconds (text): no new task this close to the
				      * Slurm time limit; NULL = default 60, "0" = off */
	int index;               /* array element: staggers takeover attempts (0 = none) */
};

/* dlrt_worker_run()'s 1: the coordinator and its standby are both lost (the
 * access record's coordinator has not answered for the worker's takeover
 * bound, dlrt_worker_takeover_ms()): the caller runs the coordinator from
 * the journal (dlrt_coord_opts.yield), then, if it yielded, works again. */
#define DLRT_WORKER_TAKEOVER 1

/* 3 x the standby's takeover bound, so a live standby always goes first,
 * plus 250 ms per array element (at most 16), so the workers rarely race
 * (the claim settles it when they do). $DLRT_INFER_WORKER_TAKEOVER_MS
 * (500..600000) replaces the first part; "0" turns the takeover off. */
int dlrt_worker_takeover_ms(int index);

/* Serves tasks until the pool stops (the access record disappears), the
 * coordinator is gone for longer than wait_s, or the coordinator and its
 * standby are both lost (DLRT_WORKER_TAKEOVER). */
int dlrt_worker_run(const struct dlrt_worker_opts *o, struct dlrt_err *err);

#endif
