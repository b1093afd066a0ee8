/* coord_dispatch.c - handing out tasks: which job a worker serves next
 * (sched.h), the job's queue of tasks (requeued ones first), JOBINFO before
 * a worker's first task of a job, and the dispatch ids (liveness.h). Its
 * part takes TASKFAIL and gives idle workers tasks before each flush of the
 * deferred writes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "common/clock.h"

/* The job's next task to dispatch: neither answered in the state nor
 * answered in the batch being gathered (liveness.h). */
static int pop_task(struct coord *c, uint32_t ji, uint64_t *task)
{
	struct jrt *r = &c->jr[ji];
	struct dlrt_infer_job *j = &c->st.jobs[ji];

	while (r->nrequeue) {
		uint64_t t = r->requeue[--r->nrequeue];

		if (!j->task_done[t] && !dlrt_attempts_is_answered(&r->att, t)) {
			*task = t;
			r->nrequeue_popped = true;
			return 0;
		}
	}
	while (r->next_task < j->ntasks) {
		uint64_t t = r->next_task++;

		if (!j->task_done[t] && !dlrt_attempts_is_answered(&r->att, t)) {
			*task = t;
			return 0;
		}
	}
	return -1;
}

/* Back to the front of the job's queue: the next pop_task returns it. */
void dlrt_coord_requeue(struct coord *c, uint32_t ji, uint64_t task)
{
	struct jrt *r = &c->jr[ji];

	if (c->st.jobs[ji].state != DLRT_IP_JOB_RUNNING)
		return;
	if (r->nrequeue == r->caprequeue) {
		uint32_t cap = r->caprequeue ? r->caprequeue * 2 : 16;
		uint64_t *q = realloc(r->requeue, cap * sizeof(*q));

		if (!q) {
			dlrt_coord_log(c,
				       "out of memory: task %llu of job %u is lost until the pool restarts",
				       (unsigned long long)task, c->st.jobs[ji].id);
			return;
		}
		r->requeue = q;
		r->caprequeue = cap;
	}
	r->requeue[r->nrequeue++] = task;
}

static bool worker_knows(struct wk *w, uint32_t job)
{
	for (uint32_t k = 0; k < w->nknown; k++)
		if (w->known[k] == job)
			return true;
	return false;
}

static int send_jobinfo(struct wk *w, const struct dlrt_infer_job *j)
{
	struct dlrt_ip_jobinfo ji = { .job = j->id, .first = j->sub.first, .count = j->sub.count };

	if (w->nknown == w->capknown) {
		uint32_t cap = w->capknown ? w->capknown * 2 : 4;
		uint32_t *q = realloc(w->known, cap * sizeof(*q));

		if (!q)
			return -1;
		w->known = q;
		w->capknown = cap;
	}
	snprintf(ji.model, sizeof(ji.model), "%s", j->sub.model);
	snprintf(ji.inputs, sizeof(ji.inputs), "%s", j->sub.inputs);
	if (dlrt_ip_put_jobinfo(&w->conn->out, &ji) < 0)
		return -1;
	w->known[w->nknown++] = j->id;
	return 0;
}

/* Does worker w get tasks now? When it has no more than half its prefetch
 * in flight (none, at --prefetch 1): with --prefetch 4 it gets two tasks in
 * one message every second answer, instead of one per answer, so the
 * coordinator sends, and the worker wakes up, half as often per task, while
 * the worker always holds tasks to run. */
bool dlrt_coord_wants_tasks(const struct coord *c, const struct wk *w)
{
	return w->n <= c->o->prefetch / 2;
}

/* Gives worker w tasks until it has `prefetch` in flight or nothing is left.
 * Appends to its connection's output; the caller sees that it is written. */
