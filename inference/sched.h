/* sched.h - fair shares of the pool's workers between jobs (pure, unit-tested).
 *
 * Goal (issue 7, after the IDunno seed): every running job gets the same query
 * rate. A job's rate is (workers it holds) / (worker-seconds per query), so
 * equal rates need shares proportional to each job's measured cost per query:
 *
 *     target_j = W * cost_j / sum_k cost_k      (over jobs with work waiting)
 *
 * A job whose cost is not measured yet (just submitted) counts with the mean
 * cost of the others, which gives it an equal share at first, as in the seed.
 * Targets are fractional (1 : 8 costs on 6 workers give 0.67 and 5.33), so a
 * worker is time-shared: each job accrues credit (target - held) * dt, and a
 * worker that finishes a task takes its next task from the job furthest below
 * its target, counting credit. Nothing is preempted: decisions happen only
 * when a worker is free. A small bonus keeps a worker on its current job when
 * shares are equal, so the model stays warm and tasks go round-robin among
 * the job's workers.
 */
#ifndef DLRT_INFER_SCHED_H
#define DLRT_INFER_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dlrt_sched_job {
	bool runnable;  /* has tasks waiting to be dispatched */
	double cost;    /* measured worker-seconds per query; <= 0 = unknown */
	double trim;    /* feedback factor on cost (1 = none), see dlrt_sched_feedback */
	double target;  /* out: share in workers */
	double credit;  /* worker-seconds owed to the job (negative: it had more) */
	uint32_t held;  /* workers assigned to it now */
};

/* Credit never exceeds this many worker-seconds either way, so a job that
 * could not use its share for a while does not starve the others later. */
#define DLRT_SCHED_CREDIT_MAX 0.1
/* How strongly credit counts: HORIZON seconds of credit weigh one worker. */
#define DLRT_SCHED_HORIZON 0.05
#define DLRT_SCHED_STICKY 0.05

/* Recomputes target for every job (0 for jobs that are not runnable). */
void dlrt_sched_targets(struct dlrt_sched_job *jobs, size_t n, uint32_t nworkers);

/* Feedback: measured costs are biased (a job's cost changes with the mix of
 * jobs sharing the cores), so nudge each runnable job's trim by
 * (mean rate / its rate)^gain, within [1/4, 4]; targets then use cost * trim.
 * Called once per rate tick with the current rates (0 = not measured yet). */
void dlrt_sched_feedback(struct dlrt_sched_job *jobs, size_t n, const double *rate,
			 double gain);

/* Adds (target - held) * dt to every runnable job's credit (clamped); a job
 * that is not runnable has its credit reset. */
void dlrt_sched_accrue(struct dlrt_sched_job *jobs, size_t n, double dt);

/* The job a free worker should serve next: its current job is `cur` (-1 for
 * none; the caller has already removed the worker from jobs[cur].held).
 * Returns an index, or -1 when no job is runnable. */
int dlrt_sched_pick(const struct dlrt_sched_job *jobs, size_t n, int cur);

#endif
