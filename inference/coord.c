/* coord.c - the dlrt-infer coordinator: one epoll loop, never blocks on a peer.
 *
 * Durable state (jobs, answered tasks) changes only through
 * dlrt_coord_commit(), which applies one struct dlrt_infer_change (state.h);
 * everything else is soft state rebuilt from connections: workers, tasks in
 * flight, rates, shares. Replies to the peer being served go out when its
 * on_data returns; messages to other peers (tasks for idle workers, JOBEND
 * for waiters) are queued and flushed from a zero-delay timer, so no handler
 * ever writes to, or closes, a connection other than its own.
 *
 * This file holds the loop and its wiring: start and shutdown, connections,
 * the deferred writes, and the frame handler table. The concerns live in
 * coord_*.c around the shared state of coord_int.h.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "coord_int.h"
#include "auth.h"
#include "claim.h"
#include "common/clock.h"
#include "services/evloop.h"
#include "gate.h"
#include "infer.h"
#include "journal.h"
#include "common/netaddr.h"
#include "pool.h"
#include "standby.h"
#include "services/tcpserver.h"
#include "tsvlog.h"

double dlrt_coord_wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void dlrt_coord_log(struct coord *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "dlrt-infer coordinator [%.3f]: ",
		(double)(dlrt_now_us() - c->start_us) / 1e6);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Pool time: continues across coordinators (tsvlog.h). */
double dlrt_coord_tsec(struct coord *c, int64_t us)
{
	return (double)(us - c->t0_us) / 1e6;
}

/* Deferred writes: the zero-delay timer that fills idle workers and flushes
 * every connection marked dirty since it last ran. */
static int64_t kick_timer(struct dlrt_evloop *loop, void *arg)
{
	struct coord *c = arg;

	(void)loop;
	c->kick_pending = false;
	/* Replies go out below: not one after a newer epoch was claimed. One
	 * stat(2) per batch; the claims are scanned only when it changed. */
	if (dlrt_claim_changed(c->pool, &c->claims_seen) && dlrt_coord_fence_check(c))
		return -1;
	for (uint32_t i = 0; i < c->nworkers; i++) {
		struct wk *w = c->workers[i];
		uint32_t before;

		if (!w->conn || w->n >= c->o->prefetch)
			continue;
		before = w->n;
		dlrt_coord_fill_worker(c, w);
		if (w->n != before)
			dlrt_coord_mark_dirty(c, w->conn);
	}
	while (c->ndirty) {
		struct dlrt_conn *conn = c->dirty[--c->ndirty];

		((struct peer *)conn->state)->dirty = false;
		dlrt_conn_flush(conn); /* may close it: on_close does not touch this list */
	}
	if (c->stopping && !c->kick_pending)
		dlrt_evloop_stop(c->loop);
	return -1;
}

void dlrt_coord_kick(struct coord *c)
{
	if (c->kick_pending)
		return;
	if (dlrt_evloop_add_timer(c->loop, 0, kick_timer, c) > 0)
		c->kick_pending = true;
}

void dlrt_coord_mark_dirty(struct coord *c, struct dlrt_conn *conn)
{
	struct peer *p = conn->state;

	if (p->dirty)
		return;
	if (c->ndirty == c->capdirty) {
		uint32_t cap = c->capdirty ? c->capdirty * 2 : 64;
		struct dlrt_conn **q = realloc(c->dirty, cap * sizeof(*q));

		if (!q)
			return; /* the next kick of this peer retries */
		c->dirty = q;
		c->capdirty = cap;
	}
	c->dirty[c->ndirty++] = conn;
	p->dirty = true;
	dlrt_coord_kick(c);
}

/* The frames an authenticated peer may send, one handler each: the role
 * that sends the type, and what the coordinator does with it. */