void dlrt_coord_fill_worker(struct coord *c, struct wk *w)
{
	bool any = false;

	if (!w->conn || c->stopping || w->lost || w->draining ||
	    ((struct peer *)w->conn->state)->held_acks >= MAX_HELD_ACKS)
		return;
	while (w->n < c->o->prefetch) {
		struct dlrt_ip_task t;
		struct dlrt_infer_job *j;
		uint64_t task;
		int ji;
		bool warm;

		dlrt_coord_accrue(c);
		if (w->cur >= 0 && c->sj[w->cur].held > 0)
			c->sj[w->cur].held--;
		ji = dlrt_sched_pick(c->sj, c->st.njobs, w->cur);
		if (ji < 0) {
			if (w->n == 0)
				w->cur = -1;
			else
				c->sj[w->cur].held++;
			break;
		}
		c->sj[ji].held++;
		w->cur = ji;
		if (pop_task(c, (uint32_t)ji, &task) < 0) {
			c->sj[ji].runnable = false; /* stale flag: recompute and try again */
			dlrt_coord_retarget(c);
			continue;
		}
		j = &c->st.jobs[ji];
		if (c->jr[ji].nrequeue_popped) {
			c->jr[ji].nrequeue_popped = false;
			dlrt_coord_event(c, j->id, "redispatch"); /* a lost task runs again */
		}
		if (!c->jr[ji].att.cur && dlrt_attempts_init(&c->jr[ji].att, j->ntasks) < 0) {
			dlrt_coord_requeue(c, (uint32_t)ji, task);
			break;
		}
		warm = !worker_knows(w, j->id);
		if (warm && send_jobinfo(w, j) < 0) {
			dlrt_coord_requeue(c, (uint32_t)ji, task);
			break;
		}
		t = (struct dlrt_ip_task){ .job = j->id, .task = task, .attempt = c->next_attempt,
					   .first = dlrt_infer_task_first(j, task),
					   .n = dlrt_infer_task_size(j, task) };
		if (dlrt_ip_put_task(&w->conn->out, &t) < 0) {
			dlrt_coord_requeue(c, (uint32_t)ji, task);
			break;
		}
		dlrt_attempts_assign(&c->jr[ji].att, task, c->next_attempt);
		dlrt_sched_charge(c->sj, c->st.njobs, (size_t)ji, t.n);
		w->fl[w->n++] = (struct inflight){ j->id, task, c->next_attempt++, dlrt_now_us(), warm };
		c->jr[ji].inflight++;
		if (!c->jr[ji].first_dispatch_us) {
			c->jr[ji].first_dispatch_us = dlrt_now_us();
			if (!c->jr[ji].answered_before)
				dlrt_coord_event(c, j->id, "first_task");
		}
		if (!dlrt_coord_job_runnable(c, (uint32_t)ji))
			dlrt_coord_retarget(c);
		any = true;
	}
	(void)any;
}

/* TASKFAIL: the worker cannot run a task of its own; the job fails with why. */
static int on_taskfail(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_frame *f,
		       struct dlrt_err *err)
{
	struct wk *w = ((struct peer *)conn->state)->w;
	struct dlrt_ip_taskfail tf;
	char msg[DLRT_IP_STR_MAX + 1];
	struct dlrt_infer_job *j;

	if (dlrt_ip_get_taskfail(f->payload, f->len, &tf, err) < 0)
		return -1;
	for (uint32_t k = 0; k < w->n; k++) {
		if (w->fl[k].job != tf.job || w->fl[k].task != tf.task ||
		    w->fl[k].attempt != tf.attempt)
			continue;
		dlrt_attempts_release(&c->jr[tf.job - 1].att, tf.task, tf.attempt);
		memmove(&w->fl[k], &w->fl[k + 1], (w->n - k - 1) * sizeof(w->fl[0]));
		w->n--;
		c->jr[tf.job - 1].inflight--;
		j = dlrt_infer_state_job(&c->st, tf.job);
		snprintf(msg, sizeof(msg), "worker %u (%s): %.3900s", w->id, w->name, tf.error);
		if (j && j->state == DLRT_IP_JOB_RUNNING)
			dlrt_coord_end_job(c, tf.job - 1, DLRT_IP_JOB_FAILED, msg);
		break;
	}
	if (dlrt_coord_wants_tasks(c, w))
		dlrt_coord_fill_worker(c, w);
	return 0;
}

/* Before the deferred writes go out: tasks for the workers with room for
 * more (a job's end freed them, a new job came, a worker is back). */
static bool fill_idle_workers(struct coord *c)
{
	for (uint32_t i = 0; i < c->nworkers; i++) {
		struct wk *w = c->workers[i];
		uint32_t before;

		if (!w->conn || !dlrt_coord_wants_tasks(c, w))
			continue;
		before = w->n;
		dlrt_coord_fill_worker(c, w);
		if (w->n != before)
			dlrt_coord_mark_dirty(c, w->conn);
	}
	return false;
}

static const struct dlrt_coord_frame frames[] = {
	{ DLRT_IP_TASKFAIL, DLRT_IP_ROLE_WORKER, on_taskfail },
};

const struct dlrt_coord_part dlrt_coord_dispatch_part = {
	.frames = frames,
	.nframes = sizeof(frames) / sizeof(frames[0]),
	.before_flush = fill_idle_workers,
};
