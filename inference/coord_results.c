/* coord_results.c - answers: exactly once (the task's current dispatch
 * only), their rows stored in the results file before the answer is
 * recorded, re-sent answers after a failover, and the end of a job whose
 * last answer came. Its part takes RESULT and RESENT.
 */
#include <errno.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <string.h>
#include <unistd.h>

#include "coord_int.h"
#include "common/clock.h"

/* The one line a job fails with when its results cannot be stored; the
 * first cause wins. */
void dlrt_coord_csv_fail(struct coord *c, uint32_t ji, const char *what, int e)
{
	struct jrt *r = &c->jr[ji];

	if (r->csv_err[0])
		return;
	snprintf(r->csv_err, sizeof(r->csv_err), "cannot %s %.3800s: %s: %s", what, r->out,
		 strerror(e ? e : EIO), c->st.jobs[ji].sub.out[0] ?
		 "free space in the folder of --out and resubmit" :
		 "free space in the pool folder and resubmit");
}

/* The last answer is recorded: the job is done only once its results file
 * is whole on disk (fdatasync: a network filesystem may report a full disk
 * no sooner) and closed; else it fails, naming the file and the cause, and
 * `wait` never says done with rows missing. */
void dlrt_coord_job_complete(struct coord *c, uint32_t ji)
{
	struct jrt *r = &c->jr[ji];
	FILE *f = r->csv;

	r->csv = NULL;
	if (!f) {
		dlrt_coord_csv_fail(c, ji, "write", EBADF); /* not open: csv_err says why already */
	} else if (r->csv_err[0] || fflush(f) != 0 || fdatasync(fileno(f)) != 0) {
		dlrt_coord_csv_fail(c, ji, "write", errno);
		__fpurge(f);
		fclose(f);
	} else if (fclose(f) != 0) {
		dlrt_coord_csv_fail(c, ji, "write", errno);
	}
	if (r->csv_err[0]) {
		dlrt_coord_log(c, "job %u: %s", c->st.jobs[ji].id, r->csv_err);
		dlrt_coord_end_job(c, ji, DLRT_IP_JOB_FAILED, r->csv_err);
	} else {
		dlrt_coord_end_job(c, ji, DLRT_IP_JOB_DONE, NULL);
	}
}

/* A task's rows into the results file's buffer (csv_len counts them); -1
 * (errno set) on failure. */
int dlrt_coord_csv_rows(struct coord *c, uint32_t ji, const struct dlrt_infer_change *ch)
{
	struct dlrt_infer_job *j = &c->st.jobs[ji];
	FILE *f = c->jr[ji].csv;
	uint32_t first = dlrt_infer_task_first(j, ch->task);

	for (uint32_t i = 0; i < ch->res.n; i++) {
		int n = fprintf(f, "%u,%u,%d,%.6f,%u,%.3f\n", first + i, j->sub.first + first + i,
				ch->res.pred[i], (double)ch->res.score[i], ch->worker,
				ch->latency_us / 1000.0);

		if (n < 0)
			return -1;
		c->jr[ji].csv_len += n;
	}
	return 0;
}

/* Stores an answer's rows before the answer is recorded: a row that only
 * reached stdio's buffer is not stored (the disk may be full when it is
 * written), and the journal must never hold an answer whose row was lost.
 * *at is where the rows start, for unstore_rows(). -1: the job's results
 * cannot be stored (csv_err says why). */
static int store_rows(struct coord *c, uint32_t ji, const struct dlrt_infer_change *ch,
		      off_t *at)
{
	struct jrt *r = &c->jr[ji];

	if (!r->csv || r->csv_err[0]) {
		dlrt_coord_csv_fail(c, ji, "write", EBADF);
		return -1;
	}
	errno = 0;
	*at = r->csv_len;
	if (dlrt_coord_csv_rows(c, ji, ch) < 0 || fflush(r->csv) != 0) {
		dlrt_coord_csv_fail(c, ji, "write", errno);
		/* A full disk takes part of a write: cut the partial rows, so the
		 * file holds exactly the recorded answers (the job fails anyway). */
		__fpurge(r->csv);
		r->csv_len = *at;
		if (ftruncate(fileno(r->csv), *at) == 0)
			fseeko(r->csv, *at, SEEK_SET);
		return -1;
	}
	return 0;
}

/* The answer was stored but not recorded (the journal failed, a newer
 * coordinator took over): its rows go, so a later answer to the task is not
 * a second row. Failing that, the job must not end done. */
