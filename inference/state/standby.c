/* standby.c - the hot standby: the coordinator's side of the link (push a
 * change and wait for its acknowledgement) and the standby process. */
#include "common/errline.h"
#include "standby.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "services/evloop.h"
#include "journal.h"
#include "inference/pool/pool.h"
#include "inference/proto/proto.h"
#include "state.h"

int dlrt_standby_timeout_ms(void)
{
	const char *v = getenv("DLRT_INFER_TAKEOVER_MS");
	long ms = v && *v ? strtol(v, NULL, 10) : DLRT_STANDBY_TAKEOVER_MS;

	return ms >= 100 && ms <= 60000 ? (int)ms : DLRT_STANDBY_TAKEOVER_MS;
}

/* ---- coordinator side ------------------------------------------------------------- */

int dlrt_standby_push(struct dlrt_conn *conn, uint64_t seq, int timeout_ms, uint64_t *acked,
		      struct dlrt_err *err)
{
	int64_t deadline = dlrt_now_ms() + timeout_ms;

	for (;;) {
		struct dlrt_ip_frame f;
		struct pollfd p = { .fd = conn->fd, .events = POLLIN };
		int64_t left;
		int rc;

		while ((rc = dlrt_ip_frame_peek(dlrt_buf_head(&conn->in), conn->in.len, &f, err)) == 1) {
			uint64_t s;

			if (f.type != DLRT_IP_SEQACK)
				return dlrt_err_set(err, "the standby sent %s",
						    dlrt_ip_type_name(f.type));
			if (dlrt_ip_get_seq(f.payload, f.len, &s, err) < 0)
				return -1;
			if (s > *acked)
				*acked = s;
			dlrt_buf_consume(&conn->in, f.frame_len);
		}
		if (rc < 0)
			return -1;
		if (conn->out.len) {
			ssize_t n = send(conn->fd, dlrt_buf_head(&conn->out), conn->out.len,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (n > 0)
				dlrt_buf_consume(&conn->out, (size_t)n);
			else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				return dlrt_err_errno(err, errno, "lost the standby");
		}
		if (*acked >= seq && conn->out.len == 0)
			return 0;
		left = deadline - dlrt_now_ms();
		if (left <= 0)
			return dlrt_err_set(err, "the standby did not acknowledge change %llu within "
					    "%d ms", (unsigned long long)seq, timeout_ms);
		if (conn->out.len)
			p.events |= POLLOUT;
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
			return dlrt_err_errno(err, errno, "cannot wait for the standby");
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t n;

			if (dlrt_buf_reserve(&conn->in, 65536) < 0)
				return dlrt_err_set(err, "the standby sent too much");
			n = recv(conn->fd, conn->in.data + conn->in.off + conn->in.len, 65536,
				 MSG_DONTWAIT);
			if (n == 0)
				return dlrt_err_set(err, "the standby closed its connection");
			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				return dlrt_err_errno(err, errno, "lost the standby");
			if (n > 0)
				conn->in.len += (size_t)n;
		}
	}
}

/* ---- the standby process ---------------------------------------------------------- */

static void slog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void slog(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dlrt_errline_vsay("dlrt-infer standby: ", fmt, ap);
	va_end(ap);
}

/* Is the coordinator of this record alive? It must answer a HELLO within
 * `ms`: a killed process refuses the connection at once, a stopped one or a
 * lost node does not answer. */
static bool coordinator_answers(const char *pool, int ms)
{
	struct dlrt_ipc c;
	struct dlrt_err err;

	if (dlrt_ipc_open(&c, pool, DLRT_IP_ROLE_CLIENT, "standby-probe", ms, &err) < 0)
		return false;
	dlrt_ipc_close(&c);
	return true;
}

/* More whole frames already buffered: acknowledge once after the last. */
static bool more_buffered(const struct dlrt_ipc *c)
{
	struct dlrt_ip_frame f;
	struct dlrt_err err;
	size_t skip = c->pending;

	if (c->in.len <= skip)
		return false;
	return dlrt_ip_frame_peek(dlrt_buf_head(&c->in) + skip, c->in.len - skip, &f, &err) == 1;
}

