/* infer.h - the three programs of a dlrt-infer pool, as library entry points
 * (dlrt_infer_main.c and the cli_*.c files are only the command line around
 * them).
 */
#ifndef DLRT_INFER_H
#define DLRT_INFER_H

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
