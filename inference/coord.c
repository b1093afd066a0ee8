/* coord.c - the dlrt-infer coordinator: one epoll loop, never blocks on a peer.
 *
 * Durable state (jobs, answered tasks) changes only through commit(), which
 * applies one struct dlrt_infer_change (state.h); everything else here is soft
 * state rebuilt from connections: workers, tasks in flight, rates, shares.
 * Replies to the peer being served go out when its on_data returns; messages
 * to other peers (tasks for idle workers, JOBEND for waiters) are queued and
 * flushed from a zero-delay timer, so no handler ever writes to, or closes,
 * a connection other than its own.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "evloop.h"
#include "gate.h"
#include "infer.h"
#include "liveness.h"
#include "journal.h"
#include "netaddr.h"
#include "pool.h"
#include "proto.h"
#include "sched.h"
#include "standby.h"
#include "state.h"
#include "tcpserver.h"
#include "tsvlog.h"

#define NB 20               /* buckets per rate window */
#define MAX_PREFETCH 64
/* The input limit of an authenticated peer: one whole frame. */
#define MAX_REQUEST (DLRT_IP_MAX_FRAME + 64)
/* A worker with this many answers whose ACK waits for the standby gets no
 * new task: it keeps every unacknowledged answer to send again after a
 * failover, and keeps at most 256 (worker.c). */
#define MAX_HELD_ACKS 128

struct inflight {
	uint32_t job;
	uint64_t task;
	uint64_t attempt;  /* this dispatch's id (liveness.h) */
	int64_t sent_us;
	bool warmup; /* the worker's first task of the job: it loads the model first */
};

struct wk {
	uint32_t id;
	char name[DLRT_IP_NAME_MAX + 1];
	struct dlrt_conn *conn; /* NULL once gone */
	int cur;                /* job index it is held by, -1 = none */
	uint32_t n;             /* tasks in flight */
	struct inflight fl[MAX_PREFETCH];
	uint64_t tasks;
	int64_t last_done_us;
	uint32_t *known;        /* jobs it got JOBINFO for */
	uint32_t nknown, capknown;
	int64_t last_seen_ms;   /* last frame from it */
	bool lost;              /* silent past the heartbeat bound: no tasks until it speaks */
	bool draining;          /* near its time limit: no new tasks */
};

struct jrt {
	uint64_t next_task;     /* tasks below were handed out at least once */
	uint64_t *requeue;      /* handed out, then their worker left */
	uint32_t nrequeue, caprequeue;
	uint32_t inflight;
	int64_t bucket[NB];     /* bucket number each slot holds */
	uint32_t bq[NB];        /* queries answered */
	uint32_t bqc[NB];       /* of which count for the cost (not warm-up tasks) */
	double bocc[NB];        /* worker-seconds spent on those */
	double bhold[NB];       /* worker-seconds the job held workers (see accrue) */
	double bheld[NB];       /* sum of held samples */
	uint32_t bsamples[NB];
	double rate, held_avg;
	int64_t first_dispatch_us, first_result_us;
	bool answered_before;   /* resumed with answers: its first_task/first_result are logged */
	FILE *csv;              /* rows are flushed before their answer is recorded */
	off_t csv_len;          /* bytes written to it (where the next rows start) */
	char out[DLRT_IP_STR_MAX + 1];
	char csv_err[DLRT_IP_STR_MAX + 1]; /* why its results cannot be stored ("" = they can) */
	struct dlrt_conn **waiters;
	uint32_t nwaiters, capwaiters;
	struct dlrt_attempts att; /* the dispatch each task is assigned to */
	bool nrequeue_popped;     /* pop_task returned a requeued task */
};

struct peer {
	uint8_t role;           /* 0 until authenticated */
	bool challenged;        /* HELLO seen, CHALLENGE sent: AUTH next */
	uint8_t nonce[DLRT_AUTH_NONCE];
	struct dlrt_ip_hello hello;
	struct wk *w;
	bool dirty;
	struct dlrt_gate_ent gate; /* queued until authenticated (gate.h) */
	/* Group commit: replies that tell of changes the standby has not
	 * acknowledged yet wait here, then go out behind conn->out. */
	struct dlrt_buf held;
	uint64_t held_seq;      /* the newest change they tell of */
	uint32_t held_acks;     /* worker ACKs among them (dispatch stops at MAX_HELD_ACKS) */
	bool in_held;           /* on the coordinator's held list */
};

struct coord {
	const struct dlrt_coord_opts *o;
	struct dlrt_evloop *loop;
	struct dlrt_tcpserver *srv;
	struct dlrt_infer_state st;
	uint64_t epoch;
	char secret[DLRT_POOL_SECRET_LEN + 1];
	char pool[4096];
	struct wk **workers;    /* by id - 1, never freed while running */
	uint32_t nworkers, capworkers, alive;
	struct jrt *jr;         /* parallel to st.jobs */
	struct dlrt_sched_job *sj;
	uint32_t capjobs;
	struct dlrt_conn **dirty;
	uint32_t ndirty, capdirty;
	bool kick_pending;
	int64_t start_us, last_accrue_us, bucket_ms;
	int64_t t0_us;          /* pool time 0 of the timeline files (tsvlog.h), on our clock */
	int64_t tl_fence_ms;    /* the timeline's last fence check */
	int64_t regime_us;      /* when the set of jobs last changed */
	FILE *timeline, *events;
	bool stopping;
	int sfd;
	struct dlrt_buf log;    /* every change so far, as CHANGE frames (for a new standby) */
	struct dlrt_hb hb;      /* heartbeat bound and periods */
	int64_t hb_last_check_ms;
	uint64_t next_attempt;  /* id of the next dispatch */
	uint64_t late_dropped;  /* answers not recorded: late or from a void dispatch */
	uint8_t auth_mode;      /* enum dlrt_auth_mode */
	struct dlrt_journal jn;
	/* hot standby (standby.h) */
	struct dlrt_conn *sb;   /* the attached standby, NULL = none */
	bool sb_ready;          /* it holds the whole log: every commit waits for it */
	uint64_t sb_acked, sb_ready_seq;
	uint64_t sb_sent;       /* the newest change queued for it */
	uint64_t sb_wrote;      /* the newest change of the group last written to it */
	struct dlrt_conn **held; /* connections with replies held for the standby */
	uint32_t nheld;
	int64_t sb_ack_ms;      /* its last SEQACK */
	int64_t promote_ms;     /* when to ask a worker for a standby (0 = not now) */
	uint32_t promoted;      /* the worker asked last */
	int sb_tmo;
	bool fenced;            /* a newer epoch took over: acknowledge nothing more */
	uint32_t beats, resent;
	bool first_answer;      /* logged the first answer since a takeover */
	char host[64];
	struct dlrt_gate gate;  /* connections not authenticated yet */
	uint32_t gate_evicted;  /* closed since the last gate_tick because too many waited */
	bool broken;            /* the journal failed: nothing more is acknowledged */
	bool reserve_warned;    /* logged that the journal's space ahead ran out */
	char broken_msg[DLRT_ERR_MAX];
};

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void logf_(struct coord *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct coord *c, const char *fmt, ...)
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
static double tsec(struct coord *c, int64_t us)
{
	return (double)(us - c->t0_us) / 1e6;
}

/* ---- deferred writes ----------------------------------------------------------- */

static int64_t kick_timer(struct dlrt_evloop *loop, void *arg);
static void worker_seen(struct coord *c, struct wk *w);

static void kick(struct coord *c)
{
	if (c->kick_pending)
		return;
	if (dlrt_evloop_add_timer(c->loop, 0, kick_timer, c) > 0)
		c->kick_pending = true;
}

static void mark_dirty(struct coord *c, struct dlrt_conn *conn)
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
	kick(c);
}

/* ---- jobs: soft state ------------------------------------------------------------ */

static bool job_runnable(struct coord *c, uint32_t ji)
{
	struct dlrt_infer_job *j = &c->st.jobs[ji];
	struct jrt *r = &c->jr[ji];

	return j->state == DLRT_IP_JOB_RUNNING && (r->nrequeue || r->next_task < j->ntasks);
}

static void retarget(struct coord *c)
{
	for (uint32_t i = 0; i < c->st.njobs; i++)
		c->sj[i].runnable = job_runnable(c, i);
	dlrt_sched_targets(c->sj, c->st.njobs, c->alive);
}

/* The set of jobs changed: rates are measured from now (up to the window), so
 * they show the new shares at once instead of averaging in the old ones; and
 * the queries served so far no longer count (the job that had the workers
 * until now would otherwise get none until the new one caught up). */
