#include "proto.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dlrt_err.h"
#include "proto_codec.h"

const char *dlrt_ip_type_name(unsigned type)
{
	static const char *const names[DLRT_IP_TYPE_MAX] = {
		[DLRT_IP_HELLO] = "HELLO", [DLRT_IP_WELCOME] = "WELCOME",
		[DLRT_IP_JOBINFO] = "JOBINFO", [DLRT_IP_TASK] = "TASK",
		[DLRT_IP_RESULT] = "RESULT", [DLRT_IP_TASKFAIL] = "TASKFAIL",
		[DLRT_IP_DROP] = "DROP", [DLRT_IP_SUBMIT] = "SUBMIT",
		[DLRT_IP_SUBMITTED] = "SUBMITTED", [DLRT_IP_STATUSREQ] = "STATUSREQ",
		[DLRT_IP_STATUS] = "STATUS", [DLRT_IP_CANCEL] = "CANCEL",
		[DLRT_IP_WAIT] = "WAIT", [DLRT_IP_JOBEND] = "JOBEND",
		[DLRT_IP_ERROR] = "ERROR", [DLRT_IP_OK] = "OK", [DLRT_IP_STOP] = "STOP",
		[DLRT_IP_CHANGE] = "CHANGE", [DLRT_IP_HEARTBEAT] = "HEARTBEAT",
		[DLRT_IP_DRAIN] = "DRAIN", [DLRT_IP_CHALLENGE] = "CHALLENGE",
		[DLRT_IP_AUTH] = "AUTH",
		[DLRT_IP_ACK] = "ACK", [DLRT_IP_RESENT] = "RESENT",
		[DLRT_IP_SYNC] = "SYNC", [DLRT_IP_SEQACK] = "SEQACK", [DLRT_IP_PROMOTE] = "PROMOTE",
	};

	return type && type < DLRT_IP_TYPE_MAX ? names[type] : "?";
}

