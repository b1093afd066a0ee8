#include "proto.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlrt_err.h"

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

/* ---- messages ------------------------------------------------------------------ */

int dlrt_ip_put_hello(struct dlrt_buf *b, const struct dlrt_ip_hello *m)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_HELLO);
	dlrt_ip_wr_u8(&w, m->role);
	dlrt_ip_wr_u64(&w, m->epoch);
	dlrt_ip_wr_str(&w, m->name);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_hello(const uint8_t *p, size_t n, struct dlrt_ip_hello *m, struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	m->role = dlrt_ip_rd_u8(&r);
	m->epoch = dlrt_ip_rd_u64(&r);
	dlrt_ip_rd_str(&r, m->name, DLRT_IP_NAME_MAX);
	if (m->role != DLRT_IP_ROLE_WORKER && m->role != DLRT_IP_ROLE_CLIENT &&
	    m->role != DLRT_IP_ROLE_STANDBY)
		rd_fail(&r, "unknown role");
	return dlrt_ip_rd_end(&r, "HELLO", err);
}

int dlrt_ip_put_welcome(struct dlrt_buf *b, const struct dlrt_ip_welcome *m)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_WELCOME);
	dlrt_ip_wr_u64(&w, m->epoch);
	dlrt_ip_wr_u32(&w, m->id);
	dlrt_ip_wr_u32(&w, m->heartbeat_ms);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_welcome(const uint8_t *p, size_t n, struct dlrt_ip_welcome *m,
			struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	m->epoch = dlrt_ip_rd_u64(&r);
	m->id = dlrt_ip_rd_u32(&r);
	m->heartbeat_ms = dlrt_ip_rd_u32(&r);
	if (!r.bad && m->heartbeat_ms > 3600000)
		rd_fail(&r, "heartbeat interval over an hour");
	return dlrt_ip_rd_end(&r, "WELCOME", err);
}

int dlrt_ip_put_jobinfo(struct dlrt_buf *b, const struct dlrt_ip_jobinfo *m)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_JOBINFO);
	dlrt_ip_wr_u32(&w, m->job);
	dlrt_ip_wr_str(&w, m->model);
	dlrt_ip_wr_str(&w, m->inputs);
	dlrt_ip_wr_u32(&w, m->first);
	dlrt_ip_wr_u32(&w, m->count);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_jobinfo(const uint8_t *p, size_t n, struct dlrt_ip_jobinfo *m,
			struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	m->job = dlrt_ip_rd_u32(&r);
	dlrt_ip_rd_str(&r, m->model, DLRT_IP_STR_MAX);
	dlrt_ip_rd_str(&r, m->inputs, DLRT_IP_STR_MAX);
	m->first = dlrt_ip_rd_u32(&r);
	m->count = dlrt_ip_rd_u32(&r);
	if (!r.bad && (m->count == 0 || m->count > DLRT_IP_MAX_QUERIES))
		rd_fail(&r, "query count out of range");
	return dlrt_ip_rd_end(&r, "JOBINFO", err);
}

int dlrt_ip_put_task(struct dlrt_buf *b, const struct dlrt_ip_task *m)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_TASK);
	dlrt_ip_wr_u32(&w, m->job);
	dlrt_ip_wr_u64(&w, m->task);
	dlrt_ip_wr_u64(&w, m->attempt);
	dlrt_ip_wr_u32(&w, m->first);
	dlrt_ip_wr_u32(&w, m->n);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_task(const uint8_t *p, size_t n, struct dlrt_ip_task *m, struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	m->job = dlrt_ip_rd_u32(&r);
	m->task = dlrt_ip_rd_u64(&r);
	m->attempt = dlrt_ip_rd_u64(&r);
	m->first = dlrt_ip_rd_u32(&r);
	m->n = dlrt_ip_rd_u32(&r);
	if (!r.bad && (m->n == 0 || m->n > DLRT_IP_MAX_BATCH))
		rd_fail(&r, "task size out of range");
	if (!r.bad && m->attempt == 0)
		rd_fail(&r, "attempt 0 (every dispatch has one)");
	return dlrt_ip_rd_end(&r, "TASK", err);
}