static void regime_change(struct coord *c)
{
	c->regime_us = dlrt_now_us();
	dlrt_sched_restart(c->sj, c->st.njobs);
}

static int grow_jobs(struct coord *c)
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

static bool fence_check(struct coord *c);

/* Writes out a timeline file's buffered rows, unless a newer coordinator
 * took over: then they are dropped, since rows from before a SIGSTOP written
 * after the new coordinator's would put the t column out of order. */
static void tl_flush(struct coord *c, FILE **fp)
{
	int64_t now = dlrt_now_ms();
	FILE *f = *fp;

	if (!f)
		return;
	/* At most every 20 ms: events may come in bursts (redispatches). */
	if (c->fenced || now - c->tl_fence_ms >= 20) {
		c->tl_fence_ms = now;
		if (fence_check(c)) {
			__fpurge(f);
			return;
		}
	}
	if (fflush(f) != 0) {
		/* Diagnostics only: answers do not depend on it, so the pool goes on
		 * without this file rather than failing jobs. */
		logf_(c, "cannot write the %s in %s: %s: it stops here (answers are not affected); "
		      "free space in the pool folder", f == c->timeline ? "timeline.tsv" :
		      "events.tsv", c->pool, strerror(errno));
		__fpurge(f);
		fclose(f);
		*fp = NULL;
	}
}

/* One timeline sample of a running job (t job rate workers share done). */
static void tl_row(struct coord *c, uint32_t ji, int64_t t)
{
	struct jrt *r = &c->jr[ji];

	if (c->timeline && !c->fenced)
		fprintf(c->timeline, "%.3f\t%u\t%.1f\t%.2f\t%.2f\t%u\n", tsec(c, t),
			c->st.jobs[ji].id, r->rate, r->held_avg, c->sj[ji].target,
			c->st.jobs[ji].done);
}

static void event(struct coord *c, uint32_t job, const char *what)
{
	if (c->events && !c->fenced) {
		fprintf(c->events, "%.6f\t%u\t%s\n", tsec(c, dlrt_now_us()), job, what);
		tl_flush(c, &c->events);
	}
}

/* ---- hot standby (standby.h) ----------------------------------------------------- */

/* Group commit. A change is journaled and queued for the standby at once,
 * and the standby's link is written once per loop iteration, so every change
 * of an iteration travels in one write and comes back in one SEQACK. What
 * tells anyone of a change (a worker's ACK, a client's reply, a waiter's
 * JOBEND) waits in its peer's `held` buffer until the standby acknowledged
 * the newest change queued before it: the standby still holds everything
 * that was acknowledged, while the loop goes on serving (a worker gets its
 * next task at once; only the ACK of its answer waits). Without a ready
 * standby nothing waits: the journal alone is the record, as before. */
static bool sb_pending(const struct coord *c)
{
	return c->sb && c->sb_ready && c->sb_acked < c->sb_sent;
}

/* Where a reply that tells of the changes so far goes: behind earlier held
 * replies of its peer, or held when the standby lags, else out at once. */
static struct dlrt_buf *reply_buf(struct coord *c, struct dlrt_conn *conn)
{
	struct peer *p = conn->state;

	if (!p->held.len && !sb_pending(c))
		return &conn->out;
	p->held_seq = c->sb_sent;
	if (!p->in_held) {
		/* Room for every connection was made at start: this never fails. */
		c->held[c->nheld++] = conn;
		p->in_held = true;
	}
	return &p->held;
}

/* Sends the held replies the standby now holds the changes of (all: the
 * standby is gone and the journal alone is the record). */
static void release_held(struct coord *c, bool all)
{
	for (uint32_t i = 0; i < c->nheld; i++) {
		struct dlrt_conn *conn = c->held[i];
		struct peer *p = conn->state;

		if (!all && p->held_seq > c->sb_acked)
			continue;
		if (dlrt_buf_append(&conn->out, dlrt_buf_head(&p->held), p->held.len) < 0)
			logf_(c, "a peer's replies exceed its output limit: %zu bytes dropped "
			      "(it reads too slowly)", p->held.len);
		dlrt_buf_consume(&p->held, p->held.len);
		p->held_acks = 0;
		p->in_held = false;
		c->held[i--] = c->held[--c->nheld];
		/* A worker with tasks in flight answers soon, and the reply to that
		 * carries these ACKs: a write and a wake-up of the worker fewer per
		 * group. ACKs only let the worker forget answers it keeps. */
		if (!p->w || !p->w->n || all)
			mark_dirty(c, conn);
	}
}

static void held_forget(struct coord *c, struct dlrt_conn *conn)
{
	struct peer *p = conn->state;

	for (uint32_t i = 0; p->in_held && i < c->nheld; i++)
		if (c->held[i] == conn) {
			c->held[i] = c->held[--c->nheld];
			break;
		}
	p->in_held = false;
	dlrt_buf_free(&p->held);
}

/* A worker's ACK for an answer: out with the group's SEQACK. */
static void put_ack(struct coord *c, struct dlrt_conn *conn, uint32_t job, uint64_t task)
{
	struct dlrt_buf *b = reply_buf(c, conn);

	if (dlrt_ip_put_ack(b, job, task) == 0 && b != &conn->out)
		((struct peer *)conn->state)->held_acks++;
}

/* Is there a newer coordinator? Then this one stops at once. */
static bool fence_check(struct coord *c)
{
	struct dlrt_pool_access a;
	struct dlrt_err err;

	if (c->fenced)
		return true;
	if (dlrt_pool_read_access(c->pool, &a, &err) == 0 && a.epoch > c->epoch) {
		logf_(c, "fenced out: the coordinator of epoch %llu took over; this one (epoch %llu) "
		      "stops without acknowledging anything more", (unsigned long long)a.epoch,
		      (unsigned long long)c->epoch);
		c->fenced = true;
		dlrt_evloop_stop(c->loop);
	}
	return c->fenced;
}

/* Lets the standby go: told so (it must not take over a live coordinator),
 * then hung up; the server closes it. A new one is asked for at once. */
static void standby_lost(struct coord *c, const char *why)
{
	struct dlrt_conn *conn = c->sb;

	if (!conn)
		return;
	c->sb = NULL;
	c->sb_ready = false;
	logf_(c, "standby lost: %s", why);
	dlrt_buf_consume(&conn->out, conn->out.len);
	if (dlrt_ip_put_error(&conn->out, "the coordinator let this standby go") == 0 &&
	    send(conn->fd, dlrt_buf_head(&conn->out), conn->out.len, MSG_NOSIGNAL | MSG_DONTWAIT) > 0)
		dlrt_buf_consume(&conn->out, conn->out.len);
	shutdown(conn->fd, SHUT_RDWR);
	if (!fence_check(c)) {
		c->promote_ms = dlrt_now_ms();
		release_held(c, true);
	}
}

static void standby_acked(struct coord *c, uint64_t seq)
{
	if (seq > c->sb_acked)
		c->sb_acked = seq;
	c->sb_ack_ms = dlrt_now_ms();
	if (!c->sb_ready && c->sb_acked >= c->sb_ready_seq) {
		c->sb_ready = true;
		logf_(c, "standby ready: it holds all %llu changes; every change now reaches it "
		      "before it is acknowledged", (unsigned long long)c->sb_acked);
	}
	if (c->sb->out.len && c->sb_acked >= c->sb_wrote) {
		c->sb_wrote = c->sb_sent; /* the next group */
		mark_dirty(c, c->sb);
	}
	release_held(c, false);
}

/* Waits (blocking, up to the takeover bound) until the standby holds every
 * change queued for it, and sends what was held: before the pool stops,
 * whose replies must not be lost with the loop. */
static void sb_drain(struct coord *c)
{
	struct dlrt_err err;

	if (!sb_pending(c))
		return;
	if (dlrt_standby_push(c->sb, c->sb_sent, c->sb_tmo, &c->sb_acked, &err) < 0) {
		standby_lost(c, err.msg);
		return;
	}
	standby_acked(c, c->sb_acked);
}

/* Asks a worker to start a standby next to it: preferably on another node
 * than this coordinator's, then array element 1, then not the one asked last. */