const char *dlrt_ip_job_state_name(unsigned state)
{
	switch (state) {
	case DLRT_IP_JOB_RUNNING: return "running";
	case DLRT_IP_JOB_DONE: return "done";
	case DLRT_IP_JOB_CANCELLED: return "cancelled";
	case DLRT_IP_JOB_FAILED: return "failed";
	default: return "?";
	}
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int dlrt_ip_frame_peek(const uint8_t *buf, size_t len, struct dlrt_ip_frame *f,
		       struct dlrt_err *err)
{
	uint32_t flen;
	uint16_t version, type;

	if (len < 4)
		return 0;
	flen = le32(buf);
	if (flen < 4 || flen > DLRT_IP_MAX_FRAME)
		return dlrt_err_set(err, "frame length %u outside 4..%u: not a dlrt-infer peer, "
				    "or a corrupt stream", flen, DLRT_IP_MAX_FRAME);
	if (len < 8)
		return 0;
	version = (uint16_t)(buf[4] | buf[5] << 8);
	type = (uint16_t)(buf[6] | buf[7] << 8);
	if (version != DLRT_IP_VERSION)
		return dlrt_err_set(err, "protocol version %u, this dlrt-infer speaks %u: run the "
				    "same dlrt version everywhere", version, DLRT_IP_VERSION);
	if (type == 0 || type >= DLRT_IP_TYPE_MAX)
		return dlrt_err_set(err, "unknown message type %u", type);
	if (len < 4 + (size_t)flen)
		return 0;
	f->type = type;
	f->payload = buf + DLRT_IP_HDR;
	f->len = flen - 4;
	f->frame_len = 4 + (size_t)flen;
	return 1;
}

/* ---- reader -------------------------------------------------------------------- */

void dlrt_ip_rd_init(struct dlrt_ip_rd *r, const uint8_t *p, size_t len)
{
	*r = (struct dlrt_ip_rd){ .p = p, .len = len };
}

static const uint8_t *rd_take(struct dlrt_ip_rd *r, size_t n, const char *why)
{
	const uint8_t *q;

	if (r->bad)
		return NULL;
	if (n > r->len - r->off) {
		r->bad = true;
		r->why = why;
		return NULL;
	}
	q = r->p + r->off;
	r->off += n;
	return q;
}

uint8_t dlrt_ip_rd_u8(struct dlrt_ip_rd *r)
{
	const uint8_t *q = rd_take(r, 1, "truncated");

	return q ? q[0] : 0;
}

uint16_t dlrt_ip_rd_u16(struct dlrt_ip_rd *r)
{
	const uint8_t *q = rd_take(r, 2, "truncated");

	return q ? (uint16_t)(q[0] | q[1] << 8) : 0;
}

uint32_t dlrt_ip_rd_u32(struct dlrt_ip_rd *r)
{
	const uint8_t *q = rd_take(r, 4, "truncated");

	return q ? le32(q) : 0;
}

uint64_t dlrt_ip_rd_u64(struct dlrt_ip_rd *r)
{
	const uint8_t *q = rd_take(r, 8, "truncated");

	return q ? (uint64_t)le32(q) | (uint64_t)le32(q + 4) << 32 : 0;
}

float dlrt_ip_rd_f32(struct dlrt_ip_rd *r)
{
	uint32_t u = dlrt_ip_rd_u32(r);
	float f;

	memcpy(&f, &u, sizeof(f));
	if (!isfinite(f) && !r->bad) {
		r->bad = true;
		r->why = "a number is not finite";
	}
	return r->bad ? 0 : f;
}

double dlrt_ip_rd_f64(struct dlrt_ip_rd *r)
{
	uint64_t u = dlrt_ip_rd_u64(r);
	double d;

	memcpy(&d, &u, sizeof(d));
	if (!isfinite(d) && !r->bad) {
		r->bad = true;
		r->why = "a number is not finite";
	}
	return r->bad ? 0 : d;
}

void dlrt_ip_rd_str(struct dlrt_ip_rd *r, char *dst, size_t max)
{
	uint32_t n = dlrt_ip_rd_u32(r);
	const uint8_t *q;

	dst[0] = '\0';
	if (r->bad)
		return;
	if (n > max) {
		r->bad = true;
		r->why = "a string is too long";
		return;
	}
	q = rd_take(r, n, "truncated");
	if (!q)
		return;
	if (memchr(q, '\0', n)) {
		r->bad = true;
		r->why = "a string holds a NUL byte";
		return;
	}
	memcpy(dst, q, n);
	dst[n] = '\0';
}

const uint8_t *dlrt_ip_rd_bytes(struct dlrt_ip_rd *r, size_t n)
{
	return rd_take(r, n, "truncated");
}

int dlrt_ip_rd_end(struct dlrt_ip_rd *r, const char *what, struct dlrt_err *err)
{
	if (r->bad)
		return dlrt_err_set(err, "malformed %s message: %s", what, r->why);
	if (r->off != r->len)
		return dlrt_err_set(err, "malformed %s message: %zu bytes left over", what,
				    r->len - r->off);
	return 0;
}

static void rd_fail(struct dlrt_ip_rd *r, const char *why)
{
	if (!r->bad) {
		r->bad = true;
		r->why = why;
	}
}

/* ---- writer -------------------------------------------------------------------- */

static void wr_raw(struct dlrt_ip_wr *w, const void *p, size_t n)
{
	if (!w->failed && dlrt_buf_append(w->b, p, n) < 0)
		w->failed = true;
}

void dlrt_ip_wr_u8(struct dlrt_ip_wr *w, uint8_t v) { wr_raw(w, &v, 1); }

void dlrt_ip_wr_u16(struct dlrt_ip_wr *w, uint16_t v)
{
	uint8_t q[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	wr_raw(w, q, 2);
}

void dlrt_ip_wr_u32(struct dlrt_ip_wr *w, uint32_t v)
{
	uint8_t q[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	wr_raw(w, q, 4);
}

void dlrt_ip_wr_u64(struct dlrt_ip_wr *w, uint64_t v)
{
	dlrt_ip_wr_u32(w, (uint32_t)v);
	dlrt_ip_wr_u32(w, (uint32_t)(v >> 32));
}

void dlrt_ip_wr_f32(struct dlrt_ip_wr *w, float v)
{
	uint32_t u;

	memcpy(&u, &v, sizeof(u));
	dlrt_ip_wr_u32(w, u);
}

void dlrt_ip_wr_f64(struct dlrt_ip_wr *w, double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	dlrt_ip_wr_u64(w, u);
}

void dlrt_ip_wr_str(struct dlrt_ip_wr *w, const char *s)
{
	size_t n = strlen(s);

	dlrt_ip_wr_u32(w, (uint32_t)n);
	wr_raw(w, s, n);
}

void dlrt_ip_wr_bytes(struct dlrt_ip_wr *w, const void *p, size_t n)
{
	wr_raw(w, p, n);
}

void dlrt_ip_wr_begin(struct dlrt_ip_wr *w, struct dlrt_buf *b, uint16_t type)
{
	*w = (struct dlrt_ip_wr){ .b = b, .start = b->len };
	dlrt_ip_wr_u32(w, 0);
	dlrt_ip_wr_u16(w, DLRT_IP_VERSION);
	dlrt_ip_wr_u16(w, type);
}

int dlrt_ip_wr_end(struct dlrt_ip_wr *w)
{
	size_t flen = w->b->len - w->start - 4;
	uint8_t *q;

	if (w->failed || flen > DLRT_IP_MAX_FRAME) {
		if (w->b->len >= w->start)
			w->b->len = w->start;
		return -1;
	}
	q = dlrt_buf_head(w->b) + w->start;
	q[0] = (uint8_t)flen;
	q[1] = (uint8_t)(flen >> 8);
	q[2] = (uint8_t)(flen >> 16);
	q[3] = (uint8_t)(flen >> 24);
	return 0;
}

/* ---- messages: expanded from their field lists (proto_msgs.h) ------------------ */

/* BYTES: n bytes the peer sent, copied into a buffer of their own (the
 * count was checked before; the reader fails first if they are not there). */
static void rd_bytes_copy(struct dlrt_ip_rd *r, uint8_t **dst, uint32_t n)
{
	const uint8_t *q = dlrt_ip_rd_bytes(r, n);

	if (!q || !n)
		return;
	*dst = malloc(n);
	if (!*dst)
		rd_fail(r, "out of memory");
	else
		memcpy(*dst, q, n);
}

/* ANSWERS: n (prediction, score) pairs; the count was checked against the
 * length before, so the allocation is what the frame holds. */
static void rd_answers(struct dlrt_ip_rd *r, int32_t **pred, float **score, uint32_t n)
{
	if (!r->bad) {
		*pred = malloc(n * sizeof(**pred));
		*score = malloc(n * sizeof(**score));
		if (!*pred || !*score)
			rd_fail(r, "out of memory");
	}
	for (uint32_t i = 0; !r->bad && i < n; i++) {
		(*pred)[i] = (int32_t)dlrt_ip_rd_u32(r);
		(*score)[i] = dlrt_ip_rd_f32(r);
	}
}

DLRT_IPC_CODEC(hello, DLRT_IP_HELLO_FIELDS)
DLRT_IPC_CODEC(welcome, DLRT_IP_WELCOME_FIELDS)
DLRT_IPC_CODEC(jobinfo, DLRT_IP_JOBINFO_FIELDS)
DLRT_IPC_CODEC(task, DLRT_IP_TASK_FIELDS)
DLRT_IPC_CODEC(result, DLRT_IP_RESULT_FIELDS)
DLRT_IPC_CODEC(taskfail, DLRT_IP_TASKFAIL_FIELDS)
DLRT_IPC_CODEC(submit, DLRT_IP_SUBMIT_FIELDS)
DLRT_IPC_CODEC(worker_info, DLRT_IP_WORKER_INFO_FIELDS)
DLRT_IPC_CODEC(job_info, DLRT_IP_JOB_INFO_FIELDS)
DLRT_IPC_CODEC(status, DLRT_IP_STATUS_FIELDS)
DLRT_IPC_CODEC(drain, DLRT_IP_DRAIN_FIELDS)
DLRT_IPC_CODEC(challenge, DLRT_IP_CHALLENGE_FIELDS)
DLRT_IPC_CODEC(auth, DLRT_IP_AUTH_FIELDS)
DLRT_IPC_CODEC(jobref, DLRT_IP_JOBREF_FIELDS)
DLRT_IPC_CODEC(text, DLRT_IP_TEXT_FIELDS)

DLRT_IPC_PUT_GET(hello, DLRT_IP_HELLO, "HELLO")
DLRT_IPC_PUT_GET(welcome, DLRT_IP_WELCOME, "WELCOME")
DLRT_IPC_PUT_GET(jobinfo, DLRT_IP_JOBINFO, "JOBINFO")
DLRT_IPC_PUT_GET(task, DLRT_IP_TASK, "TASK")
DLRT_IPC_PUT_GET(result, DLRT_IP_RESULT, "RESULT")
DLRT_IPC_PUT_GET(taskfail, DLRT_IP_TASKFAIL, "TASKFAIL")
DLRT_IPC_PUT_GET(submit, DLRT_IP_SUBMIT, "SUBMIT")
DLRT_IPC_PUT_GET(status, DLRT_IP_STATUS, "STATUS")
DLRT_IPC_PUT_GET(drain, DLRT_IP_DRAIN, "DRAIN")
DLRT_IPC_PUT_GET(challenge, DLRT_IP_CHALLENGE, "CHALLENGE")
DLRT_IPC_PUT_GET(auth, DLRT_IP_AUTH, "AUTH")

DLRT_IPC_FREE(result, DLRT_IP_RESULT_FIELDS)
DLRT_IPC_FREE(submit, DLRT_IP_SUBMIT_FIELDS)
DLRT_IPC_FREE(status, DLRT_IP_STATUS_FIELDS)

/* ---- messages whose encoder takes a type or plain values ------------------------- */

int dlrt_ip_put_jobref(struct dlrt_buf *b, uint16_t type, uint32_t job)
{
	struct dlrt_ip_jobref m = { .job = job };
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, type);
	wr_jobref(&w, &m);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_jobref(const uint8_t *p, size_t n, struct dlrt_ip_jobref *m,
		       struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	rd_jobref(&r, m);
	return dlrt_ip_rd_end(&r, "job reference", err);
}

int dlrt_ip_put_jobend(struct dlrt_buf *b, const struct dlrt_ip_job_info *m)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_JOBEND);
	wr_job_info(&w, m);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_jobend(const uint8_t *p, size_t n, struct dlrt_ip_job_info *m,
		       struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	rd_job_info(&r, m);
	return dlrt_ip_rd_end(&r, "JOBEND", err);
}

/* Cut to the limit the decoder allows, so an over-long text still goes out. */
int dlrt_ip_put_error(struct dlrt_buf *b, const char *text)
{
	struct dlrt_ip_text m;
	struct dlrt_ip_wr w;

	snprintf(m.text, sizeof(m.text), "%s", text);
	dlrt_ip_wr_begin(&w, b, DLRT_IP_ERROR);
	wr_text(&w, &m);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_error(const uint8_t *p, size_t n, struct dlrt_ip_text *m, struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	rd_text(&r, m);
	return dlrt_ip_rd_end(&r, "ERROR", err);
}

int dlrt_ip_put_empty(struct dlrt_buf *b, uint16_t type)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, type);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_empty(const uint8_t *p, size_t n, struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	return dlrt_ip_rd_end(&r, "empty", err);
}
