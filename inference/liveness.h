/* liveness.h - the pure rules of dlrt-infer's failure handling (coord_liveness.c and
 * worker.c apply them; tests/unit/test_infer_liveness.c checks them).
 *
 * Exactly once: every dispatch of a task gets its own attempt id, and a task
 * remembers the attempt it is currently assigned to. An answer is recorded
 * only if its task is not answered yet and it names the current attempt; an
 * answer from an earlier dispatch (a worker declared dead that comes back, a
 * re-sent answer after a reconnect) is dropped and counted, never recorded
 * twice. Attempt ids carry the coordinator's epoch in their top bits, so a
 * later coordinator never hands out an id an earlier one used.
 *
 * Heartbeats: a worker sends one every `interval`; the coordinator checks
 * every `check` and declares a worker silent for more than `silence` dead, so
 * a worker that stops is noticed within `bound` = silence + check of its last
 * heartbeat. After `give_up` of silence its connection is closed.
 *
 * Walltime: a worker whose Slurm time limit is at most `margin` seconds away
 * asks for no new task (DRAIN).
 */
#ifndef DLRT_INFER_LIVENESS_H
#define DLRT_INFER_LIVENESS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/dlrt_err.h"

/* ---- attempts ------------------------------------------------------------------ */

struct dlrt_attempts {
	uint64_t *cur;   /* [n]: attempt the task is assigned to, 0 = none */
	uint32_t n;
};

/* cur's mark for "an answer to the task is kept for the coordinator's next
 * batch": the task is not dispatched again and no other answer to it is
 * taken before that batch records it (attempt ids never reach it). */
#define DLRT_ATTEMPT_ANSWERED UINT64_MAX

enum dlrt_attempt_verdict {
	DLRT_ATTEMPT_OK = 0,   /* record it */
	DLRT_ATTEMPT_DONE,     /* the task is answered already */
	DLRT_ATTEMPT_STALE,    /* the task is assigned to another dispatch, or to none */
	DLRT_ATTEMPT_NOTASK,   /* no such task */
};

/* The first attempt id of a coordinator of this epoch. */
uint64_t dlrt_attempt_first(uint64_t epoch);

int dlrt_attempts_init(struct dlrt_attempts *a, uint32_t ntasks);
void dlrt_attempts_free(struct dlrt_attempts *a);
/* The task is dispatched as `attempt` (any earlier dispatch is void). */
void dlrt_attempts_assign(struct dlrt_attempts *a, uint64_t task, uint64_t attempt);
/* May the answer of dispatch `attempt` of `task` be recorded? `done` says
 * whether the task is answered already (the durable state knows); an answer
 * kept for the batch counts as done too. */
enum dlrt_attempt_verdict dlrt_attempts_check(const struct dlrt_attempts *a, uint64_t task,
					      uint64_t attempt, bool done);
/* The dispatch ended (answered, failed, its worker lost): the task is
 * unassigned if `attempt` is still its current one. True if it was. */
bool dlrt_attempts_release(struct dlrt_attempts *a, uint64_t task, uint64_t attempt);
/* An answer to the task is kept (any dispatch of it is void); is one? */
void dlrt_attempts_answered(struct dlrt_attempts *a, uint64_t task);
bool dlrt_attempts_is_answered(const struct dlrt_attempts *a, uint64_t task);
const char *dlrt_attempt_verdict_name(enum dlrt_attempt_verdict v);

/* ---- heartbeats ---------------------------------------------------------------- */

struct dlrt_hb {
	int64_t bound_ms;    /* a silent worker is declared dead within this */
	int64_t interval_ms; /* a worker's heartbeat period */
	int64_t silence_ms;  /* silence after which it is declared dead */
	int64_t check_ms;    /* the coordinator's check period */
	int64_t give_up_ms;  /* silence after which its connection is closed */
};

#define DLRT_HB_DEFAULT_S 2.0
#define DLRT_HB_MIN_S 0.2
#define DLRT_HB_MAX_S 3600.0

/* From the bound in seconds (text from an option or the environment; NULL or
 * "" = the default). -1 with err on a bad value. */
int dlrt_hb_config(const char *bound_s, struct dlrt_hb *hb, struct dlrt_err *err);
/* Dead: silent for more than silence_ms. */
bool dlrt_hb_dead(const struct dlrt_hb *hb, int64_t last_ms, int64_t now_ms);

/* ---- walltime ------------------------------------------------------------------ */

#define DLRT_WALLTIME_MARGIN_DEFAULT 60 /* seconds */

/* Squeue's time left (%L): "[D-]HH:MM:SS", "MM:SS", "SS"; "UNLIMITED",
 * "NOT_SET", "INVALID" or "" give *left = -1 (no limit). Returns -1 on
 * anything else. */
int dlrt_walltime_parse_left(const char *s, int64_t *left);
/* The margin in seconds (text; NULL or "" = the default); -1 with err. */
int dlrt_walltime_margin(const char *s, int64_t *margin, struct dlrt_err *err);
/* No new task: the end is known (> 0) and at most `margin` seconds away. */
bool dlrt_walltime_near(int64_t end, int64_t now, int64_t margin);

#endif