static void promote(struct coord *c)
{
	struct wk *best = NULL;
	int bs = -1;

	for (uint32_t i = 0; i < c->nworkers; i++) {
		struct wk *w = c->workers[i];
		const char *slash = strchr(w->name, '/');
		size_t hl = slash ? (size_t)(slash - w->name) : strlen(w->name), nl = strlen(w->name);
		int sc = 0;

		if (!w->conn)
			continue;
		if (strlen(c->host) != hl || strncmp(w->name, c->host, hl))
			sc += 4;
		if (nl >= 2 && !strcmp(w->name + nl - 2, "_1"))
			sc += 2;
		if (w->id != c->promoted)
			sc += 1;
		if (sc > bs) {
			bs = sc;
			best = w;
		}
	}
	if (!best) {
		c->promote_ms = dlrt_now_ms() + 500;
		return;
	}
	dlrt_ip_put_empty(&best->conn->out, DLRT_IP_PROMOTE);
	mark_dirty(c, best->conn);
	c->promoted = best->id;
	c->promote_ms = dlrt_now_ms() + 5000; /* another one if none attaches by then */
	logf_(c, "asked worker %u (%s) to start a standby", best->id, best->name);
}

static int64_t ha_tick(struct dlrt_evloop *loop, void *arg)
{
	struct coord *c = arg;
	int64_t now = dlrt_now_ms();

	(void)loop;
	if (++c->beats % 10 == 0 && fence_check(c))
		return -1;
	if (c->sb) {
		if (now - c->sb_ack_ms > (c->sb_ready ? c->sb_tmo : 10000)) {
			standby_lost(c, "it stopped answering");
		} else {
			dlrt_ip_put_seq(&c->sb->out, DLRT_IP_SYNC, c->st.seq);
			mark_dirty(c, c->sb);
		}
	} else if (c->promote_ms && now >= c->promote_ms) {
		promote(c);
	}
	return DLRT_STANDBY_BEAT_MS;
}

static void fill_job_info(struct coord *c, uint32_t ji, struct dlrt_ip_job_info *o);

/* The journal cannot take a change: nothing more can be acknowledged, since
 * a restart would not know it. Going on without the journal would let a
 * restart replay an older state (job ids handed out twice, answers the
 * clients were told about missing). So the pool stops, as `pool stop` does,
 * and every waiter hears that its job failed and why; the journal holds
 * exactly what was acknowledged, so `pool restart` resumes the running jobs. */
static void coord_break(struct coord *c, const char *msg)
{
	if (c->broken)
		return;
	c->broken = true;
	snprintf(c->broken_msg, sizeof(c->broken_msg), "%s", msg);
	sb_drain(c); /* the changes before this one were recorded: their replies go out */
	logf_(c, "%s; the pool stops (running jobs resume from the journal after dlrt-infer pool "
	      "restart)", msg);
	for (uint32_t ji = 0; ji < c->st.njobs; ji++) {
		struct jrt *r = &c->jr[ji];
		struct dlrt_ip_job_info info;

		if (c->st.jobs[ji].state != DLRT_IP_JOB_RUNNING)
			continue;
		fill_job_info(c, ji, &info);
		info.state = DLRT_IP_JOB_FAILED;
		snprintf(info.error, sizeof(info.error), "the pool stopped: %s", msg);
		for (uint32_t i = 0; i < r->nwaiters; i++) {
			dlrt_ip_put_jobend(reply_buf(c, r->waiters[i]), &info);
			mark_dirty(c, r->waiters[i]);
		}
		r->nwaiters = 0;
	}
	if (c->sb) {
		dlrt_ip_put_empty(&c->sb->out, DLRT_IP_STOP); /* it must not take over */
		mark_dirty(c, c->sb);
	}
	c->stopping = true;
	kick(c);
}

/* Makes an applied change durable before anyone hears of it: appended to the
 * journal (journal.h has the fsync policy) and queued for the standby, whose
 * acknowledgement the replies telling of it wait for (group commit above).
 * -1 if it is not: the journal failed (the pool stops), or this coordinator
 * was fenced out meanwhile. */
static int replicate(struct coord *c, const uint8_t *frame, size_t n, uint8_t kind, uint64_t seq)
{
	struct dlrt_err err;

	if (dlrt_journal_append(&c->jn, frame, n, kind != DLRT_CH_TASK_DONE, &err) < 0) {
		coord_break(c, err.msg);
		return -1;
	}
	if (c->jn.reserve_errno && c->jn.reserve_errno != EOPNOTSUPP && !c->reserve_warned) {
		c->reserve_warned = true; /* once: it is retried on every 64 KiB */
		logf_(c, "the journal cannot hold disk space ahead (%s): the pool folder is "
		      "almost full; free space there before the journal runs out and the pool stops",
		      strerror(c->jn.reserve_errno));
	}
	if (!c->sb)
		return c->fenced ? -1 : 0;
	if (dlrt_buf_append(&c->sb->out, frame, n) < 0) {
		standby_lost(c, "it fell too far behind");
	} else {
		/* Written at the end of this loop iteration with the rest of the
		 * group, or, while a group is on its way, with the next group when
		 * its SEQACK comes (standby_acked): the busier the pool, the larger
		 * the groups. The replies telling of it wait for its SEQACK. */
		c->sb_sent = seq;
		if (!c->sb_ready || c->sb_acked >= c->sb_wrote) {
			c->sb_wrote = seq;
			mark_dirty(c, c->sb);
		}
	}
	return c->fenced ? -1 : 0;
}

/* Applies a change to the durable state, keeps its frame in the log and
 * replicates it; only then may the caller act on it. */
static int commit(struct coord *c, struct dlrt_infer_change *ch)
{
	struct dlrt_err err;
	size_t at = c->log.len;

	if (c->fenced || c->broken)
		return -1;
	ch->epoch = c->epoch;
	ch->seq = c->st.seq + 1;
	ch->wall = wall_now();
	if (dlrt_infer_change_put(&c->log, ch) < 0) {
		logf_(c, "cannot keep a state change: out of memory");
		return -1;
	}
	if (dlrt_infer_state_apply(&c->st, ch, &err) < 0) {
		c->log.len = at;
		logf_(c, "refused a state change: %s", err.msg);
		return -1;
	}
	return replicate(c, dlrt_buf_head(&c->log) + at, c->log.len - at, ch->kind, ch->seq);
}

static void fill_job_info(struct coord *c, uint32_t ji, struct dlrt_ip_job_info *o)
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
	o->elapsed = (j->state == DLRT_IP_JOB_RUNNING ? wall_now() : j->t_end) - j->t_submit;
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
			logf_(c, "job %u: closing %s: %s", j->id, r->out, strerror(errno));
		r->csv = NULL;
	}
	fill_job_info(c, ji, &info);
	for (uint32_t i = 0; i < r->nwaiters; i++) {
		dlrt_ip_put_jobend(reply_buf(c, r->waiters[i]), &info);
		mark_dirty(c, r->waiters[i]);
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
			mark_dirty(c, w->conn);
			break;
		}
	}
	logf_(c, "job %u %s: %u of %u queries answered%s%s", j->id,
	      dlrt_ip_job_state_name(j->state), j->done, j->sub.count, j->error[0] ? ": " : "",
	      j->error);
	event(c, j->id, dlrt_ip_job_state_name(j->state));
	regime_change(c);
	retarget(c);
	/* A sample of the jobs that go on, with their new shares, whatever the
	 * periodic samples do on a loaded node; and the file is whole up to this
	 * end before a waiter hears of it. */
	for (uint32_t k = 0; k < c->st.njobs; k++)
		if (c->st.jobs[k].state == DLRT_IP_JOB_RUNNING)
			tl_row(c, k, dlrt_now_us());
	tl_flush(c, &c->timeline);
	kick(c);
}

static void end_job(struct coord *c, uint32_t ji, uint8_t state, const char *error)
{
	struct dlrt_infer_change ch = { .kind = DLRT_CH_JOB_END, .job = c->st.jobs[ji].id,
					.state = state };

	snprintf(ch.error, sizeof(ch.error), "%s", error ? error : "");
	if (commit(c, &ch) == 0)
		job_ended(c, ji);
}

/* The one line a job fails with when its results cannot be stored; the
 * first cause wins. */
static void csv_fail(struct coord *c, uint32_t ji, const char *what, int e)
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
static void job_complete(struct coord *c, uint32_t ji)
{
	struct jrt *r = &c->jr[ji];
	FILE *f = r->csv;

	r->csv = NULL;
	if (!f) {
		csv_fail(c, ji, "write", EBADF); /* not open: csv_err says why already */
	} else if (r->csv_err[0] || fflush(f) != 0 || fdatasync(fileno(f)) != 0) {
		csv_fail(c, ji, "write", errno);
		__fpurge(f);
		fclose(f);
	} else if (fclose(f) != 0) {
		csv_fail(c, ji, "write", errno);
	}
	if (r->csv_err[0]) {
		logf_(c, "job %u: %s", c->st.jobs[ji].id, r->csv_err);
		end_job(c, ji, DLRT_IP_JOB_FAILED, r->csv_err);
	} else {
		end_job(c, ji, DLRT_IP_JOB_DONE, NULL);
	}
}