int dlrt_ip_put_result(struct dlrt_buf *b, const struct dlrt_ip_result *m)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_RESULT);
	dlrt_ip_wr_u32(&w, m->job);
	dlrt_ip_wr_u64(&w, m->task);
	dlrt_ip_wr_u64(&w, m->attempt);
	dlrt_ip_wr_u32(&w, m->busy_us);
	dlrt_ip_wr_u32(&w, m->n);
	for (uint32_t i = 0; i < m->n; i++) {
		dlrt_ip_wr_u32(&w, (uint32_t)m->pred[i]);
		dlrt_ip_wr_f32(&w, m->score[i]);
	}
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_result(const uint8_t *p, size_t n, struct dlrt_ip_result *m,
		       struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	m->pred = NULL;
	m->score = NULL;
	m->job = dlrt_ip_rd_u32(&r);
	m->task = dlrt_ip_rd_u64(&r);
	m->attempt = dlrt_ip_rd_u64(&r);
	m->busy_us = dlrt_ip_rd_u32(&r);
	m->n = dlrt_ip_rd_u32(&r);
	if (!r.bad && (m->n == 0 || m->n > DLRT_IP_MAX_BATCH))
		rd_fail(&r, "answer count out of range");
	/* Check the length before allocating what the peer claims. */
	if (!r.bad && (size_t)m->n * 8 != r.len - r.off)
		rd_fail(&r, "answer count does not match the length");
	if (!r.bad) {
		m->pred = malloc(m->n * sizeof(*m->pred));
		m->score = malloc(m->n * sizeof(*m->score));
		if (!m->pred || !m->score)
			rd_fail(&r, "out of memory");
	}
	for (uint32_t i = 0; !r.bad && i < m->n; i++) {
		m->pred[i] = (int32_t)dlrt_ip_rd_u32(&r);
		m->score[i] = dlrt_ip_rd_f32(&r);
	}
	return dlrt_ip_rd_end(&r, "RESULT", err);
}

void dlrt_ip_result_free(struct dlrt_ip_result *m)
{
	free(m->pred);
	free(m->score);
	m->pred = NULL;
	m->score = NULL;
}

int dlrt_ip_put_taskfail(struct dlrt_buf *b, const struct dlrt_ip_taskfail *m)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_TASKFAIL);
	dlrt_ip_wr_u32(&w, m->job);
	dlrt_ip_wr_u64(&w, m->task);
	dlrt_ip_wr_u64(&w, m->attempt);
	dlrt_ip_wr_str(&w, m->error);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_taskfail(const uint8_t *p, size_t n, struct dlrt_ip_taskfail *m,
			 struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	m->job = dlrt_ip_rd_u32(&r);
	m->task = dlrt_ip_rd_u64(&r);
	m->attempt = dlrt_ip_rd_u64(&r);
	dlrt_ip_rd_str(&r, m->error, DLRT_IP_STR_MAX);
	return dlrt_ip_rd_end(&r, "TASKFAIL", err);
}

int dlrt_ip_put_submit(struct dlrt_buf *b, const struct dlrt_ip_submit *m)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_SUBMIT);
	dlrt_ip_wr_str(&w, m->name);
	dlrt_ip_wr_str(&w, m->model);
	dlrt_ip_wr_str(&w, m->inputs);
	dlrt_ip_wr_str(&w, m->out);
	dlrt_ip_wr_u32(&w, m->first);
	dlrt_ip_wr_u32(&w, m->count);
	dlrt_ip_wr_u32(&w, m->batch);
	dlrt_ip_wr_u32(&w, m->nlabels);
	dlrt_ip_wr_bytes(&w, m->labels, m->nlabels);
	dlrt_ip_wr_u64(&w, m->token);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_submit(const uint8_t *p, size_t n, struct dlrt_ip_submit *m,
		       struct dlrt_err *err)
{
	struct dlrt_ip_rd r;
	const uint8_t *lab;