static const struct {
	uint8_t role;
	dlrt_coord_handler fn;
} handlers[DLRT_IP_TYPE_MAX] = {
	[DLRT_IP_SEQACK]    = { DLRT_IP_ROLE_STANDBY, dlrt_coord_on_seqack },
	[DLRT_IP_HEARTBEAT] = { DLRT_IP_ROLE_WORKER, dlrt_coord_on_heartbeat },
	[DLRT_IP_DRAIN]     = { DLRT_IP_ROLE_WORKER, dlrt_coord_on_drain },
	[DLRT_IP_RESENT]    = { DLRT_IP_ROLE_WORKER, dlrt_coord_on_resent },
	[DLRT_IP_RESULT]    = { DLRT_IP_ROLE_WORKER, dlrt_coord_on_result },
	[DLRT_IP_TASKFAIL]  = { DLRT_IP_ROLE_WORKER, dlrt_coord_on_taskfail },
	[DLRT_IP_SUBMIT]    = { DLRT_IP_ROLE_CLIENT, dlrt_coord_on_submit },
	[DLRT_IP_STATUSREQ] = { DLRT_IP_ROLE_CLIENT, dlrt_coord_on_statusreq },
	[DLRT_IP_CANCEL]    = { DLRT_IP_ROLE_CLIENT, dlrt_coord_on_cancel },
	[DLRT_IP_WAIT]      = { DLRT_IP_ROLE_CLIENT, dlrt_coord_on_wait },
	[DLRT_IP_STOP]      = { DLRT_IP_ROLE_CLIENT, dlrt_coord_on_stop },
};

static const char *role_sender(uint8_t role)
{
	switch (role) {
	case DLRT_IP_ROLE_STANDBY:
		return "the standby";
	case DLRT_IP_ROLE_WORKER:
		return "a worker";
	default:
		return "a client";
	}
}

static int handle(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_frame *f,
		  struct dlrt_err *err)
{
	struct peer *p = conn->state;

	if (!p->role) {
		if (dlrt_coord_handshake(c, conn, f, err) < 0)
			return -1;
		if (!p->role && p->challenged && f->type == DLRT_IP_AUTH) {
			/* The pool's own peer: out of the gate, whole frames from now on. */
			dlrt_gate_remove(&c->gate, &p->gate);
			conn->in.limit = MAX_REQUEST;
			if (dlrt_coord_on_hello(c, conn, &p->hello) < 0)
				return dlrt_err_set(err, "HELLO refused");
			return 0;
		}
		return 0;
	}
	if (p->role == DLRT_IP_ROLE_STANDBY && conn != c->sb)
		return dlrt_err_set(err, "a standby that was let go");
	if (p->role == DLRT_IP_ROLE_WORKER)
		dlrt_coord_worker_seen(c, p->w); /* any frame shows it alive, even a wrong one */
	if (f->type < DLRT_IP_TYPE_MAX && handlers[f->type].fn && handlers[f->type].role == p->role)
		return handlers[f->type].fn(c, conn, f, err);
	return dlrt_err_set(err, "%s sent %s", role_sender(p->role), dlrt_ip_type_name(f->type));
}

static enum dlrt_proto_result on_frames(struct dlrt_conn *conn, void *ctx)
{
	struct coord *c = ctx;
	struct dlrt_err err;

	for (;;) {
		struct dlrt_ip_frame f;
		int rc;

		/* Before WELCOME: a small HELLO or AUTH, or nothing (gate.h). */
		if (!((struct peer *)conn->state)->role &&
		    dlrt_gate_check(dlrt_buf_head(&conn->in), conn->in.len, &err) < 0) {
			dlrt_coord_reply_error(conn, err.msg);
			dlrt_coord_log(c, "closing a connection: %s", err.msg);
			return DLRT_PROTO_CLOSE;
		}
		rc = dlrt_ip_frame_peek(dlrt_buf_head(&conn->in), conn->in.len, &f, &err);
		if (rc == 0) {
			/* A frame longer than the buffer limit can never complete. */
			if (conn->in.len >= conn->in.limit) {
				dlrt_coord_log(c, "closing a connection: frame too large");
				return DLRT_PROTO_CLOSE;
			}
			return DLRT_PROTO_OK;
		}
		if (rc < 0)
			/* The peer learns why (an older one reads our version from it). */
			dlrt_coord_reply_error(conn, err.msg);
		if (rc < 0 || handle(c, conn, &f, &err) < 0) {
			dlrt_coord_log(c, "closing a connection: %s", err.msg);
			return DLRT_PROTO_CLOSE;
		}
		dlrt_buf_consume(&conn->in, f.frame_len);
	}
}

/* A client's replies (SUBMITTED, OK, JOBEND, a status) may tell of changes
 * the standby does not hold yet: what this call added waits with the group
 * (dlrt_coord_reply_buf). Workers' replies are ACKs (dlrt_coord_put_ack) and
 * tasks, which tell of nothing durable and go out at once. */
