/* state.h - the coordinator's durable state, changed only by a log of small changes.
 *
 * What must survive the coordinator (jobs, which tasks are answered, the
 * answers' counters) lives here and nowhere else, and the only way to change
 * it is dlrt_infer_state_apply() with one `struct dlrt_infer_change`. Each
 * change carries the coordinator's epoch and a sequence number, and encodes
 * to one protocol frame (DLRT_IP_CHANGE), so the same bytes can be sent to a
 * hot standby or appended to a journal and replayed in order to rebuild the
 * same state. Everything else the coordinator knows (connected workers, tasks
 * in flight, rates, shares) is soft: after a failover in-flight tasks simply
 * run again, and a task already recorded here is never recorded twice.
 *
 * Task t of a job covers its queries [t * batch, min((t + 1) * batch, count)).
 */
#ifndef DLRT_INFER_STATE_H
#define DLRT_INFER_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "inference/proto/proto.h"

enum dlrt_infer_change_kind {
	DLRT_CH_JOB_ADD = 1,  /* a submitted job (its id is the change's job) */
	DLRT_CH_TASK_DONE,    /* a task's answers, accepted once */
	DLRT_CH_JOB_END,      /* done, cancelled or failed (with the reason) */
};

struct dlrt_infer_change {
	uint64_t epoch;
	uint64_t seq;       /* 1, 2, ... within the state's history */
	uint8_t kind;
	uint32_t job;
	double wall;        /* wall-clock seconds when the coordinator made it */
	/* JOB_ADD */
	struct dlrt_ip_submit sub;
	/* TASK_DONE */
	uint64_t task;
	uint32_t worker;
	uint32_t latency_us; /* dispatch to answer, as the coordinator saw it */
	struct dlrt_ip_result res;
	/* JOB_END */
	uint8_t state;
	char error[DLRT_IP_STR_MAX + 1];
};

struct dlrt_infer_job {
	uint32_t id;
	uint8_t state;            /* enum dlrt_ip_job_state */
	struct dlrt_ip_submit sub; /* as submitted (owns labels) */
	uint32_t ntasks;
	uint8_t *task_done;       /* [ntasks] 0/1 */
	uint32_t tasks_done;
	uint32_t done;            /* answered queries */
	uint32_t labelled, correct;
	double t_submit, t_end;   /* wall clock */
	char error[DLRT_IP_STR_MAX + 1];
};

struct dlrt_infer_state {
	uint64_t epoch;
	uint64_t seq;             /* of the last applied change */
	uint32_t njobs, cap;
	struct dlrt_infer_job *jobs; /* by id - 1 */
};

void dlrt_infer_state_init(struct dlrt_infer_state *s);
void dlrt_infer_state_free(struct dlrt_infer_state *s);

/* The job with this id, or NULL. */
struct dlrt_infer_job *dlrt_infer_state_job(struct dlrt_infer_state *s, uint32_t id);

/* Queries of task t of job j. */
uint32_t dlrt_infer_task_first(const struct dlrt_infer_job *j, uint64_t t);
uint32_t dlrt_infer_task_size(const struct dlrt_infer_job *j, uint64_t t);

/* Applies one change: the sequence must follow the state's, the job must
 * exist (or, for JOB_ADD, be the next id), a task is recorded at most once
 * and its answer count must match. Returns 0, or -1 with err and no change. */
int dlrt_infer_state_apply(struct dlrt_infer_state *s, const struct dlrt_infer_change *c,
			   struct dlrt_err *err);

/* One DLRT_IP_CHANGE frame; decode allocates (release with _change_free). */
int dlrt_infer_change_put(struct dlrt_buf *b, const struct dlrt_infer_change *c);
int dlrt_infer_change_get(const uint8_t *p, size_t n, struct dlrt_infer_change *c,
			  struct dlrt_err *err);
/* Frees what _get allocated (also after a failed _get). _get sets `sub` for
 * JOB_ADD only, and _free frees it for JOB_ADD only. */
void dlrt_infer_change_free(struct dlrt_infer_change *c);

#endif
