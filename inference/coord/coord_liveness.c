/* coord_liveness.c - workers that die or go silent: their tasks go back to
 * the front of their jobs' queues, and one that speaks again is back
 * (liveness.h has the heartbeat rules). Its part sees every frame of a
 * worker, takes HEARTBEAT and DRAIN, and loses a worker whose connection
 * closes; the heartbeat check is a timer coord_run.c starts.
 */
#include <stdio.h>

#include "coord_int.h"
#include "common/clock.h"

/* A worker died or went silent: its dispatches are void (a late answer is
 * dropped) and its tasks go back to the front of their jobs' queues, in order. */
static void worker_lost(struct coord *c, struct wk *w, const char *how)
{
	uint32_t n = w->n;

	for (uint32_t k = w->n; k-- > 0;) {
		uint32_t ji = w->fl[k].job - 1;

		c->jr[ji].inflight--;
		dlrt_attempts_release(&c->jr[ji].att, w->fl[k].task, w->fl[k].attempt);
		dlrt_coord_requeue(c, ji, w->fl[k].task);
	}
	if (w->cur >= 0 && c->sj[w->cur].held > 0)
		c->sj[w->cur].held--;
	w->n = 0;
	w->cur = -1;
	if (!w->draining)
		c->alive--; /* a draining worker no longer counts already */
	w->lost = true;
	dlrt_coord_log(c, "worker %u (%s) %s with %u tasks in flight (requeued); %u workers", w->id,
		       w->name, how, n, c->alive);
	dlrt_coord_event(c, 0, "worker_lost");
	dlrt_coord_retarget(c);
	dlrt_coord_kick(c);
}

/* Declares silent workers dead; closes connections silent for much longer. */
int64_t dlrt_coord_heartbeat_check(struct dlrt_evloop *loop, void *arg)
{
	struct coord *c = arg;
	int64_t t = dlrt_now_ms(), gap = t - c->hb_last_check_ms;

	(void)loop;
	c->hb_last_check_ms = t;
	if (gap > c->hb.silence_ms / 2 && gap > 2 * c->hb.check_ms) {
		/* This process was stopped or starved, not the workers: their heartbeats
		 * wait unread in the sockets. Read them before judging anyone. */
		dlrt_coord_log(c,
			       "the coordinator itself did not run for %.2f s: heartbeats are checked "
			       "again after reading them", (double)gap / 1000);
		return c->hb.check_ms;
	}
	for (uint32_t i = 0; i < c->nworkers; i++) {
		struct wk *w = c->workers[i];
		char how[96];

		if (!w->conn || !dlrt_hb_dead(&c->hb, w->last_seen_ms, t))
			continue;
		if (!w->lost) {
			snprintf(how, sizeof(how), "silent for %.2f s (heartbeat bound %.2f s)",
				 (double)(t - w->last_seen_ms) / 1000, (double)c->hb.bound_ms / 1000);
			worker_lost(c, w, how);
		} else if (t - w->last_seen_ms > c->hb.give_up_ms) {
			dlrt_coord_log(c, "worker %u (%s) silent for %.0f s: connection closed",
				       w->id, w->name, (double)(t - w->last_seen_ms) / 1000);
			dlrt_conn_close(w->conn); /* on_close clears w->conn */
		}
	}
	return c->hb.check_ms;
}

/* Any frame from a worker shows it alive; one declared dead comes back empty-handed:
 * answers of its old dispatches are dropped as late. */
static void worker_seen(struct coord *c, struct dlrt_conn *conn)
{
	struct peer *p = conn->state;
	struct wk *w = p->w;

	if (p->role != DLRT_IP_ROLE_WORKER)
		return;
	w->last_seen_ms = dlrt_now_ms();
	if (!w->lost || !w->conn)
		return;
	w->lost = false;
	if (!w->draining)
		c->alive++;
	dlrt_coord_log(c, "worker %u (%s) is back; %u workers", w->id, w->name, c->alive);
	dlrt_coord_retarget(c);
	dlrt_coord_kick(c);
}

/* HEARTBEAT: nothing but the frame itself (worker_seen saw it). */
static int on_heartbeat(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_frame *f,
			struct dlrt_err *err)
{
	(void)c;
	(void)conn;
	return dlrt_ip_get_empty(f->payload, f->len, err);
}

/* DRAIN: the worker is near its time limit and gets no new tasks. */
static int on_drain(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_frame *f,
		    struct dlrt_err *err)
{
	struct wk *w = ((struct peer *)conn->state)->w;
	struct dlrt_ip_drain d;

	if (dlrt_ip_get_drain(f->payload, f->len, &d, err) < 0)
		return -1;
	if (!w->draining)
		dlrt_coord_log(c, "worker %u (%s) is %u s from its %s: no new tasks", w->id, w->name,
			       d.left_s, d.why[0] ? d.why : "time limit");
	if (!w->draining && !w->lost)
		c->alive--; /* shares are computed for the workers that take tasks */
	w->draining = true;
	dlrt_coord_event(c, 0, "worker_draining");
	dlrt_coord_retarget(c);
	return 0;
}

/* A worker's connection closes: lost, unless it was lost already. */
static void worker_closed(struct coord *c, struct dlrt_conn *conn)
{
	struct wk *w = ((struct peer *)conn->state)->w;

	if (!w)
		return;
	if (!w->lost)
		worker_lost(c, w, "left (connection closed)");
	else
		dlrt_coord_log(c, "worker %u (%s): connection closed", w->id, w->name);
	w->conn = NULL;
}

static const struct dlrt_coord_frame frames[] = {
	{ DLRT_IP_HEARTBEAT, DLRT_IP_ROLE_WORKER, on_heartbeat },
	{ DLRT_IP_DRAIN, DLRT_IP_ROLE_WORKER, on_drain },
};

const struct dlrt_coord_part dlrt_coord_liveness_part = {
	.frames = frames,
	.nframes = sizeof(frames) / sizeof(frames[0]),
	.seen = worker_seen,
	.closed = worker_closed,
};