static enum dlrt_proto_result on_data(struct dlrt_conn *conn, void *ctx)
{
	struct coord *c = ctx;
	size_t before = conn->out.len;
	enum dlrt_proto_result r = on_frames(conn, ctx);
	struct peer *p = conn->state;
	struct dlrt_buf *b;

	if (r != DLRT_PROTO_OK || p->role != DLRT_IP_ROLE_CLIENT || conn->out.len <= before)
		return r;
	b = dlrt_coord_reply_buf(c, conn);
	if (b == &conn->out)
		return r;
	if (dlrt_buf_append(b, dlrt_buf_head(&conn->out) + before, conn->out.len - before) < 0)
		r = DLRT_PROTO_CLOSE; /* a client that does not read its replies */
	conn->out.len = before;
	return r;
}

/* A new connection starts in the gate (gate.h): a small input limit and a
 * deadline until it authenticates; when too many wait, the oldest goes. */
static int on_open(struct dlrt_conn *conn, void *ctx)
{
	struct coord *c = ctx;
	struct peer *p = calloc(1, sizeof(*p));
	struct dlrt_gate_ent *old;
	int64_t now = dlrt_now_ms();

	if (!p)
		return -1;
	conn->state = p;
	conn->in.limit = DLRT_GATE_INPUT_MAX;
	dlrt_buf_init(&p->held, conn->out.limit);
	p->gate.owner = conn;
	dlrt_gate_add(&c->gate, &p->gate, now);
	while ((old = dlrt_gate_due(&c->gate, now, DLRT_GATE_DEADLINE_MS, DLRT_GATE_MAX_PENDING))) {
		c->gate_evicted++;
		dlrt_conn_close(old->owner); /* on_close unqueues it */
	}
	return 0;
}

/* Closes connections that did not authenticate in time; one log line for
 * all of them, however many a flood brings. */
static int64_t gate_tick(struct dlrt_evloop *loop, void *arg)
{
	struct coord *c = arg;
	struct dlrt_gate_ent *e;
	uint32_t late = 0;

	(void)loop;
	while ((e = dlrt_gate_due(&c->gate, dlrt_now_ms(), DLRT_GATE_DEADLINE_MS,
				  DLRT_GATE_MAX_PENDING))) {
		late++;
		dlrt_conn_close(e->owner);
	}
	if (late || c->gate_evicted)
		dlrt_coord_log(c,
			       "closed %u connections that did not authenticate within %d s, and %u "
			       "beyond the %d that may wait for it at once", late,
			       DLRT_GATE_DEADLINE_MS / 1000, c->gate_evicted,
			       DLRT_GATE_MAX_PENDING);
	c->gate_evicted = 0;
	return 1000;
}

static void on_close(struct dlrt_conn *conn, void *ctx)
{
	struct coord *c = ctx;
	struct peer *p = conn->state;

	if (!p)
		return;
	dlrt_gate_remove(&c->gate, &p->gate);
	dlrt_coord_held_forget(c, conn);
	if (conn == c->sb) {
		c->sb = NULL;
		c->sb_ready = false;
		dlrt_coord_log(c, "standby lost: it closed its connection");
		if (!dlrt_coord_fence_check(c)) {
			c->promote_ms = dlrt_now_ms();
			dlrt_coord_release_held(c, true);
		}
	}
	if (p->dirty) {
		for (uint32_t i = 0; i < c->ndirty; i++)
			if (c->dirty[i] == conn) {
				c->dirty[i] = c->dirty[--c->ndirty];
				break;
			}
	}
	for (uint32_t ji = 0; ji < c->st.njobs; ji++) {
		struct jrt *r = &c->jr[ji];

		for (uint32_t i = 0; i < r->nwaiters; i++)
			if (r->waiters[i] == conn)
				r->waiters[i--] = r->waiters[--r->nwaiters];
	}
	if (p->w) {
		struct wk *w = p->w;

		if (!w->lost)
			dlrt_coord_worker_lost(c, w, "left (connection closed)");
		else
			dlrt_coord_log(c, "worker %u (%s): connection closed", w->id, w->name);
		w->conn = NULL;
	}
	free(p);
	conn->state = NULL;
}

