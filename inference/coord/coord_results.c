/* coord_results.c - answers: exactly once (the task's current dispatch
 * only), their rows stored in the results file before the answer is
 * recorded, re-sent answers after a failover, and the end of a job whose
 * last answer came. Its part takes RESULT and RESENT.
 *
 * Answers are stored per batch: a handler only checks an answer and keeps
 * it (c->pend); when the batch is due (coord_replication.c: at most about
 * once a millisecond), before anything is written to a peer,
 * dlrt_coord_store_answers() writes the rows of every kept answer, flushes
 * each results file once, and only then records the answers whose file took
 * them (dlrt_coord_commit); the journal gets the whole batch after that
 * (coord_replication.c), and the replies telling of it go out last.
 */
#include <errno.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "coord_int.h"
#include "common/clock.h"
#include "common/fdio.h"

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

/* A task's rows, as the results file holds them, appended to b; -1 out of
 * memory. */
static int csv_format(struct coord *c, uint32_t ji, uint64_t task, uint32_t worker,
		      uint32_t latency_us, const struct dlrt_ip_result *res, struct dlrt_buf *b)
{
	struct dlrt_infer_job *j = &c->st.jobs[ji];
	uint32_t first = dlrt_infer_task_first(j, task);

	for (uint32_t i = 0; i < res->n; i++) {
		char line[160];
		int n = snprintf(line, sizeof(line), "%u,%u,%d,%.6f,%u,%.3f\n", first + i,
				 j->sub.first + first + i, res->pred[i], (double)res->score[i],
				 worker, latency_us / 1000.0);

		if (n < 0 || (size_t)n >= sizeof(line) || dlrt_buf_append(b, line, (size_t)n) < 0)
			return -1;
	}
	return 0;
}

/* A task's rows into the results file's buffer (csv_len counts them): the
 * rebuild of a file after a restart; -1 (errno set) on failure. */
int dlrt_coord_csv_rows(struct coord *c, uint32_t ji, const struct dlrt_infer_change *ch)
{
	struct dlrt_buf b;
	int rc = 0;

	dlrt_buf_init(&b, (size_t)-1);
	if (csv_format(c, ji, ch->task, ch->worker, ch->latency_us, &ch->res, &b) < 0) {
		errno = ENOMEM;
		rc = -1;
	} else if (b.len && fwrite(dlrt_buf_head(&b), 1, b.len, c->jr[ji].csv) != b.len) {
		rc = -1;
	} else {
		c->jr[ji].csv_len += (off_t)b.len;
	}
	dlrt_buf_free(&b);
	return rc;
}

/* Keeps a checked answer for the batch being gathered; it takes res's
 * arrays. -1: out of memory (the answer is dropped; its task runs again). */
static int keep_answer(struct coord *c, uint32_t worker, uint32_t latency_us,
		       const struct dlrt_ip_result *res, double occ, bool warm, bool resent)
{
	if (c->npend == c->cappend) {
		uint32_t cap = c->cappend ? c->cappend * 2 : 64;
		struct dlrt_coord_answer *q = realloc(c->pend, cap * sizeof(*q));

		if (!q)
			return -1;
		c->pend = q;
		c->cappend = cap;
	}
	c->pend[c->npend++] = (struct dlrt_coord_answer){
		{ res->job, worker, latency_us, res->task, *res }, occ, warm, resent, true };
	return 0;
}

/* Stores the batch's rows of job ji (its kept answers from `from` on): one
 * write(2) past stdio, whose buffer is empty between batches (every
 * earlier write was flushed), so the rows are in the file, not in a buffer
 * a full disk could still refuse, before any of them is recorded. A write
 * that fails cuts what it wrote (a full disk takes part of a write), so the
 * file holds exactly the recorded answers; the job then fails (csv_err). */
static void store_job_rows(struct coord *c, uint32_t ji, uint32_t from)
{
	struct jrt *r = &c->jr[ji];
	struct dlrt_buf *b = &c->rows;
	int e = 0;

	if (!r->csv || r->csv_err[0]) {
		dlrt_coord_csv_fail(c, ji, "write", EBADF);
		return;
	}
	dlrt_buf_consume(b, b->len);
	for (uint32_t i = from; i < c->npend && !e; i++)
		if (c->pend[i].ok && c->pend[i].ch.job == ji + 1 &&
		    csv_format(c, ji, c->pend[i].ch.task, c->pend[i].ch.worker,
			       c->pend[i].ch.latency_us, &c->pend[i].ch.res, b) < 0)
			e = ENOMEM;
	if (!e && (fflush(r->csv) != 0 ||
		   dlrt_write_all(fileno(r->csv), dlrt_buf_head(b), b->len) < 0))
		e = errno ? errno : EIO;
	if (e) {
		dlrt_coord_csv_fail(c, ji, "write", e);
		__fpurge(r->csv);
		if (ftruncate(fileno(r->csv), r->csv_len) == 0)
			lseek(fileno(r->csv), r->csv_len, SEEK_SET);
	} else {
		r->batch_at = r->csv_len;
		r->batch_rows = true;
		r->csv_len += (off_t)b->len;
	}
	if (b->cap > ((size_t)1 << 20))
		dlrt_buf_free(b); /* a burst after a takeover does not keep its memory */
	else
		dlrt_buf_consume(b, b->len);
}

