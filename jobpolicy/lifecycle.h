/* lifecycle.h - when --dl-signal warns and when --dl-requeue requeues a job
 * still running at its time limit: the pure part of dlrt-lifecycle, the
 * per-node watcher spank/lifecycle.c starts (docs/checkpoint.md), and the page through which
 * it learns the tasks of its node.
 */
#ifndef DLRT_LIFECYCLE_H
#define DLRT_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* The page (a memfd) a node's tasks write their pids into, at the end of
 * task_init, and the watcher reads: pid[local rank], 0 until the task ran. */
#define DLRT_LC_MAGIC 0x646c7263u
#define DLRT_LC_MAX_TASKS 4096

struct dlrt_lc_page {
	uint32_t magic;
	uint32_t ntasks;
	volatile int32_t pid[DLRT_LC_MAX_TASKS];
	volatile int32_t rank[DLRT_LC_MAX_TASKS]; /* the task's rank in the step */
	char role[DLRT_LC_MAX_TASKS][16];         /* its role ("worker"), for the hang report */
};

/* --dl-hang-timeout: whether a step whose last progress anywhere was at
 * `last` has hung at `now` (no progress for `timeout` seconds). */
bool dlrt_lc_hung(time_t last, time_t now, uint32_t timeout);

/* What slurmctld said about the job (slurm_load_job), as of `now`. */
struct dlrt_lc_job {
	time_t now;
	time_t end_time;     /* when the time limit ends the job; 0: unknown */
	time_t preempt_time; /* when Slurm started to preempt it; 0: not preempted */
	bool running;
	uint32_t restart_cnt;
};

struct dlrt_lc_policy {
	uint32_t before;  /* --dl-signal's SECS */
	uint32_t attempt; /* the attempt this watcher belongs to */
	uint32_t requeue; /* --dl-requeue's N; 0: never */
};

/* Seconds before the time limit at which a job still running is requeued:
 * a third of SECS, at least 5 s, at most 30 s (Slurm's time limit check runs
 * every 30 s, so the job is always still running then). */
uint32_t dlrt_lc_requeue_lead(uint32_t before);

/* Whether the warning is due: Slurm preempts the job, or the time limit is
 * at most `before` seconds away. *why gets "time-limit" or "preemption". */
bool dlrt_lc_warn_due(const struct dlrt_lc_job *j, const struct dlrt_lc_policy *p,
		      const char **why);

enum dlrt_lc_requeue {
	DLRT_LC_WAIT,     /* not yet (or never: the job is not this attempt's any more) */
	DLRT_LC_REQUEUE,  /* requeue it now */
	DLRT_LC_NO_MORE,  /* it would be time, but N requeues were made */
};

/* The batch node's watcher, before the time limit: requeue a running job of
 * this attempt once the limit is dlrt_lc_requeue_lead() away (5 s before the
 * end of a preemption's grace time, which Slurm makes the job's end time). */
enum dlrt_lc_requeue dlrt_lc_requeue_due(const struct dlrt_lc_job *j,
					 const struct dlrt_lc_policy *p);

/* Seconds to sleep before asking slurmctld again: until the next moment that
 * matters, at least 1, at most 10 (a preemption or a changed limit is seen
 * within 10 s). */
int dlrt_lc_next_poll(const struct dlrt_lc_job *j, const struct dlrt_lc_policy *p, bool warned);

#endif
