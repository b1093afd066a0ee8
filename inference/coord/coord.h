/* coord.h - the coordinator of a dlrt-infer pool as a library entry point
 * (the standby runs it too when it takes over, and a worker when both are
 * lost); inference/cli/ is only the command line around it. The worker's is
 * inference/worker/worker.h.
 */
#ifndef DLRT_COORD_H
#define DLRT_COORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dlrt_err.h"

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
	/* A worker taking over after the coordinator and its standby were both
	 * lost: it starts from the journal like pool restart, but a coordinator
	 * that still answers, or an epoch another claimed first (claim.h), ends
	 * the run with 1 (the worker goes on working) instead of an error. */
	bool yield;
	uint64_t min_epoch;    /* claim at least this epoch (a claimer that died) */
};

/* --prefetch, the tasks in flight per worker: the coordinator keeps that many
 * per worker in a fixed array, so this bound is the one every reader of the
 * number (the command lines, DLRT_INFER_PREFETCH, dlrt_coord_run) checks,
 * through the two functions below. */
#define DLRT_INFER_PREFETCH_MAX 64
/* Reads a prefetch depth from `text`, a whole number from 1 to
 * DLRT_INFER_PREFETCH_MAX; `what` names its source in err ("--prefetch"). */
int dlrt_infer_prefetch_parse(const char *what, const char *text, uint32_t *out,
			      struct dlrt_err *err);
/* The same bound for a depth given as a number (dlrt_coord_opts.prefetch). */
int dlrt_infer_prefetch_check(uint32_t prefetch, struct dlrt_err *err);

/* dlrt_coord_run()'s 1: another coordinator serves or claimed the epoch. */
#define DLRT_COORD_YIELDED 1

/* Runs the coordinator until `pool stop`, SIGTERM or SIGINT: 0, -1 with err,
 * or DLRT_COORD_YIELDED (not an error: nothing was written). */
int dlrt_coord_run(const struct dlrt_coord_opts *o, struct dlrt_err *err);

#endif