	dlrt_ip_rd_init(&r, p, n);
	m->labels = NULL;
	dlrt_ip_rd_str(&r, m->name, DLRT_IP_NAME_MAX);
	dlrt_ip_rd_str(&r, m->model, DLRT_IP_STR_MAX);
	dlrt_ip_rd_str(&r, m->inputs, DLRT_IP_STR_MAX);
	dlrt_ip_rd_str(&r, m->out, DLRT_IP_STR_MAX);
	m->first = dlrt_ip_rd_u32(&r);
	m->count = dlrt_ip_rd_u32(&r);
	m->batch = dlrt_ip_rd_u32(&r);
	m->nlabels = dlrt_ip_rd_u32(&r);
	if (!r.bad && (m->count == 0 || m->count > DLRT_IP_MAX_QUERIES))
		rd_fail(&r, "query count out of range");
	if (!r.bad && (m->batch == 0 || m->batch > DLRT_IP_MAX_BATCH))
		rd_fail(&r, "batch size out of range");
	if (!r.bad && m->nlabels && m->nlabels != m->count)
		rd_fail(&r, "label count differs from the query count");
	if (!r.bad && (m->model[0] == '\0' || m->inputs[0] == '\0'))
		rd_fail(&r, "model or inputs missing");
	lab = dlrt_ip_rd_bytes(&r, m->nlabels);
	if (lab && m->nlabels) {
		m->labels = malloc(m->nlabels);
		if (!m->labels)
			rd_fail(&r, "out of memory");
		else
			memcpy(m->labels, lab, m->nlabels);
	}
	m->token = dlrt_ip_rd_u64(&r);
	return dlrt_ip_rd_end(&r, "SUBMIT", err);
}

void dlrt_ip_submit_free(struct dlrt_ip_submit *m)
{
	free(m->labels);
	m->labels = NULL;
}

static void wr_job(struct dlrt_ip_wr *w, const struct dlrt_ip_job_info *j)
{
	dlrt_ip_wr_u32(w, j->id);
	dlrt_ip_wr_str(w, j->name);
	dlrt_ip_wr_str(w, j->model);
	dlrt_ip_wr_str(w, j->out);
	dlrt_ip_wr_str(w, j->error);
	dlrt_ip_wr_u8(w, j->state);
	dlrt_ip_wr_u32(w, j->batch);
	dlrt_ip_wr_u32(w, j->total);
	dlrt_ip_wr_u32(w, j->done);
	dlrt_ip_wr_u32(w, j->labelled);
	dlrt_ip_wr_u32(w, j->correct);
	dlrt_ip_wr_f32(w, j->rate);
	dlrt_ip_wr_f32(w, j->held);
	dlrt_ip_wr_f32(w, j->share);
	dlrt_ip_wr_f64(w, j->elapsed);
}

static void rd_job(struct dlrt_ip_rd *r, struct dlrt_ip_job_info *j)
{
	j->id = dlrt_ip_rd_u32(r);
	dlrt_ip_rd_str(r, j->name, DLRT_IP_NAME_MAX);
	dlrt_ip_rd_str(r, j->model, DLRT_IP_STR_MAX);
	dlrt_ip_rd_str(r, j->out, DLRT_IP_STR_MAX);
	dlrt_ip_rd_str(r, j->error, DLRT_IP_STR_MAX);
	j->state = dlrt_ip_rd_u8(r);
	j->batch = dlrt_ip_rd_u32(r);
	j->total = dlrt_ip_rd_u32(r);
	j->done = dlrt_ip_rd_u32(r);
	j->labelled = dlrt_ip_rd_u32(r);
	j->correct = dlrt_ip_rd_u32(r);
	j->rate = dlrt_ip_rd_f32(r);
	j->held = dlrt_ip_rd_f32(r);
	j->share = dlrt_ip_rd_f32(r);
	j->elapsed = dlrt_ip_rd_f64(r);
	if (!r->bad && (j->state < DLRT_IP_JOB_RUNNING || j->state > DLRT_IP_JOB_FAILED))
		rd_fail(r, "unknown job state");
	if (!r->bad && (j->done > j->total || j->correct > j->labelled || j->labelled > j->done))
		rd_fail(r, "inconsistent job counters");
}