/* ---- dispatch -------------------------------------------------------------------- */

static int pop_task(struct coord *c, uint32_t ji, uint64_t *task)
{
	struct jrt *r = &c->jr[ji];
	struct dlrt_infer_job *j = &c->st.jobs[ji];

	while (r->nrequeue) {
		uint64_t t = r->requeue[--r->nrequeue];

		if (!j->task_done[t]) {
			*task = t;
			r->nrequeue_popped = true;
			return 0;
		}
	}
	while (r->next_task < j->ntasks) {
		uint64_t t = r->next_task++;

		if (!j->task_done[t]) {
			*task = t;
			return 0;
		}
	}
	return -1;
}

/* Back to the front of the job's queue: the next pop_task returns it. */
static void requeue(struct coord *c, uint32_t ji, uint64_t task)
{
	struct jrt *r = &c->jr[ji];

	if (c->st.jobs[ji].state != DLRT_IP_JOB_RUNNING)
		return;
	if (r->nrequeue == r->caprequeue) {
		uint32_t cap = r->caprequeue ? r->caprequeue * 2 : 16;
		uint64_t *q = realloc(r->requeue, cap * sizeof(*q));

		if (!q) {
			logf_(c, "out of memory: task %llu of job %u is lost until the pool restarts",
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

/* The slot of bucket number b in the job's ring, emptied when it held an older one. */
static int bucket_slot(struct jrt *r, int64_t b)
{
	int slot = (int)(b % NB);

	if (r->bucket[slot] != b) {
		r->bucket[slot] = b;
		r->bq[slot] = 0;
		r->bqc[slot] = 0;
		r->bocc[slot] = 0;
		r->bhold[slot] = 0;
		r->bheld[slot] = 0;
		r->bsamples[slot] = 0;
	}
	return slot;
}

/* Runs before every change of the jobs' held counts (and every tick): the
 * worker-seconds each job held since the last call, which is what its answers
 * cost it, whatever a worker spent waiting (for the coordinator, the standby's
 * acknowledgement, the network) besides computing. */
static void accrue(struct coord *c)
{
	int64_t t = dlrt_now_us();
	double dt = (double)(t - c->last_accrue_us) / 1e6;
	int64_t b = t / 1000 / c->bucket_ms;

	for (uint32_t ji = 0; dt > 0 && ji < c->st.njobs; ji++)
		if (c->sj[ji].held && c->st.jobs[ji].state == DLRT_IP_JOB_RUNNING)
			c->jr[ji].bhold[bucket_slot(&c->jr[ji], b)] += c->sj[ji].held * dt;
	c->last_accrue_us = t;
}

/* Gives worker w tasks until it has `prefetch` in flight or nothing is left.
 * Appends to its connection's output; the caller sees that it is written. */
static void fill_worker(struct coord *c, struct wk *w)
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

		accrue(c);
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
			retarget(c);
			continue;
		}
		j = &c->st.jobs[ji];
		if (c->jr[ji].nrequeue_popped) {
			c->jr[ji].nrequeue_popped = false;
			event(c, j->id, "redispatch"); /* a lost task runs again */
		}
		if (!c->jr[ji].att.cur && dlrt_attempts_init(&c->jr[ji].att, j->ntasks) < 0) {
			requeue(c, (uint32_t)ji, task);
			break;
		}
		warm = !worker_knows(w, j->id);
		if (warm && send_jobinfo(w, j) < 0) {
			requeue(c, (uint32_t)ji, task);
			break;
		}
		t = (struct dlrt_ip_task){ .job = j->id, .task = task, .attempt = c->next_attempt,
					   .first = dlrt_infer_task_first(j, task),
					   .n = dlrt_infer_task_size(j, task) };
		if (dlrt_ip_put_task(&w->conn->out, &t) < 0) {
			requeue(c, (uint32_t)ji, task);
			break;
		}
		dlrt_attempts_assign(&c->jr[ji].att, task, c->next_attempt);
		dlrt_sched_charge(c->sj, c->st.njobs, (size_t)ji, t.n);
		w->fl[w->n++] = (struct inflight){ j->id, task, c->next_attempt++, dlrt_now_us(), warm };
		c->jr[ji].inflight++;
		if (!c->jr[ji].first_dispatch_us) {
			c->jr[ji].first_dispatch_us = dlrt_now_us();
			if (!c->jr[ji].answered_before)
				event(c, j->id, "first_task");
		}
		if (!job_runnable(c, (uint32_t)ji))
			retarget(c);
		any = true;
	}
	(void)any;
}

static int64_t kick_timer(struct dlrt_evloop *loop, void *arg)
{
	struct coord *c = arg;

	(void)loop;
	c->kick_pending = false;
	for (uint32_t i = 0; i < c->nworkers; i++) {
		struct wk *w = c->workers[i];
		uint32_t before;

		if (!w->conn || w->n >= c->o->prefetch)
			continue;
		before = w->n;
		fill_worker(c, w);
		if (w->n != before)
			mark_dirty(c, w->conn);
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

/* ---- results -------------------------------------------------------------------- */

static void bucket_add(struct coord *c, struct jrt *r, uint32_t q, double occ, bool cost)
{
	int slot = bucket_slot(r, dlrt_now_ms() / c->bucket_ms);

	r->bq[slot] += q;
	if (cost) {
		r->bqc[slot] += q;
		r->bocc[slot] += occ;
	}
}

/* A task's rows into the results file's buffer (csv_len counts them); -1
 * (errno set) on failure. */
static int csv_rows(struct coord *c, uint32_t ji, const struct dlrt_infer_change *ch)
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
		csv_fail(c, ji, "write", EBADF);
		return -1;
	}
	errno = 0;
	*at = r->csv_len;
	if (csv_rows(c, ji, ch) < 0 || fflush(r->csv) != 0) {
		csv_fail(c, ji, "write", errno);
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
		csv_fail(c, ji, "cut back", errno);
}

static int on_result(struct coord *c, struct wk *w, struct dlrt_ip_result *res)
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
			logf_(c, "dropped an answer of worker %u for task %llu of job %u (attempt "
			      "%llu): %s; %llu dropped so far", w->id, (unsigned long long)res->task,
			      res->job, (unsigned long long)res->attempt,
			      v == DLRT_ATTEMPT_OK ? "not dispatched to it" :
			      dlrt_attempt_verdict_name(v), (unsigned long long)c->late_dropped);
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
		logf_(c, "worker %u answered %u queries for a task of %u: job %u fails", w->id,
		      res->n, dlrt_infer_task_size(j, res->task), j->id);
		end_job(c, ji, DLRT_IP_JOB_FAILED, "a worker answered the wrong number of queries");
		return 0;
	}
	ch.job = res->job;
	ch.task = res->task;
	ch.worker = w->id;
	ch.res = *res;
	if (store_rows(c, ji, &ch, &at) < 0) {
		logf_(c, "job %u: %s", j->id, c->jr[ji].csv_err);
		end_job(c, ji, DLRT_IP_JOB_FAILED, c->jr[ji].csv_err);
		return 0;
	}
	if (commit(c, &ch) < 0) {
		unstore_rows(c, ji, at);
		return 0;
	}
	if (c->o->takeover && !c->first_answer) {
		c->first_answer = true;
		logf_(c, "first answer to a task dispatched since the takeover at wall %.6f",
		      wall_now());
	}
	/* A warm-up task's time is mostly loading: it says nothing of the cost. */
	bucket_add(c, &c->jr[ji], res->n, occ, !warm);
	if (!c->jr[ji].first_result_us) {
		c->jr[ji].first_result_us = t;
		if (!c->jr[ji].answered_before)
			event(c, j->id, "first_result");
	}
	/* The first answer gives the job's cost: use it now, not a window later. */
	if (c->sj[ji].cost <= 0 && res->n && !warm) {
		c->sj[ji].cost = occ / res->n;
		retarget(c);
	}
	if (j->tasks_done == j->ntasks)
		job_complete(c, ji);
	return 0;
}

/* An answer a worker computed for an earlier coordinator, which died before
 * acknowledging it: recorded if nobody answered the task since. */