/* What recording an answer sets off: the job's rate and cost, its first
 * answer's event, its end once the last answer is in. */
static void answered(struct coord *c, const struct dlrt_coord_answer *a)
{
	uint32_t ji = a->ch.job - 1;
	struct jrt *r = &c->jr[ji];
	struct dlrt_infer_job *j = &c->st.jobs[ji];

	if (a->resent) {
		c->resent++;
		dlrt_coord_log(c, "worker %u re-sent task %llu of job %u, answered before the "
			       "failover: recorded", a->ch.worker, (unsigned long long)a->ch.task,
			       a->ch.job);
	} else {
		if ((c->o->takeover || c->o->yield) && !c->first_answer) {
			c->first_answer = true;
			dlrt_coord_log(c, "first answer to a task dispatched since the takeover at "
				       "wall %.6f", dlrt_coord_wall_now());
		}
		/* A warm-up task's time is mostly loading: it says nothing of the cost. */
		dlrt_coord_bucket_add(c, r, a->ch.res.n, a->occ, !a->warm);
		if (!r->first_result_us) {
			r->first_result_us = dlrt_now_us();
			if (!r->answered_before)
				dlrt_coord_event(c, j->id, "first_result");
		}
		/* The first answer gives the job's cost: use it now, not a window later. */
		if (c->sj[ji].cost <= 0 && a->ch.res.n && !a->warm) {
			c->sj[ji].cost = a->occ / a->ch.res.n;
			dlrt_coord_retarget(c);
		}
	}
	if (j->tasks_done == j->ntasks)
		dlrt_coord_job_complete(c, ji);
}

/* The batch: every kept answer's rows written to its results file (one
 * write per file), then the answers whose rows are stored are recorded, in
 * the order they came. A job whose file failed records none of this
 * batch's answers, its rows of the batch are cut, and it fails with the
 * line naming the file. An answer whose job ended meanwhile, or whose task
 * was recorded meanwhile, is dropped (its worker has its ACK: it was
 * answered, or its job is over). */