int dlrt_standby_run(const struct dlrt_standby_opts *o, struct dlrt_buf *log, struct dlrt_err *err)
{
	struct dlrt_infer_state st;
	struct dlrt_ipc c;
	struct dlrt_pool_access a;
	int tmo = dlrt_standby_timeout_ms(), rc = -1;
	int64_t deadline = dlrt_now_ms() + 30000, last;
	uint64_t epoch;
	bool need_ack = false;
	char why[DLRT_ERR_MAX + 64] = "";

	signal(SIGPIPE, SIG_IGN);
	dlrt_infer_state_init(&st);
	dlrt_buf_init(log, (size_t)-1);
	for (;;) {
		if (dlrt_ipc_open(&c, o->pool, DLRT_IP_ROLE_STANDBY, o->name, 2000, err) == 0)
			break;
		if (strstr(err->msg, "already has a standby")) {
			slog("%s: not needed", err->msg);
			rc = 0;
			goto out;
		}
		if (dlrt_now_ms() > deadline)
			goto out;
		usleep(200000);
	}
	epoch = c.epoch;
	slog("standby of pool %s (epoch %llu)", o->pool, (unsigned long long)epoch);
	last = dlrt_now_ms();
	for (int64_t prev = last;;) {
		struct dlrt_ip_frame f;
		struct dlrt_err e2;
		int r = dlrt_ipc_recv(&c, &f, 50, &e2);
		int64_t now = dlrt_now_ms();

		/* This process itself did not run for a while (a loaded node): the
		 * coordinator's SYNCs wait unread in the socket; read before judging. */
		if (now - prev > 300)
			last = now;
		prev = now;

		if (r < 0) {
			snprintf(why, sizeof(why), "%s", e2.msg);
			break;
		}
		if (r == 0) {
			if (now - last > tmo) {
				snprintf(why, sizeof(why), "silent for %d ms", tmo);
				break;
			}
			continue;
		}
		last = dlrt_now_ms();
		if (f.type == DLRT_IP_CHANGE) {
			struct dlrt_infer_change ch;
			int ok = dlrt_infer_change_get(f.payload, f.len, &ch, &e2) == 0 &&
				 dlrt_infer_state_apply(&st, &ch, &e2) == 0;

			dlrt_infer_change_free(&ch);
			if (!ok || dlrt_buf_append(log, f.payload - DLRT_IP_HDR, f.frame_len) < 0) {
				/* A copy that diverged is no standby: the coordinator picks another. */
				dlrt_err_set(err, "the coordinator's change does not apply here: %s",
					     ok ? "out of memory" : e2.msg);
				dlrt_ipc_close(&c);
				goto out;
			}
			need_ack = true;
		} else if (f.type == DLRT_IP_SYNC) {
			need_ack = true;
		} else if (f.type == DLRT_IP_STOP || f.type == DLRT_IP_ERROR) {
			slog("the coordinator %s", f.type == DLRT_IP_STOP ? "stops the pool"
								 : "let this standby go");
			dlrt_ipc_close(&c);
			rc = 0;
			goto out;
		} else if (f.type != DLRT_IP_WELCOME) {
			dlrt_err_set(err, "the coordinator sent %s to the standby",
				     dlrt_ip_type_name(f.type));
			dlrt_ipc_close(&c);
			goto out;
		}
		if (need_ack && !more_buffered(&c)) {
			if (dlrt_ip_put_seq(&c.out, DLRT_IP_SEQACK, st.seq) < 0 ||
			    dlrt_ipc_flush(&c, tmo, &e2) < 0) {
				snprintf(why, sizeof(why), "%s", e2.msg);
				break;
			}
			need_ack = false;
		}
	}
	dlrt_ipc_close(&c);
	/* The coordinator looks dead. Stopped pool, a newer coordinator, or a
	 * coordinator that still answers: nothing to take over. */
	if (dlrt_pool_read_access(o->pool, &a, err) != 0) {
		slog("the pool stopped");
		rc = 0;
		goto out;
	}
	if (a.epoch != epoch) {
		slog("epoch %llu already took over", (unsigned long long)a.epoch);
		rc = 0;
		goto out;
	}
	if (coordinator_answers(o->pool, 200)) {
		slog("lost the link (%s) but the coordinator still answers: not taking over", why);
		rc = 0;
		goto out;
	}
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		slog("the coordinator of epoch %llu is gone (%s): taking over with %llu changes "
		     "at wall %.6f", (unsigned long long)epoch, why, (unsigned long long)st.seq,
		     (double)ts.tv_sec + ts.tv_nsec / 1e9);
	}
	/* The caller starts the coordinator from the log: the standby never
	 * calls into it. */
	dlrt_infer_state_free(&st);
	return DLRT_STANDBY_TAKEOVER;
out:
	dlrt_infer_state_free(&st);
	dlrt_buf_free(log);
	return rc;
}