static void on_resent(struct coord *c, struct wk *w, const struct dlrt_ip_result *res)
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
		logf_(c, "job %u: %s", j->id, c->jr[res->job - 1].csv_err);
		end_job(c, res->job - 1, DLRT_IP_JOB_FAILED, c->jr[res->job - 1].csv_err);
		return;
	}
	if (commit(c, &ch) < 0) {
		unstore_rows(c, res->job - 1, at);
		return;
	}
	c->resent++;
	logf_(c, "worker %u re-sent task %llu of job %u, answered before the failover: recorded",
	      w->id, (unsigned long long)res->task, res->job);
	if (j->tasks_done == j->ntasks)
		job_complete(c, res->job - 1);
}

/* ---- requests ------------------------------------------------------------------- */

static void reply_error(struct dlrt_conn *conn, const char *msg)
{
	dlrt_ip_put_error(&conn->out, msg);
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
static int job_open(struct coord *c, uint32_t ji, bool open_csv, bool rebuild)
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
		csv_fail(c, ji, "write", errno);
		if (fd >= 0)
			close(fd);
		if (fd >= 0 && rebuild)
			unlink(tmp);
		return -1;
	}
	r->csv_len = fprintf(r->csv, "query_id,input_index,prediction,score,worker,"
			     "task_latency_ms\n");
	if (r->csv_len < 0 || (!rebuild && fflush(r->csv) != 0)) {
		csv_fail(c, ji, "write", errno);
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
	csv_fail(c, ji, "write", errno);
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
 * recorded (job_complete), and is left alone: rebuilding it would refill a
 * disk its owner cleaned up. A running job whose file cannot be rebuilt
 * fails once the journal is open (fail_unstorable). */
static int resume_jobs(struct coord *c)
{
	const uint8_t *p = dlrt_buf_head(&c->log);
	size_t off = 0;
	uint32_t running = 0;

	while (c->capjobs <= c->st.njobs)
		if (grow_jobs(c) < 0)
			return -1;
	for (uint32_t ji = 0; ji < c->st.njobs; ji++) {
		struct dlrt_infer_job *j = &c->st.jobs[ji];
		bool run = j->state == DLRT_IP_JOB_RUNNING;

		job_open(c, ji, run, true);
		/* events.tsv continues across coordinators (tsvlog.h): a job that
		 * has answers logged its first task and answer there already. */
		c->jr[ji].answered_before = j->done > 0;
		if (run) {
			running++;
			logf_(c, "job %u resumes with %u of %u queries answered", j->id, j->done,
			      j->sub.count);
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
		    csv_rows(c, ch.job - 1, &ch) < 0)
			csv_fail(c, ch.job - 1, "write", errno);
		dlrt_infer_change_free(&ch);
		off += f.frame_len;
	}
	for (uint32_t ji = 0; ji < c->st.njobs; ji++)
		if (c->jr[ji].csv)
			csv_publish(c, ji);
	if (c->st.njobs)
		logf_(c, "resumed %u jobs (%u still running) from %llu state changes", c->st.njobs,
		      running, (unsigned long long)c->st.seq);
	regime_change(c);
	retarget(c);
	return 0;
}

/* Running jobs whose results file could not be rebuilt fail now (the
 * journal is open to record it), with the line that says why. */
static void fail_unstorable(struct coord *c)
{
	for (uint32_t ji = 0; ji < c->st.njobs; ji++) {
		struct jrt *r = &c->jr[ji];

		if (c->st.jobs[ji].state != DLRT_IP_JOB_RUNNING || !r->csv_err[0])
			continue;
		logf_(c, "job %u: %s", c->st.jobs[ji].id, r->csv_err);
		end_job(c, ji, DLRT_IP_JOB_FAILED, r->csv_err);
	}
}

static int on_submit(struct coord *c, struct dlrt_conn *conn, struct dlrt_ip_submit *s)
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
	if (grow_jobs(c) < 0) {
		reply_error(conn, "the coordinator is out of memory");
		return 0;
	}
	ch.job = c->st.njobs + 1;
	ch.sub = *s;
	if (!ch.sub.name[0])
		snprintf(ch.sub.name, sizeof(ch.sub.name), "job%u", ch.job);
	if (commit(c, &ch) < 0) {
		reply_error(conn, "the coordinator refused the job (see its log)");
		return 0;
	}
	if (job_open(c, ji, true, false) < 0) {
		snprintf(msg, sizeof(msg), "%s", c->jr[ji].csv_err);
		end_job(c, ji, DLRT_IP_JOB_FAILED, msg);
		reply_error(conn, msg);
		return 0;
	}
	logf_(c, "job %u (%s): model %s, %u queries from %s in tasks of %u, results in %s",
	      ch.job, ch.sub.name, s->model, s->count, s->inputs, s->batch, c->jr[ji].out);
	event(c, ch.job, "submitted");
	dlrt_ip_put_jobref(&conn->out, DLRT_IP_SUBMITTED, ch.job);
	regime_change(c);
	retarget(c);
	kick(c);
	return 0;
}