int dlrt_ip_put_status(struct dlrt_buf *b, const struct dlrt_ip_status *m)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_STATUS);
	dlrt_ip_wr_u64(&w, m->epoch);
	dlrt_ip_wr_f64(&w, m->uptime);
	dlrt_ip_wr_f64(&w, m->window);
	dlrt_ip_wr_u32(&w, m->nworkers);
	for (uint32_t i = 0; i < m->nworkers; i++) {
		const struct dlrt_ip_worker_info *x = &m->workers[i];

		dlrt_ip_wr_u32(&w, x->id);
		dlrt_ip_wr_str(&w, x->name);
		dlrt_ip_wr_u32(&w, x->job);
		dlrt_ip_wr_u32(&w, x->inflight);
		dlrt_ip_wr_u64(&w, x->tasks);
	}
	dlrt_ip_wr_u32(&w, m->njobs);
	for (uint32_t i = 0; i < m->njobs; i++)
		wr_job(&w, &m->jobs[i]);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_status(const uint8_t *p, size_t n, struct dlrt_ip_status *m,
		       struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	memset(m, 0, sizeof(*m));
	m->epoch = dlrt_ip_rd_u64(&r);
	m->uptime = dlrt_ip_rd_f64(&r);
	m->window = dlrt_ip_rd_f64(&r);
	m->nworkers = dlrt_ip_rd_u32(&r);
	if (!r.bad && m->nworkers > DLRT_IP_MAX_LIST)
		rd_fail(&r, "too many workers");
	if (!r.bad && m->nworkers) {
		m->workers = calloc(m->nworkers, sizeof(*m->workers));
		if (!m->workers)
			rd_fail(&r, "out of memory");
	}
	for (uint32_t i = 0; !r.bad && i < m->nworkers; i++) {
		struct dlrt_ip_worker_info *x = &m->workers[i];

		x->id = dlrt_ip_rd_u32(&r);
		dlrt_ip_rd_str(&r, x->name, DLRT_IP_NAME_MAX);
		x->job = dlrt_ip_rd_u32(&r);
		x->inflight = dlrt_ip_rd_u32(&r);
		x->tasks = dlrt_ip_rd_u64(&r);
	}
	m->njobs = dlrt_ip_rd_u32(&r);
	if (!r.bad && m->njobs > DLRT_IP_MAX_LIST)
		rd_fail(&r, "too many jobs");
	if (!r.bad && m->njobs) {
		m->jobs = calloc(m->njobs, sizeof(*m->jobs));
		if (!m->jobs)
			rd_fail(&r, "out of memory");
	}
	for (uint32_t i = 0; !r.bad && i < m->njobs; i++)
		rd_job(&r, &m->jobs[i]);
	return dlrt_ip_rd_end(&r, "STATUS", err);
}

void dlrt_ip_status_free(struct dlrt_ip_status *m)
{
	free(m->workers);
	free(m->jobs);
	m->workers = NULL;
	m->jobs = NULL;
}

int dlrt_ip_put_jobref(struct dlrt_buf *b, uint16_t type, uint32_t job)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, type);
	dlrt_ip_wr_u32(&w, job);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_jobref(const uint8_t *p, size_t n, struct dlrt_ip_jobref *m,
		       struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	m->job = dlrt_ip_rd_u32(&r);
	return dlrt_ip_rd_end(&r, "job reference", err);
}

