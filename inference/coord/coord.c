/* coord.c - the core of the dlrt-infer coordinator: one epoll loop, never
 * blocks on a peer.
 *
 * Durable state (jobs, answered tasks) changes only through
 * dlrt_coord_commit(), which applies one struct dlrt_infer_change (state.h);
 * everything else is soft state rebuilt from connections: workers, tasks in
 * flight, rates, shares. Replies to the peer being served go out when its
 * on_data returns; messages to other peers (tasks for idle workers, JOBEND
 * for waiters) are queued and flushed from a zero-delay timer, so no handler
 * ever writes to, or closes, a connection other than its own.
 *
 * This file is what every concern uses: the log, the clocks, the wake-up
 * (kick) and the deferred writes; and the connections: the gate and the
 * handshake until a peer is authenticated, then its frames, each to the
 * handler of its type. It calls the concerns (coord_*.c) only through their
 * parts (coord_int.h), never by name; coord_run.c starts and stops the loop.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "coord_int.h"
#include "inference/pool/auth.h"
#include "common/clock.h"
#include "common/errline.h"
#include "services/evloop.h"
#include "inference/proto/gate.h"
#include "services/tcpserver.h"

double dlrt_coord_wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void dlrt_coord_log(struct coord *c, const char *fmt, ...)
{
	struct dlrt_errline line;
	va_list ap;

	dlrt_errline_init(&line);
	dlrt_errline_printf(&line, "dlrt-infer coordinator [%.3f]: ",
			    (double)(dlrt_now_us() - c->start_us) / 1e6);
	va_start(ap, fmt);
	dlrt_errline_vprintf(&line, fmt, ap);
	va_end(ap);
	dlrt_errline_end(&line);
}

/* Pool time: continues across coordinators (tsvlog.h). */
double dlrt_coord_tsec(struct coord *c, int64_t us)
{
	return (double)(us - c->t0_us) / 1e6;
}

/* Writes out every connection marked dirty since the last time. */
void dlrt_coord_flush_dirty(struct coord *c)
{
	while (c->ndirty) {
		struct dlrt_conn *conn = c->dirty[--c->ndirty];

		((struct peer *)conn->state)->dirty = false;
		dlrt_conn_flush(conn); /* may close it: on_close does not touch this list */
	}
}

/* Deferred writes: the zero-delay timer that lets the parts add theirs
 * (tasks for idle workers) and flushes every connection marked dirty since
 * it last ran. */
static int64_t kick_timer(struct dlrt_evloop *loop, void *arg)
{
	struct coord *c = arg;

	(void)loop;
	c->kick_pending = false;
	/* What the parts add now goes out with this flush: no second turn. */
	c->in_kick = true;
	/* Nothing goes out after a newer epoch was claimed (the fence check). */
	for (uint32_t i = 0; i < c->nparts; i++)
		if (c->parts[i]->before_flush && c->parts[i]->before_flush(c)) {
			c->in_kick = false;
			return -1;
		}
	c->in_kick = false;
	dlrt_coord_flush_dirty(c);
	if (c->stopping && !c->kick_pending)
		dlrt_evloop_stop(c->loop);
	return -1;
}

void dlrt_coord_kick(struct coord *c)
{
	if (c->kick_pending || c->in_kick)
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

void dlrt_coord_reply_error(struct dlrt_conn *conn, const char *msg)
{
	dlrt_ip_put_error(&conn->out, msg);
}

/* The parts the core calls (coord_run.c's list), and each frame type's
 * handler among them. */
void dlrt_coord_set_parts(struct coord *c, const struct dlrt_coord_part *const *parts,
			  uint32_t nparts)
{
	c->parts = parts;
	c->nparts = nparts;
	for (uint32_t i = 0; i < nparts; i++)
		for (uint32_t k = 0; k < parts[i]->nframes; k++)
			c->frame_of[parts[i]->frames[k].type] = &parts[i]->frames[k];
}

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
			dlrt_coord_reply_error(conn,
					       "stale access record (epoch differs): read it again");
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
	dlrt_coord_reply_error(conn, why.msg);
	return dlrt_err_set(err, "authentication refused for a %s from %s (%.100s): %s",
			    p->hello.role == DLRT_IP_ROLE_WORKER ? "worker" : "client", ip,
			    p->hello.name, why.msg);
}

static int handle(struct coord *c, struct dlrt_conn *conn, const struct dlrt_ip_frame *f,
		  struct dlrt_err *err)
{
	const struct dlrt_coord_frame *h;
	struct peer *p = conn->state;

	if (!p->role) {
		if (handshake(c, conn, f, err) < 0)
			return -1;
		if (!p->role && p->challenged && f->type == DLRT_IP_AUTH) {
			/* The pool's own peer: out of the gate, whole frames from now on;
			 * the part that takes peers in gives it its role. */
			int rc = -1;

			dlrt_gate_remove(&c->gate, &p->gate);
			conn->in.limit = MAX_REQUEST;
			for (uint32_t i = 0; i < c->nparts; i++)
				if (c->parts[i]->join) {
					rc = c->parts[i]->join(c, conn, &p->hello);
					break;
				}
			if (rc < 0)
				return dlrt_err_set(err, "HELLO refused");
			return 0;
		}
		return 0;
	}
	if (p->role == DLRT_IP_ROLE_STANDBY && conn != c->sb)
		return dlrt_err_set(err, "a standby that was let go");
	/* Any frame shows its peer alive, even a wrong one. */
	for (uint32_t i = 0; i < c->nparts; i++)
		if (c->parts[i]->seen)
			c->parts[i]->seen(c, conn);
	h = f->type < DLRT_IP_TYPE_MAX ? c->frame_of[f->type] : NULL;
	if (h && h->role == p->role)
		return h->fn(c, conn, f, err);
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
 * (the reply_buf of coord_replication.c's part). Workers' replies are ACKs
 * (dlrt_coord_put_ack) and tasks, which tell of nothing durable and go out
 * at once. */
static enum dlrt_proto_result on_data(struct dlrt_conn *conn, void *ctx)
{
	struct coord *c = ctx;
	size_t before = conn->out.len;
	enum dlrt_proto_result r = on_frames(conn, ctx);
	struct peer *p = conn->state;
	struct dlrt_buf *b;

	if (r != DLRT_PROTO_OK || p->role != DLRT_IP_ROLE_CLIENT || conn->out.len <= before)
		return r;
	b = &conn->out;
	for (uint32_t i = 0; i < c->nparts; i++)
		if (c->parts[i]->reply_buf) {
			b = c->parts[i]->reply_buf(c, conn);
			break;
		}
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
int64_t dlrt_coord_gate_tick(struct dlrt_evloop *loop, void *arg)
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
	for (uint32_t i = 0; i < c->nparts; i++)
		if (c->parts[i]->closed)
			c->parts[i]->closed(c, conn);
	if (p->dirty) {
		for (uint32_t i = 0; i < c->ndirty; i++)
			if (c->dirty[i] == conn) {
				c->dirty[i] = c->dirty[--c->ndirty];
				break;
			}
	}
	free(p);
	conn->state = NULL;
}

void dlrt_coord_on_signal(struct dlrt_evloop *loop, int fd, unsigned events, void *arg)
{
	struct coord *c = arg;
	struct signalfd_siginfo si;

	(void)events;
	if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		dlrt_coord_log(c, "signal %u: the pool shuts down", si.ssi_signo);
		dlrt_evloop_stop(loop);
	}
}

const struct dlrt_proto dlrt_coord_proto = { on_data, on_open, on_close };