static void on_status(struct coord *c, struct dlrt_conn *conn)
{
	struct dlrt_ip_status st = { .epoch = c->epoch };
	uint32_t nw = 0;

	st.uptime = (double)(dlrt_now_us() - c->start_us) / 1e6; /* this coordinator's */
	st.window = (double)c->bucket_ms * NB / 1000.0;
	st.workers = calloc(c->nworkers ? c->nworkers : 1, sizeof(*st.workers));
	st.jobs = calloc(c->st.njobs ? c->st.njobs : 1, sizeof(*st.jobs));
	if (!st.workers || !st.jobs) {
		reply_error(conn, "the coordinator is out of memory");
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
		fill_job_info(c, i, &st.jobs[st.njobs++]);
	if (dlrt_ip_put_status(&conn->out, &st) < 0)
		reply_error(conn, "the status is too large to send");
out:
	dlrt_ip_status_free(&st);
}

static void on_wait(struct coord *c, struct dlrt_conn *conn, uint32_t job)
{
	struct dlrt_infer_job *j = dlrt_infer_state_job(&c->st, job);
	struct jrt *r;

	if (!j) {
		reply_error(conn, "no such job: see dlrt-infer status");
		return;
	}
	r = &c->jr[job - 1];
	if (j->state != DLRT_IP_JOB_RUNNING) {
		struct dlrt_ip_job_info info;

		fill_job_info(c, job - 1, &info);
		dlrt_ip_put_jobend(&conn->out, &info);
		return;
	}
	if (r->nwaiters == r->capwaiters) {
		uint32_t cap = r->capwaiters ? r->capwaiters * 2 : 4;
		struct dlrt_conn **q = realloc(r->waiters, cap * sizeof(*q));

		if (!q) {
			reply_error(conn, "the coordinator is out of memory");
			return;
		}
		r->waiters = q;
		r->capwaiters = cap;
	}
	r->waiters[r->nwaiters++] = conn;
}

/* A standby attaches: it gets the whole log now, and each change from then on. */
static int standby_attach(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_hello *h)
{
	struct dlrt_ip_welcome wel = { .epoch = c->epoch, .id = 0 };

	if (c->sb) {
		reply_error(conn, "the pool already has a standby");
		return -1;
	}
	((struct peer *)conn->state)->role = DLRT_IP_ROLE_STANDBY;
	c->sb = conn;
	c->sb_ready = false;
	c->sb_ready_seq = c->st.seq;
	c->sb_acked = 0;
	c->sb_sent = c->sb_wrote = c->st.seq;
	c->sb_ack_ms = dlrt_now_ms();
	c->promote_ms = 0;
	if (dlrt_ip_put_welcome(&conn->out, &wel) < 0 ||
	    dlrt_buf_append(&conn->out, dlrt_buf_head(&c->log), c->log.len) < 0 ||
	    dlrt_ip_put_seq(&conn->out, DLRT_IP_SYNC, c->st.seq) < 0) {
		c->sb = NULL;
		c->promote_ms = dlrt_now_ms() + 1000;
		return -1;
	}
	logf_(c, "standby %s attached; it gets the %llu changes so far", h->name,
	      (unsigned long long)c->st.seq);
	return 0;
}

static int on_hello(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_hello *h)
{
	struct peer *p = conn->state;
	struct wk *w;

	if (h->role == DLRT_IP_ROLE_STANDBY)
		return standby_attach(c, conn, h);
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
	logf_(c, "worker %u (%s) joined; %u workers", w->id, w->name, c->alive);
	retarget(c);
	fill_worker(c, w);
	return 0;
}

/* HELLO -> CHALLENGE, AUTH -> verified (auth.h). A refusal is one log line
 * (on_data's "closing a connection: ...") and one ERROR to the peer. */
static int handshake(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_frame *f,
		     struct dlrt_err *err)
{
	struct peer *p = conn->state;
	struct dlrt_ip_auth a;
	struct dlrt_err why;
	char ip[INET_ADDRSTRLEN] = "?";

	if (!p->challenged) {
		struct dlrt_ip_challenge ch = { .mode = c->auth_mode };

		if (f->type != DLRT_IP_HELLO)
			return dlrt_err_set(err, "%s before HELLO", dlrt_ip_type_name(f->type));
		if (dlrt_ip_get_hello(f->payload, f->len, &p->hello, err) < 0)
			return -1;
		if (p->hello.epoch != c->epoch) {
			reply_error(conn, "stale access record (epoch differs): read it again");
			return dlrt_err_set(err, "a peer came with epoch %llu, not %llu",
					    (unsigned long long)p->hello.epoch,
					    (unsigned long long)c->epoch);
		}
		if (dlrt_auth_nonce(p->nonce, err) < 0)
			return -1;
		memcpy(ch.nonce, p->nonce, sizeof(ch.nonce));
		dlrt_ip_put_challenge(&conn->out, &ch);
		p->challenged = true;
		return 0;
	}
	if (f->type != DLRT_IP_AUTH)
		return dlrt_err_set(err, "%s before AUTH", dlrt_ip_type_name(f->type));
	if (dlrt_ip_get_auth(f->payload, f->len, &a, err) < 0)
		return -1;
	inet_ntop(AF_INET, &conn->peer_ipv4, ip, sizeof(ip));
	if (a.mode != c->auth_mode)
		dlrt_err_set(&why, "it answered in mode %s, the pool uses %s",
			     dlrt_auth_mode_name(a.mode), dlrt_auth_mode_name(c->auth_mode));
	else if (dlrt_auth_verify(a.mode, p->nonce, c->secret, p->hello.role, p->hello.epoch,
				  a.nonce, a.proof, geteuid(), &why) == 0)
		return 0;
	reply_error(conn, why.msg);
	return dlrt_err_set(err, "authentication refused for a %s from %s (%.100s): %s",
			    p->hello.role == DLRT_IP_ROLE_WORKER ? "worker" : "client", ip,
			    p->hello.name, why.msg);
}

static int handle(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_frame *f,
		  struct dlrt_err *err)
{
	struct peer *p = conn->state;

	if (!p->role) {
		if (handshake(c, conn, f, err) < 0)
			return -1;
		if (!p->role && p->challenged && f->type == DLRT_IP_AUTH) {
			/* The pool's own peer: out of the gate, whole frames from now on. */
			dlrt_gate_remove(&c->gate, &p->gate);
			conn->in.limit = MAX_REQUEST;
			return on_hello(c, conn, &p->hello) < 0 ? dlrt_err_set(err, "HELLO refused") : 0;
		}
		return 0;
	}
	if (p->role == DLRT_IP_ROLE_STANDBY) {
		uint64_t seq;

		if (conn != c->sb)
			return dlrt_err_set(err, "a standby that was let go");
		if (f->type != DLRT_IP_SEQACK)
			return dlrt_err_set(err, "the standby sent %s", dlrt_ip_type_name(f->type));
		if (dlrt_ip_get_seq(f->payload, f->len, &seq, err) < 0)
			return -1;
		standby_acked(c, seq);
		return 0;
	}
	if (p->role == DLRT_IP_ROLE_WORKER) {
		worker_seen(c, p->w);
		switch (f->type) {
		case DLRT_IP_HEARTBEAT:
			return dlrt_ip_get_empty(f->payload, f->len, err);
		case DLRT_IP_DRAIN: {
			struct dlrt_ip_drain d;

			if (dlrt_ip_get_drain(f->payload, f->len, &d, err) < 0)
				return -1;
			if (!p->w->draining)
				logf_(c, "worker %u (%s) is %u s from its %s: no new tasks", p->w->id,
				      p->w->name, d.left_s, d.why[0] ? d.why : "time limit");
			if (!p->w->draining && !p->w->lost)
				c->alive--; /* shares are computed for the workers that take tasks */
			p->w->draining = true;
			event(c, 0, "worker_draining");
			retarget(c);
			return 0;
		}
		case DLRT_IP_RESENT: {
			struct dlrt_ip_result res;
			int rc = dlrt_ip_get_result(f->payload, f->len, &res, err);

			if (rc == 0)
				on_resent(c, p->w, &res);
			if (rc == 0 && !c->fenced && !c->broken)
				put_ack(c, conn, res.job, res.task);
			dlrt_ip_result_free(&res);
			kick(c);
			return rc;
		}
		case DLRT_IP_RESULT: {
			struct dlrt_ip_result res;
			int rc = dlrt_ip_get_result(f->payload, f->len, &res, err);

			if (rc == 0)
				rc = on_result(c, p->w, &res);
			/* Recorded (and, when the ACK leaves, held by the standby), or
			 * never to be: forget it. */
			if (rc == 0 && !c->fenced && !c->broken)
				put_ack(c, conn, res.job, res.task);
			dlrt_ip_result_free(&res);
			if (rc == 0)
				fill_worker(c, p->w);
			kick(c);
			return rc;
		}
		case DLRT_IP_TASKFAIL: {
			struct dlrt_ip_taskfail tf;
			char msg[DLRT_IP_STR_MAX + 1];
			struct dlrt_infer_job *j;

			if (dlrt_ip_get_taskfail(f->payload, f->len, &tf, err) < 0)
				return -1;
			for (uint32_t k = 0; k < p->w->n; k++) {
				if (p->w->fl[k].job != tf.job || p->w->fl[k].task != tf.task ||
				    p->w->fl[k].attempt != tf.attempt)
					continue;
				dlrt_attempts_release(&c->jr[tf.job - 1].att, tf.task, tf.attempt);
				memmove(&p->w->fl[k], &p->w->fl[k + 1],
					(p->w->n - k - 1) * sizeof(p->w->fl[0]));
				p->w->n--;
				c->jr[tf.job - 1].inflight--;
				j = dlrt_infer_state_job(&c->st, tf.job);
				snprintf(msg, sizeof(msg), "worker %u (%s): %.3900s", p->w->id,
					 p->w->name, tf.error);
				if (j && j->state == DLRT_IP_JOB_RUNNING)
					end_job(c, tf.job - 1, DLRT_IP_JOB_FAILED, msg);
				break;
			}
			fill_worker(c, p->w);
			return 0;
		}
		default:
			return dlrt_err_set(err, "a worker sent %s", dlrt_ip_type_name(f->type));
		}
	}
	switch (f->type) {
	case DLRT_IP_SUBMIT: {
		struct dlrt_ip_submit s;
		int rc = dlrt_ip_get_submit(f->payload, f->len, &s, err);

		if (rc == 0)
			rc = on_submit(c, conn, &s);
		dlrt_ip_submit_free(&s);
		return rc;
	}
	case DLRT_IP_STATUSREQ:
		if (dlrt_ip_get_empty(f->payload, f->len, err) < 0)
			return -1;
		on_status(c, conn);
		return 0;
	case DLRT_IP_CANCEL: {
		struct dlrt_ip_jobref r;
		struct dlrt_infer_job *j;

		if (dlrt_ip_get_jobref(f->payload, f->len, &r, err) < 0)
			return -1;
		j = dlrt_infer_state_job(&c->st, r.job);
		if (!j)
			reply_error(conn, "no such job: see dlrt-infer status");
		else if (j->state != DLRT_IP_JOB_RUNNING)
			reply_error(conn, "the job has already ended");
		else {
			end_job(c, r.job - 1, DLRT_IP_JOB_CANCELLED, "cancelled by the user");
			dlrt_ip_put_empty(&conn->out, DLRT_IP_OK);
		}
		return 0;
	}
	case DLRT_IP_WAIT: {
		struct dlrt_ip_jobref r;

		if (dlrt_ip_get_jobref(f->payload, f->len, &r, err) < 0)
			return -1;
		on_wait(c, conn, r.job);
		return 0;
	}
	case DLRT_IP_STOP:
		if (dlrt_ip_get_empty(f->payload, f->len, err) < 0)
			return -1;
		logf_(c, "stop requested: the pool shuts down");
		sb_drain(c); /* the standby stops next: first it holds what was answered */
		dlrt_ip_put_empty(reply_buf(c, conn), DLRT_IP_OK);
		if (c->sb) {
			dlrt_ip_put_empty(&c->sb->out, DLRT_IP_STOP);
			mark_dirty(c, c->sb);
		}
		c->stopping = true;
		kick(c);
		return 0;
	default:
		return dlrt_err_set(err, "a client sent %s", dlrt_ip_type_name(f->type));
	}
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
			reply_error(conn, err.msg);
			logf_(c, "closing a connection: %s", err.msg);
			return DLRT_PROTO_CLOSE;
		}
		rc = dlrt_ip_frame_peek(dlrt_buf_head(&conn->in), conn->in.len, &f, &err);
		if (rc == 0) {
			/* A frame longer than the buffer limit can never complete. */
			if (conn->in.len >= conn->in.limit) {
				logf_(c, "closing a connection: frame too large");
				return DLRT_PROTO_CLOSE;
			}
			return DLRT_PROTO_OK;
		}
		if (rc < 0)
			/* The peer learns why (an older one reads our version from it). */
			reply_error(conn, err.msg);
		if (rc < 0 || handle(c, conn, &f, &err) < 0) {
			logf_(c, "closing a connection: %s", err.msg);
			return DLRT_PROTO_CLOSE;
		}
		dlrt_buf_consume(&conn->in, f.frame_len);
	}
}