int dlrt_ip_put_jobend(struct dlrt_buf *b, const struct dlrt_ip_job_info *m)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_JOBEND);
	wr_job(&w, m);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_jobend(const uint8_t *p, size_t n, struct dlrt_ip_job_info *m,
		       struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	rd_job(&r, m);
	return dlrt_ip_rd_end(&r, "JOBEND", err);
}

int dlrt_ip_put_error(struct dlrt_buf *b, const char *text)
{
	struct dlrt_ip_wr w;
	char t[DLRT_IP_STR_MAX + 1];

	snprintf(t, sizeof(t), "%s", text);
	dlrt_ip_wr_begin(&w, b, DLRT_IP_ERROR);
	dlrt_ip_wr_str(&w, t);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_error(const uint8_t *p, size_t n, struct dlrt_ip_text *m, struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	dlrt_ip_rd_str(&r, m->text, DLRT_IP_STR_MAX);
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

int dlrt_ip_put_drain(struct dlrt_buf *b, const struct dlrt_ip_drain *m)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_DRAIN);
	dlrt_ip_wr_u32(&w, m->left_s);
	dlrt_ip_wr_str(&w, m->why);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_drain(const uint8_t *p, size_t n, struct dlrt_ip_drain *m, struct dlrt_err *err)
{
	struct dlrt_ip_rd r;

	dlrt_ip_rd_init(&r, p, n);
	m->left_s = dlrt_ip_rd_u32(&r);
	dlrt_ip_rd_str(&r, m->why, DLRT_IP_NAME_MAX);
	return dlrt_ip_rd_end(&r, "DRAIN", err);
}

int dlrt_ip_put_challenge(struct dlrt_buf *b, const struct dlrt_ip_challenge *m)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_CHALLENGE);
	dlrt_ip_wr_u8(&w, m->mode);
	dlrt_ip_wr_bytes(&w, m->nonce, DLRT_IP_NONCE);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_challenge(const uint8_t *p, size_t n, struct dlrt_ip_challenge *m,
			  struct dlrt_err *err)
{
	struct dlrt_ip_rd r;
	const uint8_t *q;

	dlrt_ip_rd_init(&r, p, n);
	m->mode = dlrt_ip_rd_u8(&r);
	q = dlrt_ip_rd_bytes(&r, DLRT_IP_NONCE);
	if (q)
		memcpy(m->nonce, q, DLRT_IP_NONCE);
	if (!r.bad && (m->mode < 1 || m->mode > 2))
		rd_fail(&r, "unknown authentication mode");
	return dlrt_ip_rd_end(&r, "CHALLENGE", err);
}

int dlrt_ip_put_auth(struct dlrt_buf *b, const struct dlrt_ip_auth *m)
{
	struct dlrt_ip_wr w;

	dlrt_ip_wr_begin(&w, b, DLRT_IP_AUTH);
	dlrt_ip_wr_u8(&w, m->mode);
	dlrt_ip_wr_bytes(&w, m->nonce, DLRT_IP_NONCE);
	dlrt_ip_wr_str(&w, m->proof);
	return dlrt_ip_wr_end(&w);
}

int dlrt_ip_get_auth(const uint8_t *p, size_t n, struct dlrt_ip_auth *m, struct dlrt_err *err)
{
	struct dlrt_ip_rd r;
	const uint8_t *q;

	dlrt_ip_rd_init(&r, p, n);
	m->mode = dlrt_ip_rd_u8(&r);
	q = dlrt_ip_rd_bytes(&r, DLRT_IP_NONCE);
	if (q)
		memcpy(m->nonce, q, DLRT_IP_NONCE);
	dlrt_ip_rd_str(&r, m->proof, DLRT_IP_PROOF_MAX);
	if (!r.bad && (m->mode < 1 || m->mode > 2))
		rd_fail(&r, "unknown authentication mode");
	return dlrt_ip_rd_end(&r, "AUTH", err);
}