static void on_signal(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct coord *c = arg;
	struct signalfd_siginfo si;

	(void)events;
	if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		dlrt_coord_log(c, "signal %u: the pool shuts down", si.ssi_signo);
		dlrt_evloop_stop(loop);
	}
}

/* The state to start from: the standby's copy (a takeover), else the
 * journal's (a restart), cutting a torn tail. */
static int load_state(struct coord *c, struct dlrt_err *err)
{
	struct dlrt_journal_scan scan;

	if (c->o->takeover) {
		if (dlrt_buf_append(&c->log, c->o->log, c->o->loglen) < 0)
			return dlrt_err_set(err, "out of memory taking over the state");
		return dlrt_journal_apply_log(c->o->log, c->o->loglen, &c->st, err);
	}
	if (dlrt_journal_load(c->pool, &c->st, &c->log, &scan, err) < 0)
		return -1;
	if (scan.torn)
		dlrt_coord_log(c,
			       "journal: cut a torn or corrupt tail at byte %zu after %llu good records "
			       "(%s); it was never applied", scan.good,
			       (unsigned long long)scan.records, scan.why);
	else if (scan.records)
		dlrt_coord_log(c, "journal: %llu records replayed",
			       (unsigned long long)scan.records);
	return 0;
}

/* Answers go to the journal's page cache at once; this bounds how long they
 * wait for the disk (journal.h). */
static int64_t journal_tick(struct dlrt_evloop *loop, void *arg)
{
	struct coord *c = arg;
	struct dlrt_err err;

	(void)loop;
	if (dlrt_journal_sync(&c->jn, &err) < 0) {
		/* Records since the last sync may be gone: stop acknowledging. */
		dlrt_coord_break(c, err.msg);
		return -1;
	}
	return DLRT_JOURNAL_SYNC_MS;
}

/* The timeline files: a new pool starts them at t = 0; a continued one
 * appends and keeps the pool's time (tsvlog.h). Without them the pool still
 * serves (diagnostics only). */
static void open_timeline(struct coord *c, bool continuing)
{
	struct dlrt_tsv_scan sc = { 0 };
	struct dlrt_err e2;
	char ev[64];

	c->timeline = dlrt_tsv_open(c->pool, "timeline.tsv",
				    "t\tjob\trate\tworkers\tshare\tdone\n", !continuing, &sc,
				    &e2);
	if (!c->timeline)
		dlrt_coord_log(c, "no timeline: %s", e2.msg);
	c->events = dlrt_tsv_open(c->pool, "events.tsv", "t\tjob\tevent\n", !continuing, &sc,
				  &e2);
	if (!c->events)
		dlrt_coord_log(c, "no events: %s", e2.msg);
	if (continuing) {
		double t = dlrt_tsv_resume_t(&sc, dlrt_coord_wall_now());

		c->t0_us = dlrt_now_us() - (int64_t)(t * 1e6) - 1;
		dlrt_coord_log(c, "the timeline continues at pool time %.3f s",
			       dlrt_coord_tsec(c, dlrt_now_us()));
	}
	/* Lets tools relate t to other clocks (failure benchmarks). */
	snprintf(ev, sizeof(ev), "clock:%.6f",
		 dlrt_coord_wall_now() - dlrt_coord_tsec(c, dlrt_now_us()));
	dlrt_coord_event(c, 0, ev);
	if (continuing) {
		/* Marks the change of coordinator (dlrt-infer plot draws it). */
		snprintf(ev, sizeof(ev), "%s:%llu",
			 c->o->takeover || c->o->yield ? "takeover" : "restart",
			 (unsigned long long)c->epoch);
		dlrt_coord_event(c, 0, ev);
	}
}

/* Lets the standby go (it must not take over a pool that stops), removes
 * this coordinator's access record and releases everything. */
