/* coord_requests.c - the peers' side of the coordinator: a worker, client or
 * standby joining once the core authenticated it (coord.c), and the clients'
 * requests (submit, status, wait, cancel, stop). Its part takes the
 * clients' frames, lets peers in, and ends a client's waits when it goes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "common/clock.h"

static int submit(struct coord *c, struct dlrt_conn *conn, struct dlrt_ip_submit *s)
{
	struct dlrt_infer_change ch = { .kind = DLRT_CH_JOB_ADD };
	uint32_t ji = c->st.njobs;
	char msg[DLRT_IP_STR_MAX + 64];

	/* The same submission again (its client lost the reply in a failover). */
	for (uint32_t i = 0; s->token && i < c->st.njobs; i++) {
		if (c->st.jobs[i].sub.token == s->token) {
			dlrt_ip_put_jobref(&conn->out, DLRT_IP_SUBMITTED, c->st.jobs[i].id);
			return 0;
		}
	}
	if (dlrt_coord_grow_jobs(c) < 0) {
		dlrt_coord_reply_error(conn, "the coordinator is out of memory");
		return 0;
	}
	ch.job = c->st.njobs + 1;
	ch.sub = *s;
	if (!ch.sub.name[0])
		snprintf(ch.sub.name, sizeof(ch.sub.name), "job%u", ch.job);
	if (dlrt_coord_commit(c, &ch) < 0) {
		dlrt_coord_reply_error(conn, "the coordinator refused the job (see its log)");
		return 0;
	}
	if (dlrt_coord_job_open(c, ji, true, false) < 0) {
		snprintf(msg, sizeof(msg), "%s", c->jr[ji].csv_err);
		dlrt_coord_end_job(c, ji, DLRT_IP_JOB_FAILED, msg);
		dlrt_coord_reply_error(conn, msg);
		return 0;
	}
	dlrt_coord_log(c, "job %u (%s): model %s, %u queries from %s in tasks of %u, results in %s",
		       ch.job, ch.sub.name, s->model, s->count, s->inputs, s->batch, c->jr[ji].out);
	dlrt_coord_event(c, ch.job, "submitted");
	dlrt_ip_put_jobref(&conn->out, DLRT_IP_SUBMITTED, ch.job);
	dlrt_coord_regime_change(c);
	dlrt_coord_retarget(c);
	dlrt_coord_kick(c);
	return 0;
}

