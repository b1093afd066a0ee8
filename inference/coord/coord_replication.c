/* coord_replication.c - the coordinator's durable changes and its hot
 * standby (standby.h): commit, the batch (at most about once a millisecond: the answers'
 * rows, then the journal, then the standby), the group commit that holds
 * replies until what they tell of is written and the standby acknowledged
 * it, fencing by a newer epoch, asking a worker for a standby, and the stop
 * of the pool when the journal fails. Its part takes SEQACK, decides where a
 * client's replies go, writes the batch, checks the fence and releases the
 * held replies before each flush of the deferred writes, and forgets a
 * connection's held replies (or the standby) when it closes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "coord_int.h"
#include "inference/pool/claim.h"
#include "common/clock.h"
#include "inference/state/standby.h"

/* Group commit. The answers that came in since the last batch, and the
 * changes committed since, are a batch: the answers' rows are stored
 * (coord_results.c), the changes journaled in one write and queued for the
 * standby together (dlrt_coord_write_batch), before the deferred writes go
 * out. A batch closes at the end of the first loop turn DLRT_COORD_GROUP_US
 * after the last one (at once on a quiet pool: the first answer after a
 * pause waits for nothing), or sooner when it holds a change that is not an
 * answer (a submission, a job's end: they are synced at once), or
 * DLRT_COORD_GROUP_ANSWERS answers, or DLRT_COORD_GROUP_BYTES of changes.
 * A busy pool thus writes its results files and its journal at most a
 * thousand times a second instead of once per loop turn (a turn serves a
 * few messages: the writes were most of what the journal cost). What tells anyone of a change (a worker's ACK, a client's reply, a
 * waiter's JOBEND) waits in its peer's `held` buffer until the batch is
 * written and the standby acknowledged the newest change before it: the
 * journal and the standby hold everything that was acknowledged, while the
 * loop goes on serving (a worker gets its next task at once; only the ACK of
 * its answer waits). Without a ready standby the journal alone is the
 * record: replies wait for the write of their batch only. */
static void standby_lost(struct coord *c, const char *why);

static bool sb_pending(const struct coord *c)
{
	return c->sb && c->sb_ready && c->sb_acked < c->sb_sent;
}

/* Something nobody may hear of yet: answers kept for the batch, changes not
 * written yet, or not acknowledged by the standby yet. */
static bool pending(const struct coord *c)
{
	return c->npend || c->written_seq < c->st.seq || sb_pending(c);
}

/* The newest change a reply may tell of now. */
static uint64_t durable_seq(const struct coord *c)
{
	return c->sb && c->sb_ready && c->sb_acked < c->written_seq ? c->sb_acked
								      : c->written_seq;
}

/* Where a reply that tells of the changes so far goes: behind earlier held
 * replies of its peer, or held while anything is pending, else out at once.
 * Once the journal failed nothing more is recorded: what is said now (the
 * pool stops) goes out at once. */
struct dlrt_buf *dlrt_coord_reply_buf(struct coord *c, struct dlrt_conn *conn)
{
	struct peer *p = conn->state;

	if (c->broken || (!p->held.len && !pending(c)))
		return &conn->out;
	p->held_open = true;
	dlrt_coord_kick(c);
	if (!p->in_held) {
		/* Room for every connection was made at start: this never fails. */
		c->held[c->nheld++] = conn;
		p->in_held = true;
	}
	return &p->held;
}

/* The batch is written: each peer's replies held since its last mark
 * tell of every change up to seq. */
static void held_close_batch(struct coord *c, uint64_t seq)
{
	for (uint32_t i = 0; i < c->nheld; i++) {
		struct peer *p = c->held[i]->state;

		if (!p->held_open)
			continue;
		if (p->nmarks == HELD_MARKS) {
			p->nmarks--; /* merged into the newest: waits for seq too */
			p->open_acks += p->marks[p->nmarks].acks;
		}
		p->marks[p->nmarks++] = (struct held_mark){
			.end = p->held.len, .seq = seq, .acks = p->open_acks };
		p->held_open = false;
		p->open_acks = 0;
	}
}