static void coord_close(struct coord *c)
{
	if (c->sb && !c->fenced) {
		/* The standby must not take over a pool that stops. */
		struct dlrt_err e3;
		uint64_t none = 0;

		/* What was answered reaches the standby, and the replies held for it
		 * their peers, before the connections close. */
		dlrt_coord_sb_drain(c);
		while (c->ndirty) {
			struct dlrt_conn *conn = c->dirty[--c->ndirty];

			((struct peer *)conn->state)->dirty = false;
			dlrt_conn_flush(conn);
		}

		dlrt_ip_put_empty(&c->sb->out, DLRT_IP_STOP);
		dlrt_standby_push(c->sb, 0, 200, &none, &e3);
	}
	/* Remove our access record (not a newer coordinator's): workers then exit. */
	{
		struct dlrt_pool_access now;
		struct dlrt_err e2;
		char path[4200];

		/* Not when fenced: an older coordinator's late record is replaced by
		 * the newer one's, and removing it would make its workers leave. */
		if (!c->fenced && dlrt_pool_read_access(c->pool, &now, &e2) == 0 &&
		    now.epoch == c->epoch) {
			snprintf(path, sizeof(path), "%s/access", c->pool);
			unlink(path);
		}
	}
	if (c->srv)
		dlrt_tcpserver_stop(c->srv); /* before the files: on_close may still log events */
	/* Running jobs' rows were flushed with their answers: nothing is left
	 * to write, but a failing close is still worth a line. */
	for (uint32_t i = 0; i < c->st.njobs; i++)
		if (c->jr[i].csv && fclose(c->jr[i].csv) != 0)
			dlrt_coord_log(c, "job %u: closing %s: %s", c->st.jobs[i].id, c->jr[i].out,
				       strerror(errno));
	if (c->timeline) {
		if (c->fenced)
			__fpurge(c->timeline);
		if (fclose(c->timeline) != 0)
			dlrt_coord_log(c, "closing timeline.tsv: %s: its last rows are lost",
				       strerror(errno));
	}
	if (c->events) {
		if (c->fenced)
			__fpurge(c->events);
		if (fclose(c->events) != 0)
			dlrt_coord_log(c, "closing events.tsv: %s: its last rows are lost",
				       strerror(errno));
	}
	if (c->sfd >= 0)
		close(c->sfd);
	if (c->loop)
		dlrt_evloop_destroy(c->loop);
	dlrt_journal_close(&c->jn);
	dlrt_buf_free(&c->log);
	for (uint32_t i = 0; i < c->nworkers; i++) {
		free(c->workers[i]->known);
		free(c->workers[i]);
	}
	free(c->workers);
	for (uint32_t i = 0; i < c->st.njobs; i++) {
		free(c->jr[i].requeue);
		free(c->jr[i].waiters);
		dlrt_attempts_free(&c->jr[i].att);
	}
	free(c->jr);
	free(c->sj);
	free(c->dirty);
	free(c->held);
	dlrt_infer_state_free(&c->st);
}