static void unstore_rows(struct coord *c, uint32_t ji, off_t at)
{
	struct jrt *r = &c->jr[ji];

	if (!r->csv)
		return;
	r->csv_len = at;
	if (ftruncate(fileno(r->csv), at) < 0 || fseeko(r->csv, at, SEEK_SET) < 0)
		dlrt_coord_csv_fail(c, ji, "cut back", errno);
}

static int record_result(struct coord *c, struct wk *w, struct dlrt_ip_result *res)
{
	struct dlrt_infer_change ch = { .kind = DLRT_CH_TASK_DONE };
	struct dlrt_infer_job *j;
	int64_t t = dlrt_now_us(), start;
	uint32_t k, ji;
	double occ;
	bool warm;
	off_t at;

	for (k = 0; k < w->n; k++)
		if (w->fl[k].job == res->job && w->fl[k].task == res->task &&
		    w->fl[k].attempt == res->attempt)
			break;
	j = dlrt_infer_state_job(&c->st, res->job);
	{
		/* Exactly once: only the task's current dispatch may answer it. */
		enum dlrt_attempt_verdict v = !j ? DLRT_ATTEMPT_NOTASK :
			j->state != DLRT_IP_JOB_RUNNING ? DLRT_ATTEMPT_DONE :
			dlrt_attempts_check(&c->jr[res->job - 1].att, res->task, res->attempt,
					    res->task < j->ntasks && j->task_done[res->task]);

		if (j && j->state != DLRT_IP_JOB_RUNNING && k < w->n) {
			/* Cancelled or failed meanwhile: nothing to record. */
			c->jr[res->job - 1].inflight--;
			memmove(&w->fl[k], &w->fl[k + 1], (w->n - k - 1) * sizeof(w->fl[0]));
			w->n--;
			return 0;
		}
		if (v != DLRT_ATTEMPT_OK || k == w->n) {
			c->late_dropped++;
			dlrt_coord_log(c,
				       "dropped an answer of worker %u for task %llu of job %u (attempt "
				       "%llu): %s; %llu dropped so far", w->id,
				       (unsigned long long)res->task, res->job,
				       (unsigned long long)res->attempt,
				       v == DLRT_ATTEMPT_OK ? "not dispatched to it" :
				       dlrt_attempt_verdict_name(v),
				       (unsigned long long)c->late_dropped);
			if (k < w->n) {
				c->jr[w->fl[k].job - 1].inflight--;
				memmove(&w->fl[k], &w->fl[k + 1], (w->n - k - 1) * sizeof(w->fl[0]));
				w->n--;
			}
			return 0;
		}
	}
	dlrt_attempts_release(&c->jr[res->job - 1].att, res->task, res->attempt);
	start = w->fl[k].sent_us > w->last_done_us ? w->fl[k].sent_us : w->last_done_us;
	occ = (double)(t - start) / 1e6;
	warm = w->fl[k].warmup;
	ch.latency_us = (uint32_t)(t - w->fl[k].sent_us);
	memmove(&w->fl[k], &w->fl[k + 1], (w->n - k - 1) * sizeof(w->fl[0]));
	w->n--;
	w->tasks++;
	w->last_done_us = t;
	ji = res->job - 1;
	c->jr[ji].inflight--;
	if (res->n != dlrt_infer_task_size(j, res->task)) {
		dlrt_coord_log(c, "worker %u answered %u queries for a task of %u: job %u fails",
			       w->id, res->n, dlrt_infer_task_size(j, res->task), j->id);
		dlrt_coord_end_job(c, ji, DLRT_IP_JOB_FAILED,
				   "a worker answered the wrong number of queries");
		return 0;
	}
	ch.job = res->job;
	ch.task = res->task;
	ch.worker = w->id;
	ch.res = *res;
	if (store_rows(c, ji, &ch, &at) < 0) {
		dlrt_coord_log(c, "job %u: %s", j->id, c->jr[ji].csv_err);
		dlrt_coord_end_job(c, ji, DLRT_IP_JOB_FAILED, c->jr[ji].csv_err);
		return 0;
	}
	if (dlrt_coord_commit(c, &ch) < 0) {
		unstore_rows(c, ji, at);
		return 0;
	}
	if ((c->o->takeover || c->o->yield) && !c->first_answer) {
		c->first_answer = true;
		dlrt_coord_log(c,
			       "first answer to a task dispatched since the takeover at wall %.6f",
			       dlrt_coord_wall_now());
	}
	/* A warm-up task's time is mostly loading: it says nothing of the cost. */
	dlrt_coord_bucket_add(c, &c->jr[ji], res->n, occ, !warm);
	if (!c->jr[ji].first_result_us) {
		c->jr[ji].first_result_us = t;
		if (!c->jr[ji].answered_before)
			dlrt_coord_event(c, j->id, "first_result");
	}
	/* The first answer gives the job's cost: use it now, not a window later. */
	if (c->sj[ji].cost <= 0 && res->n && !warm) {
		c->sj[ji].cost = occ / res->n;
		dlrt_coord_retarget(c);
	}
	if (j->tasks_done == j->ntasks)
		dlrt_coord_job_complete(c, ji);
	return 0;
}

