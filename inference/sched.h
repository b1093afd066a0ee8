/* sched.h - fair shares of the pool's workers between jobs (pure, unit-tested).
 *
 * Goal (after IDunno): every running job gets the same query
 * rate. Two parts:
 *
 * The share model. A job's rate is (workers it holds) / (worker-seconds per
 * query), so equal rates need shares proportional to each job's measured cost:
 *
 *     target_j = W * cost_j / sum_k cost_k      (over jobs with work waiting)
 *
 * A job whose cost is not measured yet (just submitted) counts with the mean
 * cost of the others: an equal share at first, as in IDunno. Targets are
 * what status, the timeline and the plot show as a job's share.
 *
 * The dispatch rule that makes the rates equal. Costs are measured over a
 * window and move with whatever else runs on the cores, so shares set from
 * them are always a little late and a little off (6 workers on 2 cores swung
 * a cheap job's rate by 20-40% while its share stayed put). So the share is
 * not steered at all: a worker that finishes a task takes its next task from
 * the job that has been given the fewest queries since the set of jobs last
 * changed (fair queuing on queries). Equal queries given means equal rates,
 * within the queries in flight, whatever the cores do; and the workers end
 * up split in proportion to the costs, i.e. at the targets, without anyone
 * computing them. Nothing is preempted: decisions happen only when a worker
 * is free, so a new job gets workers as they finish their current task, every
 * free one at first (it has been given nothing), then by turns. A job that
 * had nothing to run does not bank queries for later (dlrt_sched_charge).
 * Ties go to the job furthest below its share, then keep a worker on its
 * current job (warm model).
 */
#ifndef DLRT_INFER_SCHED_H
#define DLRT_INFER_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dlrt_sched_job {
	bool runnable;  /* has tasks waiting to be dispatched */
	double cost;    /* measured worker-seconds per query; <= 0 = unknown */
	double target;  /* out: share in workers (the model's, for status and plots) */
	double served;  /* queries dispatched since the set of jobs last changed */
	uint32_t held;  /* workers assigned to it now */
};

/* Recomputes target for every job (0 for jobs that are not runnable). */
void dlrt_sched_targets(struct dlrt_sched_job *jobs, size_t n, uint32_t nworkers);

/* The job a free worker should serve next: the runnable job with the fewest
 * queries served; on a tie the one furthest below its share (a new job, when
 * counts have just started again), then its current job `cur` (-1 for none;
 * the caller has already taken the worker out of jobs[cur].held). Returns an
 * index, or -1 when no job is runnable. */
int dlrt_sched_pick(const struct dlrt_sched_job *jobs, size_t n, int cur);

/* Job i was given a task of q queries. Jobs that are not runnable are moved
 * up to the least-served runnable job, so that one that waited (say, for a
 * lost task to come back) does not claim every worker when it can run again. */
void dlrt_sched_charge(struct dlrt_sched_job *jobs, size_t n, size_t i, uint32_t q);

/* The set of jobs changed (one arrived or ended): every count starts again. */
void dlrt_sched_restart(struct dlrt_sched_job *jobs, size_t n);

#endif