/* Sends each peer's held replies whose changes are written and, with a
 * ready standby, held by it: up to its newest mark that is durable. */
void dlrt_coord_release_held(struct coord *c)
{
	uint64_t upto = durable_seq(c);

	for (uint32_t i = 0; i < c->nheld; i++) {
		struct dlrt_conn *conn = c->held[i];
		struct peer *p = conn->state;
		uint32_t k = 0, acks = 0;
		size_t len;

		while (k < p->nmarks && p->marks[k].seq <= upto)
			acks += p->marks[k++].acks;
		if (!k)
			continue;
		len = p->marks[k - 1].end;
		if (dlrt_buf_append(&conn->out, dlrt_buf_head(&p->held), len) < 0)
			dlrt_coord_log(c,
				       "a peer's replies exceed its output limit: %zu bytes dropped "
				       "(it reads too slowly)", len);
		dlrt_buf_consume(&p->held, len);
		p->nmarks -= (uint8_t)k;
		for (uint32_t m = 0; m < p->nmarks; m++) {
			p->marks[m] = p->marks[m + k];
			p->marks[m].end -= len;
		}
		p->held_acks -= acks;
		if (!p->nmarks && !p->held_open) {
			p->in_held = false;
			c->held[i--] = c->held[--c->nheld];
		}
		/* A worker with tasks in flight answers soon, and the reply to that
		 * carries these ACKs: a write and a wake-up of the worker fewer per
		 * group. ACKs only let the worker forget answers it keeps. */
		if (!p->w || !p->w->n || c->stopping)
			dlrt_coord_mark_dirty(c, conn);
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
	p->nmarks = 0;
	p->held_open = false;
	p->held_acks = p->open_acks = 0;
	dlrt_buf_free(&p->held);
}

/* The standby's link carries one group of changes at a time (its SEQACK
 * sends the next) and at most one every DLRT_COORD_SB_GROUP_US: a group per
 * round trip alone made groups of a few changes, each a wake-up of the
 * standby (most of its CPU) and a send and a SEQACK for the coordinator.
 * Changes wait in c->sbq until their group goes. force: now (the pool
 * stops, or the standby is not ready yet). */
static void sb_group(struct coord *c, bool force);

static int64_t sb_group_timer(struct dlrt_evloop *loop, void *arg)
{
	struct coord *c = arg;

	(void)loop;
	c->sb_group_timer = false;
	sb_group(c, false);
	return -1;
}

static void sb_group(struct coord *c, bool force)
{
	int64_t now = dlrt_now_us();

	if (!c->sb || !c->sbq.len)
		return;
	if (!force && c->sb_ready) {
		if (c->sb_acked < c->sb_wrote)
			return; /* a group is on its way: its SEQACK sends this one */
		if (now - c->sb_group_us < DLRT_COORD_SB_GROUP_US && c->sbq.len < ((size_t)64 << 10)) {
			if (!c->sb_group_timer && c->loop &&
			    dlrt_evloop_add_timer(c->loop, (c->sb_group_us + DLRT_COORD_SB_GROUP_US -
							    now) / 1000 + 1, sb_group_timer, c) > 0)
				c->sb_group_timer = true;
			return;
		}
	}
	if (dlrt_buf_append(&c->sb->out, dlrt_buf_head(&c->sbq), c->sbq.len) < 0) {
		dlrt_buf_consume(&c->sbq, c->sbq.len);
		standby_lost(c, "it fell too far behind");
		return;
	}
	dlrt_buf_consume(&c->sbq, c->sbq.len);
	c->sb_wrote = c->sb_sent;
	c->sb_group_us = now;
	dlrt_coord_mark_dirty(c, c->sb);
}

/* A worker's ACK for an answer: out with the group's SEQACK. */
void dlrt_coord_put_ack(struct coord *c, struct dlrt_conn *conn, uint32_t job, uint64_t task)
{
	struct dlrt_buf *b = dlrt_coord_reply_buf(c, conn);

	if (dlrt_ip_put_ack(b, job, task) == 0 && b != &conn->out) {
		((struct peer *)conn->state)->held_acks++;
		((struct peer *)conn->state)->open_acks++;
	}
}

/* Is there a newer coordinator? Then this one stops at once. */
bool dlrt_coord_fence_check(struct coord *c)
{
	struct dlrt_pool_access a;
	struct dlrt_err err;

	uint64_t high = 0;
	int r;

	if (c->fenced)
		return true;
	r = dlrt_pool_read_access(c->pool, &a, &err);
	if (dlrt_claim_highest(c->pool, &high, &err) < 0)
		high = 0; /* unreadable claims: the record still fences */
	if ((r == 0 && a.epoch > c->epoch) || high > c->epoch) {
		dlrt_coord_log(c,
			       "fenced out: the coordinator of epoch %llu took over; this one (epoch %llu) "
			       "stops without acknowledging anything more",
			       (unsigned long long)(r == 0 && a.epoch > high ? a.epoch : high),
			       (unsigned long long)c->epoch);
		c->fenced = true;
		if (c->loop)
			dlrt_evloop_stop(c->loop);
	} else if (r == 0 && a.epoch < c->epoch && c->acc.epoch == c->epoch &&
		   dlrt_pool_write_access(c->pool, &c->acc, &err) == 0) {
		/* An older coordinator that stalled before writing its record wrote
		 * it late (it is fenced by our claim): the pool's record is ours. */
		dlrt_coord_log(c, "the access record named epoch %llu: rewritten",
			       (unsigned long long)a.epoch);
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
	dlrt_coord_log(c, "standby lost: %s", why);
	dlrt_buf_consume(&conn->out, conn->out.len);
	if (dlrt_ip_put_error(&conn->out, "the coordinator let this standby go") == 0 &&
	    send(conn->fd, dlrt_buf_head(&conn->out), conn->out.len, MSG_NOSIGNAL | MSG_DONTWAIT) > 0)
		dlrt_buf_consume(&conn->out, conn->out.len);
	shutdown(conn->fd, SHUT_RDWR);
	if (!dlrt_coord_fence_check(c)) {
		c->promote_ms = dlrt_now_ms();
		dlrt_coord_release_held(c); /* the journal alone is the record now */
	}
}

static void standby_acked(struct coord *c, uint64_t seq)
{
	if (seq > c->sb_acked)
		c->sb_acked = seq;
	c->sb_ack_ms = dlrt_now_ms();
	if (!c->sb_ready && c->sb_acked >= c->sb_ready_seq) {
		c->sb_ready = true;
		dlrt_coord_log(c,
			       "standby ready: it holds all %llu changes; every change now reaches it "
			       "before it is acknowledged", (unsigned long long)c->sb_acked);
	}
	sb_group(c, false); /* the next group */
	/* What waited for it goes out before the deferred writes, after the
	 * fence check (before_flush below). */
	dlrt_coord_kick(c);
}

/* Waits (blocking, up to the takeover bound) until the standby holds every
 * change queued for it, and sends what was held: before the pool stops,
 * whose replies must not be lost with the loop. */
void dlrt_coord_sb_drain(struct coord *c)
{
	struct dlrt_err err;

	sb_group(c, true);
	if (!sb_pending(c))
		return;
	if (dlrt_standby_push(c->sb, c->sb_sent, c->sb_tmo, &c->sb_acked, &err) < 0) {
		standby_lost(c, err.msg);
		return;
	}
	standby_acked(c, c->sb_acked);
	dlrt_coord_release_held(c);
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
	dlrt_coord_mark_dirty(c, best->conn);
	c->promoted = best->id;
	c->promote_ms = dlrt_now_ms() + 5000; /* another one if none attaches by then */
	dlrt_coord_log(c, "asked worker %u (%s) to start a standby", best->id, best->name);
}

int64_t dlrt_coord_ha_tick(struct dlrt_evloop *loop, void *arg)
{
	struct coord *c = arg;
	int64_t now = dlrt_now_ms();

	(void)loop;
	if (++c->beats % 10 == 0 && dlrt_coord_fence_check(c))
		return -1;
	if (c->sb) {
		if (now - c->sb_ack_ms > (c->sb_ready ? c->sb_tmo : 10000)) {
			standby_lost(c, "it stopped answering");
		} else {
			dlrt_ip_put_seq(&c->sb->out, DLRT_IP_SYNC, c->st.seq);
			dlrt_coord_mark_dirty(c, c->sb);
		}
	} else if (c->promote_ms && now >= c->promote_ms) {
		promote(c);
	}
	return DLRT_STANDBY_BEAT_MS;
}

/* The journal cannot take a change: nothing more can be acknowledged, since
 * a restart would not know it. Going on without the journal would let a
 * restart replay an older state (job ids handed out twice, answers the
 * clients were told about missing). So the pool stops, as `pool stop` does,
 * and every waiter hears that its job failed and why; the journal holds
 * exactly what was acknowledged, so `pool restart` resumes the running jobs. */
void dlrt_coord_break(struct coord *c, const char *msg)
{
	if (c->broken)
		return;
	c->broken = true;
	snprintf(c->broken_msg, sizeof(c->broken_msg), "%s", msg);
	/* The batches before this one were recorded: their replies go out; this
	 * batch's never do. */
	dlrt_coord_sb_drain(c);
	dlrt_coord_release_held(c);
	dlrt_coord_log(c, "%s; the pool stops (running jobs resume from the journal after dlrt-infer pool "
	      "restart)", msg);
	for (uint32_t ji = 0; ji < c->st.njobs; ji++) {
		struct jrt *r = &c->jr[ji];
		struct dlrt_ip_job_info info;

		if (c->st.jobs[ji].state != DLRT_IP_JOB_RUNNING)
			continue;
		dlrt_coord_fill_job_info(c, ji, &info);
		info.state = DLRT_IP_JOB_FAILED;
		snprintf(info.error, sizeof(info.error), "the pool stopped: %s", msg);
		for (uint32_t i = 0; i < r->nwaiters; i++) {
			dlrt_ip_put_jobend(dlrt_coord_reply_buf(c, r->waiters[i]), &info);
			dlrt_coord_mark_dirty(c, r->waiters[i]);
		}
		r->nwaiters = 0;
	}
	if (c->sb) {
		dlrt_ip_put_empty(&c->sb->out, DLRT_IP_STOP); /* it must not take over */
		dlrt_coord_mark_dirty(c, c->sb);
	}
	c->stopping = true;
	dlrt_coord_kick(c);
}

/* Applies a change to the durable state and keeps its frame in the log;
 * the caller may act on it at once, but nobody hears of it before the batch
 * is written (dlrt_coord_write_batch: journal and standby) and the replies
 * telling of it are released. -1 if it is not applied: the journal failed
 * (the pool stops), this coordinator was fenced out, or the state refused it
 * (errno EINVAL; ENOMEM: out of memory). */
int dlrt_coord_commit(struct coord *c, struct dlrt_infer_change *ch)
{
	struct dlrt_err err;
	size_t at = c->log.len;

	if (c->fenced || c->broken)
		return -1;
	ch->epoch = c->epoch;
	ch->seq = c->st.seq + 1;
	ch->wall = dlrt_coord_wall_now();
	if (dlrt_infer_change_put(&c->log, ch) < 0) {
		dlrt_coord_log(c, "cannot keep a state change: out of memory");
		errno = ENOMEM;
		return -1;
	}
	if (dlrt_infer_state_apply(&c->st, ch, &err) < 0) {
		c->log.len = at;
		dlrt_coord_log(c, "refused a state change: %s", err.msg);
		errno = EINVAL;
		return -1;
	}
	/* Submissions and ends reach the disk before anyone hears of them. */
	if (ch->kind != DLRT_CH_TASK_DONE)
		c->batch_sync = true;
	dlrt_coord_kick(c);
	return 0;
}

/* The batch gathered since the last one, before anyone hears of it: the kept answers'
 * rows stored and the answers recorded (coord_results.c), then every change
 * not written yet appended to the journal in one write (journal.h has the
 * fsync policy) and queued for the standby, whose acknowledgement the
 * replies telling of them wait for (group commit above). -1: nothing more
 * may be acknowledged (the journal failed: the pool stops; or fenced out). */
int dlrt_coord_write_batch(struct coord *c)
{
	const uint8_t *frames = dlrt_buf_head(&c->log) + c->log_written;
	size_t n;
	struct dlrt_err err;

	if (c->fenced || c->broken)
		return -1;
	if (c->npend || c->log.len > c->log_written)
		c->batch_us = dlrt_now_us();
	dlrt_coord_store_answers(c);
	/* The replies held since the last batch tell of every change so far. */
	held_close_batch(c, c->st.seq);
	if (c->fenced || c->broken) {
		dlrt_coord_answers_written(c, false);
		return -1;
	}
	frames = dlrt_buf_head(&c->log) + c->log_written;
	n = c->log.len - c->log_written;
	if (n && dlrt_journal_write(&c->jn, frames, n, c->batch_sync, &err) < 0) {
		dlrt_coord_answers_written(c, false);
		dlrt_coord_break(c, err.msg);
		return -1;
	}
	dlrt_coord_answers_written(c, true);
	if (!n)
		return 0;
	c->batch_sync = false;
	if (c->jn.reserve_errno && c->jn.reserve_errno != EOPNOTSUPP && !c->reserve_warned) {
		c->reserve_warned = true; /* once: it is retried on every 64 KiB */
		dlrt_coord_log(c,
			       "the journal cannot hold disk space ahead (%s): the pool folder is "
			       "almost full; free space there before the journal runs out and the pool stops",
			       strerror(c->jn.reserve_errno));
	}
	c->log_written = c->log.len;
	c->written_seq = c->st.seq;
	if (!c->sb)
		return 0;
	if (dlrt_buf_append(&c->sbq, frames, n) < 0) {
		dlrt_buf_consume(&c->sbq, c->sbq.len);
		standby_lost(c, "it fell too far behind");
	} else {
		/* Written with the deferred writes of this turn, or, while a group
		 * is on its way, with the next group when its SEQACK comes
		 * (standby_acked), at most one group every DLRT_COORD_SB_GROUP_US
		 * (sb_group): the busier the pool, the larger the groups. The
		 * replies telling of it wait for its SEQACK. */
		c->sb_sent = c->written_seq;
		sb_group(c, !c->sb_ready);
	}
	return 0;
}

/* A standby attaches: it gets the whole log now, and each change from then on. */
int dlrt_coord_standby_attach(struct coord *c, struct dlrt_conn *conn,
			      const struct dlrt_ip_hello *h)
{
	struct dlrt_ip_welcome wel = { .epoch = c->epoch, .id = 0 };

	if (c->sb) {
		dlrt_coord_reply_error(conn, "the pool already has a standby");
		return -1;
	}
	((struct peer *)conn->state)->role = DLRT_IP_ROLE_STANDBY;
	c->sb = conn;
	/* It gets what was written; the batch being made follows with the batch. */
	c->sb_ready = false;
	c->sb_ready_seq = c->written_seq;
	c->sb_acked = 0;
	c->sb_sent = c->sb_wrote = c->written_seq;
	dlrt_buf_consume(&c->sbq, c->sbq.len); /* in the log it gets */
	c->sb_ack_ms = dlrt_now_ms();
	c->promote_ms = 0;
	if (dlrt_ip_put_welcome(&conn->out, &wel) < 0 ||
	    dlrt_buf_append(&conn->out, dlrt_buf_head(&c->log), c->log_written) < 0 ||
	    dlrt_ip_put_seq(&conn->out, DLRT_IP_SYNC, c->written_seq) < 0) {
		c->sb = NULL;
		c->promote_ms = dlrt_now_ms() + 1000;
		return -1;
	}
	dlrt_coord_log(c, "standby %s attached; it gets the %llu changes so far", h->name,
		       (unsigned long long)c->written_seq);
	return 0;
}

/* SEQACK: the standby holds every change up to seq. */
static int on_seqack(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_frame *f,
		     struct dlrt_err *err)
{
	uint64_t seq;

	(void)conn;
	if (dlrt_ip_get_seq(f->payload, f->len, &seq, err) < 0)
		return -1;
	standby_acked(c, seq);
	return 0;
}

static int64_t batch_timer(struct dlrt_evloop *loop, void *arg)
{
	struct coord *c = arg;

	(void)loop;
	c->batch_timer = false;
	dlrt_coord_kick(c); /* before_flush closes the batch */
	return -1;
}

/* Is the batch being gathered to be written at the end of this turn (the
 * group commit above)? If not, a timer makes sure it is within
 * DLRT_COORD_GROUP_US even if nothing else happens. */
static bool batch_due(struct coord *c, int64_t now_us)
{
	size_t unwritten = c->log.len - c->log_written;

	/* Nothing gathered: "writing" it only gives the replies held this turn
	 * (for the standby's acknowledgement) the sequence number they wait for. */
	if (!c->npend && !unwritten)
		return true;
	if (c->batch_sync || c->stopping || now_us - c->batch_us >= DLRT_COORD_GROUP_US ||
	    c->npend >= DLRT_COORD_GROUP_ANSWERS || unwritten >= DLRT_COORD_GROUP_BYTES)
		return true;
	if (!c->batch_timer && c->loop &&
	    dlrt_evloop_add_timer(c->loop, (int64_t)((c->batch_us + DLRT_COORD_GROUP_US - now_us) /
						       1000 + 1), batch_timer, c) > 0)
		c->batch_timer = true;
	return false;
}

/* Before the deferred writes go out: the batch is written if due, then,
 * unless a newer epoch was claimed, the replies whose changes are durable
 * now are released. The claims directory is looked at (one stat(2), a scan
 * only when it changed) when DLRT_COORD_FENCE_MS passed since the last look,
 * so the check costs nothing per task; docs/inference.md has why that
 * bound keeps every answer exactly once. */
static bool before_flush(struct coord *c)
{
	int64_t now_us = dlrt_now_us(), now = now_us / 1000;

	if (batch_due(c, now_us))
		dlrt_coord_write_batch(c);
	if (c->fenced)
		return true;
	if (now - c->fence_ms >= DLRT_COORD_FENCE_MS) {
		c->fence_ms = now;
		if (dlrt_claim_changed(c->pool, &c->claims_seen) && dlrt_coord_fence_check(c))
			return true;
	}
	dlrt_coord_release_held(c);
	return false;
}

/* A connection closes: its held replies go with it; if it was the standby,
 * another is asked for and the replies held for it go out. */
static void conn_closed(struct coord *c, struct dlrt_conn *conn)
{
	held_forget(c, conn);
	if (conn != c->sb)
		return;
	c->sb = NULL;
	c->sb_ready = false;
	dlrt_coord_log(c, "standby lost: it closed its connection");
	if (!dlrt_coord_fence_check(c)) {
		c->promote_ms = dlrt_now_ms();
		dlrt_coord_release_held(c); /* the journal alone is the record now */
	}
}

static const struct dlrt_coord_frame frames[] = {
	{ DLRT_IP_SEQACK, DLRT_IP_ROLE_STANDBY, on_seqack },
};

const struct dlrt_coord_part dlrt_coord_replication_part = {
	.frames = frames,
	.nframes = sizeof(frames) / sizeof(frames[0]),
	.before_flush = before_flush,
	.reply_buf = dlrt_coord_reply_buf,
	.closed = conn_closed,
};