/* An answer a worker computed for an earlier coordinator, which died before
 * acknowledging it: recorded if nobody answered the task since. */
static void record_resent(struct coord *c, struct wk *w, const struct dlrt_ip_result *res)
{
	struct dlrt_infer_change ch = { .kind = DLRT_CH_TASK_DONE };
	struct dlrt_infer_job *j = dlrt_infer_state_job(&c->st, res->job);
	off_t at;

	if (!j || j->state != DLRT_IP_JOB_RUNNING || res->task >= j->ntasks ||
	    j->task_done[res->task] || res->n != dlrt_infer_task_size(j, res->task))
		return; /* recorded already, or the job ended: never twice */
	ch.job = res->job;
	ch.task = res->task;
	ch.worker = w->id;
	ch.res = *res;
	if (store_rows(c, res->job - 1, &ch, &at) < 0) {
		dlrt_coord_log(c, "job %u: %s", j->id, c->jr[res->job - 1].csv_err);
		dlrt_coord_end_job(c, res->job - 1, DLRT_IP_JOB_FAILED,
				   c->jr[res->job - 1].csv_err);
		return;
	}
	if (dlrt_coord_commit(c, &ch) < 0) {
		unstore_rows(c, res->job - 1, at);
		return;
	}
	c->resent++;
	dlrt_coord_log(c,
		       "worker %u re-sent task %llu of job %u, answered before the failover: recorded",
		       w->id, (unsigned long long)res->task, res->job);
	if (j->tasks_done == j->ntasks)
		dlrt_coord_job_complete(c, res->job - 1);
}

/* RESENT: an answer no coordinator acknowledged. Acknowledged whether it is
 * recorded now or was before: the worker forgets it either way. */
static int on_resent(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_frame *f,
		     struct dlrt_err *err)
{
	struct wk *w = ((struct peer *)conn->state)->w;
	struct dlrt_ip_result res;
	int rc = dlrt_ip_get_result(f->payload, f->len, &res, err);

	if (rc == 0)
		record_resent(c, w, &res);
	if (rc == 0 && !c->fenced && !c->broken)
		dlrt_coord_put_ack(c, conn, res.job, res.task);
	dlrt_ip_result_free(&res);
	dlrt_coord_kick(c);
	return rc;
}

/* RESULT: the answer to a task of this worker; its next task goes out with
 * the ACK. */
static int on_result(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_frame *f,
		     struct dlrt_err *err)
{
	struct wk *w = ((struct peer *)conn->state)->w;
	struct dlrt_ip_result res;
	int rc = dlrt_ip_get_result(f->payload, f->len, &res, err);

	if (rc == 0)
		rc = record_result(c, w, &res);
	/* Recorded (and, when the ACK leaves, held by the standby), or
	 * never to be: forget it. */
	if (rc == 0 && !c->fenced && !c->broken)
		dlrt_coord_put_ack(c, conn, res.job, res.task);
	dlrt_ip_result_free(&res);
	if (rc == 0)
		dlrt_coord_fill_worker(c, w);
	dlrt_coord_kick(c);
	return rc;
}

static const struct dlrt_coord_frame frames[] = {
	{ DLRT_IP_RESENT, DLRT_IP_ROLE_WORKER, on_resent },
	{ DLRT_IP_RESULT, DLRT_IP_ROLE_WORKER, on_result },
};

const struct dlrt_coord_part dlrt_coord_results_part = {
	.frames = frames,
	.nframes = sizeof(frames) / sizeof(frames[0]),
};