/* A client's replies (SUBMITTED, OK, JOBEND, a status) may tell of changes
 * the standby does not hold yet: what this call added waits with the group
 * (reply_buf). Workers' replies are ACKs (put_ack) and tasks, which tell of
 * nothing durable and go out at once. */
static enum dlrt_proto_result on_data(struct dlrt_conn *conn, void *ctx)
{
	struct coord *c = ctx;
	size_t before = conn->out.len;
	enum dlrt_proto_result r = on_frames(conn, ctx);
	struct peer *p = conn->state;
	struct dlrt_buf *b;

	if (r != DLRT_PROTO_OK || p->role != DLRT_IP_ROLE_CLIENT || conn->out.len <= before)
		return r;
	b = reply_buf(c, conn);
	if (b == &conn->out)
		return r;
	if (dlrt_buf_append(b, dlrt_buf_head(&conn->out) + before, conn->out.len - before) < 0)
		r = DLRT_PROTO_CLOSE; /* a client that does not read its replies */
	conn->out.len = before;
	return r;
}

/* A worker died or went silent: its dispatches are void (a late answer is
 * dropped) and its tasks go back to the front of their jobs' queues, in order. */
static void worker_lost(struct coord *c, struct wk *w, const char *how)
{
	uint32_t n = w->n;

	for (uint32_t k = w->n; k-- > 0;) {
		uint32_t ji = w->fl[k].job - 1;

		c->jr[ji].inflight--;
		dlrt_attempts_release(&c->jr[ji].att, w->fl[k].task, w->fl[k].attempt);
		requeue(c, ji, w->fl[k].task);
	}
	if (w->cur >= 0 && c->sj[w->cur].held > 0)
		c->sj[w->cur].held--;
	w->n = 0;
	w->cur = -1;
	if (!w->draining)
		c->alive--; /* a draining worker no longer counts already */
	w->lost = true;
	logf_(c, "worker %u (%s) %s with %u tasks in flight (requeued); %u workers", w->id,
	      w->name, how, n, c->alive);
	event(c, 0, "worker_lost");
	retarget(c);
	kick(c);
}

/* Declares silent workers dead; closes connections silent for much longer. */
static int64_t heartbeat_check(struct dlrt_evloop *loop, void *arg)
{
	struct coord *c = arg;
	int64_t t = dlrt_now_ms(), gap = t - c->hb_last_check_ms;

	(void)loop;
	c->hb_last_check_ms = t;
	if (gap > c->hb.silence_ms / 2 && gap > 2 * c->hb.check_ms) {
		/* This process was stopped or starved, not the workers: their heartbeats
		 * wait unread in the sockets. Read them before judging anyone. */
		logf_(c, "the coordinator itself did not run for %.2f s: heartbeats are checked "
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
			logf_(c, "worker %u (%s) silent for %.0f s: connection closed", w->id,
			      w->name, (double)(t - w->last_seen_ms) / 1000);
			dlrt_conn_close(w->conn); /* on_close clears w->conn */
		}
	}
	return c->hb.check_ms;
}

/* Any frame from a worker shows it alive; one declared dead comes back empty-handed:
 * answers of its old dispatches are dropped as late. */
