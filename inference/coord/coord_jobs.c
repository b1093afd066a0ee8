/* coord_jobs.c - a job's life in the coordinator: its soft state and
 * results file when it starts, what its end sets off, and the rebuild of
 * every job after a restart or a takeover.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coord_int.h"
#include "common/clock.h"

int dlrt_coord_grow_jobs(struct coord *c)
{
	uint32_t cap;
	struct jrt *r;
	struct dlrt_sched_job *s;

	if (c->st.njobs < c->capjobs)
		return 0;
	cap = c->capjobs ? c->capjobs * 2 : 16;
	r = realloc(c->jr, cap * sizeof(*r));
	if (!r)
		return -1;
	c->jr = r;
	s = realloc(c->sj, cap * sizeof(*s));
	if (!s)
		return -1;
	c->sj = s;
	memset(c->jr + c->capjobs, 0, (cap - c->capjobs) * sizeof(*r));
	memset(c->sj + c->capjobs, 0, (cap - c->capjobs) * sizeof(*s));
	c->capjobs = cap;
	return 0;
}

void dlrt_coord_fill_job_info(struct coord *c, uint32_t ji, struct dlrt_ip_job_info *o)
{
	struct dlrt_infer_job *j = &c->st.jobs[ji];
	struct jrt *r = &c->jr[ji];

	memset(o, 0, sizeof(*o));
	o->id = j->id;
	snprintf(o->name, sizeof(o->name), "%s", j->sub.name);
	snprintf(o->model, sizeof(o->model), "%s", j->sub.model);
	snprintf(o->out, sizeof(o->out), "%s", r->out);
	snprintf(o->error, sizeof(o->error), "%s", j->error);
	o->state = j->state;
	o->batch = j->sub.batch;
	o->total = j->sub.count;
	o->done = j->done;
	o->labelled = j->labelled;
	o->correct = j->correct;
	o->rate = j->state == DLRT_IP_JOB_RUNNING ? (float)r->rate : 0;
	o->held = j->state == DLRT_IP_JOB_RUNNING ? (float)r->held_avg : 0;
	o->share = (float)c->sj[ji].target;
	o->elapsed = (j->state == DLRT_IP_JOB_RUNNING ? dlrt_coord_wall_now() : j->t_end) -
		     j->t_submit;
	if (o->elapsed < 0)
		o->elapsed = 0;
}

/* Effects of a job's end: results closed, waiters told, workers freed. */
static void job_ended(struct coord *c, uint32_t ji)
{
	struct dlrt_infer_job *j = &c->st.jobs[ji];
	struct jrt *r = &c->jr[ji];
	struct dlrt_ip_job_info info;

	if (r->csv) {
		/* Cancelled or failed: every recorded row was flushed already; what
		 * a failed flush left in the buffer must not land later. */
		if (r->csv_err[0])
			__fpurge(r->csv);
		if (fclose(r->csv) != 0 && !r->csv_err[0])
			dlrt_coord_log(c, "job %u: closing %s: %s", j->id, r->out, strerror(errno));
		r->csv = NULL;
	}
	dlrt_coord_fill_job_info(c, ji, &info);
	for (uint32_t i = 0; i < r->nwaiters; i++) {
		dlrt_ip_put_jobend(dlrt_coord_reply_buf(c, r->waiters[i]), &info);
		dlrt_coord_mark_dirty(c, r->waiters[i]);
	}
	r->nwaiters = 0;
	r->nrequeue = 0;
	for (uint32_t i = 0; i < c->nworkers; i++) {
		struct wk *w = c->workers[i];

		for (uint32_t k = 0; w->conn && k < w->nknown; k++) {
			if (w->known[k] != j->id)
				continue;
			dlrt_ip_put_jobref(&w->conn->out, DLRT_IP_DROP, j->id);
			w->known[k] = w->known[--w->nknown];
			dlrt_coord_mark_dirty(c, w->conn);
			break;
		}
	}
	dlrt_coord_log(c, "job %u %s: %u of %u queries answered%s%s", j->id,
		       dlrt_ip_job_state_name(j->state), j->done, j->sub.count,
		       j->error[0] ? ": " : "", j->error);
	dlrt_coord_event(c, j->id, dlrt_ip_job_state_name(j->state));
	dlrt_coord_regime_change(c);
	dlrt_coord_retarget(c);
	/* A sample of the jobs that go on, with their new shares, whatever the
	 * periodic samples do on a loaded node; and the file is whole up to this
	 * end before a waiter hears of it. */
	for (uint32_t k = 0; k < c->st.njobs; k++)
		if (c->st.jobs[k].state == DLRT_IP_JOB_RUNNING)
			dlrt_coord_tl_row(c, k, dlrt_now_us());
	dlrt_coord_tl_flush(c, &c->timeline);
	dlrt_coord_kick(c);
}

void dlrt_coord_end_job(struct coord *c, uint32_t ji, uint8_t state, const char *error)
{
	struct dlrt_infer_change ch = { .kind = DLRT_CH_JOB_END, .job = c->st.jobs[ji].id,
					.state = state };

	snprintf(ch.error, sizeof(ch.error), "%s", error ? error : "");
	if (dlrt_coord_commit(c, &ch) == 0)
		job_ended(c, ji);
}

/* Where a rebuilt results file is written before it replaces the old one. */
static void csv_tmp(const struct jrt *r, char *tmp, size_t len)
{
	snprintf(tmp, len, "%s.%d.tmp", r->out, (int)getpid());
}

/* A job's soft state, and (open) its results file started afresh, header
 * only: a new job's file directly, a rebuilt one (rebuild) as csv_tmp(),
 * renamed over the old file by csv_publish() once whole. -1: csv_err says
 * why. */