int dlrt_coord_run(const struct dlrt_coord_opts *o, struct dlrt_err *err)
{
	struct coord c = { .o = o, .sfd = -1 };
	struct dlrt_pool_access a, old;
	struct dlrt_tcpserver_cfg cfg = {
		.max_request = MAX_REQUEST, /* on_open lowers it until authentication */
		.max_reply = (size_t)256 << 20,
		.idle_timeout_ms = 0,
		.max_conns = 4096,
	};
	static const struct dlrt_proto proto = { on_data, on_open, on_close };
	sigset_t ss;
	int rc = -1;
	double window = o->window > 0 ? o->window : 0.5;
	bool continuing = false;

	c.start_us = dlrt_now_us();
	c.t0_us = c.start_us;
	c.last_accrue_us = c.start_us;
	c.bucket_ms = (int64_t)(window * 1000 / NB);
	if (c.bucket_ms < 5)
		c.bucket_ms = 5;
	if (o->prefetch < 1 || o->prefetch > MAX_PREFETCH)
		return dlrt_err_set(err, "--prefetch must be 1..%d", MAX_PREFETCH);
	if (dlrt_hb_config(o->heartbeat, &c.hb, err) < 0)
		return -1;
	{
		char why[256];

		if (dlrt_auth_pick(o->auth, &c.auth_mode, why, sizeof(why), err) < 0)
			return -1;
		if (c.auth_mode == DLRT_AUTH_MUNGE)
			dlrt_coord_log(&c,
				       "connections authenticate with MUNGE (pool owner uid %d only)",
				       (int)geteuid());
		else
			dlrt_coord_log(&c,
				       "connections authenticate with the pool secret's challenge-response "
				       "(MUNGE not used: %s)", why);
	}
	snprintf(c.pool, sizeof(c.pool), "%s", o->pool);
	if (dlrt_pool_prepare(c.pool, err) < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	if (dlrt_pool_read_access(c.pool, &old, err) < 0)
		return -1;
	if (!o->takeover && old.epoch) {
		/* A requeued element 0 while the standby it left behind now serves. */
		struct dlrt_ipc probe;
		struct dlrt_err e2;

		if (dlrt_ipc_open(&probe, c.pool, DLRT_IP_ROLE_CLIENT, "coordinator-probe", 1000,
				  &e2) == 0) {
			dlrt_ipc_close(&probe);
			if (o->yield)
				return DLRT_COORD_YIELDED;
			return dlrt_err_set(err, "the coordinator of %s (epoch %llu on %s) still runs: "
					    "not starting another (dlrt-infer pool stop stops it)",
					    c.pool, (unsigned long long)old.epoch, old.host);
		}
	}
	/* A standby or a worker taking over competes for the epoch after the
	 * one it saw die; element 0 and pool restart go past every claim. */
	c.epoch = old.epoch + 1;
	if (!o->takeover && !o->yield) {
		uint64_t high;

		if (dlrt_claim_highest(c.pool, &high, err) < 0)
			return -1;
		if (high >= c.epoch)
			c.epoch = high + 1;
	}
	if (o->min_epoch > c.epoch)
		c.epoch = o->min_epoch;
	/* Before anything is read or written: the journal's torn tail is cut
	 * by whoever loads it, so only the epoch's one winner may. */
	switch (dlrt_claim_take(c.pool, c.epoch, err)) {
	case 0:
		break;
	case 1:
		if (o->yield || o->takeover) {
			dlrt_coord_log(&c, "epoch %llu was claimed by another coordinator: not serving",
				       (unsigned long long)c.epoch);
			return DLRT_COORD_YIELDED;
		}
		return dlrt_err_set(err, "epoch %llu of %s was claimed by another coordinator "
				    "meanwhile: it serves the pool (dlrt-infer status shows it)",
				    (unsigned long long)c.epoch, c.pool);
	default:
		return -1;
	}
	dlrt_claim_changed(c.pool, &c.claims_seen);
	if (dlrt_pool_new_secret(c.secret, err) < 0)
		return -1;
	if (o->address && *o->address)
		snprintf(a.address, sizeof(a.address), "%s", o->address);
	else if (dlrt_net_node_ipv4(NULL, getenv("SLURM_LAUNCH_NODE_IPADDR"), a.address, err) < 0)
		return -1;
	dlrt_infer_state_init(&c.st);
	dlrt_buf_init(&c.log, (size_t)-1);
	c.jn.fd = -1;
	c.held = calloc(cfg.max_conns, sizeof(*c.held));
	if (!c.held) {
		dlrt_err_set(err, "out of memory");
		goto out;
	}
	{
		/* pool start moves the journal aside: with one, this coordinator
		 * continues a pool (pool restart, a requeued element 0). */
		char jp[4200];
		struct stat jsb;

		snprintf(jp, sizeof(jp), "%s/journal", c.pool);
		continuing = o->takeover || lstat(jp, &jsb) == 0;
	}
	if (load_state(&c, err) < 0)
		goto out;
	if (c.st.epoch >= c.epoch) {
		/* A journal from epochs nobody claimed (an older dlrt): claim past it. */
		int crc;

		c.epoch = c.st.epoch + 1;
		crc = dlrt_claim_take(c.pool, c.epoch, err);
		if (crc != 0) {
			if (crc > 0)
				dlrt_err_set(err, "epoch %llu of %s was claimed by another coordinator "
					     "meanwhile: it serves the pool",
					     (unsigned long long)c.epoch, c.pool);
			goto out;
		}
	}
	c.next_attempt = dlrt_attempt_first(c.epoch);
	if (dlrt_coord_resume_jobs(&c) < 0) {
		dlrt_err_set(err, "out of memory resuming the jobs");
		goto out;
	}
	if (getenv("DLRT_INFER_JOURNAL") && !strcmp(getenv("DLRT_INFER_JOURNAL"), "0"))
		dlrt_coord_log(&c, "DLRT_INFER_JOURNAL=0: no journal (benchmarks only)");
	else if (dlrt_journal_open(&c.jn, c.pool, dlrt_buf_head(&c.log), c.log.len, err) < 0)
		goto out;
	c.loop = dlrt_evloop_create();
	if (!c.loop) {
		dlrt_err_set(err, "cannot create the event loop");
		goto out;
	}
	if (dlrt_tcpserver_start(&c.srv, c.loop, &cfg, &proto, &c, err) < 0)
		goto out;
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* A file size limit (ulimit -f) must fail a write (EFBIG), which is
	 * handled like a full disk, not kill the coordinator. */
	signal(SIGXFSZ, SIG_IGN);
	c.sfd = signalfd(-1, &ss, SFD_CLOEXEC | SFD_NONBLOCK);
	if (c.sfd >= 0)
		dlrt_evloop_add_fd(c.loop, c.sfd, DLRT_EV_READ, on_signal, &c);
	open_timeline(&c, continuing);
	dlrt_evloop_add_timer(c.loop, c.bucket_ms, dlrt_coord_tick, &c);
	c.hb_last_check_ms = dlrt_now_ms();
	dlrt_evloop_add_timer(c.loop, c.hb.check_ms, dlrt_coord_heartbeat_check, &c);
	dlrt_evloop_add_timer(c.loop, DLRT_JOURNAL_SYNC_MS, journal_tick, &c);
	dlrt_evloop_add_timer(c.loop, 1000, gate_tick, &c);
	c.sb_tmo = dlrt_standby_timeout_ms();
	gethostname(c.host, sizeof(c.host) - 1);
	/* Element 1 usually joins within a second or two; then anyone will do. */
	if (!getenv("DLRT_INFER_STANDBY") || strcmp(getenv("DLRT_INFER_STANDBY"), "0"))
		c.promote_ms = dlrt_now_ms() + (o->takeover ? 500 : 1500);
	dlrt_evloop_add_timer(c.loop, DLRT_STANDBY_BEAT_MS, dlrt_coord_ha_tick, &c);
	/* A job whose last answer was recorded but not its end (a crash in
	 * between, or a torn JOB_END) ends now. */
	dlrt_coord_fail_unstorable(&c);
	for (uint32_t ji = 0; ji < c.st.njobs; ji++)
		if (c.st.jobs[ji].state == DLRT_IP_JOB_RUNNING &&
		    c.st.jobs[ji].tasks_done == c.st.jobs[ji].ntasks)
			dlrt_coord_job_complete(&c, ji);
	a.epoch = c.epoch;
	a.port = dlrt_tcpserver_port(c.srv);
	snprintf(a.secret, sizeof(a.secret), "%s", c.secret);
	gethostname(a.host, sizeof(a.host) - 1);
	a.pid = (uint32_t)getpid();
	if (dlrt_pool_write_access(c.pool, &a, err) < 0)
		goto out;
	c.acc = a;
	/* A claim above ours made while we replayed: never serve below it. */
	if (dlrt_coord_fence_check(&c)) {
		rc = o->yield || o->takeover ? DLRT_COORD_YIELDED : -1;
		if (rc < 0)
			dlrt_err_set(err, "fenced out by a newer coordinator while starting");
		goto out;
	}
	dlrt_coord_log(&c, "serving pool %s at %s:%u, epoch %llu, prefetch %u, window %.2f s, "
		       "heartbeat bound %.2f s", c.pool, a.address, a.port,
		       (unsigned long long)c.epoch, o->prefetch, window,
		       (double)c.hb.bound_ms / 1000);
	if (o->takeover || o->yield)
		dlrt_coord_log(&c, "took over%s: epoch %llu serves since wall %.6f",
			       o->yield ? " from the journal (coordinator and standby both lost)" : "",
			       (unsigned long long)c.epoch, dlrt_coord_wall_now());
	if (dlrt_evloop_run(c.loop) < 0) {
		dlrt_err_errno(err, errno, "the event loop failed");
		goto out;
	}
	rc = 0;
	dlrt_coord_log(&c, "%llu late or void answers dropped", (unsigned long long)c.late_dropped);
	if (c.fenced) {
		rc = -1;
		dlrt_err_set(err, "fenced out by a newer coordinator (see the log above)");
	} else if (c.broken) {
		rc = -1;
		dlrt_err_set(err, "%s", c.broken_msg);
	}
out:
	coord_close(&c);
	return rc;
}