static void worker_seen(struct coord *c, struct wk *w)
{
	w->last_seen_ms = dlrt_now_ms();
	if (!w->lost || !w->conn)
		return;
	w->lost = false;
	if (!w->draining)
		c->alive++;
	logf_(c, "worker %u (%s) is back; %u workers", w->id, w->name, c->alive);
	retarget(c);
	kick(c);
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
		logf_(c, "closed %u connections that did not authenticate within %d s, and %u "
		      "beyond the %d that may wait for it at once", late,
		      DLRT_GATE_DEADLINE_MS / 1000, c->gate_evicted, DLRT_GATE_MAX_PENDING);
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
	held_forget(c, conn);
	if (conn == c->sb) {
		c->sb = NULL;
		c->sb_ready = false;
		logf_(c, "standby lost: it closed its connection");
		if (!fence_check(c)) {
			c->promote_ms = dlrt_now_ms();
			release_held(c, true);
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
			worker_lost(c, w, "left (connection closed)");
		else
			logf_(c, "worker %u (%s): connection closed", w->id, w->name);
		w->conn = NULL;
	}
	free(p);
	conn->state = NULL;
}

/* ---- periodic: rates, costs, shares, timeline ------------------------------------ */

static int64_t tick(struct dlrt_evloop *loop, void *arg)
{
	struct coord *c = arg;
	int64_t b = dlrt_now_ms() / c->bucket_ms, t = dlrt_now_us();
	double win = (double)c->bucket_ms * NB / 1000.0;

	(void)loop;
	accrue(c);
	for (uint32_t ji = 0; ji < c->st.njobs; ji++) {
		struct jrt *r = &c->jr[ji];
		struct dlrt_infer_job *j = &c->st.jobs[ji];
		uint64_t q = 0, qall = 0, qc_now = 0, qwin = 0;
		double occ = 0, held = 0, age, occ_now = 0, hold = 0, hold_now = 0;
		int nb_now = 0;
		uint32_t samples = 0;
		int slot;
		int64_t start, bmin;

		if (j->state != DLRT_IP_JOB_RUNNING)
			continue;
		slot = bucket_slot(r, b);
		r->bheld[slot] += c->sj[ji].held;
		r->bsamples[slot]++;
		/* The rate counts from the latest of: the window's start, the job's
		 * first task, the last change of the set of jobs. */
		start = t - (int64_t)(win * 1e6);
		if (r->first_dispatch_us > start)
			start = r->first_dispatch_us;
		if (c->regime_us > start)
			start = c->regime_us;
		bmin = start / 1000 / c->bucket_ms;
		for (int i = 0; i < NB; i++) {
			if (r->bucket[i] <= b - NB || r->bucket[i] > b)
				continue;
			occ += r->bocc[i];
			qall += r->bqc[i];
			held += r->bheld[i];
			hold += r->bhold[i];
			qwin += r->bq[i];
			samples += r->bsamples[i];
			if (r->bucket[i] >= bmin) {
				q += r->bq[i];
				occ_now += r->bocc[i];
				qc_now += r->bqc[i];
				hold_now += r->bhold[i];
				nb_now++;
			}
		}
		/* Buckets are whole: count from the first bucket's start. */
		age = r->first_dispatch_us ? (double)(t - bmin * c->bucket_ms * 1000) / 1e6 : 0;
		if (age > win)
			age = win;
		if (age < c->bucket_ms / 1000.0)
			age = c->bucket_ms / 1000.0;
		r->rate = r->first_dispatch_us ? (double)q / age : 0;
		r->held_avg = samples ? held / samples : 0;
		/* Cost per query: the worker-seconds the job held per answer. That
		 * is what its rate is made of (rate = workers held / cost), so shares
		 * from it equalise the rates; the time from task out to answer back
		 * alone misses a worker's waits between tasks (for the coordinator,
		 * the standby's acknowledgement), which weigh most on short tasks.
		 * It changes with the mix of jobs (shared cores and caches), so once
		 * a few buckets since the last change have answers, only those count;
		 * until then the whole window, and before any answer is in the window
		 * the first answer's own time (on_result). */
		if (nb_now >= 3 && qc_now >= 20 && q && hold_now > 0)
			c->sj[ji].cost = hold_now / (double)q;
		else if (qwin && hold > 0)
			c->sj[ji].cost = hold / (double)qwin;
		else if (qall)
			c->sj[ji].cost = occ / (double)qall;
		tl_row(c, ji, t);
	}
	if (b % 4 == 0)
		tl_flush(c, &c->timeline);
	retarget(c);
	return c->bucket_ms;
}

static void on_signal(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct coord *c = arg;
	struct signalfd_siginfo si;

	(void)events;
	if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		logf_(c, "signal %u: the pool shuts down", si.ssi_signo);
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
		logf_(c, "journal: cut a torn or corrupt tail at byte %zu after %llu good records "
		      "(%s); it was never applied", scan.good, (unsigned long long)scan.records,
		      scan.why);
	else if (scan.records)
		logf_(c, "journal: %llu records replayed", (unsigned long long)scan.records);
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
		coord_break(c, err.msg);
		return -1;
	}
	return DLRT_JOURNAL_SYNC_MS;
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
			logf_(&c, "connections authenticate with MUNGE (pool owner uid %d only)",
			      (int)geteuid());
		else
			logf_(&c, "connections authenticate with the pool secret's challenge-response "
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
			return dlrt_err_set(err, "the coordinator of %s (epoch %llu on %s) still runs: "
					    "not starting another (dlrt-infer pool stop stops it)",
					    c.pool, (unsigned long long)old.epoch, old.host);
		}
	}
	c.epoch = old.epoch + 1;
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
	if (c.st.epoch >= c.epoch)
		c.epoch = c.st.epoch + 1;
	c.next_attempt = dlrt_attempt_first(c.epoch);
	if (resume_jobs(&c) < 0) {
		dlrt_err_set(err, "out of memory resuming the jobs");
		goto out;
	}
	if (getenv("DLRT_INFER_JOURNAL") && !strcmp(getenv("DLRT_INFER_JOURNAL"), "0"))
		logf_(&c, "DLRT_INFER_JOURNAL=0: no journal (benchmarks only)");
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
	{
		/* A new pool starts new files at t = 0; a continued one appends and
		 * keeps the pool's time (tsvlog.h). */
		struct dlrt_tsv_scan sc = { 0 };
		struct dlrt_err e2;
		char ev[64];

		c.timeline = dlrt_tsv_open(c.pool, "timeline.tsv",
					   "t\tjob\trate\tworkers\tshare\tdone\n", !continuing, &sc,
					   &e2);
		if (!c.timeline)
			logf_(&c, "no timeline: %s", e2.msg);
		c.events = dlrt_tsv_open(c.pool, "events.tsv", "t\tjob\tevent\n", !continuing, &sc,
					 &e2);
		if (!c.events)
			logf_(&c, "no events: %s", e2.msg);
		if (continuing) {
			double t = dlrt_tsv_resume_t(&sc, wall_now());

			c.t0_us = dlrt_now_us() - (int64_t)(t * 1e6) - 1;
			logf_(&c, "the timeline continues at pool time %.3f s", tsec(&c, dlrt_now_us()));
		}
		/* Lets tools relate t to other clocks (failure benchmarks). */
		snprintf(ev, sizeof(ev), "clock:%.6f", wall_now() - tsec(&c, dlrt_now_us()));
		event(&c, 0, ev);
		if (continuing) {
			/* Marks the change of coordinator (dlrt-infer plot draws it). */
			snprintf(ev, sizeof(ev), "%s:%llu", o->takeover ? "takeover" : "restart",
				 (unsigned long long)c.epoch);
			event(&c, 0, ev);
		}
	}
	dlrt_evloop_add_timer(c.loop, c.bucket_ms, tick, &c);
	c.hb_last_check_ms = dlrt_now_ms();
	dlrt_evloop_add_timer(c.loop, c.hb.check_ms, heartbeat_check, &c);
	dlrt_evloop_add_timer(c.loop, DLRT_JOURNAL_SYNC_MS, journal_tick, &c);
	dlrt_evloop_add_timer(c.loop, 1000, gate_tick, &c);
	c.sb_tmo = dlrt_standby_timeout_ms();
	gethostname(c.host, sizeof(c.host) - 1);
	/* Element 1 usually joins within a second or two; then anyone will do. */
	if (!getenv("DLRT_INFER_STANDBY") || strcmp(getenv("DLRT_INFER_STANDBY"), "0"))
		c.promote_ms = dlrt_now_ms() + (o->takeover ? 500 : 1500);
	dlrt_evloop_add_timer(c.loop, DLRT_STANDBY_BEAT_MS, ha_tick, &c);
	/* A job whose last answer was recorded but not its end (a crash in
	 * between, or a torn JOB_END) ends now. */
	fail_unstorable(&c);
	for (uint32_t ji = 0; ji < c.st.njobs; ji++)
		if (c.st.jobs[ji].state == DLRT_IP_JOB_RUNNING &&
		    c.st.jobs[ji].tasks_done == c.st.jobs[ji].ntasks)
			job_complete(&c, ji);
	a.epoch = c.epoch;
	a.port = dlrt_tcpserver_port(c.srv);
	snprintf(a.secret, sizeof(a.secret), "%s", c.secret);
	gethostname(a.host, sizeof(a.host) - 1);
	a.pid = (uint32_t)getpid();
	if (dlrt_pool_write_access(c.pool, &a, err) < 0)
		goto out;
	logf_(&c, "serving pool %s at %s:%u, epoch %llu, prefetch %u, window %.2f s, "
	      "heartbeat bound %.2f s", c.pool, a.address, a.port, (unsigned long long)c.epoch,
	      o->prefetch, window, (double)c.hb.bound_ms / 1000);
	if (o->takeover)
		logf_(&c, "took over: epoch %llu serves since wall %.6f", (unsigned long long)c.epoch,
		      wall_now());
	if (dlrt_evloop_run(c.loop) < 0) {
		dlrt_err_errno(err, errno, "the event loop failed");
		goto out;
	}
	rc = 0;
	logf_(&c, "%llu late or void answers dropped", (unsigned long long)c.late_dropped);
	if (c.fenced) {
		rc = -1;
		dlrt_err_set(err, "fenced out by a newer coordinator (see the log above)");
	} else if (c.broken) {
		rc = -1;
		dlrt_err_set(err, "%s", c.broken_msg);
	}
out:
	if (c.sb && !c.fenced) {
		/* The standby must not take over a pool that stops. */
		struct dlrt_err e3;
		uint64_t none = 0;

		/* What was answered reaches the standby, and the replies held for it
		 * their peers, before the connections close. */
		sb_drain(&c);
		while (c.ndirty) {
			struct dlrt_conn *conn = c.dirty[--c.ndirty];

			((struct peer *)conn->state)->dirty = false;
			dlrt_conn_flush(conn);
		}

		dlrt_ip_put_empty(&c.sb->out, DLRT_IP_STOP);
		dlrt_standby_push(c.sb, 0, 200, &none, &e3);
	}
	/* Remove our access record (not a newer coordinator's): workers then exit. */
	{
		struct dlrt_pool_access now;
		struct dlrt_err e2;
		char path[4200];

		if (dlrt_pool_read_access(c.pool, &now, &e2) == 0 && now.epoch == c.epoch) {
			snprintf(path, sizeof(path), "%s/access", c.pool);
			unlink(path);
		}
	}
	if (c.srv)
		dlrt_tcpserver_stop(c.srv); /* before the files: on_close may still log events */
	/* Running jobs' rows were flushed with their answers: nothing is left
	 * to write, but a failing close is still worth a line. */
	for (uint32_t i = 0; i < c.st.njobs; i++)
		if (c.jr[i].csv && fclose(c.jr[i].csv) != 0)
			logf_(&c, "job %u: closing %s: %s", c.st.jobs[i].id, c.jr[i].out,
			      strerror(errno));
	if (c.timeline) {
		if (c.fenced)
			__fpurge(c.timeline);
		if (fclose(c.timeline) != 0)
			logf_(&c, "closing timeline.tsv: %s: its last rows are lost", strerror(errno));
	}
	if (c.events) {
		if (c.fenced)
			__fpurge(c.events);
		if (fclose(c.events) != 0)
			logf_(&c, "closing events.tsv: %s: its last rows are lost", strerror(errno));
	}
	if (c.sfd >= 0)
		close(c.sfd);
	if (c.loop)
		dlrt_evloop_destroy(c.loop);
	dlrt_journal_close(&c.jn);
	dlrt_buf_free(&c.log);
	for (uint32_t i = 0; i < c.nworkers; i++) {
		free(c.workers[i]->known);
		free(c.workers[i]);
	}
	free(c.workers);
	for (uint32_t i = 0; i < c.st.njobs; i++) {
		free(c.jr[i].requeue);
		free(c.jr[i].waiters);
		dlrt_attempts_free(&c.jr[i].att);
	}
	free(c.jr);
	free(c.sj);
	free(c.dirty);
	free(c.held);
	dlrt_infer_state_free(&c.st);
	return rc;
}