static void status(struct coord *c, struct dlrt_conn *conn)
{
	struct dlrt_ip_status st = { .epoch = c->epoch };
	uint32_t nw = 0;

	st.uptime = (double)(dlrt_now_us() - c->start_us) / 1e6; /* this coordinator's */
	st.window = (double)c->bucket_ms * NB / 1000.0;
	st.workers = calloc(c->nworkers ? c->nworkers : 1, sizeof(*st.workers));
	st.jobs = calloc(c->st.njobs ? c->st.njobs : 1, sizeof(*st.jobs));
	if (!st.workers || !st.jobs) {
		dlrt_coord_reply_error(conn, "the coordinator is out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < c->nworkers && nw < DLRT_IP_MAX_LIST; i++) {
		struct wk *w = c->workers[i];

		if (!w->conn)
			continue;
		st.workers[nw] = (struct dlrt_ip_worker_info){ .id = w->id,
			.job = w->cur >= 0 ? c->st.jobs[w->cur].id : 0, .inflight = w->n,
			.tasks = w->tasks };
		snprintf(st.workers[nw].name, sizeof(st.workers[nw].name), "%s", w->name);
		nw++;
	}
	st.nworkers = nw;
	/* The newest jobs if there are more than a reply can hold. */
	for (uint32_t i = c->st.njobs > DLRT_IP_MAX_LIST ? c->st.njobs - DLRT_IP_MAX_LIST : 0;
	     i < c->st.njobs; i++)
		dlrt_coord_fill_job_info(c, i, &st.jobs[st.njobs++]);
	if (dlrt_ip_put_status(&conn->out, &st) < 0)
		dlrt_coord_reply_error(conn, "the status is too large to send");
out:
	dlrt_ip_status_free(&st);
}

static void wait_job(struct coord *c, struct dlrt_conn *conn, uint32_t job)
{
	struct dlrt_infer_job *j = dlrt_infer_state_job(&c->st, job);
	struct jrt *r;

	if (!j) {
		dlrt_coord_reply_error(conn, "no such job: see dlrt-infer status");
		return;
	}
	r = &c->jr[job - 1];
	if (j->state != DLRT_IP_JOB_RUNNING) {
		struct dlrt_ip_job_info info;

		dlrt_coord_fill_job_info(c, job - 1, &info);
		dlrt_ip_put_jobend(&conn->out, &info);
		return;
	}
	if (r->nwaiters == r->capwaiters) {
		uint32_t cap = r->capwaiters ? r->capwaiters * 2 : 4;
		struct dlrt_conn **q = realloc(r->waiters, cap * sizeof(*q));

		if (!q) {
			dlrt_coord_reply_error(conn, "the coordinator is out of memory");
			return;
		}
		r->waiters = q;
		r->capwaiters = cap;
	}
	r->waiters[r->nwaiters++] = conn;
}

/* An authenticated peer introduces itself: the role its HELLO names. */
static int on_hello(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_hello *h)
{
	struct peer *p = conn->state;
	struct wk *w;

	if (h->role == DLRT_IP_ROLE_STANDBY)
		return dlrt_coord_standby_attach(c, conn, h);
	p->role = h->role;
	if (h->role == DLRT_IP_ROLE_CLIENT) {
		struct dlrt_ip_welcome wel = { .epoch = c->epoch, .id = 0 };

		dlrt_ip_put_welcome(&conn->out, &wel);
		return 0;
	}
	if (c->nworkers == c->capworkers) {
		uint32_t cap = c->capworkers ? c->capworkers * 2 : 16;
		struct wk **q = realloc(c->workers, cap * sizeof(*q));

		if (!q)
			return -1;
		c->workers = q;
		c->capworkers = cap;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -1;
	w->id = c->nworkers + 1;
	w->cur = -1;
	w->conn = conn;
	w->last_seen_ms = dlrt_now_ms();
	snprintf(w->name, sizeof(w->name), "%s", h->name);
	c->workers[c->nworkers++] = w;
	c->alive++;
	p->w = w;
	{
		struct dlrt_ip_welcome wel = { .epoch = c->epoch, .id = w->id,
					       .heartbeat_ms = (uint32_t)c->hb.interval_ms };

		dlrt_ip_put_welcome(&conn->out, &wel);
	}
	dlrt_coord_log(c, "worker %u (%s) joined; %u workers", w->id, w->name, c->alive);
	dlrt_coord_retarget(c);
	dlrt_coord_fill_worker(c, w);
	return 0;
}

/* ---- one handler per client frame (the part below) ------------------------------- */

static int on_submit(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_frame *f,
		     struct dlrt_err *err)
{
	struct dlrt_ip_submit s;
	int rc = dlrt_ip_get_submit(f->payload, f->len, &s, err);

	if (rc == 0)
		rc = submit(c, conn, &s);
	dlrt_ip_submit_free(&s);
	return rc;
}

static int on_statusreq(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_frame *f,
			struct dlrt_err *err)
{
	if (dlrt_ip_get_empty(f->payload, f->len, err) < 0)
		return -1;
	status(c, conn);
	return 0;
}

static int on_cancel(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_frame *f,
		     struct dlrt_err *err)
{
	struct dlrt_ip_jobref r;
	struct dlrt_infer_job *j;

	if (dlrt_ip_get_jobref(f->payload, f->len, &r, err) < 0)
		return -1;
	j = dlrt_infer_state_job(&c->st, r.job);
	if (!j) {
		dlrt_coord_reply_error(conn, "no such job: see dlrt-infer status");
	} else if (j->state != DLRT_IP_JOB_RUNNING) {
		dlrt_coord_reply_error(conn, "the job has already ended");
	} else {
		dlrt_coord_end_job(c, r.job - 1, DLRT_IP_JOB_CANCELLED, "cancelled by the user");
		dlrt_ip_put_empty(&conn->out, DLRT_IP_OK);
	}
	return 0;
}

static int on_wait(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_frame *f,
		   struct dlrt_err *err)
{
	struct dlrt_ip_jobref r;

	if (dlrt_ip_get_jobref(f->payload, f->len, &r, err) < 0)
		return -1;
	wait_job(c, conn, r.job);
	return 0;
}

static int on_stop(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_frame *f,
		   struct dlrt_err *err)
{
	if (dlrt_ip_get_empty(f->payload, f->len, err) < 0)
		return -1;
	dlrt_coord_log(c, "stop requested: the pool shuts down");
	/* The standby stops next: first it holds what was answered. */
	dlrt_coord_write_batch(c);
	dlrt_coord_sb_drain(c);
	dlrt_ip_put_empty(dlrt_coord_reply_buf(c, conn), DLRT_IP_OK);
	if (c->sb) {
		dlrt_ip_put_empty(&c->sb->out, DLRT_IP_STOP);
		dlrt_coord_mark_dirty(c, c->sb);
	}
	c->stopping = true;
	dlrt_coord_kick(c);
	return 0;
}

/* A client that goes is no longer told of its jobs' ends. */
static void forget_waits(struct coord *c, struct dlrt_conn *conn)
{
	for (uint32_t ji = 0; ji < c->st.njobs; ji++) {
		struct jrt *r = &c->jr[ji];

		for (uint32_t i = 0; i < r->nwaiters; i++)
			if (r->waiters[i] == conn)
				r->waiters[i--] = r->waiters[--r->nwaiters];
	}
}

static const struct dlrt_coord_frame frames[] = {
	{ DLRT_IP_SUBMIT, DLRT_IP_ROLE_CLIENT, on_submit },
	{ DLRT_IP_STATUSREQ, DLRT_IP_ROLE_CLIENT, on_statusreq },
	{ DLRT_IP_CANCEL, DLRT_IP_ROLE_CLIENT, on_cancel },
	{ DLRT_IP_WAIT, DLRT_IP_ROLE_CLIENT, on_wait },
	{ DLRT_IP_STOP, DLRT_IP_ROLE_CLIENT, on_stop },
};

const struct dlrt_coord_part dlrt_coord_requests_part = {
	.frames = frames,
	.nframes = sizeof(frames) / sizeof(frames[0]),
	.join = on_hello,
	.closed = forget_waits,
};