int dlrt_coord_job_open(struct coord *c, uint32_t ji, bool open_csv, bool rebuild)
{
	struct dlrt_infer_job *j = &c->st.jobs[ji];
	struct jrt *r = &c->jr[ji];
	char tmp[DLRT_IP_STR_MAX + 64];
	int fd;

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < NB; i++)
		r->bucket[i] = -1;
	memset(&c->sj[ji], 0, sizeof(c->sj[ji]));
	if (j->sub.out[0])
		snprintf(r->out, sizeof(r->out), "%s", j->sub.out);
	else
		snprintf(r->out, sizeof(r->out), "%.4000s/job-%u.csv", c->pool, j->id);
	if (!open_csv)
		return 0;
	csv_tmp(r, tmp, sizeof(tmp));
	fd = open(rebuild ? tmp : r->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	r->csv = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!r->csv) {
		dlrt_coord_csv_fail(c, ji, "write", errno);
		if (fd >= 0)
			close(fd);
		if (fd >= 0 && rebuild)
			unlink(tmp);
		return -1;
	}
	r->csv_len = fprintf(r->csv, "query_id,input_index,prediction,score,worker,"
			     "task_latency_ms\n");
	if (r->csv_len < 0 || (!rebuild && fflush(r->csv) != 0)) {
		dlrt_coord_csv_fail(c, ji, "write", errno);
		__fpurge(r->csv);
		fclose(r->csv);
		r->csv = NULL;
		if (rebuild)
			unlink(tmp);
		return -1;
	}
	return 0;
}

/* A rebuilt results file, whole, replaces the old one. The rename also cuts
 * off a coordinator fenced out meanwhile: it writes into the unlinked file,
 * never into this one. A failure leaves the old file as it was. */
static int csv_publish(struct coord *c, uint32_t ji)
{
	struct jrt *r = &c->jr[ji];
	char tmp[DLRT_IP_STR_MAX + 64];

	csv_tmp(r, tmp, sizeof(tmp));
	if (!r->csv_err[0] && fflush(r->csv) == 0 && rename(tmp, r->out) == 0)
		return 0;
	dlrt_coord_csv_fail(c, ji, "write", errno);
	__fpurge(r->csv);
	fclose(r->csv);
	r->csv = NULL;
	unlink(tmp);
	return -1;
}

/* After a restart or a takeover: every job's soft state, and the results
 * files of the running jobs rebuilt from the logged answers, so each holds
 * every recorded answer exactly once whatever the previous coordinator
 * managed to write. An ended job's file was whole before its end was
 * recorded (dlrt_coord_job_complete), and is left alone: rebuilding it would refill a
 * disk its owner cleaned up. A running job whose file cannot be rebuilt
 * fails once the journal is open (dlrt_coord_fail_unstorable). */
int dlrt_coord_resume_jobs(struct coord *c)
{
	const uint8_t *p = dlrt_buf_head(&c->log);
	size_t off = 0;
	uint32_t running = 0;

	while (c->capjobs <= c->st.njobs)
		if (dlrt_coord_grow_jobs(c) < 0)
			return -1;
	for (uint32_t ji = 0; ji < c->st.njobs; ji++) {
		struct dlrt_infer_job *j = &c->st.jobs[ji];
		bool run = j->state == DLRT_IP_JOB_RUNNING;

		dlrt_coord_job_open(c, ji, run, true);
		/* events.tsv continues across coordinators (tsvlog.h): a job that
		 * has answers logged its first task and answer there already. */
		c->jr[ji].answered_before = j->done > 0;
		if (run) {
			running++;
			dlrt_coord_log(c, "job %u resumes with %u of %u queries answered", j->id,
				       j->done, j->sub.count);
		}
	}
	while (off < c->log.len) {
		struct dlrt_ip_frame f;
		struct dlrt_infer_change ch;
		struct dlrt_err err;

		if (dlrt_ip_frame_peek(p + off, c->log.len - off, &f, &err) != 1)
			break;
		if (dlrt_infer_change_get(f.payload, f.len, &ch, &err) == 0 &&
		    ch.kind == DLRT_CH_TASK_DONE && ch.job >= 1 && ch.job <= c->st.njobs &&
		    c->jr[ch.job - 1].csv && !c->jr[ch.job - 1].csv_err[0] &&
		    dlrt_coord_csv_rows(c, ch.job - 1, &ch) < 0)
			dlrt_coord_csv_fail(c, ch.job - 1, "write", errno);
		dlrt_infer_change_free(&ch);
		off += f.frame_len;
	}
	for (uint32_t ji = 0; ji < c->st.njobs; ji++)
		if (c->jr[ji].csv)
			csv_publish(c, ji);
	if (c->st.njobs)
		dlrt_coord_log(c, "resumed %u jobs (%u still running) from %llu state changes",
			       c->st.njobs, running, (unsigned long long)c->st.seq);
	dlrt_coord_regime_change(c);
	dlrt_coord_retarget(c);
	return 0;
}

/* Running jobs whose results file could not be rebuilt fail now (the
 * journal is open to record it), with the line that says why. */
void dlrt_coord_fail_unstorable(struct coord *c)
{
	for (uint32_t ji = 0; ji < c->st.njobs; ji++) {
		struct jrt *r = &c->jr[ji];

		if (c->st.jobs[ji].state != DLRT_IP_JOB_RUNNING || !r->csv_err[0])
			continue;
		dlrt_coord_log(c, "job %u: %s", c->st.jobs[ji].id, r->csv_err);
		dlrt_coord_end_job(c, ji, DLRT_IP_JOB_FAILED, r->csv_err);
	}
}
