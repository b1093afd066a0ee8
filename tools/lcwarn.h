/* lcwarn.h - dlrt-lifecycle's first job: the warning before the time limit or
 * on preemption (--dl-signal), and in the batch step the requeue of a job
 * still running just before its limit (--dl-requeue); docs/checkpoint.md.
 *
 * Once the warning is due it signals each task of the node once (their pids
 * are on the task page, written by each task at the end of task_init),
 * records it in the job's record, and with --verbose prints a line on each
 * task's stderr. The batch node's watcher requeues a job still running a few
 * seconds before its time limit (a job that reaches it is TIMEOUT, which
 * Slurm never requeues). When it is due is jobpolicy/lifecycle.h's pure policy;
 * what slurmctld says of the job comes from lcshare.h's source.
 */
#ifndef DLRT_LCWARN_H
#define DLRT_LCWARN_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "lcshare.h"
#include "lcwatch.h"
#include "jobpolicy/lifecycle.h"

struct dlrt_lcwarn {
	int sig;                 /* --signal's; 0: none */
	struct dlrt_lc_policy pol;
	bool children;           /* signal each task's children (an agent's workers) */
	bool batch;              /* the batch step: no tasks, the requeue */
	bool attempt_known;      /* --attempt given, else the first answer's restart count */
	struct dlrt_lcshare *times; /* where the job's times come from */
	/* what happened so far */
	bool warned, requeue_done;
	bool pending;            /* due, and a task has not got it yet */
	time_t first_due;        /* when the warning was first due */
	time_t settle_from;      /* the latest start of a task still waited for */
	bool sent[DLRT_LC_MAX_TASKS];        /* the tasks that got the warning */
	int32_t seen_pid[DLRT_LC_MAX_TASKS]; /* each task's pid when first seen on the page */
	time_t seen[DLRT_LC_MAX_TASKS];      /* and when: its 30 s start then, or at first_due */
};

/* Whether this job has anything to do (a signal to send, or the batch step). */
bool dlrt_lcwarn_wanted(const struct dlrt_lcwarn *a);

/* One look at the job: warns, requeues when due. The seconds until the next
 * look (1 to 10), or 10 when the job's times are not known yet. */
int dlrt_lcwarn_tick(struct dlrt_lcwarn *a, struct dlrt_lcw *w);

#endif