void dlrt_coord_store_answers(struct coord *c)
{
	struct dlrt_infer_change ch;
	uint32_t n = c->npend;

	if (!n)
		return;
	memset(&ch, 0, sizeof(ch)); /* once per batch: 16 KiB */
	ch.kind = DLRT_CH_TASK_DONE;
	for (uint32_t i = 0; i < n; i++) {
		struct dlrt_coord_answer *a = &c->pend[i];
		struct dlrt_infer_job *j = dlrt_infer_state_job(&c->st, a->ch.job);

		if (!j || j->state != DLRT_IP_JOB_RUNNING || j->task_done[a->ch.task])
			a->ok = false;
	}
	/* Each job's rows in one write, at its first answer of the batch. */
	for (uint32_t i = 0; i < n; i++) {
		struct jrt *r = &c->jr[c->pend[i].ch.job - 1];

		if (c->pend[i].ok && !r->in_batch) {
			r->in_batch = true;
			errno = 0;
			store_job_rows(c, c->pend[i].ch.job - 1, i);
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		struct dlrt_coord_answer *a = &c->pend[i];
		uint32_t ji = a->ch.job - 1;
		struct jrt *r;

		if (!a->ok)
			continue;
		r = &c->jr[ji];
		r->in_batch = false;
		if (c->st.jobs[ji].state != DLRT_IP_JOB_RUNNING)
			continue; /* failed by an earlier answer of this batch */
		if (r->csv_err[0]) {
			dlrt_coord_log(c, "job %u: %s", a->ch.job, r->csv_err);
			dlrt_coord_end_job(c, ji, DLRT_IP_JOB_FAILED, r->csv_err);
			continue;
		}
		ch.job = a->ch.job;
		ch.task = a->ch.task;
		ch.worker = a->ch.worker;
		ch.latency_us = a->ch.latency_us;
		ch.res = a->ch.res; /* borrowed: the batch frees it */
		if (dlrt_coord_commit(c, &ch) < 0) {
			if (c->fenced || c->broken)
				break; /* this coordinator stops; the next rebuilds the file */
			/* Its row is in the file, the answer not in the state: a later
			 * answer would be a second row. */
			dlrt_coord_end_job(c, ji, DLRT_IP_JOB_FAILED, errno == ENOMEM ?
					   "an answer could not be recorded (out of memory): resubmit" :
					   "an answer was refused by the job's state (a dlrt-infer "
					   "bug: the coordinator's log says why): resubmit");
			continue;
		}
		answered(c, a);
	}
	for (uint32_t i = 0; i < n; i++)
		if (c->pend[i].ok)
			c->jr[c->pend[i].ch.job - 1].in_batch = false;
}

/* The batch's changes were written to the journal, or (written false) they
 * were not: then the rows stored for its answers are cut again, so each
 * results file holds exactly the answers the journal recorded (the pool
 * stops; the next coordinator resumes from the journal). */
void dlrt_coord_answers_written(struct coord *c, bool written)
{
	for (uint32_t i = 0; i < c->npend; i++) {
		struct jrt *r = &c->jr[c->pend[i].ch.job - 1];

		if (c->pend[i].ok && r->batch_rows) {
			r->batch_rows = false;
			if (!written && r->csv) {
				r->csv_len = r->batch_at;
				if (ftruncate(fileno(r->csv), r->batch_at) < 0 ||
				    lseek(fileno(r->csv), r->batch_at, SEEK_SET) < 0)
					dlrt_coord_csv_fail(c, c->pend[i].ch.job - 1, "cut back", errno);
			}
		}
		dlrt_ip_result_free(&c->pend[i].ch.res);
	}
	c->npend = 0;
}

/* Checks an answer and keeps it for the batch (its ACK is held until the
 * batch is written). */
static int record_result(struct coord *c, struct wk *w, struct dlrt_ip_result *res)
{
	struct dlrt_infer_job *j;
	uint32_t latency_us;
	int64_t t = dlrt_now_us(), start;
	uint32_t k, ji;
	double occ;
	bool warm;

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
	start = w->fl[k].sent_us > w->last_done_us ? w->fl[k].sent_us : w->last_done_us;
	occ = (double)(t - start) / 1e6;
	warm = w->fl[k].warmup;
	latency_us = (uint32_t)(t - w->fl[k].sent_us);
	memmove(&w->fl[k], &w->fl[k + 1], (w->n - k - 1) * sizeof(w->fl[0]));
	w->n--;
	w->tasks++;
	w->last_done_us = t;
	ji = res->job - 1;
	c->jr[ji].inflight--;
	if (res->n != dlrt_infer_task_size(j, res->task)) {
		dlrt_attempts_release(&c->jr[ji].att, res->task, res->attempt);
		dlrt_coord_log(c, "worker %u answered %u queries for a task of %u: job %u fails",
			       w->id, res->n, dlrt_infer_task_size(j, res->task), j->id);
		dlrt_coord_end_job(c, ji, DLRT_IP_JOB_FAILED,
				   "a worker answered the wrong number of queries");
		return 0;
	}
	if (keep_answer(c, w->id, latency_us, res, occ, warm, false) < 0) {
		/* Its worker hears ACK and forgets it: the task must run again. */
		dlrt_attempts_release(&c->jr[ji].att, res->task, res->attempt);
		dlrt_coord_requeue(c, ji, res->task);
		dlrt_coord_log(c, "out of memory keeping an answer: task %llu of job %u runs again",
			       (unsigned long long)res->task, res->job);
		return 0;
	}
	/* Until the batch records it, neither a dispatch of the task nor another
	 * answer to it (a re-sent one) may be taken: it would be a second row. */
	dlrt_attempts_answered(&c->jr[ji].att, res->task);
	res->pred = NULL, res->score = NULL; /* the batch owns them now */
	return 0;
}

/* An answer a worker computed for an earlier coordinator, which died before
 * acknowledging it: recorded if nobody answered the task since. */
static void record_resent(struct coord *c, struct wk *w, struct dlrt_ip_result *res)
{
	struct dlrt_infer_job *j = dlrt_infer_state_job(&c->st, res->job);
	struct jrt *r;

	if (!j || j->state != DLRT_IP_JOB_RUNNING || res->task >= j->ntasks ||
	    j->task_done[res->task] || res->n != dlrt_infer_task_size(j, res->task))
		return; /* recorded already, or the job ended: never twice */
	r = &c->jr[res->job - 1];
	if (!r->att.cur && dlrt_attempts_init(&r->att, j->ntasks) < 0)
		return; /* out of memory: the task runs (or is answered) again */
	if (dlrt_attempts_is_answered(&r->att, res->task) ||
	    keep_answer(c, w->id, 0, res, 0, false, true) < 0)
		return; /* kept for this batch already; or out of memory, as above */
	/* A dispatch of the task in flight now is void, and none follows before
	 * the batch records this answer: either would be a second row. */
	dlrt_attempts_answered(&r->att, res->task);
	res->pred = NULL, res->score = NULL; /* the batch owns them now */
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
	if (rc == 0 && dlrt_coord_wants_tasks(c, w))
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
